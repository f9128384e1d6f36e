//===- DnnlStep.h - A step that runs one oneDNN primitive -------*- C++ -*-===//
//
// The backward kernels of conv2d and pooling (ConvBackward.cpp,
// PoolBackward.cpp) are oneDNN primitives over the arena's NCHW / OIHW
// buffers: each instruction's primitive is created once, when the executor
// is, and its step binds the buffers' addresses to the primitive's arguments.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CPU_DNNLSTEP_H
#define TESSEL_RUNTIME_CPU_DNNLSTEP_H

#include "DnnlContext.h"
#include "KernelRegistry.h"
#include "KernelResources.h"

#include <string>
#include <utility>
#include <vector>

namespace tessel::runtime::cpu {

/// One argument of a primitive: its oneDNN id (DNNL_ARG_SRC, ...), its
/// layout, and the buffer it reads or writes.
struct DnnlArg {
  int id;
  dnnl::memory::desc desc;
  void *ptr;
};

/// A plain (row-major) f32 oneDNN descriptor of `shape`: nchw, oihw or
/// goihw (`group` > 1: the weight [O, C/g, KH, KW] seen as [g, O/g, ...]).
inline dnnl::memory::desc plainDesc(const Shape &shape, int64_t group = 1) {
  dnnl::memory::dims d(shape.begin(), shape.end());
  using tag = dnnl::memory::format_tag;
  if (group > 1) {
    d = {group, shape[0] / group, shape[1], shape[2], shape[3]};
    return dnnl::memory::desc(d, dnnl::memory::data_type::f32, tag::goihw);
  }
  return dnnl::memory::desc(d, dnnl::memory::data_type::f32,
                            d.size() == 4 ? tag::nchw : tag::a);
}

/// The executor's oneDNN context, created on first use.
inline std::shared_ptr<DnnlContext> dnnlContextOf(KernelResources &res) {
  if (!res.dnnl)
    res.dnnl = createDnnlContext();
  return res.dnnl;
}

/// The step of a failed factory: records the first error for the executor's
/// init and returns it if ever run.
inline Step failedStep(KernelResources &res, std::string message) {
  Status s = Status::error(std::move(message));
  if (res.stepError.isOk())
    res.stepError = s;
  return [s] { return s; };
}

/// The step `build(ctx)` makes on the executor's oneDNN context, or a failed
/// step naming `op` (an instruction name) when there is no context or oneDNN
/// rejects the primitive.
template <typename Build>
Step dnnlFactory(const KernelContext &c, const std::string &op, Build build) {
  std::shared_ptr<DnnlContext> ctx = dnnlContextOf(c.resources);
  if (!ctx)
    return failedStep(c.resources, op + ": no oneDNN engine");
  try {
    return build(ctx);
  } catch (const dnnl::error &e) {
    return failedStep(c.resources, op + ": oneDNN: " + e.what());
  }
}

/// The step that runs `pre` (primitives on fixed arguments, e.g. the forward
/// pass that fills a max pool's workspace) then `primitive` with `args` and
/// the fixed `owned` arguments (workspaces), `what` naming it in errors.
inline Step dnnlStep(std::shared_ptr<DnnlContext> ctx, const char *what,
                     dnnl::primitive primitive, std::vector<DnnlArg> args,
                     std::unordered_map<int, dnnl::memory> owned = {},
                     std::vector<std::pair<dnnl::primitive, std::vector<DnnlArg>>> pre = {},
                     std::unordered_map<int, dnnl::memory> preOwned = {}) {
  return [=]() -> Status {
    try {
      auto bind = [&](const std::vector<DnnlArg> &as,
                      std::unordered_map<int, dnnl::memory> m) {
        for (const DnnlArg &a : as)
          m[a.id] = dnnl::memory(a.desc, ctx->engine, a.ptr);
        return m;
      };
      for (const auto &[p, as] : pre)
        p.execute(ctx->stream, bind(as, preOwned));
      primitive.execute(ctx->stream, bind(args, owned));
      ctx->stream.wait();
      return Status::ok();
    } catch (const dnnl::error &e) {
      return Status::error(std::string("oneDNN ") + what + " failed: " +
                           e.what());
    }
  };
}

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_DNNLSTEP_H
