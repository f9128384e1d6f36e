// nn.Linear as the exporter writes it before constant folding (a
// shapes-only or meta-device export): x @ transpose(W), W [out, in], for
// test/Plan/megatron-plan.test.
module {
  func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %w1 = tessel.weight "fc1.weight" : tensor<16x4xf32>
    %t1 = tessel.transpose %w1 perm = [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32>
    %h = tessel.matmul %x, %t1 : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
    %a = tessel.gelu %h : tensor<8x16xf32>
    %w2 = tessel.weight "fc2.weight" : tensor<4x16xf32>
    %t2 = tessel.transpose %w2 perm = [1, 0] : (tensor<4x16xf32>) -> tensor<16x4xf32>
    %y = tessel.matmul %a, %t2 : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    return %y : tensor<8x4xf32>
  }
}
