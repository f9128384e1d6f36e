// attention_grad's verifier read braced lists past their life (ASan:
// stack-use-after-scope) when it reported a mistyped grad.
func.func @grad_types(%q: tensor<4x8xbf16>, %kt: tensor<8x4xbf16>, %v: tensor<4x8xbf16>, %o: tensor<4x8xbf16>, %l: tensor<4xf32>, %g: tensor<4x8xf32>) {
  %dq, %dkt, %dv = tessel.attention_grad %q, %kt, %v, %o, %l, %g : (tensor<4x8xbf16>, tensor<8x4xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4xf32>, tensor<4x8xf32>) -> (tensor<4x8xbf16>, tensor<8x4xbf16>, tensor<4x8xbf16>)
  return
}

