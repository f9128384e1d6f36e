// Attention whose mask the exporter did not fold (a graph exported without
// constant folding, as from a meta-device model): the mask is a lookup of
// constants, so it is constant-like and not a source the column/row pair
// must come from. For test/Plan/megatron-plan.test.
module {
  func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %wq = tessel.weight "q.weight" : tensor<4x4xf32>
    %wk = tessel.weight "k.weight" : tensor<4x4xf32>
    %wv = tessel.weight "v.weight" : tensor<4x4xf32>
    %wo = tessel.weight "o.weight" : tensor<4x4xf32>
    %q = tessel.matmul %x, %wq : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
    %k = tessel.matmul %x, %wk : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
    %v = tessel.matmul %x, %wv : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
    %kt = tessel.transpose %k perm = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %s = tessel.matmul %q, %kt : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %table = tessel.constant dense<0.0> : tensor<8x8xf32>
    %rows = tessel.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
    %mask = tessel.gather %table[%rows] axis = 0 : (tensor<8x8xf32>, tensor<8xi64>) -> tensor<8x8xf32>
    %m = tessel.add %s, %mask : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %p = tessel.softmax %m axis = 1 : tensor<8x8xf32>
    %o = tessel.matmul %p, %v : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    %y = tessel.matmul %o, %wo : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
    return %y : tensor<8x4xf32>
  }
}
