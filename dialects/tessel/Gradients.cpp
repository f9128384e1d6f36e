//===- Gradients.cpp - the gradient rule of every differentiable op -------===//
//
// One function per op, named in the op's ODS entry by
// `Tessel_GradientFrom<"buildXGradient">`; `-tessel-autodiff` calls it
// through GradientOpInterface. A rule receives the gradients of the op's
// results (null where a result does not reach the loss) and appends one
// value per operand: its gradient, built with ordinary tessel ops at the
// builder's insertion point, or null (integer and boolean operands,
// conditions, indices, constant exponents). Rules compose existing ops,
// except where one fused op of TrainingOps.td (gather_grad, gelu_grad,
// log_softmax_grad) does in one pass what the composition did in many;
// binary ops with numpy broadcasting sum their gradients back to the
// operand's shape.
//
// Each rule is checked against central finite differences in
// test/Autodiff/ (fdcheck.py).
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/TesselOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::tessel;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {

using Grads = SmallVectorImpl<Value>;

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

ArrayRef<int64_t> shapeOf(Value v) { return typeOf(v).getShape(); }

bool isFloat(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

int64_t product(ArrayRef<int64_t> dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

SmallVector<int64_t> range(int64_t from, int64_t to) {
  SmallVector<int64_t> r;
  for (int64_t i = from; i < to; ++i)
    r.push_back(i);
  return r;
}

/// Builds the backward ops of one forward op: its location, its builder.
struct Emitter {
  OpBuilder &b;
  Location loc;

  /// A splat constant `v` of `shape` with element type `elem`.
  Value splat(ArrayRef<int64_t> shape, Type elem, double v) {
    auto type = RankedTensorType::get(shape, elem);
    Attribute a = isa<FloatType>(elem)
                      ? Attribute(b.getFloatAttr(elem, v))
                      : Attribute(b.getIntegerAttr(elem, static_cast<int64_t>(v)));
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, a));
  }
  /// A rank-0 constant `v` of `like`'s element type (broadcasts anywhere).
  Value scalar(Value like, double v) {
    return splat({}, typeOf(like).getElementType(), v);
  }
  Value zerosLike(RankedTensorType t) {
    return splat(t.getShape(), t.getElementType(), 0.0);
  }

  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value neg(Value x) { return NegOp::create(b, loc, x); }
  Value mul(Value x, double c) { return c == 1.0 ? x : mul(x, scalar(x, c)); }
  Value add(Value x, double c) { return add(x, scalar(x, c)); }
  /// c - x
  Value rsub(double c, Value x) { return sub(scalar(x, c), x); }
  Value cmp(ComparePredicate p, Value x, Value y) {
    return CompareOp::create(b, loc, p, x, y);
  }
  Value cmp(ComparePredicate p, Value x, double c) {
    return cmp(p, x, scalar(x, c));
  }
  Value select(Value c, Value t, Value f) {
    return WhereOp::create(b, loc, c, t, f);
  }
  /// `g` where `c`, zero elsewhere.
  Value selectOrZero(Value c, Value g) { return select(c, g, scalar(g, 0.0)); }
  Value zeroOrSelect(Value c, Value g) { return select(c, scalar(g, 0.0), g); }

  Value reshape(Value x, ArrayRef<int64_t> shape) {
    if (shapeOf(x) == shape)
      return x;
    auto t = RankedTensorType::get(shape, typeOf(x).getElementType());
    return ReshapeOp::create(b, loc, t, x);
  }
  Value expand(Value x, ArrayRef<int64_t> shape) {
    if (shapeOf(x) == shape)
      return x;
    auto t = RankedTensorType::get(shape, typeOf(x).getElementType());
    return ExpandOp::create(b, loc, t, x);
  }
  Value cast(Value x, Type elem) {
    if (typeOf(x).getElementType() == elem)
      return x;
    return CastOp::create(b, loc, typeOf(x).clone(elem), x);
  }
  Value reduceSum(Value x, ArrayRef<int64_t> dims, bool keep) {
    if (dims.empty())
      return x;
    return ReduceSumOp::create(b, loc, x, dims, keep);
  }
  Value reduceMean(Value x, ArrayRef<int64_t> dims, bool keep) {
    if (dims.empty())
      return x;
    return ReduceMeanOp::create(b, loc, x, dims, keep);
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    if (llvm::equal(perm, range(0, perm.size())))
      return x;
    return TransposeOp::create(b, loc, x, perm);
  }
  /// Swaps the last two dims.
  Value transposeLast2(Value x) {
    SmallVector<int64_t> perm = range(0, typeOf(x).getRank());
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    return transpose(x, perm);
  }
  Value matmul(Value x, Value y) { return MatmulOp::create(b, loc, x, y); }
  /// op(x) op(y) of two matrices, op transposing where asked.
  Value gemm(Value x, Value y, bool tx, bool ty, float alpha = 1.0f) {
    return GemmOp::create(b, loc, x, y, Value(), tx, ty, APFloat(alpha),
                          APFloat(1.0f));
  }
  Value concat(ArrayRef<Value> xs, int64_t dim) {
    SmallVector<Value> nonEmpty;
    for (Value x : xs)
      if (shapeOf(x)[dim] != 0)
        nonEmpty.push_back(x);
    if (nonEmpty.size() == 1)
      return nonEmpty.front();
    return ConcatOp::create(b, loc, nonEmpty, static_cast<uint64_t>(dim));
  }

  /// The gradient `g` of a value broadcast (numpy rules) from `shape`,
  /// summed back to `shape`: over the leading dims it gained and the dims
  /// it stretched from 1.
  Value sumToShape(Value g, ArrayRef<int64_t> shape) {
    ArrayRef<int64_t> gs = shapeOf(g);
    if (gs == shape)
      return g;
    int64_t off = gs.size() - shape.size();
    SmallVector<int64_t> dims = range(0, off);
    for (auto [i, d] : llvm::enumerate(shape))
      if (d == 1 && gs[off + i] != 1)
        dims.push_back(off + i);
    return reshape(reduceSum(g, dims, /*keep=*/true), shape);
  }
  Value sumTo(Value g, Value operand) { return sumToShape(g, shapeOf(operand)); }

  /// The gradient of a reduction's result, `g`, as the keep_dims shape of
  /// the reduction of `input` over `dims`.
  Value keepDims(Value g, Value input, ArrayRef<int64_t> dims) {
    SmallVector<int64_t> shape(shapeOf(input));
    for (int64_t d : dims)
      shape[d] = 1;
    return reshape(g, shape);
  }
};


bool isConstant(Value v) { return v.getDefiningOp<ConstantOp>() != nullptr; }

/// The gradient of a float operand, or null for others.
Value ifFloat(Value operand, function_ref<Value()> build) {
  return isFloat(operand) ? build() : Value();
}

} // namespace

