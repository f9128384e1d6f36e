// GPT-2 (small: d=768, 12 heads, vocab 50257) embedding, one transformer
// block, the final layer norm and the tied LM head, with the Megatron-LM
// tensor-parallel plan of Colossal-AI's ColoTensor tutorial written as specs
// over a dp=2 x tp=4 mesh:
//   wte, wpe                  split on the last dim   ShardSpec([-1], [tp])
//   attn.c_attn weight, bias  split on the last dim   (column parallel)
//   mlp.c_fc weight, bias     split on the last dim   (column parallel)
//   attn.c_proj weight        split on the first dim  (row parallel)
//   mlp.c_proj weight         split on the first dim  (row parallel)
// and the batch split over dp. Weights use HuggingFace names; Conv1D weights
// are [in, out]. Verify and print it with:
//   tessel-opt examples/gpt2_block_megatron.mlir

tessel.mesh @mesh ["dp"=2, "tp"=4]

func.func @gpt2(%input_ids: tensor<2x128xi64> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>})
    -> tensor<2x128x50257xf32> {
  // Embedding: token + position.
  %wte = tessel.weight "transformer.wte.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<50257x768xf32>
  %wpe = tessel.weight "transformer.wpe.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<1024x768xf32>
  %tok = tessel.gather %wte[%input_ids] axis = 0 : (tensor<50257x768xf32>, tensor<2x128xi64>) -> tensor<2x128x768xf32>
  %pos_all = tessel.slice %wpe [0:128:1, 0:768:1] : (tensor<1024x768xf32>) -> tensor<128x768xf32>
  %h0 = tessel.add %tok, %pos_all : (tensor<2x128x768xf32>, tensor<128x768xf32>) -> tensor<2x128x768xf32>

  // Attention.
  %ln1_w = tessel.weight "transformer.h.0.ln_1.weight" : tensor<768xf32>
  %ln1_b = tessel.weight "transformer.h.0.ln_1.bias" : tensor<768xf32>
  %x1 = tessel.layer_norm %h0, %ln1_w, %ln1_b axis = 2 : (tensor<2x128x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<2x128x768xf32>
  %attn_w = tessel.weight "transformer.h.0.attn.c_attn.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<768x2304xf32>
  %attn_b = tessel.weight "transformer.h.0.attn.c_attn.bias" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>} : tensor<2304xf32>
  %qkv0 = tessel.matmul %x1, %attn_w : (tensor<2x128x768xf32>, tensor<768x2304xf32>) -> tensor<2x128x2304xf32>
  %qkv = tessel.add %qkv0, %attn_b : (tensor<2x128x2304xf32>, tensor<2304xf32>) -> tensor<2x128x2304xf32>
  %q0, %k0, %v0 = tessel.split %qkv dim = 2 sizes = [768, 768, 768] : (tensor<2x128x2304xf32>) -> (tensor<2x128x768xf32>, tensor<2x128x768xf32>, tensor<2x128x768xf32>)
  %q1 = tessel.reshape %q0 : (tensor<2x128x768xf32>) -> tensor<2x128x12x64xf32>
  %k1 = tessel.reshape %k0 : (tensor<2x128x768xf32>) -> tensor<2x128x12x64xf32>
  %v1 = tessel.reshape %v0 : (tensor<2x128x768xf32>) -> tensor<2x128x12x64xf32>
  %q = tessel.transpose %q1 perm = [0, 2, 1, 3] : (tensor<2x128x12x64xf32>) -> tensor<2x12x128x64xf32>
  %kt = tessel.transpose %k1 perm = [0, 2, 3, 1] : (tensor<2x128x12x64xf32>) -> tensor<2x12x64x128xf32>
  %v = tessel.transpose %v1 perm = [0, 2, 1, 3] : (tensor<2x128x12x64xf32>) -> tensor<2x12x128x64xf32>
  %s0 = tessel.matmul %q, %kt : (tensor<2x12x128x64xf32>, tensor<2x12x64x128xf32>) -> tensor<2x12x128x128xf32>
  %scale = tessel.constant dense<8.0> : tensor<f32>
  %s1 = tessel.div %s0, %scale : (tensor<2x12x128x128xf32>, tensor<f32>) -> tensor<2x12x128x128xf32>
  %causal = tessel.weight "transformer.h.0.attn.bias" : tensor<1x1x128x128xi1>
  %neg = tessel.constant dense<-3.40282347E+38> : tensor<f32>
  %s2 = tessel.where %causal, %s1, %neg : (tensor<1x1x128x128xi1>, tensor<2x12x128x128xf32>, tensor<f32>) -> tensor<2x12x128x128xf32>
  %p = tessel.softmax %s2 axis = 3 : tensor<2x12x128x128xf32>
  %o0 = tessel.matmul %p, %v : (tensor<2x12x128x128xf32>, tensor<2x12x128x64xf32>) -> tensor<2x12x128x64xf32>
  %o1 = tessel.transpose %o0 perm = [0, 2, 1, 3] : (tensor<2x12x128x64xf32>) -> tensor<2x128x12x64xf32>
  %o = tessel.reshape %o1 : (tensor<2x128x12x64xf32>) -> tensor<2x128x768xf32>
  %proj_w = tessel.weight "transformer.h.0.attn.c_proj.weight" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>} : tensor<768x768xf32>
  %proj_b = tessel.weight "transformer.h.0.attn.c_proj.bias" : tensor<768xf32>
  %a0 = tessel.matmul %o, %proj_w : (tensor<2x128x768xf32>, tensor<768x768xf32>) -> tensor<2x128x768xf32>
  %a1 = tessel.add %a0, %proj_b : (tensor<2x128x768xf32>, tensor<768xf32>) -> tensor<2x128x768xf32>
  %h1 = tessel.add %h0, %a1 : (tensor<2x128x768xf32>, tensor<2x128x768xf32>) -> tensor<2x128x768xf32>

  // MLP.
  %ln2_w = tessel.weight "transformer.h.0.ln_2.weight" : tensor<768xf32>
  %ln2_b = tessel.weight "transformer.h.0.ln_2.bias" : tensor<768xf32>
  %x2 = tessel.layer_norm %h1, %ln2_w, %ln2_b axis = 2 : (tensor<2x128x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<2x128x768xf32>
  %fc_w = tessel.weight "transformer.h.0.mlp.c_fc.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<768x3072xf32>
  %fc_b = tessel.weight "transformer.h.0.mlp.c_fc.bias" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>} : tensor<3072xf32>
  %f0 = tessel.matmul %x2, %fc_w : (tensor<2x128x768xf32>, tensor<768x3072xf32>) -> tensor<2x128x3072xf32>
  %f1 = tessel.add %f0, %fc_b : (tensor<2x128x3072xf32>, tensor<3072xf32>) -> tensor<2x128x3072xf32>
  %f2 = tessel.gelu %f1 {tanh_approximation} : tensor<2x128x3072xf32>
  %mproj_w = tessel.weight "transformer.h.0.mlp.c_proj.weight" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>} : tensor<3072x768xf32>
  %mproj_b = tessel.weight "transformer.h.0.mlp.c_proj.bias" : tensor<768xf32>
  %m0 = tessel.matmul %f2, %mproj_w : (tensor<2x128x3072xf32>, tensor<3072x768xf32>) -> tensor<2x128x768xf32>
  %m1 = tessel.add %m0, %mproj_b : (tensor<2x128x768xf32>, tensor<768xf32>) -> tensor<2x128x768xf32>
  %h2 = tessel.add %h1, %m1 : (tensor<2x128x768xf32>, tensor<2x128x768xf32>) -> tensor<2x128x768xf32>

  // Final layer norm and the LM head tied to wte.
  %lnf_w = tessel.weight "transformer.ln_f.weight" : tensor<768xf32>
  %lnf_b = tessel.weight "transformer.ln_f.bias" : tensor<768xf32>
  %hf = tessel.layer_norm %h2, %lnf_w, %lnf_b axis = 2 : (tensor<2x128x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<2x128x768xf32>
  %wte_t = tessel.transpose %wte perm = [1, 0] : (tensor<50257x768xf32>) -> tensor<768x50257xf32>
  %logits = tessel.matmul %hf, %wte_t : (tensor<2x128x768xf32>, tensor<768x50257xf32>) -> tensor<2x128x50257xf32>
  return %logits : tensor<2x128x50257xf32>
}
