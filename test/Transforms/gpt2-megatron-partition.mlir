// Issue 5's acceptance test: GPT-2 under the Megatron plan (c_attn, c_fc,
// wte, wpe split on the last dim; attn.c_proj and mlp.c_proj on the first)
// partitions into exactly 2 all_reduce per transformer layer (after the
// attention and after the MLP), the embedding's all_gather of the residual
// stream, and the LM head's all_reduce of the logits -- nothing else. The
// fused q, k, v projection is split into three column-parallel projections
// over slices of c_attn, so each rank keeps its own heads of q, k and v.
//
// RUN: tessel-opt %s -tessel-propagate -tessel-partition | FileCheck %s
// RUN: tessel-opt %s -tessel-propagate -tessel-partition | FileCheck %s --check-prefix=COUNT
// RUN: tessel-opt %tessel_src/examples/gpt2_block_megatron.mlir -tessel-propagate -tessel-partition | FileCheck %s --check-prefix=BLOCK

// Two layers, d=64, 4 heads, vocab 96, over dp=2 x tp=4.
tessel.mesh @mesh ["dp"=2, "tp"=4]

// COUNT-COUNT-5: tessel.all_reduce sum {{.*}} on @mesh axes = ["tp"]
// COUNT-NOT: tessel.all_reduce
// COUNT-NOT: tessel.reduce_scatter
// COUNT-NOT: tessel.all_to_all

// CHECK-LABEL: func.func @gpt2_2layer
// CHECK-SAME: (%{{.*}}: tensor<1x16xi64>) -> tensor<1x16x96xf32>
// The embedding: local gather and add on [b/dp, t, d/tp], one all_gather.
// CHECK: tessel.gather {{.*}} -> tensor<1x16x16xf32>
// CHECK: %[[H0:.*]] = tessel.add {{.*}} -> tensor<1x16x16xf32>
// CHECK-NEXT: %[[E:.*]] = tessel.all_gather %[[H0]] on @mesh axes = ["tp"] dim = 2 : (tensor<1x16x16xf32>) -> tensor<1x16x64xf32>
// Layer 0: q, k and v each from a [64, 16] local slice of c_attn; 1 head
// per rank; no communication until the row-parallel c_proj.
// CHECK-NOT: tessel.{{all_|reduce_scatter|local_slice}}
// CHECK: tessel.weight "transformer.h.0.attn.c_attn.weight" {tessel.global_sharding = {{.*}}, tessel.source_slice = array<i64: 1, 0, 64>} : tensor<64x16xf32>
// CHECK: tessel.reshape {{.*}} -> tensor<1x16x1x16xf32>
// CHECK: tessel.softmax {{.*}} : tensor<1x1x16x16xf32>
// CHECK-NOT: tessel.{{all_|reduce_scatter|local_slice}}
// CHECK: %[[A0:.*]] = tessel.matmul {{.*}} : (tensor<1x16x16xf32>, tensor<16x64xf32>) -> tensor<1x16x64xf32>
// CHECK-NEXT: tessel.all_reduce sum %[[A0]] on @mesh axes = ["tp"] : tensor<1x16x64xf32>
// CHECK-NOT: tessel.{{all_|reduce_scatter|local_slice}}
// CHECK: tessel.gelu {{.*}} : tensor<1x16x64xf32>
// CHECK-NOT: tessel.{{all_|reduce_scatter|local_slice}}
// CHECK: %[[M0:.*]] = tessel.matmul {{.*}} : (tensor<1x16x64xf32>, tensor<64x64xf32>) -> tensor<1x16x64xf32>
// CHECK-NEXT: tessel.all_reduce sum %[[M0]] on @mesh axes = ["tp"] : tensor<1x16x64xf32>
// Layer 1: q, k and v each from a [64, 16] local slice of c_attn; 1 head
// per rank; no communication until the row-parallel c_proj.
// CHECK-NOT: tessel.{{all_|reduce_scatter|local_slice}}
// CHECK: tessel.weight "transformer.h.1.attn.c_attn.weight" {tessel.global_sharding = {{.*}}, tessel.source_slice = array<i64: 1, 0, 64>} : tensor<64x16xf32>
// CHECK: tessel.reshape {{.*}} -> tensor<1x16x1x16xf32>
// CHECK: tessel.softmax {{.*}} : tensor<1x1x16x16xf32>
// CHECK-NOT: tessel.{{all_|reduce_scatter|local_slice}}
// CHECK: %[[A1:.*]] = tessel.matmul {{.*}} : (tensor<1x16x16xf32>, tensor<16x64xf32>) -> tensor<1x16x64xf32>
// CHECK-NEXT: tessel.all_reduce sum %[[A1]] on @mesh axes = ["tp"] : tensor<1x16x64xf32>
// CHECK-NOT: tessel.{{all_|reduce_scatter|local_slice}}
// CHECK: tessel.gelu {{.*}} : tensor<1x16x64xf32>
// CHECK-NOT: tessel.{{all_|reduce_scatter|local_slice}}
// CHECK: %[[M1:.*]] = tessel.matmul {{.*}} : (tensor<1x16x64xf32>, tensor<64x64xf32>) -> tensor<1x16x64xf32>
// CHECK-NEXT: tessel.all_reduce sum %[[M1]] on @mesh axes = ["tp"] : tensor<1x16x64xf32>
// The LM head: the final layer norm's output is sliced locally (no
// communication) to contract with the local [d/tp, vocab] of wte; the logits
// are summed once.
// CHECK-NOT: tessel.{{all_|reduce_scatter}}
// CHECK: %[[HF:.*]] = tessel.local_slice {{.*}} axes = ["tp"] dim = 2 : (tensor<1x16x64xf32>) -> tensor<1x16x16xf32>
// CHECK: %[[L:.*]] = tessel.matmul %[[HF]], {{.*}} -> tensor<1x16x96xf32>
// CHECK-NEXT: %[[R:.*]] = tessel.all_reduce sum %[[L]] on @mesh axes = ["tp"] : tensor<1x16x96xf32>
// CHECK-NEXT: return %[[R]]