namespace mlir::tessel {

std::optional<double> splatFloatValue(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  auto dense = dyn_cast<DenseFPElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

//===----------------------------------------------------------------------===//
// Sources and identity
//===----------------------------------------------------------------------===//

LogicalResult buildWeightGradient(WeightOp, OpBuilder &, ArrayRef<Value>,
                                  Grads &) {
  return success();
}

LogicalResult buildConstantGradient(ConstantOp, OpBuilder &, ArrayRef<Value>,
                                    Grads &) {
  return success();
}

// The gradient keeps the value's spec: the constraint's transpose is itself.
LogicalResult buildShardConstraintGradient(ShardConstraintOp op, OpBuilder &b,
                                           ArrayRef<Value> dy, Grads &dx) {
  dx.push_back(ShardConstraintOp::create(b, op.getLoc(), dy[0], op.getSharding()));
  return success();
}

//===----------------------------------------------------------------------===//
// Unary elementwise
//===----------------------------------------------------------------------===//

LogicalResult buildNegGradient(NegOp op, OpBuilder &b, ArrayRef<Value> dy,
                               Grads &dx) {
  dx.push_back(Emitter{b, op.getLoc()}.neg(dy[0]));
  return success();
}

LogicalResult buildExpGradient(ExpOp op, OpBuilder &b, ArrayRef<Value> dy,
                               Grads &dx) {
  dx.push_back(Emitter{b, op.getLoc()}.mul(dy[0], op.getResult()));
  return success();
}

LogicalResult buildLogGradient(LogOp op, OpBuilder &b, ArrayRef<Value> dy,
                               Grads &dx) {
  dx.push_back(Emitter{b, op.getLoc()}.div(dy[0], op.getInput()));
  return success();
}

// d sqrt(x) = 1 / (2 sqrt(x))
LogicalResult buildSqrtGradient(SqrtOp op, OpBuilder &b, ArrayRef<Value> dy,
                                Grads &dx) {
  Emitter e{b, op.getLoc()};
  dx.push_back(e.div(e.mul(dy[0], 0.5), op.getResult()));
  return success();
}

// d x^(-1/2) = -1/2 x^(-3/2) = -1/2 y^3
LogicalResult buildRsqrtGradient(RsqrtOp op, OpBuilder &b, ArrayRef<Value> dy,
                                 Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value y = op.getResult();
  dx.push_back(e.mul(dy[0], e.mul(e.mul(e.mul(y, y), y), -0.5)));
  return success();
}

// d (1/x) = -1/x^2 = -y^2
LogicalResult buildReciprocalGradient(ReciprocalOp op, OpBuilder &b,
                                      ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value y = op.getResult();
  dx.push_back(e.neg(e.mul(dy[0], e.mul(y, y))));
  return success();
}

// sign(x) * dy, 0 at 0 (PyTorch's).
LogicalResult buildAbsGradient(AbsOp op, OpBuilder &b, ArrayRef<Value> dy,
                               Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value x = op.getInput(), g = dy[0];
  Value negative = e.selectOrZero(e.cmp(ComparePredicate::LT, x, 0.0), e.neg(g));
  dx.push_back(e.select(e.cmp(ComparePredicate::GT, x, 0.0), g, negative));
  return success();
}

// d tanh = 1 - y^2
LogicalResult buildTanhGradient(TanhOp op, OpBuilder &b, ArrayRef<Value> dy,
                                Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value y = op.getResult();
  dx.push_back(e.mul(dy[0], e.rsub(1.0, e.mul(y, y))));
  return success();
}

// d sin = cos x
LogicalResult buildSinGradient(SinOp op, OpBuilder &b, ArrayRef<Value> dy,
                               Grads &dx) {
  Emitter e{b, op.getLoc()};
  dx.push_back(e.mul(dy[0], CosOp::create(b, e.loc, op.getInput())));
  return success();
}

// The step functions (floor, ceil, round, sign): 0, as PyTorch's.
static LogicalResult stepGradient(Operation *op, OpBuilder &b, Grads &dx) {
  Emitter e{b, op->getLoc()};
  dx.push_back(e.zerosLike(typeOf(op->getOperand(0))));
  return success();
}
LogicalResult buildFloorGradient(FloorOp op, OpBuilder &b, ArrayRef<Value>,
                                 Grads &dx) {
  return stepGradient(op, b, dx);
}
LogicalResult buildCeilGradient(CeilOp op, OpBuilder &b, ArrayRef<Value>,
                                Grads &dx) {
  return stepGradient(op, b, dx);
}
LogicalResult buildRoundGradient(RoundOp op, OpBuilder &b, ArrayRef<Value>,
                                 Grads &dx) {
  return stepGradient(op, b, dx);
}
LogicalResult buildSignGradient(SignOp op, OpBuilder &b, ArrayRef<Value>,
                                Grads &dx) {
  return stepGradient(op, b, dx);
}

// d cos = -sin x
LogicalResult buildCosGradient(CosOp op, OpBuilder &b, ArrayRef<Value> dy,
                               Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value s = SinOp::create(b, e.loc, op.getInput());
  dx.push_back(e.mul(dy[0], e.mul(s, -1.0)));
  return success();
}

// d erf = 2/sqrt(pi) exp(-x^2)
LogicalResult buildErfGradient(ErfOp op, OpBuilder &b, ArrayRef<Value> dy,
                               Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value x = op.getInput();
  Value d = ExpOp::create(b, e.loc, e.mul(e.mul(x, x), -1.0));
  dx.push_back(e.mul(dy[0], e.mul(d, 2.0 * llvm::numbers::inv_sqrtpi)));
  return success();
}

// d sigmoid = y (1 - y)
LogicalResult buildSigmoidGradient(SigmoidOp op, OpBuilder &b,
                                   ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value y = op.getResult();
  dx.push_back(e.mul(dy[0], e.mul(y, e.rsub(1.0, y))));
  return success();
}

// dy where y > 0 (0 at 0, as PyTorch), one fused op (tessel.relu_grad)
// reading the result, as PyTorch's threshold_backward does.
LogicalResult buildReluGradient(ReluOp op, OpBuilder &b, ArrayRef<Value> dy,
                                Grads &dx) {
  dx.push_back(ReluGradOp::create(b, op.getLoc(), op.getType(), op.getResult(),
                                  dy[0]));
  return success();
}

LogicalResult buildLeakyReluGradient(LeakyReluOp op, OpBuilder &b,
                                     ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value g = dy[0];
  double alpha = op.getAlpha().convertToDouble();
  dx.push_back(e.select(e.cmp(ComparePredicate::GT, op.getInput(), 0.0), g,
                        e.mul(g, e.scalar(g, alpha))));
  return success();
}

// d log(1 + exp(x)) = sigmoid(x)
LogicalResult buildSoftplusGradient(SoftplusOp op, OpBuilder &b,
                                    ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  dx.push_back(e.mul(dy[0], SigmoidOp::create(b, e.loc, op.getInput())));
  return success();
}

// d x / (1 + |x|) = 1 / (1 + |x|)^2
LogicalResult buildSoftsignGradient(SoftsignOp op, OpBuilder &b,
                                    ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value d = e.add(AbsOp::create(b, e.loc, op.getInput()), 1.0);
  dx.push_back(e.div(dy[0], e.mul(d, d)));
  return success();
}

// x relu6(x + 3) / 6: 0 below -3, 1 above 3, x/3 + 1/2 between (PyTorch's).
LogicalResult buildHardSwishGradient(HardSwishOp op, OpBuilder &b,
                                     ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value x = op.getInput();
  Value middle = e.add(e.mul(x, 1.0 / 3.0), 0.5);
  Value upper = e.select(e.cmp(ComparePredicate::GT, x, 3.0), e.scalar(x, 1.0),
                         middle);
  Value d = e.zeroOrSelect(e.cmp(ComparePredicate::LT, x, -3.0), upper);
  dx.push_back(e.mul(dy[0], d));
  return success();
}

// erf form: Phi(x) + x phi(x). tanh form, with u = k (x + c x^3):
// 1/2 (1 + tanh u) + x (1 - tanh^2 u) (k/2 + 3/2 k c x^2). One fused op
// (tessel.gelu_grad) rather than a dozen elementwise ones.
LogicalResult buildGeluGradient(GeluOp op, OpBuilder &b, ArrayRef<Value> dy,
                                Grads &dx) {
  dx.push_back(GeluGradOp::create(b, op.getLoc(), op.getType(), op.getInput(),
                                  dy[0], op.getTanhApproximation()));
  return success();
}

// float -> float: the gradient cast back; other casts have none.
// The backward of a low-precision op is low-precision: dy rounded alike.
LogicalResult buildRoundFloatGradient(RoundFloatOp op, OpBuilder &b,
                                      ArrayRef<Value> dy, Grads &dx) {
  dx.push_back(RoundFloatOp::create(b, op.getLoc(), dy[0].getType(), dy[0],
                                    op.getExponentBitsAttr(),
                                    op.getMantissaBitsAttr()));
  return success();
}

LogicalResult buildCastGradient(CastOp op, OpBuilder &b, ArrayRef<Value> dy,
                                Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value x = op.getInput();
  if (isFloat(x) && isFloat(op.getResult()) && dy[0])
    dx.push_back(e.cast(dy[0], typeOf(x).getElementType()));
  else
    dx.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Binary elementwise (numpy broadcasting)
//===----------------------------------------------------------------------===//

// A broadcasting binary op's rule: `dl` and `dr` give the gradients of lhs
// and rhs from dy before broadcasting (built only for a float operand);
// each is summed back to its operand's shape.
template <typename OpTy>
static LogicalResult
buildBinaryGradient(OpTy op, OpBuilder &b, ArrayRef<Value> dy, Grads &dx,
                    function_ref<Value(Emitter &, Value)> dl,
                    function_ref<Value(Emitter &, Value)> dr) {
  Emitter e{b, op.getLoc()};
  Value l = op.getLhs(), r = op.getRhs(), g = dy[0];
  dx.push_back(ifFloat(l, [&] { return e.sumTo(dl(e, g), l); }));
  dx.push_back(ifFloat(r, [&] { return e.sumTo(dr(e, g), r); }));
  return success();
}

static Value passThrough(Emitter &, Value g) { return g; }

LogicalResult buildAddGradient(AddOp op, OpBuilder &b, ArrayRef<Value> dy,
                               Grads &dx) {
  return buildBinaryGradient(op, b, dy, dx, passThrough, passThrough);
}

LogicalResult buildSubGradient(SubOp op, OpBuilder &b, ArrayRef<Value> dy,
                               Grads &dx) {
  return buildBinaryGradient(op, b, dy, dx, passThrough,
                             [](Emitter &e, Value g) { return e.neg(g); });
}

LogicalResult buildMulGradient(MulOp op, OpBuilder &b, ArrayRef<Value> dy,
                               Grads &dx) {
  Value l = op.getLhs(), r = op.getRhs();
  return buildBinaryGradient(
      op, b, dy, dx, [&](Emitter &e, Value g) { return e.mul(g, r); },
      [&](Emitter &e, Value g) { return e.mul(g, l); });
}

// d(l / r) = dl / r - l dr / r^2 = (dl - y dr) / r
LogicalResult buildDivGradient(DivOp op, OpBuilder &b, ArrayRef<Value> dy,
                               Grads &dx) {
  Value r = op.getRhs(), y = op.getResult();
  return buildBinaryGradient(
      op, b, dy, dx, [&](Emitter &e, Value g) { return e.div(g, r); },
      [&](Emitter &e, Value g) { return e.neg(e.div(e.mul(g, y), r)); });
}

// d l^r = r l^(r-1) dl + l^r log(l) dr; a constant exponent has none.
LogicalResult buildPowGradient(PowOp op, OpBuilder &b, ArrayRef<Value> dy,
                               Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value l = op.getLhs(), r = op.getRhs(), g = dy[0];
  dx.push_back(ifFloat(l, [&]() -> Value {
    Value d;
    if (std::optional<double> p = splatFloatValue(r)) {
      if (*p == 0.0)
        return e.sumTo(e.mul(g, 0.0), l);
      if (*p == 1.0)
        d = e.scalar(g, 1.0);
      else if (*p == 2.0)
        d = e.mul(l, 2.0);
      else
        d = e.mul(PowOp::create(b, e.loc, l, e.scalar(r, *p - 1.0)), *p);
    } else {
      d = e.mul(PowOp::create(b, e.loc, l, e.add(r, -1.0)), r);
    }
    return e.sumTo(e.mul(g, d), l);
  }));
  dx.push_back(isFloat(r) && !isConstant(r)
                   ? e.sumTo(e.mul(e.mul(g, op.getResult()),
                                   LogOp::create(b, e.loc, l)),
                             r)
                   : Value());
  return success();
}

// fmod(l, r) = l - n r with n = trunc(l / r) an integer constant almost
// everywhere: dl = dy, dr = -n dy, n computed as (l - y) / r.
LogicalResult buildFModGradient(FModOp op, OpBuilder &b, ArrayRef<Value> dy,
                                Grads &dx) {
  Value l = op.getLhs(), r = op.getRhs(), y = op.getResult();
  return buildBinaryGradient(op, b, dy, dx, passThrough,
                             [&](Emitter &e, Value g) {
                               Value n = e.div(e.sub(l, y), r);
                               return e.neg(e.mul(g, n));
                             });
}

// The gradient goes to the selected operand; on a tie, to the left one.
template <typename OpTy>
static LogicalResult buildSelectGradient(OpTy op, OpBuilder &b,
                                         ArrayRef<Value> dy, Grads &dx,
                                         ComparePredicate pickLeft) {
  Value left = Emitter{b, op.getLoc()}.cmp(pickLeft, op.getLhs(), op.getRhs());
  return buildBinaryGradient(
      op, b, dy, dx,
      [&](Emitter &e, Value g) { return e.selectOrZero(left, g); },
      [&](Emitter &e, Value g) { return e.zeroOrSelect(left, g); });
}

LogicalResult buildMaxGradient(MaxOp op, OpBuilder &b, ArrayRef<Value> dy,
                               Grads &dx) {
  return buildSelectGradient(op, b, dy, dx, ComparePredicate::GE);
}

LogicalResult buildMinGradient(MinOp op, OpBuilder &b, ArrayRef<Value> dy,
                               Grads &dx) {
  return buildSelectGradient(op, b, dy, dx, ComparePredicate::LE);
}

LogicalResult buildWhereGradient(WhereOp op, OpBuilder &b, ArrayRef<Value> dy,
                                 Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value c = op.getCondition(), t = op.getOnTrue(), f = op.getOnFalse();
  Value g = dy[0];
  dx.push_back(Value());
  dx.push_back(ifFloat(t, [&] { return e.sumTo(e.selectOrZero(c, g), t); }));
  dx.push_back(ifFloat(f, [&] { return e.sumTo(e.zeroOrSelect(c, g), f); }));
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// numpy.matmul: a rank-1 lhs is [1, K], a rank-1 rhs [K, 1]; then
// dA = dY B^T and dB = A^T dY, summed over the batch dims each broadcast.
LogicalResult buildMatmulGradient(MatmulOp op, OpBuilder &b, ArrayRef<Value> dy,
                                  Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value l = op.getLhs(), r = op.getRhs();
  Value l2 = l, r2 = r;
  if (typeOf(l).getRank() == 1)
    l2 = e.reshape(l, {1, shapeOf(l)[0]});
  if (typeOf(r).getRank() == 1)
    r2 = e.reshape(r, {shapeOf(r)[0], 1});
  // The result with the unit dims of rank-1 operands kept.
  ArrayRef<int64_t> ls = shapeOf(l2), rs = shapeOf(r2);
  FailureOr<SmallVector<int64_t>> batch =
      broadcastShapes({ls.drop_back(2), rs.drop_back(2)});
  if (failed(batch))
    return op.emitOpError("batch dims do not broadcast");
  SmallVector<int64_t> full(*batch);
  full.push_back(ls[ls.size() - 2]);
  full.push_back(rs.back());
  Value g = e.reshape(dy[0], full);
  if (rs.size() == 2) {
    // No batch dims on the right (a linear layer): the left's fold into its
    // rows and both products are gemms with a transposed operand.
    int64_t rows = product(ArrayRef<int64_t>(full).drop_back());
    Value lf = e.reshape(l2, {rows, ls.back()});
    Value gf = e.reshape(g, {rows, rs.back()});
    dx.push_back(e.reshape(e.gemm(gf, r2, false, true), shapeOf(l)));
    dx.push_back(e.reshape(e.gemm(lf, gf, true, false), shapeOf(r)));
    return success();
  }
  dx.push_back(e.reshape(
      e.sumToShape(e.matmul(g, e.transposeLast2(r2)), ls), shapeOf(l)));
  dx.push_back(e.reshape(
      e.sumToShape(e.matmul(e.transposeLast2(l2), g), rs), shapeOf(r)));
  return success();
}

// Y = alpha op(A) op(B) + beta C, op(A) [M, K], op(B) [K, N]:
// d op(A) = alpha dY op(B)^T, d op(B) = alpha op(A)^T dY, dC = beta dY
// summed to C's shape; each product is one gemm with transposes.
LogicalResult buildGemmGradient(GemmOp op, OpBuilder &b, ArrayRef<Value> dy,
                                Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value a = op.getA(), bb = op.getB(), c = op.getC(), g = dy[0];
  bool ta = op.getTransA(), tb = op.getTransB();
  APFloat alpha = op.getAlpha(), one(1.0f);
  auto gemm = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return GemmOp::create(b, e.loc, x, y, Value(), tx, ty, alpha, one);
  };
  // dA: [M, K] = dY op(B)^T; with trans_a, [K, M] = op(B) dY^T.
  dx.push_back(ta ? gemm(bb, g, tb, true) : gemm(g, bb, false, !tb));
  // dB: [K, N] = op(A)^T dY; with trans_b, [N, K] = dY^T op(A).
  dx.push_back(tb ? gemm(g, a, true, ta) : gemm(a, g, !ta, false));
  if (c)
    dx.push_back(e.sumTo(e.mul(g, op.getBeta().convertToDouble()), c));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

LogicalResult buildReduceSumGradient(ReduceSumOp op, OpBuilder &b,
                                     ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value x = op.getInput();
  dx.push_back(ifFloat(x, [&] {
    return e.expand(e.keepDims(dy[0], x, op.getDims()), shapeOf(x));
  }));
  return success();
}

LogicalResult buildReduceMeanGradient(ReduceMeanOp op, OpBuilder &b,
                                      ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value x = op.getInput();
  int64_t n = 1;
  for (int64_t d : op.getDims())
    n *= shapeOf(x)[d];
  dx.push_back(ifFloat(x, [&] {
    Value g = e.mul(e.keepDims(dy[0], x, op.getDims()), 1.0 / n);
    return e.expand(g, shapeOf(x));
  }));
  return success();
}

// The gradient is shared evenly among the maxima (PyTorch's amax).
LogicalResult buildReduceMaxGradient(ReduceMaxOp op, OpBuilder &b,
                                     ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value x = op.getInput();
  ArrayRef<int64_t> dims = op.getDims();
  dx.push_back(ifFloat(x, [&] {
    Value y = e.keepDims(op.getResult(), x, dims);
    Value mask = e.cast(e.cmp(ComparePredicate::EQ, x, y),
                        typeOf(x).getElementType());
    Value count = e.reduceSum(mask, dims, /*keep=*/true);
    return e.mul(mask, e.div(e.keepDims(dy[0], x, dims), count));
  }));
  return success();
}

// dx = y (dy - sum(dy y))
// Each input element reaches every output of the scan after it (before
// it, reversed): the gradient is the same scan of dy in the other
// direction.
LogicalResult buildCumSumGradient(CumSumOp op, OpBuilder &b, ArrayRef<Value> dy,
                                  Grads &dx) {
  if (!isFloat(op.getInput())) {
    dx.push_back(Value());
    return success();
  }
  dx.push_back(CumSumOp::create(b, op.getLoc(), typeOf(dy[0]), dy[0],
                                op.getAxis(), op.getExclusive(),
                                !op.getReverse()));
  return success();
}

LogicalResult buildSoftmaxGradient(SoftmaxOp op, OpBuilder &b,
                                   ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value y = op.getResult(), g = dy[0];
  int64_t axis = op.getAxis();
  dx.push_back(e.mul(y, e.sub(g, e.reduceSum(e.mul(g, y), {axis}, true))));
  return success();
}

// Fused attention: dq, dkt, dv in one tessel.attention_grad (the scores
// recomputed block by block from lse). A mask that needs a gradient (a
// learned bias) gets ds = p (grad v^T - rowsum(grad out)) summed to its
// shape, from the scores recomputed whole by ordinary ops; autodiff erases
// them when nothing reads the mask's gradient (a constant causal mask).
LogicalResult buildAttentionGradient(AttentionOp op, OpBuilder &b,
                                     ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  if (dy.size() > 1 && dy[1])
    return op.emitOpError("lse has no gradient: only tessel.attention_grad "
                          "may read it");
  Value q = op.getQ(), kt = op.getKt(), v = op.getV(), mask = op.getMask();
  Value out = op.getResult(), lse = op.getLse();
  Value g = dy[0] ? dy[0] : e.zerosLike(typeOf(out));
  auto grad = AttentionGradOp::create(
      b, e.loc, TypeRange{q.getType(), kt.getType(), v.getType()}, q, kt, v,
      out, lse, g, mask, op.getNanFill(), op.getKeep(), op.getScaleAttr(),
      op.getMaskedScoreAttr());
  dx.append(grad->getResults().begin(), grad->getResults().end());
  if (!mask) {
    if (op.getNanFill())
      dx.push_back(Value()); // a constant: no gradient
    return success();
  }
  const int64_t r = typeOf(q).getRank();
  // The mask's gradient in the mask's type (a half attention's is f32).
  Type elem = typeOf(mask).getElementType();
  if (typeOf(q).getElementType() != elem) {
    q = e.cast(q, elem);
    kt = e.cast(kt, elem);
    v = e.cast(v, elem);
    out = e.cast(out, elem);
    g = e.cast(g, elem);
  }
  Value s = e.add(e.mul(e.matmul(q, kt), op.getScale().convertToDouble()), mask);
  // With masked_score, the scores the mask hides are that constant: their
  // probabilities are exp(c - lse) and their ds 0. With keep, the hidden
  // scores are the constant plus the mask: the mask's ds is every score's.
  Value hidden;
  if (std::optional<APFloat> c = op.getMaskedScore()) {
    Value constant = e.scalar(s, c->convertToDouble());
    if (Value keep = op.getKeep()) {
      s = e.select(keep, s, e.add(constant, mask));
    } else {
      hidden = e.cmp(ComparePredicate::EQ, mask,
                     -std::numeric_limits<double>::infinity());
      s = e.select(hidden, constant, s);
    }
  }
  SmallVector<int64_t> lseShape(shapeOf(lse));
  lseShape.push_back(1);
  Value p = ExpOp::create(b, e.loc, e.sub(s, e.cast(e.reshape(lse, lseShape), elem)));
  Value dp = e.matmul(g, e.transposeLast2(v));
  Value delta = e.reduceSum(e.mul(g, out), {r - 1}, true);
  Value ds = e.mul(p, e.sub(dp, delta));
  if (hidden)
    ds = e.zeroOrSelect(hidden, ds);
  if (op.getNanFill()) // NaN rows: constant probabilities
    ds = e.zeroOrSelect(e.cmp(ComparePredicate::NE, ds, ds), ds);
  dx.push_back(e.sumTo(ds, mask));
  if (op.getNanFill())
    dx.push_back(Value()); // a constant: no gradient
  if (op.getKeep())
    dx.push_back(Value()); // bool
  return success();
}

// dx = dy - exp(y) sum(dy), fused (tessel.log_softmax_grad).
LogicalResult buildLogSoftmaxGradient(LogSoftmaxOp op, OpBuilder &b,
                                      ArrayRef<Value> dy, Grads &dx) {
  dx.push_back(LogSoftmaxGradOp::create(b, op.getLoc(), op.getType(),
                                        op.getResult(), dy[0], op.getAxis()));
  return success();
}

// Layer norm and RMS norm over dims D = [axis, rank). With c = x - mean(x)
// (layer norm) or x (RMS norm), rstd = rsqrt(mean(c^2) + eps), x^ = c rstd
// and h = dy scale:
//   layer norm: dx = rstd (h - mean(h) - x^ mean(h x^)),
//   RMS norm:   dx = rstd (h - x^ rstd mean(h x)), the same without the
//               mean(h) term (x^ mean(h x^) = x^ rstd mean(h x));
// dscale = sum(dy x^), dbias = sum(dy), the sums over the leading dims.
template <typename OpTy>
static LogicalResult buildNormGradient(OpTy op, OpBuilder &b,
                                       ArrayRef<Value> dy, Grads &dx) {
  constexpr bool centred = std::is_same_v<OpTy, LayerNormOp>;
  Emitter e{b, op.getLoc()};
  Value x = op.getInput(), scale = op.getScale(), g = dy[0];
  SmallVector<int64_t> dims = range(op.getAxis(), typeOf(x).getRank());
  Value c = centred ? e.sub(x, e.reduceMean(x, dims, true)) : x;
  Value meanSquare = e.reduceMean(e.mul(c, c), dims, true);
  Value rstd = RsqrtOp::create(
      b, e.loc, e.add(meanSquare, op.getEpsilon().convertToDouble()));
  Value xhat = e.mul(c, rstd);
  Value h = e.mul(g, scale);
  if constexpr (centred) {
    Value m1 = e.reduceMean(h, dims, true);
    Value m2 = e.reduceMean(e.mul(h, xhat), dims, true);
    dx.push_back(e.mul(rstd, e.sub(e.sub(h, m1), e.mul(xhat, m2))));
  } else {
    Value m = e.reduceMean(e.mul(h, x), dims, true);
    dx.push_back(e.mul(rstd, e.sub(h, e.mul(e.mul(xhat, rstd), m))));
  }
  dx.push_back(e.sumTo(e.mul(g, xhat), scale));
  if constexpr (centred)
    if (Value bias = op.getBias())
      dx.push_back(e.sumTo(g, bias));
  return success();
}

LogicalResult buildLayerNormGradient(LayerNormOp op, OpBuilder &b,
                                     ArrayRef<Value> dy, Grads &dx) {
  return buildNormGradient(op, b, dy, dx);
}

LogicalResult buildRmsNormGradient(RmsNormOp op, OpBuilder &b,
                                   ArrayRef<Value> dy, Grads &dx) {
  return buildNormGradient(op, b, dy, dx);
}

/// Whether `v` is `reduce_mean(x)` over every dim of `x` but 1, the dims
/// dropped.
static bool isChannelMean(Value v, Value x) {
  auto mean = v.getDefiningOp<ReduceMeanOp>();
  if (!mean || mean.getInput() != x || mean.getKeepDims())
    return false;
  SmallVector<int64_t> others = range(0, typeOf(x).getRank());
  others.erase(others.begin() + 1);
  SmallVector<int64_t> dims(mean.getDims());
  llvm::sort(dims);
  return dims == others;
}

/// Whether `var` is the biased batch variance of `x` about `mean`:
/// `batch_norm_variance(x, mean)`, or `reduce_mean(c * c)` over every dim
/// but 1, c = x - mean (the mean broadcast over dim 1, through a reshape or
/// not).
static bool isChannelVariance(Value var, Value x, Value mean) {
  if (auto v = var.getDefiningOp<BatchNormVarianceOp>())
    return v.getInput() == x && v.getMean() == mean;
  auto r = var.getDefiningOp<ReduceMeanOp>();
  if (!r)
    return false;
  auto sq = r.getInput().getDefiningOp<MulOp>();
  if (!sq || sq.getLhs() != sq.getRhs() || !isChannelMean(var, sq))
    return false;
  auto c = sq.getLhs().getDefiningOp<SubOp>();
  if (!c || c.getLhs() != x)
    return false;
  Value m = c.getRhs();
  if (auto reshape = m.getDefiningOp<ReshapeOp>())
    m = reshape.getInput();
  return m == mean;
}

// Inference-mode batch norm, per channel (dim 1), s = scale rsqrt(var + eps):
// dx = dy s, dscale = sum(dy (x - mean)) rsqrt(var + eps), dbias = sum(dy),
// dmean = -sum(dy) s, dvar = -1/2 sum(dy (x - mean)) scale (var + eps)^(-3/2).
//
// With batch_stats (mean and var the batch's own, training mode), the
// whole gradient of x through the statistics, as PyTorch computes it, in
// two passes over dy and x: sumG = sum(dy), dot = sum(dy (x - mean))
// (tessel.batch_norm_grad_sums; partial sums where the batch is sharded),
// then with inv = rsqrt(var + eps) and n the count per channel,
// dx = (dy - sumG / n - (x - mean) dot inv^2 / n) inv scale
// (tessel.batch_norm_grad_input), dscale = dot inv, dbias = sumG; the
// statistics get no gradient of their own (it is in dx already).
LogicalResult buildBatchNormGradient(BatchNormOp op, OpBuilder &b,
                                     ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value x = op.getInput(), g = dy[0];
  int64_t rank = typeOf(x).getRank(), channels = shapeOf(x)[1];
  SmallVector<int64_t> perChannel(rank - 1, 1);
  perChannel[0] = channels;
  auto bc = [&](Value v) { return e.reshape(v, perChannel); };
  SmallVector<int64_t> others = range(0, rank);
  others.erase(others.begin() + 1);
  Value inv = RsqrtOp::create(
      b, e.loc, e.add(op.getVariance(), op.getEpsilon().convertToDouble()));
  if (op.getBatchStats()) {
    if (!isChannelMean(op.getMean(), x) ||
        !isChannelVariance(op.getVariance(), x, op.getMean()))
      return op.emitOpError()
             << "has batch_stats, but its mean and variance are not "
                "reduce_mean(x) and batch_norm_variance(x, mean) (or "
                "reduce_mean((x - mean)^2)) of its input over every dim but 1";
    int64_t n = product(shapeOf(x)) / channels;
    auto sums = BatchNormGradSumsOp::create(b, e.loc, op.getMean().getType(),
                                            op.getMean().getType(), g, x,
                                            op.getMean());
    Value sumG = sums.getSumGrad(), dot = sums.getSumGradCentred();
    Value count = e.scalar(sumG, static_cast<double>(n));
    Value proj = e.div(e.mul(e.mul(dot, inv), inv), count);
    Value gradMean = e.div(sumG, count);
    Value coef = e.mul(inv, op.getScale());
    dx.push_back(BatchNormGradInputOp::create(b, e.loc, typeOf(x), g, x,
                                              op.getMean(), gradMean, proj,
                                              coef));
    dx.push_back(e.mul(dot, inv));
    dx.push_back(sumG);
    dx.append({Value(), Value()});
    return success();
  }
  Value s = e.mul(op.getScale(), inv);
  Value sumG = e.reduceSum(g, others, false);
  Value sumGC = e.reduceSum(e.mul(g, e.sub(x, bc(op.getMean()))), others, false);
  dx.push_back(e.mul(g, bc(s)));
  dx.push_back(e.mul(sumGC, inv));
  dx.push_back(sumG);
  dx.push_back(e.neg(e.mul(sumG, s)));
  dx.push_back(e.mul(e.mul(e.mul(sumGC, s), e.mul(inv, inv)), -0.5));
  return success();
}

// v = mean((x - m)^2) per channel over the other dims, n of them:
// dx = 2/n (x - m) dv, dm = -2/n sum(x - m) dv.
LogicalResult buildBatchNormVarianceGradient(BatchNormVarianceOp op,
                                             OpBuilder &b, ArrayRef<Value> dy,
                                             Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value x = op.getInput(), m = op.getMean();
  int64_t rank = typeOf(x).getRank(), channels = shapeOf(x)[1];
  int64_t n = product(shapeOf(x)) / channels;
  SmallVector<int64_t> perChannel(rank - 1, 1);
  perChannel[0] = channels;
  SmallVector<int64_t> others = range(0, rank);
  others.erase(others.begin() + 1);
  Value centred = e.sub(x, e.reshape(m, perChannel));
  Value g = e.mul(dy[0], 2.0 / static_cast<double>(n));
  dx.push_back(e.mul(centred, e.reshape(g, perChannel)));
  dx.push_back(e.neg(e.mul(e.reduceSum(centred, others, false), g)));
  return success();
}

LogicalResult buildGlobalAvgPoolGradient(GlobalAvgPoolOp op, OpBuilder &b,
                                         ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  Value x = op.getInput();
  int64_t n = product(shapeOf(x).drop_front(2));
  dx.push_back(e.expand(e.mul(dy[0], 1.0 / n), shapeOf(x)));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling: backward ops of their own (oneDNN's backward
// primitives on the CPU)
//===----------------------------------------------------------------------===//

// dx = conv2d_backward_data(dy, w), dw = conv2d_backward_weight(x, dy),
// dbias = sum(dy) over N, OH, OW.
LogicalResult buildConv2DGradient(Conv2DOp op, OpBuilder &b, ArrayRef<Value> dy,
                                  Grads &dx) {
  Location loc = op.getLoc();
  Value x = op.getInput(), w = op.getWeight(), g = dy[0];
  dx.push_back(Conv2DBackwardDataOp::create(
      b, loc, x.getType(), g, w, op.getStridesAttr(), op.getPadsAttr(),
      op.getDilationsAttr(), op.getGroupAttr()));
  dx.push_back(Conv2DBackwardWeightOp::create(
      b, loc, w.getType(), x, g, op.getStridesAttr(), op.getPadsAttr(),
      op.getDilationsAttr(), op.getGroupAttr()));
  if (Value bias = op.getBias())
    dx.push_back(Emitter{b, loc}.reshape(
        Emitter{b, loc}.reduceSum(g, {0, 2, 3}, false), shapeOf(bias)));
  return success();
}

// y = conv2d_backward_data(g, w) is the transpose of x -> conv2d(x, w):
// <y, dy> = <g, conv2d(dy, w)>, so d g = conv2d(dy, w) and d w =
// conv2d_backward_weight(dy, g) (dy in the place of the conv's input).
LogicalResult buildConv2DBackwardDataGradient(Conv2DBackwardDataOp op,
                                              OpBuilder &b, ArrayRef<Value> dy,
                                              Grads &dx) {
  Location loc = op.getLoc();
  Value g = op.getGrad(), w = op.getWeight();
  dx.push_back(Conv2DOp::create(b, loc, g.getType(), dy[0], w, Value(),
                                op.getStridesAttr(), op.getPadsAttr(),
                                op.getDilationsAttr(), op.getGroupAttr()));
  dx.push_back(Conv2DBackwardWeightOp::create(
      b, loc, w.getType(), dy[0], g, op.getStridesAttr(), op.getPadsAttr(),
      op.getDilationsAttr(), op.getGroupAttr()));
  return success();
}

LogicalResult buildMaxPoolGradient(MaxPoolOp op, OpBuilder &b,
                                   ArrayRef<Value> dy, Grads &dx) {
  dx.push_back(MaxPoolBackwardOp::create(
      b, op.getLoc(), op.getInput().getType(), op.getInput(), dy[0],
      op.getKernelAttr(), op.getStridesAttr(), op.getPadsAttr(),
      op.getCeilModeAttr()));
  return success();
}

LogicalResult buildAvgPoolGradient(AvgPoolOp op, OpBuilder &b,
                                   ArrayRef<Value> dy, Grads &dx) {
  dx.push_back(AvgPoolBackwardOp::create(
      b, op.getLoc(), op.getInput().getType(), dy[0], op.getKernelAttr(),
      op.getStridesAttr(), op.getPadsAttr(), op.getCountIncludePadAttr(),
      op.getCeilModeAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// d data: dy's slices added into zeros at the rows the indices name
// (tessel.gather_grad, a scatter-add). Indices have none.
LogicalResult buildGatherGradient(GatherOp op, OpBuilder &b, ArrayRef<Value> dy,
                                  Grads &dx) {
  Value data = op.getData();
  if (!isFloat(data)) {
    dx.append({Value(), Value()});
    return success();
  }
  Value g = dy[0];
  // torch.nn.Embedding's padding_idx: the positions that look it up add
  // nothing to the table's gradient (axis 0, verified).
  if (std::optional<int64_t> pad = op.getPaddingIdx()) {
    Emitter e{b, op.getLoc()};
    Value idx = op.getIndices();
    SmallVector<int64_t> shape(shapeOf(idx));
    shape.append(size_t(typeOf(data).getRank() - 1), 1);
    g = e.zeroOrSelect(
        e.reshape(e.cmp(ComparePredicate::EQ, idx, double(*pad)), shape), g);
  }
  dx.push_back(GatherGradOp::create(b, op.getLoc(), typeOf(data), g,
                                    op.getIndices(), op.getAxis()));
  dx.push_back(Value());
  return success();
}

// d data: dy added into zeros at the elements the indices name. Each
// index becomes its element's offset in the flattened data (its own
// position in every dim but `axis`, the index along it), and
// tessel.gather_grad scatter-adds the flattened dy there.
LogicalResult buildGatherElementsGradient(GatherElementsOp op, OpBuilder &b,
                                          ArrayRef<Value> dy, Grads &dx) {
  Value data = op.getData(), idx = op.getIndices();
  if (!isFloat(data)) {
    dx.append({Value(), Value()});
    return success();
  }
  Emitter e{b, op.getLoc()};
  ArrayRef<int64_t> ds = shapeOf(data), is = shapeOf(idx);
  const int64_t rank = ds.size(), axis = op.getAxis();
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 1; d > 0; --d)
    strides[d - 1] = strides[d] * ds[d];
  Type i64 = b.getI64Type();
  Value n = e.cast(idx, i64);
  n = e.select(e.cmp(ComparePredicate::LT, n, 0.0), e.add(n, double(ds[axis])),
               n);
  Value linear = e.mul(n, double(strides[axis]));
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis || is[d] == 1)
      continue;
    SmallVector<int64_t> shape(rank, 1), offsets;
    shape[d] = is[d];
    for (int64_t k = 0; k < is[d]; ++k)
      offsets.push_back(k * strides[d]);
    auto type = RankedTensorType::get(shape, i64);
    linear = e.add(linear, ConstantOp::create(
                               b, e.loc, DenseElementsAttr::get(
                                             type, ArrayRef<int64_t>(offsets))));
  }
  const int64_t count = product(is);
  auto flat = RankedTensorType::get({product(ds)}, typeOf(data).getElementType());
  Value scattered =
      GatherGradOp::create(b, e.loc, flat, e.reshape(dy[0], {count}),
                           e.reshape(linear, {count}), uint64_t(0));
  dx.push_back(e.reshape(scattered, ds));
  dx.push_back(Value());
  return success();
}

LogicalResult buildReshapeGradient(ReshapeOp op, OpBuilder &b,
                                   ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  dx.push_back(e.reshape(dy[0], shapeOf(op.getInput())));
  return success();
}

LogicalResult buildTransposeGradient(TransposeOp op, OpBuilder &b,
                                     ArrayRef<Value> dy, Grads &dx) {
  Emitter e{b, op.getLoc()};
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  dx.push_back(e.transpose(dy[0], inverse));
  return success();
}

// The gradient scattered back into zeros, one dim at a time: a strided dim
// interleaves zeros (reshape [m] -> [m, 1], concat zeros [m, stride - 1],
// reshape [m * stride]), then zeros are concatenated before and after.
LogicalResult buildSliceGradient(SliceOp op, OpBuilder &b, ArrayRef<Value> dy,
                                 Grads &dx) {
  Emitter e{b, op.getLoc()};
  ArrayRef<int64_t> in = shapeOf(op.getInput());
  Value cur = dy[0];
  for (auto [d, size] : llvm::enumerate(in)) {
    int64_t start = op.getStarts()[d], stride = op.getStrides()[d];
    if (shapeOf(cur)[d] == size)
      continue;
    SmallVector<int64_t> shape(shapeOf(cur));
    Type elem = typeOf(cur).getElementType();
    if (stride > 1 && shape[d] > 0) {
      int64_t m = shape[d];
      SmallVector<int64_t> split(shape);
      split[d] = m;
      split.insert(split.begin() + d + 1, 1);
      Value col = e.reshape(cur, split);
      split[d + 1] = stride - 1;
      Value spread = e.concat({col, e.splat(split, elem, 0.0)}, d + 1);
      shape[d] = m * stride;
      cur = e.reshape(spread, shape);
      if (start + shape[d] > size) {
        SmallVector<int64_t> starts(shape.size(), 0), limits(shape),
            strides(shape.size(), 1);
        limits[d] = size - start;
        cur = SliceOp::create(b, e.loc, cur, starts, limits, strides);
        shape[d] = size - start;
      }
    }
    SmallVector<int64_t> before(shape), after(shape);
    before[d] = start;
    after[d] = size - start - shape[d];
    cur = e.concat({e.splat(before, elem, 0.0), cur, e.splat(after, elem, 0.0)}, d);
  }
  dx.push_back(cur);
  return success();
}

LogicalResult buildConcatGradient(ConcatOp op, OpBuilder &b, ArrayRef<Value> dy,
                                  Grads &dx) {
  Emitter e{b, op.getLoc()};
  int64_t dim = op.getDim();
  OperandRange inputs = op.getInputs();
  if (inputs.size() == 1) {
    dx.push_back(dy[0]);
    return success();
  }
  SmallVector<int64_t> sizes, starts;
  bool allPositive = true;
  for (Value v : inputs) {
    starts.push_back(sizes.empty() ? 0 : starts.back() + sizes.back());
    sizes.push_back(shapeOf(v)[dim]);
    allPositive &= sizes.back() > 0;
  }
  if (allPositive) {
    auto split = SplitOp::create(b, e.loc, dy[0], static_cast<uint64_t>(dim), sizes);
    for (auto [v, piece] : llvm::zip(inputs, split.getResults()))
      dx.push_back(isFloat(v) ? piece : Value());
    return success();
  }
  for (auto [i, v] : llvm::enumerate(inputs)) {
    SmallVector<int64_t> lo(typeOf(v).getRank(), 0), hi(shapeOf(dy[0])),
        strides(lo.size(), 1);
    lo[dim] = starts[i];
    hi[dim] = starts[i] + sizes[i];
    dx.push_back(isFloat(v) ? Value(SliceOp::create(b, e.loc, dy[0], lo, hi, strides))
                            : Value());
  }
  return success();
}

// The pieces' gradients concatenated; zeros for pieces that reach no loss.
LogicalResult buildSplitGradient(SplitOp op, OpBuilder &b, ArrayRef<Value> dy,
                                 Grads &dx) {
  Emitter e{b, op.getLoc()};
  SmallVector<Value> pieces;
  for (auto [r, g] : llvm::zip(op.getResults(), dy))
    pieces.push_back(g ? g : e.zerosLike(typeOf(r)));
  dx.push_back(e.concat(pieces, op.getDim()));
  return success();
}

LogicalResult buildExpandGradient(ExpandOp op, OpBuilder &b, ArrayRef<Value> dy,
                                  Grads &dx) {
  Emitter e{b, op.getLoc()};
  dx.push_back(e.sumTo(dy[0], op.getInput()));
  return success();
}

} // namespace mlir::tessel
