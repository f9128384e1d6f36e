// Every op -tessel-fuse-elementwise folds (dialects/tessel/FusedElementwise.h)
// in trees whose inputs are whole ([4, 33]), one element (%s, the
// constants) and trailing dims (%b [33], %c [1, 33]); each intermediate has
// one reader, so the compile fuses them (fused-elementwise.test).
module {
  func.func @main(%x: tensor<4x33xf32>, %y: tensor<4x33xf32>, %b: tensor<33xf32>, %c: tensor<1x33xf32>, %s: tensor<f32>) -> (tensor<4x33xf32>, tensor<4x33xf32>) attributes {tessel.input_names = ["x", "y", "b", "c", "s"], tessel.output_names = ["r", "q"]} {
    %one = tessel.constant dense<1.0> : tensor<f32>
    %three = tessel.constant dense<3.0> : tensor<f32>
    // r: the unary ops, combined by the binary ones.
    %0 = tessel.abs %x : tensor<4x33xf32>
    %1 = tessel.add %0, %one : (tensor<4x33xf32>, tensor<f32>) -> tensor<4x33xf32>
    %a1 = tessel.log %1 : tensor<4x33xf32>
    %2 = tessel.abs %y : tensor<4x33xf32>
    %a2 = tessel.sqrt %2 : tensor<4x33xf32>
    %3 = tessel.abs %x : tensor<4x33xf32>
    %4 = tessel.add %3, %one : (tensor<4x33xf32>, tensor<f32>) -> tensor<4x33xf32>
    %a3 = tessel.rsqrt %4 : tensor<4x33xf32>
    %5 = tessel.abs %y : tensor<4x33xf32>
    %6 = tessel.add %5, %three : (tensor<4x33xf32>, tensor<f32>) -> tensor<4x33xf32>
    %a4 = tessel.reciprocal %6 : tensor<4x33xf32>
    %r1 = tessel.add %a1, %a2 : (tensor<4x33xf32>, tensor<4x33xf32>) -> tensor<4x33xf32>
    %r2 = tessel.sub %r1, %a3 : (tensor<4x33xf32>, tensor<4x33xf32>) -> tensor<4x33xf32>
    %r3 = tessel.mul %r2, %a4 : (tensor<4x33xf32>, tensor<4x33xf32>) -> tensor<4x33xf32>
    %a5 = tessel.gelu %x : tensor<4x33xf32>
    %a6 = tessel.gelu %y {tanh_approximation} : tensor<4x33xf32>
    %r4 = tessel.max %a5, %a6 : (tensor<4x33xf32>, tensor<4x33xf32>) -> tensor<4x33xf32>
    %r5 = tessel.add %r3, %r4 : (tensor<4x33xf32>, tensor<4x33xf32>) -> tensor<4x33xf32>
    %a7 = tessel.softplus %x : tensor<4x33xf32>
    %a8 = tessel.hard_swish %y : tensor<4x33xf32>
    %r6 = tessel.min %a7, %a8 : (tensor<4x33xf32>, tensor<4x33xf32>) -> tensor<4x33xf32>
    %r7 = tessel.sub %r5, %r6 : (tensor<4x33xf32>, tensor<4x33xf32>) -> tensor<4x33xf32>
    %a9 = tessel.sin %x : tensor<4x33xf32>
    %a10 = tessel.cos %y : tensor<4x33xf32>
    %r8 = tessel.mul %a9, %a10 : (tensor<4x33xf32>, tensor<4x33xf32>) -> tensor<4x33xf32>
    %r = tessel.add %r7, %r8 : (tensor<4x33xf32>, tensor<4x33xf32>) -> tensor<4x33xf32>
    // q: the rest, with the broadcast inputs.
    %7 = tessel.add %x, %b : (tensor<4x33xf32>, tensor<33xf32>) -> tensor<4x33xf32>
    %8 = tessel.mul %7, %s : (tensor<4x33xf32>, tensor<f32>) -> tensor<4x33xf32>
    %q1 = tessel.tanh %8 : tensor<4x33xf32>
    %q2 = tessel.softsign %y : tensor<4x33xf32>
    %q3 = tessel.erf %q2 : tensor<4x33xf32>
    %q4 = tessel.sigmoid %q3 : tensor<4x33xf32>
    %q5 = tessel.div %q1, %q4 : (tensor<4x33xf32>, tensor<4x33xf32>) -> tensor<4x33xf32>
    %q6 = tessel.relu %q5 : tensor<4x33xf32>
    %q7 = tessel.neg %q6 : tensor<4x33xf32>
    %q8 = tessel.exp %q7 : tensor<4x33xf32>
    %9 = tessel.abs %c : tensor<1x33xf32>
    %10 = tessel.add %9, %one : (tensor<1x33xf32>, tensor<f32>) -> tensor<1x33xf32>
    %q9 = tessel.pow %q8, %10 : (tensor<4x33xf32>, tensor<1x33xf32>) -> tensor<4x33xf32>
    %11 = tessel.abs %y : tensor<4x33xf32>
    %12 = tessel.add %11, %one : (tensor<4x33xf32>, tensor<f32>) -> tensor<4x33xf32>
    %q = tessel.fmod %q9, %12 : (tensor<4x33xf32>, tensor<4x33xf32>) -> tensor<4x33xf32>
    return %r, %q : tensor<4x33xf32>, tensor<4x33xf32>
  }
}
