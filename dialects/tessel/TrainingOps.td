//===- TrainingOps.td - ops the training step builds -------*- tablegen -*-===//
//
// Ops that only the backward program and the optimizer create: fused forms
// of what the gradient rules and -tessel-optimizer would otherwise compose
// from several ops, each with one kernel that makes one pass over memory.
// Included by TesselOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef TESSEL_TRAINING_OPS_TD
#define TESSEL_TRAINING_OPS_TD

//===----------------------------------------------------------------------===//
// Backward kernels
//===----------------------------------------------------------------------===//

def Tessel_GatherGradOp : Tessel_ComputeOp<"gather_grad", "buildGatherGradRule">,
    Tessel_Instruction<120, "gather_grad", [Tessel_RtAttr<"axis">]> {
  let summary = "The gradient of a gather: a scatter-add (embedding backward)";
  let description = [{
    The gradient of `tessel.gather %data[%indices] axis = a` with respect to
    `data`: zeros of `data`'s shape into which each slice of `grad` is added
    at the row its index names, `result[pre, indices[n], post] +=
    grad[pre, n, post]` (a negative index counts from the end, as in the
    gather). Indices repeat, so rows sum. An index out of range is an error
    at run time naming it. Sharding the indices' dims makes the result
    partial (sum).

    ```mlir
    %dw = tessel.gather_grad %dy, %ids axis = 0 : (tensor<2x128x768xf32>, tensor<2x128xi64>) -> tensor<50257x768xf32>
    ```

    **Constraints**

    * (C1) `axis` is in [0, rank(result)).
    * (C2) `grad`'s shape is `result[:axis] ++ indices ++ result[axis+1:]`;
      same element type as the result.
  }];
  let arguments = (ins Tessel_FloatTensor:$grad, Tessel_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Tessel_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $grad `,` $indices `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_GeluGradOp : Tessel_ComputeOp<"gelu_grad", "buildElementwiseRule",
                                         [Tessel_Elementwise, Tessel_ZeroPreserving]>,
    Tessel_Instruction<123, "binary", [Tessel_RtAttr<"tanh_approximation">]> {
  let summary = "The gradient of GELU: `grad * gelu'(input)`";
  let description = [{
    One pass for what the rule of `tessel.gelu` would compose from a dozen
    elementwise ops: erf form `Phi(x) + x phi(x)`; with
    `tanh_approximation`, with `u = k (x + c x^3)`,
    `1/2 (1 + tanh u) + x (1 - tanh^2 u) (k/2 + 3/2 k c x^2)`.

    ```mlir
    %dx = tessel.gelu_grad %x, %dy {tanh_approximation} : (tensor<128x3072xf32>, tensor<128x3072xf32>) -> tensor<128x3072xf32>
    ```

    **Constraints**

    * (C1) `input`, `grad` and the result have the same type.
  }];
  let arguments = (ins Tessel_FloatTensor:$input, Tessel_FloatTensor:$grad,
                       UnitAttr:$tanh_approximation);
  let results = (outs Tessel_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `,` $grad attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_LogSoftmaxGradOp : Tessel_ComputeOp<"log_softmax_grad",
                                               "buildSoftmaxGradRule">,
    Tessel_Instruction<124, "softmax_grad", [Tessel_RtAttr<"axis">]> {
  let summary = "The gradient of log-softmax: `grad - exp(output) sum(grad)`";
  let description = [{
    With `output` the log-softmax's result and `grad` its gradient, the
    gradient of its input, the sum over `axis`; one pass per row.

    ```mlir
    %dx = tessel.log_softmax_grad %y, %dy axis = 1 : (tensor<128x50257xf32>, tensor<128x50257xf32>) -> tensor<128x50257xf32>
    ```

    **Constraints**

    * (C1) `axis` is in [0, rank).
    * (C2) `output`, `grad` and the result have the same type.
  }];
  let arguments = (ins Tessel_FloatTensor:$output, Tessel_FloatTensor:$grad,
                       I64Attr:$axis);
  let results = (outs Tessel_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $output `,` $grad `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_AttentionGradOp : Tessel_ComputeOp<"attention_grad",
                                              "buildAttentionGradRule",
                                              [AttrSizedOperandSegments,
                                               InferTypeOpAdaptor]>,
    Tessel_CostClassIs<"AttentionBackward">,
    Tessel_Instruction<125, "attention", [Tessel_RtAttr<"scale">,
        Tessel_RtAttr<"has_mask", "$_op.getMask() ? 1 : 0", "int">,
        Tessel_RtAttr<"has_nan_fill", "$_op.getNanFill() ? 1 : 0", "int">,
        Tessel_RtAttr<"has_masked_score", "$_op.getMaskedScore() ? 1 : 0", "int">,
        Tessel_RtAttr<"masked_score",
                      "$_op.getMaskedScore().value_or(::llvm::APFloat(0.0f))",
                      "float">,
        Tessel_RtAttr<"has_keep", "$_op.getKeep() ? 1 : 0", "int">]> {
  let summary = "The gradient of `tessel.attention`, recomputing the scores";
  let description = [{
    With the forward's operands, its `result` and `lse` and the result's
    gradient `grad`, the gradients of `q`, `kt` and `v`. The probabilities
    are recomputed a block of rows at a time as `exp(scale * q kt + mask -
    lse)`; with `dp = grad v^T` and `delta = rowsum(grad * result)`, `ds =
    p (dp - delta)`, `dq = scale ds kt^T`, `dkt = scale q^T ds`, `dv = p^T
    grad` (FlashAttention-2's backward). With `nan_fill`, a row whose
    softmax was NaN (its `lse` is not finite) had every probability `fill`:
    it adds `fill * grad` to every row of dv and nothing to dq and dkt.
    With `masked_score` c, a score whose mask is -inf was c: its
    probability exp(c - lse) adds to dv, and its ds is 0 (a constant).
    With `keep`, a score whose `keep` is false was `c + mask`: its ds is 0.

    ```mlir
    %dq, %dkt, %dv = tessel.attention_grad %q, %kt, %v, %o, %lse, %do mask %m : (tensor<2x4x128x64xf32>, tensor<2x4x64x128xf32>, tensor<2x4x128x64xf32>, tensor<2x4x128x64xf32>, tensor<2x4x128xf32>, tensor<2x4x128x64xf32>, tensor<1x1x128x128xf32>) -> (tensor<2x4x128x64xf32>, tensor<2x4x64x128xf32>, tensor<2x4x128x64xf32>)
    ```

    **Constraints**

    * (C1) `q`, `kt`, `v`, `mask`, `nan_fill`, `keep`, `masked_score` as
      in `tessel.attention`;
      `result` and `grad` have its result's type, `lse` its lse's.
    * (C2) the results have the types of `q`, `kt` and `v`.
  }];
  let arguments = (ins Tessel_FloatTensor:$q, Tessel_FloatTensor:$kt,
                       Tessel_FloatTensor:$v, Tessel_FloatTensor:$result,
                       Tessel_FloatTensor:$lse, Tessel_FloatTensor:$grad,
                       Optional<Tessel_FloatTensor>:$mask,
                       Optional<Tessel_FloatTensor>:$nan_fill,
                       Optional<Tessel_BoolTensor>:$keep,
                       DefaultValuedAttr<F32Attr, "1.0f">:$scale,
                       OptionalAttr<F32Attr>:$masked_score);
  let results = (outs Tessel_FloatTensor:$dq, Tessel_FloatTensor:$dkt,
                      Tessel_FloatTensor:$dv);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $q `,` $kt `,` $v `,` $result `,` $lse `,` $grad (`mask` $mask^)? (`nan_fill` $nan_fill^)? (`keep` $keep^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_ReluGradOp : Tessel_ComputeOp<"relu_grad", "buildElementwiseRule",
                                         [Tessel_Elementwise, Tessel_ZeroPreserving]>,
    Tessel_Instruction<140, "binary"> {
  let summary = "The gradient of ReLU: `grad` where `output > 0`, else 0";
  let description = [{
    One pass for the `compare` and `where` that the rule of `tessel.relu`
    would compose. It reads the ReLU's result rather than its input, as
    PyTorch's `threshold_backward` does (`output > 0` exactly when
    `input > 0`): the result is what the next layer reads anyway, so the
    backward keeps no extra activation alive.

    ```mlir
    %dx = tessel.relu_grad %y, %dy : (tensor<8x64x56x56xf32>, tensor<8x64x56x56xf32>) -> tensor<8x64x56x56xf32>
    ```

    **Constraints**

    * (C1) `output`, `grad` and the result have the same type.
  }];
  let arguments = (ins Tessel_FloatTensor:$output, Tessel_FloatTensor:$grad);
  let results = (outs Tessel_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $output `,` $grad attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_BatchNormGradSumsOp
    : Tessel_ComputeOp<"batch_norm_grad_sums", "buildChannelReduceRule">,
    Tessel_Instruction<141, "batch_norm_train"> {
  let summary = "The per-channel sums of BatchNorm's training-mode backward";
  let description = [{
    With `x` [N, C, ...] and `grad` its gradient, per channel `c` (dim 1),
    the sums over every other dim of `grad` and of `grad (x - mean[c])`:
    PyTorch's `batch_norm_backward_reduce` (`sum_dy`, `sum_dy_xmu`), both in
    one pass over `grad` and `x`. The gradient rule of a `tessel.batch_norm`
    with `batch_stats` emits it; sharding a reduced dim (the batch over dp)
    makes both results partial sums, whose all_reduce is SyncBN's.

    ```mlir
    %sg, %sgc = tessel.batch_norm_grad_sums %dy, %x, %mean : (tensor<8x64x56x56xf32>, tensor<8x64x56x56xf32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>)
    ```

    **Constraints**

    * (C1) `grad` has rank at least 2; `input` has its type.
    * (C2) `mean` and both results are [C], of `grad`'s element type.
  }];
  let arguments = (ins Tessel_FloatTensor:$grad, Tessel_FloatTensor:$input,
                       Tessel_FloatTensor:$mean);
  let results = (outs Tessel_FloatTensor:$sum_grad,
                      Tessel_FloatTensor:$sum_grad_centred);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $grad `,` $input `,` $mean attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_BatchNormGradInputOp
    : Tessel_ComputeOp<"batch_norm_grad_input", "buildChannelwiseRule">,
    Tessel_Instruction<142, "batch_norm_train"> {
  let summary = "BatchNorm's training-mode input gradient, per element";
  let description = [{
    `(grad - grad_mean[c] - (x - mean[c]) proj[c]) coef[c]` with `x`
    [N, C, ...] and `c` its channel (dim 1), in one pass: PyTorch's
    `batch_norm_backward_elemt` in its CPU kernel's order of operations.
    The per-channel coefficients come from `tessel.batch_norm_grad_sums`
    by small ops on [C] tensors (`grad_mean = sum_grad / n`, `proj =
    sum_grad_centred invstd^2 / n`, `coef = invstd scale`, `n` the count of
    every dim but 1).

    ```mlir
    %dx = tessel.batch_norm_grad_input %dy, %x, %mean, %gm, %proj, %coef : (tensor<8x64x56x56xf32>, tensor<8x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<8x64x56x56xf32>
    ```

    **Constraints**

    * (C1) `grad` has rank at least 2; `input` and the result have its type.
    * (C2) `mean`, `grad_mean`, `proj` and `coef` are [C], of `grad`'s
      element type.
  }];
  let arguments = (ins Tessel_FloatTensor:$grad, Tessel_FloatTensor:$input,
                       Tessel_FloatTensor:$mean, Tessel_FloatTensor:$grad_mean,
                       Tessel_FloatTensor:$proj, Tessel_FloatTensor:$coef);
  let results = (outs Tessel_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $grad `,` $input `,` $mean `,` $grad_mean `,` $proj `,` $coef attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Forward kernels
//===----------------------------------------------------------------------===//

def Tessel_BatchNormVarianceOp
    : Tessel_ComputeOp<"batch_norm_variance", "buildChannelReduceRule", [],
                       "Mean">,
    Tessel_Instruction<143, "batch_norm_train">,
    Tessel_GradientFrom<"buildBatchNormVarianceGradient"> {
  let summary = "The biased batch variance per channel about a given mean";
  let description = [{
    With `x` [N, C, ...], per channel `c` (dim 1), the mean over every
    other dim of `(x - mean[c])^2`: the second of PyTorch's two passes
    (`reduce_mean((x - mean)^2)`) in one pass over `x`, without the
    centred and squared tensors. `-tessel-batch-norm-train` builds the
    batch statistics with it. Sharding a reduced dim (the batch over dp)
    makes the result a partial mean, all-reduced by propagation (SyncBN).

    ```mlir
    %var = tessel.batch_norm_variance %x, %mean : (tensor<8x64x56x56xf32>, tensor<64xf32>) -> tensor<64xf32>
    ```

    **Constraints**

    * (C1) `input` has rank at least 2.
    * (C2) `mean` and the result are [C], of `input`'s element type.
  }];
  let arguments = (ins Tessel_FloatTensor:$input, Tessel_FloatTensor:$mean);
  let results = (outs Tessel_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `,` $mean attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

def Tessel_AdamUpdateOp : Tessel_ComputeOp<"adam_update", "buildElementwiseRule",
                                           [Tessel_Elementwise]>,
    Tessel_Instruction<121, "optimizer_update", [Tessel_RtAttr<"beta1">,
        Tessel_RtAttr<"beta2">, Tessel_RtAttr<"eps">,
        Tessel_RtAttr<"weight_decay">]> {
  let summary = "One Adam / AdamW update of a parameter and its state, fused";
  let description = [{
    PyTorch 2's single-tensor Adam(W) step on the CPU, operation for
    operation, per element: `g = fma(param, weight_decay, grad)` (Adam's
    L2 term, `grad.add(param, alpha=wd)`; 0 for AdamW); `p = param decay`
    (AdamW's decoupled decay factor, `1 - lr wd`; 1 for Adam); `m =
    fma(1 - beta1, g - exp_avg, exp_avg)` (`lerp_`); `v = exp_avg_sq beta2
    + ((1 - beta2) g) g` (`addcmul_`); `denom = sqrt(v) / sqrt_bc2 + eps`;
    results `p + ((-step_size) m) / denom` (`addcdiv_`), `m`, `v`. Each
    operation rounds once; `1 - beta` is PyTorch's, from the decimal the
    f32 attribute was (`1 - 0.999` in double, rounded once). `step_size`
    (`lr / (1 - beta1^t)`), `sqrt_bc2` (`sqrt(1 - beta2^t)`) and `decay`
    are scalars of the step, which -tessel-optimizer computes in double
    per step count, as PyTorch's Python floats are. The exporter writes
    the results into the state buffers of the weights they are assigned to
    when nothing reads those weights later: the update is then in place.

    ```mlir
    %p1, %m1, %v1 = tessel.adam_update %p, %g, %m, %v, %ss, %bc, %d {beta1 = 0.9 : f32, beta2 = 0.999 : f32, eps = 1.0e-08 : f32, weight_decay = 0.0 : f32} : (tensor<768xf32>, tensor<768xf32>, tensor<768xf32>, tensor<768xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<768xf32>, tensor<768xf32>, tensor<768xf32>)
    ```

    **Constraints**

    * (C1) `param`, `grad`, `exp_avg`, `exp_avg_sq` and the three results
      have one type, f32.
    * (C2) `step_size`, `sqrt_bc2` and `decay` are f32 scalars (rank 0).
  }];
  let arguments = (ins Tessel_FloatTensor:$param, Tessel_FloatTensor:$grad,
                       Tessel_FloatTensor:$exp_avg, Tessel_FloatTensor:$exp_avg_sq,
                       Tessel_FloatTensor:$step_size, Tessel_FloatTensor:$sqrt_bc2,
                       Tessel_FloatTensor:$decay,
                       F32Attr:$beta1, F32Attr:$beta2, F32Attr:$eps,
                       DefaultValuedAttr<F32Attr, "0.0f">:$weight_decay);
  let results = (outs Tessel_FloatTensor:$new_param,
                      Tessel_FloatTensor:$new_exp_avg,
                      Tessel_FloatTensor:$new_exp_avg_sq);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step_size `,` $sqrt_bc2 `,` $decay attr-dict `:` functional-type(operands, results)
  }];
}

def Tessel_SgdUpdateOp : Tessel_ComputeOp<"sgd_update", "buildElementwiseRule",
                                          [Tessel_Elementwise]>,
    Tessel_Instruction<122, "optimizer_update", [Tessel_RtAttr<"momentum">,
        Tessel_RtAttr<"weight_decay">, Tessel_RtAttr<"nesterov">]> {
  let summary = "One SGD-with-momentum update of a parameter, fused";
  let description = [{
    PyTorch's single-tensor SGD step with momentum, per element: `d =
    fma(param, weight_decay, grad)`; `b = momentum_buffer momentum + d`;
    `d = b`, or `fma(b, momentum, d)` with `nesterov`; results `fma(d, -lr,
    param)` (`add_` with alpha) and `b`. `lr`
    is a scalar computed in the step (the schedule's). In place like
    `tessel.adam_update`.

    ```mlir
    %p1, %b1 = tessel.sgd_update %p, %g, %b, %lr {momentum = 0.9 : f32, weight_decay = 0.0 : f32} : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<f32>) -> (tensor<64xf32>, tensor<64xf32>)
    ```

    **Constraints**

    * (C1) `param`, `grad`, `momentum_buffer` and the two results have one
      type, f32.
    * (C2) `lr` is an f32 scalar (rank 0).
  }];
  let arguments = (ins Tessel_FloatTensor:$param, Tessel_FloatTensor:$grad,
                       Tessel_FloatTensor:$momentum_buffer, Tessel_FloatTensor:$lr,
                       F32Attr:$momentum,
                       DefaultValuedAttr<F32Attr, "0.0f">:$weight_decay,
                       UnitAttr:$nesterov);
  let results = (outs Tessel_FloatTensor:$new_param,
                      Tessel_FloatTensor:$new_momentum_buffer);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer `,` $lr attr-dict `:` functional-type(operands, results)
  }];
}


//===----------------------------------------------------------------------===//
// Mixed precision
//===----------------------------------------------------------------------===//

def Tessel_RoundFloatOp : Tessel_ComputeOp<"round_float", "buildElementwiseRule",
                                           [SameOperandsAndResultType, Tessel_Elementwise]>,
    Tessel_Instruction<150, "unary", [Tessel_RtAttr<"exponent_bits">,
                                      Tessel_RtAttr<"mantissa_bits">]>,
    Tessel_GradientFrom<"buildRoundFloatGradient"> {
  let summary = "Rounds f32 values to a narrower float format, kept in f32";
  let description = [{
    Each element rounded to the nearest value of the IEEE-style binary
    format with `exponent_bits` exponent and `mantissa_bits` stored mantissa
    bits (bf16: 8 and 7; fp16: 5 and 10), ties to even, with that format's
    subnormals, and beyond its largest finite value infinity (fp16: from
    65520 on); NaN and infinities stay. The result is that format's value
    held in f32: `-tessel-mixed-precision` puts it where autocast computes
    in bf16 or fp16 (a GEMM's operands and result), so the step has their
    rounding and overflow. Its gradient rounds `dy` the same way (the
    backward of the low-precision op is low-precision too).

    ```mlir
    %1 = tessel.round_float %0 {exponent_bits = 8 : i64, mantissa_bits = 7 : i64} : tensor<4x8xf32>
    ```

    **Constraints**

    * (C1) operand and result have the same type.
    * (C2) `exponent_bits` in [2, 8], `mantissa_bits` in [0, 23].
  }];
  let arguments = (ins Tessel_FloatTensor:$input, I64Attr:$exponent_bits,
                       I64Attr:$mantissa_bits);
  let results = (outs Tessel_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

#endif // TESSEL_TRAINING_OPS_TD
