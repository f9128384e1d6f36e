//===- FuseGelu.cpp - decomposed GELU subgraphs -> tessel.gelu ------------===//
//
// Exporters without an ONNX Gelu (opsets < 20, PyTorch's default) write GELU
// as 8-9 elementwise ops:
//   tanh form: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//   erf form:  0.5 * x * (1 + erf(x / sqrt(2)))
// in any association of the outer products, x^3 as x*x*x or pow(x, 3), the
// scaled argument as a division or a product. Each is one pass over the
// activations instead of eight.
//
//===----------------------------------------------------------------------===//

#include "FusePatterns.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include <cmath>

namespace mlir::tessel {
#define GEN_PASS_DEF_FUSEGELUPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

/// Whether `v` is a constant whose every element is `want` (float
/// constants, relative tolerance 1e-5: exporters round sqrt(2/pi)).
bool isSplat(Value v, double want) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return false;
  auto dense = dyn_cast<DenseFPElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat())
    return false;
  double got = dense.getSplatValue<APFloat>().convertToDouble();
  return std::fabs(got - want) <= 1e-5 * std::fabs(want);
}

/// x^3 as x * (x * x), (x * x) * x or pow(x, 3).
bool isCube(Value v, Value x) {
  if (auto pow = v.getDefiningOp<PowOp>())
    return pow.getLhs() == x && isSplat(pow.getRhs(), 3.0);
  return either<MulOp>(v, [&](Value a, Value b) {
    return a == x && either<MulOp>(b, [&](Value c, Value d) {
             return c == x && d == x;
           });
  });
}

/// tanh(sqrt(2/pi) * (x + 0.044715 * x^3)) or erf(x / sqrt(2)); sets
/// `tanhForm`.
bool isPhiCore(Value v, Value x, bool &tanhForm) {
  if (auto tanh = v.getDefiningOp<TanhOp>()) {
    tanhForm = true;
    return either<MulOp>(tanh.getInput(), [&](Value k, Value u) {
      return isSplat(k, std::sqrt(2.0 / M_PI)) &&
             either<AddOp>(u, [&](Value a, Value w) {
               return a == x && either<MulOp>(w, [&](Value c, Value cube) {
                        return isSplat(c, 0.044715) && isCube(cube, x);
                      });
             });
    });
  }
  if (auto erf = v.getDefiningOp<ErfOp>()) {
    tanhForm = false;
    Value u = erf.getInput();
    if (auto div = u.getDefiningOp<DivOp>())
      return div.getLhs() == x && isSplat(div.getRhs(), std::sqrt(2.0));
    return either<MulOp>(u, [&](Value a, Value k) {
      return a == x && isSplat(k, 1.0 / std::sqrt(2.0));
    });
  }
  return false;
}

/// 1 + core.
bool isOnePlusPhi(Value v, Value x, bool &tanhForm) {
  return either<AddOp>(v, [&](Value one, Value core) {
    return isSplat(one, 1.0) && isPhiCore(core, x, tanhForm);
  });
}

/// The GELU input of `y` (and its form), or a null Value.
Value matchGelu(MulOp y, bool &tanhForm) {
  Value x;
  auto found = [&](Value candidate) {
    x = candidate;
    return true;
  };
  Value result = y.getResult();
  // 0.5 * (x * s)
  bool ok = either<MulOp>(result, [&](Value half, Value m) {
    return isSplat(half, 0.5) && either<MulOp>(m, [&](Value a, Value s) {
             return isOnePlusPhi(s, a, tanhForm) && found(a);
           });
  });
  // (0.5 * x) * s, (x * 0.5) * s
  ok = ok || either<MulOp>(result, [&](Value hx, Value s) {
         return either<MulOp>(hx, [&](Value half, Value a) {
           return isSplat(half, 0.5) && isOnePlusPhi(s, a, tanhForm) && found(a);
         });
       });
  // x * (0.5 * s)
  ok = ok || either<MulOp>(result, [&](Value a, Value hs) {
         return either<MulOp>(hs, [&](Value half, Value s) {
           return isSplat(half, 0.5) && isOnePlusPhi(s, a, tanhForm) && found(a);
         });
       });
  if (!ok || x.getType() != result.getType())
    return Value();
  return x;
}

struct FuseGeluPass : public impl::FuseGeluPassBase<FuseGeluPass> {
  using Base::Base;
  void runOnOperation() final {
    SmallVector<MulOp> muls;
    getOperation()->walk([&](MulOp m) { muls.push_back(m); });
    bool changed = false;
    for (MulOp m : muls) {
      if (!m->getParentOp()) // erased with an earlier match
        continue;
      bool tanhForm = false;
      Value x = matchGelu(m, tanhForm);
      if (!x)
        continue;
      OpBuilder b(m);
      auto gelu = GeluOp::create(b, m.getLoc(), m.getType(), x,
                                 tanhForm ? b.getUnitAttr() : UnitAttr());
      m.getResult().replaceAllUsesWith(gelu.getResult());
      changed = true;
    }
    if (!changed)
      return;
    // The decomposition's ops (and constants) that nothing reads now.
    eraseDeadOps<MulOp, AddOp, DivOp, PowOp, TanhOp, ErfOp, ConstantOp>(
        getOperation());
  }
};

} // namespace
} // namespace mlir::tessel
