//===- DnnlContext.h - oneDNN engine and stream of an executor --*- C++ -*-===//
#ifndef TESSEL_RUNTIME_CPU_DNNLCONTEXT_H
#define TESSEL_RUNTIME_CPU_DNNLCONTEXT_H

#include "DnnlConv.h"
#include "Layout.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <unordered_map>

namespace tessel::runtime::cpu {

/// The CPU engine and the in-order stream every oneDNN primitive of one
/// executor runs on (created by createDnnlContext, DnnlConv.h).
class DnnlContext {
public:
  DnnlContext() : engine(dnnl::engine::kind::cpu, 0), stream(engine) {}
  dnnl::engine engine;
  dnnl::stream stream;
};

/// What a DnnlPrimitive (DnnlConv.h) runs.
struct DnnlPrimitive::Impl {
  std::shared_ptr<DnnlContext> ctx;
  dnnl::primitive primitive;
  /// The source and destination; the fixed arguments.
  dnnl::memory::desc src, dst;
  std::unordered_map<int, dnnl::memory> args;
  /// "reorder", "max pooling", ...: names it in a failure.
  const char *what = "";
};

/// oneDNN's name for `l` (NCHW: `nchw`).
inline dnnl::memory::format_tag formatTag(Layout l) {
  switch (l) {
  case Layout::NHWC:
    return dnnl::memory::format_tag::nhwc;
  case Layout::NChw16c:
    return dnnl::memory::format_tag::nChw16c;
  case Layout::NCHW:
    break;
  }
  return dnnl::memory::format_tag::nchw;
}

} // namespace tessel::runtime::cpu

#endif // TESSEL_RUNTIME_CPU_DNNLCONTEXT_H
