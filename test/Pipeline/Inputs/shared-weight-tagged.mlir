// shared-weight-invalid.mlir's read_sum_outside_update, tagged by hand: an
// op of a stage's backward (BW) reads the sum of a weight's gradient over
// two stages, which the holders compute after their last action; only the
// weight's update (W, STEP) may read it.
tessel.mesh @mesh ["pp"=2]
func.func @main(%x: tensor<2xf32>) -> tensor<f32> {
  %w = tessel.weight "w" : tensor<2xf32>
  %a = tessel.mul %x, %w {tessel.stage = 0 : i64, tessel.microbatch = 0 : i64, tessel.phase = "F"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %b = tessel.mul %a, %w {tessel.stage = 1 : i64, tessel.microbatch = 0 : i64, tessel.phase = "F"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %l = tessel.reduce_mean %b dims = [0] {tessel.stage = 1 : i64, tessel.microbatch = 0 : i64, tessel.phase = "F"} : (tensor<2xf32>) -> tensor<f32>
  %g1 = tessel.mul %b, %a {tessel.stage = 1 : i64, tessel.microbatch = 0 : i64, tessel.phase = "BW"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %p1 = tessel.add %g1, %g1 {tessel.stage = 1 : i64, tessel.microbatch = 0 : i64, tessel.phase = "W"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %g0 = tessel.mul %a, %x {tessel.stage = 0 : i64, tessel.microbatch = 0 : i64, tessel.phase = "BW"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %p0 = tessel.add %g0, %g0 {tessel.stage = 0 : i64, tessel.microbatch = 0 : i64, tessel.phase = "W"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %g = tessel.add %p0, %p1 {tessel.stage = 0 : i64, tessel.microbatch = 0 : i64, tessel.phase = "W"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  // expected-error @below {{'tessel.mul' of stage 0 reads the sum of a weight's gradient over stages, which only the update of that weight may read}}
  %z = tessel.mul %g, %g {tessel.stage = 0 : i64, tessel.microbatch = 0 : i64, tessel.phase = "BW"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %n = tessel.sub %w, %g {tessel.stage = 0 : i64, tessel.phase = "STEP"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  tessel.assign %w, %n {tessel.stage = 0 : i64, tessel.phase = "STEP"} : tensor<2xf32>
  return %l : tensor<f32>
}
