//===- FuseElementwise.cpp - elementwise trees -> tessel.fused_elementwise ===//
//
// Last in the compile, on the program the artifact holds: each tree of f32
// unary and binary elementwise ops (dialects/tessel/FusedElementwise.h),
// and casts between f32, bf16 and f16, whose inner values have one reader
// each and the root's shape becomes one tessel.fused_elementwise at the
// root, so that its kernel reads each input once and writes the result
// once (docs/fusion.md). A cast widening a half to f32 joins every tree
// that reads it, whatever its readers (in the kernel it is the half's load):
// -tessel-float-normalization widens a half read by several ops once, and
// each of their trees then reads the half itself. An op joins its reader's
// tree only when nothing between the two may write memory (an assign, an
// optimizer update, a collective, a send or receive): moving its reads to
// the root must not let them see a later value.
//
//===----------------------------------------------------------------------===//

#include "dialects/tessel/FusedElementwise.h"
#include "tessel/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "tessel/Transforms/Passes.h.inc"

namespace {

/// The most instructions one fused op computes (its kernels keep a block of
/// every value); a round_float is two.
constexpr size_t kMaxInstructions = 32;
/// How far apart (in ops) a tree's member may be from its reader.
constexpr int kMaxDistance = 256;

bool isF32Tensor(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && rt.hasStaticShape() && rt.getElementType().isF32();
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// A cast between two of f32, bf16 and f16.
bool isFusableCast(Operation *op) {
  if (!isa_and_nonnull<TesselDialect>(op->getDialect()) ||
      op->getName().stripDialect() != "cast" || op->getNumOperands() != 1 ||
      op->getNumResults() != 1 || !op->getAttrs().empty())
    return false;
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  return in && out && in.hasStaticShape() && in.getShape() == out.getShape() &&
         fusedCastCode(in.getElementType()) >= 0 &&
         fusedCastCode(out.getElementType()) >= 0 &&
         in.getElementType() != out.getElementType();
}

/// A cast of a bf16 or f16 value to f32: exact, and in a fused kernel only
/// the load of the half.
bool isWidening(Operation *op) {
  return isFusableCast(op) && isF32Tensor(op->getResult(0).getType());
}

/// A widening cast of a half GEMM's result. Nothing writes a GEMM's result
/// buffer while it is live (a half value is widened before any collective
/// sums it), so the cast's read may move to a reader any distance away: a
/// tied table's gradient, widened for the sum with the embedding's, is read
/// a whole backward later.
bool widensGemmResult(Operation *op) {
  return isWidening(op) &&
         isa_and_nonnull<MatmulOp, GemmOp>(op->getOperand(0).getDefiningOp());
}

/// For a round_float of f32 to bf16 (8 exponent, 7 mantissa bits) or fp16
/// (5, 10): the cast code of that half (1 or 2), else -1. In a program it
/// is a cast to the half and one back to f32, the same rounding (a NaN
/// keeps its sign, not its payload). It joins a tree below its root only:
/// a round_float that GEMMs read stays for -tessel-mark-bf16-operands and
/// the CPU's bf16 copies (docs/training.md, "Mixed precision").
int roundedHalfCode(Operation *op) {
  if (!isa_and_nonnull<TesselDialect>(op->getDialect()) ||
      op->getName().stripDialect() != "round_float" ||
      op->getNumOperands() != 1 || op->getNumResults() != 1 ||
      !isF32Tensor(op->getResult(0).getType()) ||
      op->getOperand(0).getType() != op->getResult(0).getType())
    return -1;
  auto e = op->getAttrOfType<IntegerAttr>("exponent_bits");
  auto m = op->getAttrOfType<IntegerAttr>("mantissa_bits");
  if (!e || !m)
    return -1;
  if (e.getInt() == 8 && m.getInt() == 7)
    return 1;
  if (e.getInt() == 5 && m.getInt() == 10)
    return 2;
  return -1;
}

/// An op the tree may hold: a fusable elementwise op of f32 with no
/// attribute but gelu's form.
bool isFusable(Operation *op) {
  if (isFusableCast(op))
    return true;
  if (!isa_and_nonnull<TesselDialect>(op->getDialect()))
    return false;
  const int arity = fusableArity(op->getName().stripDialect());
  if (!arity || static_cast<int>(op->getNumOperands()) != arity ||
      op->getNumResults() != 1 || !isF32Tensor(op->getResult(0).getType()))
    return false;
  for (NamedAttribute a : op->getAttrs())
    if (a.getName() != "tanh_approximation")
      return false;
  auto out = cast<RankedTensorType>(op->getResult(0).getType()).getShape();
  return llvm::all_of(op->getOperands(), [&](Value v) {
    return isF32Tensor(v.getType()) &&
           fitsFusedInput(cast<RankedTensorType>(v.getType()).getShape(), out);
  });
}

/// An op that may write memory a tree's input lives in.
bool mayWrite(Operation *op) {
  StringRef name = op->getName().stripDialect();
  return !isPure(op) || name.ends_with("_update") ||
         op->hasTrait<OpTrait::tessel::Collective>() || name == "send" ||
         name == "recv" || name == "wait" || name == "custom_call";
}

/// Whether no op between `from` and `to` (same block, from before to) may
/// write memory, within kMaxDistance ops.
bool quietBetween(Operation *from, Operation *to) {
  int n = 0;
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (++n > kMaxDistance || mayWrite(op))
      return false;
  return true;
}

void fuseBlock(Block &block) {
  DenseSet<Operation *> absorbed;
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  for (Operation *root : llvm::reverse(ops)) {
    if (absorbed.contains(root) || !isFusable(root))
      continue;
    auto shape = cast<RankedTensorType>(root->getResult(0).getType());
    // The tree: operands' producers with one reader, in the block, of the
    // root's shape; widening casts whatever their readers and of any shape
    // that may feed the root.
    SmallVector<Operation *> members{root};
    size_t instructions = 1;
    for (size_t i = 0; i < members.size() && instructions < kMaxInstructions;
         ++i)
      for (Value v : members[i]->getOperands()) {
        Operation *p = v.getDefiningOp();
        if (!p || p->getBlock() != &block || absorbed.contains(p) ||
            llvm::is_contained(members, p))
          continue;
        const size_t cost = roundedHalfCode(p) >= 0 ? 2 : 1;
        const bool joins =
            isWidening(p)
                ? fitsFusedInput(shapeOf(v), shape.getShape())
                : v.hasOneUse() && shapeOf(v) == shape.getShape() &&
                      (isFusable(p) || cost == 2);
        if (joins && instructions + cost <= kMaxInstructions &&
            (widensGemmResult(p) || quietBetween(p, root))) {
          members.push_back(p);
          instructions += cost;
        }
      }
    if (members.size() < 2)
      continue;
    llvm::sort(members, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    DenseSet<Operation *> inTree(members.begin(), members.end());
    SmallVector<Value> inputs;
    DenseMap<Value, int64_t> slot;
    for (Operation *m : members)
      for (Value v : m->getOperands())
        if (!inTree.contains(v.getDefiningOp()) && !slot.count(v)) {
          slot[v] = inputs.size();
          inputs.push_back(v);
        }
    OpBuilder b(root);
    SmallVector<Attribute> names;
    SmallVector<int64_t> args;
    SmallVector<Location> locs;
    int64_t next = inputs.size(); // the next instruction's value
    auto emit = [&](StringRef name, int64_t a, int64_t b2, int64_t flag) {
      names.push_back(b.getStringAttr(name));
      args.append({a, b2, flag});
      return next++;
    };
    for (Operation *m : members) {
      const int64_t a = slot.lookup(m->getOperand(0));
      const int64_t b2 =
          m->getNumOperands() > 1 ? slot.lookup(m->getOperand(1)) : -1;
      int64_t value;
      if (int half = roundedHalfCode(m); half >= 0)
        value = emit("cast", emit("cast", a, -1, half), -1, 0);
      else if (isFusableCast(m))
        value = emit("cast", a, -1,
                     fusedCastCode(getElementTypeOrSelf(m->getResult(0))));
      else
        value = emit(m->getName().stripDialect(), a, b2,
                     m->hasAttr("tanh_approximation") ? 1 : 0);
      slot[m->getResult(0)] = value;
      locs.push_back(m->getLoc());
    }
    auto fused = FusedElementwiseOp::create(
        b, b.getFusedLoc(locs), shape, inputs, b.getArrayAttr(names),
        b.getDenseI64ArrayAttr(args));
    root->getResult(0).replaceAllUsesWith(fused.getResult());
    // A widening cast that other ops still read stays for them.
    for (Operation *m : llvm::reverse(members))
      if (m->use_empty()) {
        absorbed.insert(m);
        m->erase();
      }
  }
}

struct FuseElementwisePass
    : public impl::FuseElementwisePassBase<FuseElementwisePass> {
  using Base::Base;
  void runOnOperation() final {
    getOperation()->walk([](func::FuncOp fn) {
      for (Block &block : fn.getBody())
        fuseBlock(block);
    });
  }
};

} // namespace
} // namespace mlir::tessel
