// RUN: tessel-opt %s -tessel-fuse-attention | FileCheck %s

// torch.onnx.export's default exporter (opset 18+): q and kt each scaled by
// sqrt(scale) beforehand, a folded causal mask [B, 1, S, T], the IsNaN
// guard (p != p) whose fill is a scalar weight.
// CHECK-LABEL: func.func @dynamo_sdpa
// CHECK: %[[Q:.*]] = tessel.mul %q
// CHECK: %[[K:.*]] = tessel.mul %kt
// CHECK-NEXT: %[[M:.*]] = tessel.weight "val_195"
// CHECK-NEXT: %[[F:.*]] = tessel.weight "val_193"
// CHECK-NEXT: %[[O:.*]], %{{.*}} = tessel.attention %[[Q]], %[[K]], %v mask %[[M]] nan_fill %[[F]] : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>, tensor<2x1x16x16xf32>, tensor<f32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
// CHECK-NEXT: return %[[O]]
// CHECK-NOT: tessel.softmax
func.func @dynamo_sdpa(%q: tensor<2x4x16x8xf32>, %kt: tensor<2x4x8x16xf32>, %v: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %c = tessel.weight "val_189" : tensor<f32>
  %0 = tessel.mul %q, %c : (tensor<2x4x16x8xf32>, tensor<f32>) -> tensor<2x4x16x8xf32>
  %1 = tessel.mul %kt, %c : (tensor<2x4x8x16xf32>, tensor<f32>) -> tensor<2x4x8x16xf32>
  %2 = tessel.matmul %0, %1 : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  %m = tessel.weight "val_195" : tensor<2x1x16x16xf32>
  %3 = tessel.add %2, %m : (tensor<2x4x16x16xf32>, tensor<2x1x16x16xf32>) -> tensor<2x4x16x16xf32>
  %4 = tessel.softmax %3 axis = 3 : tensor<2x4x16x16xf32>
  %5 = tessel.compare ne, %4, %4 : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xi1>
  %z = tessel.weight "val_193" : tensor<f32>
  %6 = tessel.where %5, %z, %4 : (tensor<2x4x16x16xi1>, tensor<f32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %7 = tessel.matmul %6, %v : (tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>
  return %7 : tensor<2x4x16x8xf32>
}

// The TorchScript exporter and transformers' eager attention: the product
// divided by a constant, the mask [S, T] added on the left, no guard, keys
// and queries of different lengths.
// CHECK-LABEL: func.func @legacy_div_scale
// CHECK-NEXT: %[[O:.*]], %{{.*}} = tessel.attention %q, %kt, %v mask %m {scale = 2.500000e-01 : f32} : (tensor<3x5x8xf32>, tensor<3x8x7xf32>, tensor<3x7x6xf32>, tensor<5x7xf32>) -> (tensor<3x5x6xf32>, tensor<3x5xf32>)
// CHECK-NEXT: return %[[O]]
func.func @legacy_div_scale(%q: tensor<3x5x8xf32>, %kt: tensor<3x8x7xf32>, %v: tensor<3x7x6xf32>, %m: tensor<5x7xf32>) -> tensor<3x5x6xf32> {
  %0 = tessel.matmul %q, %kt : (tensor<3x5x8xf32>, tensor<3x8x7xf32>) -> tensor<3x5x7xf32>
  %c = tessel.constant dense<4.0> : tensor<f32>
  %1 = tessel.div %0, %c : (tensor<3x5x7xf32>, tensor<f32>) -> tensor<3x5x7xf32>
  %2 = tessel.add %m, %1 : (tensor<5x7xf32>, tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  %3 = tessel.softmax %2 axis = 2 : tensor<3x5x7xf32>
  %4 = tessel.matmul %3, %v : (tensor<3x5x7xf32>, tensor<3x7x6xf32>) -> tensor<3x5x6xf32>
  return %4 : tensor<3x5x6xf32>
}

// No mask, a constant scale multiplied on the left.
// CHECK-LABEL: func.func @unmasked
// CHECK-NEXT: %[[O:.*]], %{{.*}} = tessel.attention %q, %kt, %v {scale = 1.250000e-01 : f32}
// CHECK-NEXT: return %[[O]]
func.func @unmasked(%q: tensor<4x6x8xf32>, %kt: tensor<4x8x6xf32>, %v: tensor<4x6x8xf32>) -> tensor<4x6x8xf32> {
  %0 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %c = tessel.constant dense<0.125> : tensor<f32>
  %1 = tessel.mul %c, %0 : (tensor<f32>, tensor<4x6x6xf32>) -> tensor<4x6x6xf32>
  %2 = tessel.softmax %1 axis = 2 : tensor<4x6x6xf32>
  %3 = tessel.matmul %2, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  return %3 : tensor<4x6x8xf32>
}

// Tessel's import of ONNX's Attention (opset 23): a bool mask made additive
// (-inf), and the rows whose every key the mask hides set to 0 by a guard
// on the mask's row max: the fill is that 0.
// CHECK-LABEL: func.func @onnx_attention
// CHECK: %[[B:.*]] = tessel.where %m
// CHECK: %[[Z:.*]] = tessel.constant dense<0.000000e+00>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = tessel.attention %q, %kt, %v mask %[[B]] nan_fill %[[Z]] : (tensor<2x4x5x8xf32>, tensor<2x4x8x6xf32>, tensor<2x4x6x8xf32>, tensor<2x1x5x6xf32>, tensor<f32>) -> (tensor<2x4x5x8xf32>, tensor<2x4x5xf32>)
// CHECK-NEXT: return %[[O]]
// CHECK-NOT: tessel.reduce_max
func.func @onnx_attention(%q: tensor<2x4x5x8xf32>, %kt: tensor<2x4x8x6xf32>, %v: tensor<2x4x6x8xf32>, %m: tensor<2x1x5x6xi1>) -> tensor<2x4x5x8xf32> {
  %0 = tessel.matmul %q, %kt : (tensor<2x4x5x8xf32>, tensor<2x4x8x6xf32>) -> tensor<2x4x5x6xf32>
  %inf = tessel.constant dense<0xFF800000> : tensor<f32>
  %zero = tessel.constant dense<0.0> : tensor<f32>
  %b = tessel.where %m, %zero, %inf : (tensor<2x1x5x6xi1>, tensor<f32>, tensor<f32>) -> tensor<2x1x5x6xf32>
  %1 = tessel.add %0, %b : (tensor<2x4x5x6xf32>, tensor<2x1x5x6xf32>) -> tensor<2x4x5x6xf32>
  %2 = tessel.softmax %1 axis = 3 : tensor<2x4x5x6xf32>
  %3 = tessel.reduce_max %b dims = [3] keep_dims : (tensor<2x1x5x6xf32>) -> tensor<2x1x5x1xf32>
  %4 = tessel.compare eq, %3, %inf : (tensor<2x1x5x1xf32>, tensor<f32>) -> tensor<2x1x5x1xi1>
  %z2 = tessel.constant dense<0.0> : tensor<f32>
  %5 = tessel.where %4, %z2, %2 : (tensor<2x1x5x1xi1>, tensor<f32>, tensor<2x4x5x6xf32>) -> tensor<2x4x5x6xf32>
  %6 = tessel.matmul %5, %v : (tensor<2x4x5x6xf32>, tensor<2x4x6x8xf32>) -> tensor<2x4x5x8xf32>
  return %6 : tensor<2x4x5x8xf32>
}

// transformers' GPT-2 before 4.26 as torch 1.13 exported it
// (test/models/gpt2_deep): the product divided, then where(hide, -1e4, s)
// with the bool mask folded. The mask becomes where(hide, -inf, 0) and the
// fill the op's masked_score, which replaces the hidden scores.
// CHECK-LABEL: func.func @gpt2_masked_bias
// CHECK-DAG: %[[Z:.*]] = tessel.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[INF:.*]] = tessel.constant dense<0xFF800000> : tensor<f32>
// CHECK: %[[M:.*]] = tessel.where %hide, %[[INF]], %[[Z]] : (tensor<1x1x6x6xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x6x6xf32>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = tessel.attention %q, %kt, %v mask %[[M]] {masked_score = -1.000000e+04 : f32, scale = 0.176776{{[0-9]*}} : f32} : (tensor<2x4x6x8xf32>, tensor<2x4x8x6xf32>, tensor<2x4x6x8xf32>, tensor<1x1x6x6xf32>) -> (tensor<2x4x6x8xf32>, tensor<2x4x6xf32>)
// CHECK-NEXT: return %[[O]]
// CHECK-NOT: tessel.softmax
func.func @gpt2_masked_bias(%q: tensor<2x4x6x8xf32>, %kt: tensor<2x4x8x6xf32>, %v: tensor<2x4x6x8xf32>, %hide: tensor<1x1x6x6xi1>) -> tensor<2x4x6x8xf32> {
  %0 = tessel.matmul %q, %kt : (tensor<2x4x6x8xf32>, tensor<2x4x8x6xf32>) -> tensor<2x4x6x6xf32>
  %c = tessel.constant dense<5.656854> : tensor<f32>
  %1 = tessel.div %0, %c : (tensor<2x4x6x6xf32>, tensor<f32>) -> tensor<2x4x6x6xf32>
  %f = tessel.constant dense<-1.0e4> : tensor<f32>
  %2 = tessel.where %hide, %f, %1 : (tensor<1x1x6x6xi1>, tensor<f32>, tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
  %3 = tessel.softmax %2 axis = 3 : tensor<2x4x6x6xf32>
  %4 = tessel.matmul %3, %v : (tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32>) -> tensor<2x4x6x8xf32>
  return %4 : tensor<2x4x6x8xf32>
}

// transformers' eager GPT-2 since 4.26: where(keep, s, finfo.min). A
// hidden score is -inf beside any kept one: no masked_score; a row the
// mask hides whole gets the fill 1/T (here 1/6), as the where made it.
// CHECK-LABEL: func.func @gpt2_finfo_min
// CHECK: %[[M:.*]] = tessel.where %keep, %{{.*}}, %{{.*}} : (tensor<6x6xi1>, tensor<f32>, tensor<f32>) -> tensor<6x6xf32>
// CHECK-NEXT: %[[F:.*]] = tessel.constant dense<0.166666672> : tensor<f32>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = tessel.attention %q, %kt, %v mask %[[M]] nan_fill %[[F]] :
// CHECK-NOT: masked_score
func.func @gpt2_finfo_min(%q: tensor<4x6x8xf32>, %kt: tensor<4x8x6xf32>, %v: tensor<4x6x8xf32>, %keep: tensor<6x6xi1>) -> tensor<4x6x8xf32> {
  %0 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %f = tessel.constant dense<-3.40282347E+38> : tensor<f32>
  %1 = tessel.where %keep, %0, %f : (tensor<6x6xi1>, tensor<4x6x6xf32>, tensor<f32>) -> tensor<4x6x6xf32>
  %2 = tessel.softmax %1 axis = 2 : tensor<4x6x6xf32>
  %3 = tessel.matmul %2, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  return %3 : tensor<4x6x8xf32>
}

// A where followed by an additive mask (transformers 4.26 to 4.4x's eager
// GPT-2, GPT-Neo and GPT-J given an attention_mask): the op's keep, mask
// and masked_score (the hidden scores are c + mask).
// CHECK-LABEL: func.func @where_then_add
// CHECK: %[[O:.*]], %{{.*}} = tessel.attention %q, %kt, %v mask %pad keep %keep {masked_score = -3.40282347E+38 : f32} :
// CHECK-NOT: tessel.softmax
// CHECK: return %[[O]]
func.func @where_then_add(%q: tensor<4x6x8xf32>, %kt: tensor<4x8x6xf32>, %v: tensor<4x6x8xf32>, %keep: tensor<6x6xi1>, %pad: tensor<4x1x6xf32>) -> tensor<4x6x8xf32> {
  %0 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %f = tessel.constant dense<-3.40282347E+38> : tensor<f32>
  %1 = tessel.where %keep, %0, %f : (tensor<6x6xi1>, tensor<4x6x6xf32>, tensor<f32>) -> tensor<4x6x6xf32>
  %2 = tessel.add %1, %pad : (tensor<4x6x6xf32>, tensor<4x1x6xf32>) -> tensor<4x6x6xf32>
  %3 = tessel.softmax %2 axis = 2 : tensor<4x6x6xf32>
  %4 = tessel.matmul %3, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  return %4 : tensor<4x6x8xf32>
}

// The same with the condition true where hidden, the mask first and the
// scale after the product: keep is its negation.
// CHECK-LABEL: func.func @hide_then_add
// CHECK: %[[K:.*]] = tessel.not %hide
// CHECK: tessel.attention %q, %kt, %v mask %pad keep %[[K]] {masked_score = -1.000000e+04 : f32, scale = 1.250000e-01 : f32} :
// CHECK-NOT: tessel.softmax
func.func @hide_then_add(%q: tensor<4x6x8xf32>, %kt: tensor<4x8x6xf32>, %v: tensor<4x6x8xf32>, %hide: tensor<6x6xi1>, %pad: tensor<4x1x6xf32>) -> tensor<4x6x8xf32> {
  %0 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %c = tessel.constant dense<8.0> : tensor<f32>
  %s = tessel.div %0, %c : (tensor<4x6x6xf32>, tensor<f32>) -> tensor<4x6x6xf32>
  %f = tessel.constant dense<-1.0e4> : tensor<f32>
  %1 = tessel.where %hide, %f, %s : (tensor<6x6xi1>, tensor<f32>, tensor<4x6x6xf32>) -> tensor<4x6x6xf32>
  %2 = tessel.add %pad, %1 : (tensor<4x1x6xf32>, tensor<4x6x6xf32>) -> tensor<4x6x6xf32>
  %3 = tessel.softmax %2 axis = 2 : tensor<4x6x6xf32>
  %4 = tessel.matmul %3, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  return %4 : tensor<4x6x8xf32>
}

// Not fused: a where with a -inf fill, then an additive mask (no
// masked_score to give the op; the chain stays as it is, exact).
// CHECK-LABEL: func.func @where_inf_then_add
// CHECK-NOT: tessel.attention
// CHECK: return
func.func @where_inf_then_add(%q: tensor<4x6x8xf32>, %kt: tensor<4x8x6xf32>, %v: tensor<4x6x8xf32>, %keep: tensor<6x6xi1>, %pad: tensor<4x1x6xf32>) -> tensor<4x6x8xf32> {
  %0 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %f = tessel.constant dense<0xFF800000> : tensor<f32>
  %1 = tessel.where %keep, %0, %f : (tensor<6x6xi1>, tensor<4x6x6xf32>, tensor<f32>) -> tensor<4x6x6xf32>
  %2 = tessel.add %1, %pad : (tensor<4x6x6xf32>, tensor<4x1x6xf32>) -> tensor<4x6x6xf32>
  %3 = tessel.softmax %2 axis = 2 : tensor<4x6x6xf32>
  %4 = tessel.matmul %3, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  return %4 : tensor<4x6x8xf32>
}

// Not fused: a where whose fill is +inf or NaN (no mask's), or whose
// fill is a tensor rather than a scalar.
// CHECK-LABEL: func.func @not_a_mask_fill
// CHECK-NOT: tessel.attention
// CHECK: return
func.func @not_a_mask_fill(%q: tensor<4x6x8xf32>, %kt: tensor<4x8x6xf32>, %v: tensor<4x6x8xf32>, %keep: tensor<6x6xi1>, %fills: tensor<6x6xf32>) -> (tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>) {
  %inf = tessel.constant dense<0x7F800000> : tensor<f32>
  %nan = tessel.constant dense<0x7FC00000> : tensor<f32>
  %0 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %1 = tessel.where %keep, %0, %inf : (tensor<6x6xi1>, tensor<4x6x6xf32>, tensor<f32>) -> tensor<4x6x6xf32>
  %2 = tessel.softmax %1 axis = 2 : tensor<4x6x6xf32>
  %3 = tessel.matmul %2, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  %10 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %11 = tessel.where %keep, %nan, %10 : (tensor<6x6xi1>, tensor<f32>, tensor<4x6x6xf32>) -> tensor<4x6x6xf32>
  %12 = tessel.softmax %11 axis = 2 : tensor<4x6x6xf32>
  %13 = tessel.matmul %12, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  %20 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %21 = tessel.where %keep, %20, %fills : (tensor<6x6xi1>, tensor<4x6x6xf32>, tensor<6x6xf32>) -> tensor<4x6x6xf32>
  %22 = tessel.softmax %21 axis = 2 : tensor<4x6x6xf32>
  %23 = tessel.matmul %22, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  return %3, %13, %23 : tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>
}

// Not fused: a guard on another tensor than the mask, one over the query
// rows (dim 2), one whose rows become 1 rather than 0.
// CHECK-LABEL: func.func @not_the_mask_guard
// CHECK-NOT: tessel.attention
// CHECK: return
func.func @not_the_mask_guard(%q: tensor<4x6x8xf32>, %kt: tensor<4x8x6xf32>, %v: tensor<4x6x8xf32>, %b: tensor<6x6xf32>, %other: tensor<6x6xf32>) -> (tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>) {
  %inf = tessel.constant dense<0xFF800000> : tensor<f32>
  %zero = tessel.constant dense<0.0> : tensor<f32>
  %one = tessel.constant dense<1.0> : tensor<f32>
  %0 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %1 = tessel.add %0, %b : (tensor<4x6x6xf32>, tensor<6x6xf32>) -> tensor<4x6x6xf32>
  %2 = tessel.softmax %1 axis = 2 : tensor<4x6x6xf32>
  %3 = tessel.reduce_max %other dims = [1] keep_dims : (tensor<6x6xf32>) -> tensor<6x1xf32>
  %4 = tessel.compare eq, %3, %inf : (tensor<6x1xf32>, tensor<f32>) -> tensor<6x1xi1>
  %5 = tessel.where %4, %zero, %2 : (tensor<6x1xi1>, tensor<f32>, tensor<4x6x6xf32>) -> tensor<4x6x6xf32>
  %6 = tessel.matmul %5, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  %10 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %11 = tessel.add %10, %b : (tensor<4x6x6xf32>, tensor<6x6xf32>) -> tensor<4x6x6xf32>
  %12 = tessel.softmax %11 axis = 2 : tensor<4x6x6xf32>
  %13 = tessel.reduce_max %b dims = [0] keep_dims : (tensor<6x6xf32>) -> tensor<1x6xf32>
  %14 = tessel.compare eq, %13, %inf : (tensor<1x6xf32>, tensor<f32>) -> tensor<1x6xi1>
  %15 = tessel.where %14, %zero, %12 : (tensor<1x6xi1>, tensor<f32>, tensor<4x6x6xf32>) -> tensor<4x6x6xf32>
  %16 = tessel.matmul %15, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  %20 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %21 = tessel.add %20, %b : (tensor<4x6x6xf32>, tensor<6x6xf32>) -> tensor<4x6x6xf32>
  %22 = tessel.softmax %21 axis = 2 : tensor<4x6x6xf32>
  %23 = tessel.reduce_max %b dims = [1] keep_dims : (tensor<6x6xf32>) -> tensor<6x1xf32>
  %24 = tessel.compare eq, %23, %inf : (tensor<6x1xf32>, tensor<f32>) -> tensor<6x1xi1>
  %25 = tessel.where %24, %one, %22 : (tensor<6x1xi1>, tensor<f32>, tensor<4x6x6xf32>) -> tensor<4x6x6xf32>
  %26 = tessel.matmul %25, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  return %6, %16, %26 : tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>
}

// Not fused: the probabilities are also a result (output_attentions); the
// softmax is over another axis; the keys broadcast over the batch.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: tessel.attention
// CHECK: return
func.func @not_attention(%q: tensor<4x6x8xf32>, %kt: tensor<4x8x6xf32>, %k1: tensor<1x8x6xf32>, %v: tensor<4x6x8xf32>) -> (tensor<4x6x8xf32>, tensor<4x6x6xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>) {
  %0 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %1 = tessel.softmax %0 axis = 2 : tensor<4x6x6xf32>
  %2 = tessel.matmul %1, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  %3 = tessel.matmul %q, %kt : (tensor<4x6x8xf32>, tensor<4x8x6xf32>) -> tensor<4x6x6xf32>
  %4 = tessel.softmax %3 axis = 1 : tensor<4x6x6xf32>
  %5 = tessel.matmul %4, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  %6 = tessel.matmul %q, %k1 : (tensor<4x6x8xf32>, tensor<1x8x6xf32>) -> tensor<4x6x6xf32>
  %7 = tessel.softmax %6 axis = 2 : tensor<4x6x6xf32>
  %8 = tessel.matmul %7, %v : (tensor<4x6x6xf32>, tensor<4x6x8xf32>) -> tensor<4x6x8xf32>
  return %2, %1, %5, %8 : tensor<4x6x8xf32>, tensor<4x6x6xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>
}