// The single block of examples/gpt2_block_megatron.mlir (GPT-2 small
// sizes): the same collectives, 2 + 1 all_reduce, 1 all_gather.
// BLOCK-LABEL: func.func @gpt2
// BLOCK: tessel.all_gather {{.*}} axes = ["tp"] dim = 2 : (tensor<1x128x192xf32>) -> tensor<1x128x768xf32>
// BLOCK-NOT: tessel.{{all_|reduce_scatter|local_slice}}
// BLOCK: tessel.matmul {{.*}} : (tensor<1x128x768xf32>, tensor<768x192xf32>) -> tensor<1x128x192xf32>
// BLOCK-NOT: tessel.{{all_|reduce_scatter|local_slice}}
// BLOCK: tessel.all_reduce sum {{.*}} : tensor<1x128x768xf32>
// BLOCK-NOT: tessel.{{all_|reduce_scatter|local_slice}}
// BLOCK: tessel.all_reduce sum {{.*}} : tensor<1x128x768xf32>
// BLOCK-NOT: tessel.{{all_|reduce_scatter}}
// BLOCK: tessel.local_slice
// BLOCK-NOT: tessel.{{all_|reduce_scatter|local_slice}}
// BLOCK: tessel.all_reduce sum {{.*}} : tensor<1x128x50257xf32>
// BLOCK-NOT: tessel.{{all_|reduce_scatter|local_slice}}

func.func @gpt2_2layer(%ids: tensor<2x16xi64> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<2x16x96xf32> {
  %wte = tessel.weight "transformer.wte.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<96x64xf32>
  %wpe = tessel.weight "transformer.wpe.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<32x64xf32>
  %tok = tessel.gather %wte[%ids] axis = 0 : (tensor<96x64xf32>, tensor<2x16xi64>) -> tensor<2x16x64xf32>
  %pos = tessel.slice %wpe [0:16:1, 0:64:1] : (tensor<32x64xf32>) -> tensor<16x64xf32>
  %h0 = tessel.add %tok, %pos : (tensor<2x16x64xf32>, tensor<16x64xf32>) -> tensor<2x16x64xf32>
  // Layer 0: attention.
  %ln1_w_0 = tessel.weight "transformer.h.0.ln_1.weight" : tensor<64xf32>
  %ln1_b_0 = tessel.weight "transformer.h.0.ln_1.bias" : tensor<64xf32>
  %x1_0 = tessel.layer_norm %h0, %ln1_w_0, %ln1_b_0 axis = 2 : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %attn_w_0 = tessel.weight "transformer.h.0.attn.c_attn.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<64x192xf32>
  %attn_b_0 = tessel.weight "transformer.h.0.attn.c_attn.bias" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>} : tensor<192xf32>
  %qkv0_0 = tessel.matmul %x1_0, %attn_w_0 : (tensor<2x16x64xf32>, tensor<64x192xf32>) -> tensor<2x16x192xf32>
  %qkv_0 = tessel.add %qkv0_0, %attn_b_0 : (tensor<2x16x192xf32>, tensor<192xf32>) -> tensor<2x16x192xf32>
  %q0_0, %k0_0, %v0_0 = tessel.split %qkv_0 dim = 2 sizes = [64, 64, 64] : (tensor<2x16x192xf32>) -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>)
  %q1_0 = tessel.reshape %q0_0 : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %k1_0 = tessel.reshape %k0_0 : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %v1_0 = tessel.reshape %v0_0 : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %q_0 = tessel.transpose %q1_0 perm = [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %kt_0 = tessel.transpose %k1_0 perm = [0, 2, 3, 1] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %v_0 = tessel.transpose %v1_0 perm = [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %s0_0 = tessel.matmul %q_0, %kt_0 : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %scale_0 = tessel.constant dense<4.0> : tensor<f32>
  %s1_0 = tessel.div %s0_0, %scale_0 : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %causal_0 = tessel.weight "transformer.h.0.attn.bias" : tensor<1x1x16x16xi1>
  %neg_0 = tessel.constant dense<-3.40282347E+38> : tensor<f32>
  %s2_0 = tessel.where %causal_0, %s1_0, %neg_0 : (tensor<1x1x16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %p_0 = tessel.softmax %s2_0 axis = 3 : tensor<2x4x16x16xf32>
  %o0_0 = tessel.matmul %p_0, %v_0 : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %o1_0 = tessel.transpose %o0_0 perm = [0, 2, 1, 3] : (tensor<2x4x16x16xf32>) -> tensor<2x16x4x16xf32>
  %o_0 = tessel.reshape %o1_0 : (tensor<2x16x4x16xf32>) -> tensor<2x16x64xf32>
  %proj_w_0 = tessel.weight "transformer.h.0.attn.c_proj.weight" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>} : tensor<64x64xf32>
  %proj_b_0 = tessel.weight "transformer.h.0.attn.c_proj.bias" : tensor<64xf32>
  %a0_0 = tessel.matmul %o_0, %proj_w_0 : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  %a1_0 = tessel.add %a0_0, %proj_b_0 : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %h1 = tessel.add %h0, %a1_0 : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  // Layer 0: MLP.
  %ln2_w_0 = tessel.weight "transformer.h.0.ln_2.weight" : tensor<64xf32>
  %ln2_b_0 = tessel.weight "transformer.h.0.ln_2.bias" : tensor<64xf32>
  %x2_0 = tessel.layer_norm %h1, %ln2_w_0, %ln2_b_0 axis = 2 : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %fc_w_0 = tessel.weight "transformer.h.0.mlp.c_fc.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<64x256xf32>
  %fc_b_0 = tessel.weight "transformer.h.0.mlp.c_fc.bias" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>} : tensor<256xf32>
  %f0_0 = tessel.matmul %x2_0, %fc_w_0 : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
  %f1_0 = tessel.add %f0_0, %fc_b_0 : (tensor<2x16x256xf32>, tensor<256xf32>) -> tensor<2x16x256xf32>
  %f2_0 = tessel.gelu %f1_0 {tanh_approximation} : tensor<2x16x256xf32>
  %mproj_w_0 = tessel.weight "transformer.h.0.mlp.c_proj.weight" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>} : tensor<256x64xf32>
  %mproj_b_0 = tessel.weight "transformer.h.0.mlp.c_proj.bias" : tensor<64xf32>
  %m0_0 = tessel.matmul %f2_0, %mproj_w_0 : (tensor<2x16x256xf32>, tensor<256x64xf32>) -> tensor<2x16x64xf32>
  %m1_0 = tessel.add %m0_0, %mproj_b_0 : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %h2 = tessel.add %h1, %m1_0 : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  // Layer 1: attention.
  %ln1_w_1 = tessel.weight "transformer.h.1.ln_1.weight" : tensor<64xf32>
  %ln1_b_1 = tessel.weight "transformer.h.1.ln_1.bias" : tensor<64xf32>
  %x1_1 = tessel.layer_norm %h2, %ln1_w_1, %ln1_b_1 axis = 2 : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %attn_w_1 = tessel.weight "transformer.h.1.attn.c_attn.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<64x192xf32>
  %attn_b_1 = tessel.weight "transformer.h.1.attn.c_attn.bias" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>} : tensor<192xf32>
  %qkv0_1 = tessel.matmul %x1_1, %attn_w_1 : (tensor<2x16x64xf32>, tensor<64x192xf32>) -> tensor<2x16x192xf32>
  %qkv_1 = tessel.add %qkv0_1, %attn_b_1 : (tensor<2x16x192xf32>, tensor<192xf32>) -> tensor<2x16x192xf32>
  %q0_1, %k0_1, %v0_1 = tessel.split %qkv_1 dim = 2 sizes = [64, 64, 64] : (tensor<2x16x192xf32>) -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>)
  %q1_1 = tessel.reshape %q0_1 : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %k1_1 = tessel.reshape %k0_1 : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %v1_1 = tessel.reshape %v0_1 : (tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32>
  %q_1 = tessel.transpose %q1_1 perm = [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %kt_1 = tessel.transpose %k1_1 perm = [0, 2, 3, 1] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %v_1 = tessel.transpose %v1_1 perm = [0, 2, 1, 3] : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %s0_1 = tessel.matmul %q_1, %kt_1 : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %scale_1 = tessel.constant dense<4.0> : tensor<f32>
  %s1_1 = tessel.div %s0_1, %scale_1 : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %causal_1 = tessel.weight "transformer.h.1.attn.bias" : tensor<1x1x16x16xi1>
  %neg_1 = tessel.constant dense<-3.40282347E+38> : tensor<f32>
  %s2_1 = tessel.where %causal_1, %s1_1, %neg_1 : (tensor<1x1x16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %p_1 = tessel.softmax %s2_1 axis = 3 : tensor<2x4x16x16xf32>
  %o0_1 = tessel.matmul %p_1, %v_1 : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %o1_1 = tessel.transpose %o0_1 perm = [0, 2, 1, 3] : (tensor<2x4x16x16xf32>) -> tensor<2x16x4x16xf32>
  %o_1 = tessel.reshape %o1_1 : (tensor<2x16x4x16xf32>) -> tensor<2x16x64xf32>
  %proj_w_1 = tessel.weight "transformer.h.1.attn.c_proj.weight" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>} : tensor<64x64xf32>
  %proj_b_1 = tessel.weight "transformer.h.1.attn.c_proj.bias" : tensor<64xf32>
  %a0_1 = tessel.matmul %o_1, %proj_w_1 : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  %a1_1 = tessel.add %a0_1, %proj_b_1 : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %h3 = tessel.add %h2, %a1_1 : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  // Layer 1: MLP.
  %ln2_w_1 = tessel.weight "transformer.h.1.ln_2.weight" : tensor<64xf32>
  %ln2_b_1 = tessel.weight "transformer.h.1.ln_2.bias" : tensor<64xf32>
  %x2_1 = tessel.layer_norm %h3, %ln2_w_1, %ln2_b_1 axis = 2 : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %fc_w_1 = tessel.weight "transformer.h.1.mlp.c_fc.weight" {tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>} : tensor<64x256xf32>
  %fc_b_1 = tessel.weight "transformer.h.1.mlp.c_fc.bias" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>} : tensor<256xf32>
  %f0_1 = tessel.matmul %x2_1, %fc_w_1 : (tensor<2x16x64xf32>, tensor<64x256xf32>) -> tensor<2x16x256xf32>
  %f1_1 = tessel.add %f0_1, %fc_b_1 : (tensor<2x16x256xf32>, tensor<256xf32>) -> tensor<2x16x256xf32>
  %f2_1 = tessel.gelu %f1_1 {tanh_approximation} : tensor<2x16x256xf32>
  %mproj_w_1 = tessel.weight "transformer.h.1.mlp.c_proj.weight" {tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>} : tensor<256x64xf32>
  %mproj_b_1 = tessel.weight "transformer.h.1.mlp.c_proj.bias" : tensor<64xf32>
  %m0_1 = tessel.matmul %f2_1, %mproj_w_1 : (tensor<2x16x256xf32>, tensor<256x64xf32>) -> tensor<2x16x64xf32>
  %m1_1 = tessel.add %m0_1, %mproj_b_1 : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %h4 = tessel.add %h3, %m1_1 : (tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  // Final layer norm and the LM head tied to wte.
  %lnf_w = tessel.weight "transformer.ln_f.weight" : tensor<64xf32>
  %lnf_b = tessel.weight "transformer.ln_f.bias" : tensor<64xf32>
  %hf = tessel.layer_norm %h4, %lnf_w, %lnf_b axis = 2 : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %wte_t = tessel.transpose %wte perm = [1, 0] : (tensor<96x64xf32>) -> tensor<64x96xf32>
  %logits = tessel.matmul %hf, %wte_t : (tensor<2x16x64xf32>, tensor<64x96xf32>) -> tensor<2x16x96xf32>
  return %logits : tensor<2x16x96xf32>
}
