// --stages auto balances the ops' predicted seconds on the cluster's device
// (tessel/OpTime: what --predict plays), not their FLOPs. A 64x64x64
// matmul (524288 FLOPs) then six 4096-element ops (24576 FLOPs in all):
// by FLOPs the matmul is a stage of its own; on a device where each op's
// 1 ms overhead dwarfs its arithmetic, the seven ops cut 3 + 4 (the largest
// stage about 4 ms, where 1 + 6 would be 6 ms; 3 + 4 rather than 4 + 3
// because the matmul's 34 ns of arithmetic outweigh a tanh's 10 ns).
// RUN: tessel-opt %s -tessel-stage-split='stages=2 auto=true' | FileCheck %s --check-prefix=FLOPS
// RUN: tessel-opt %s -tessel-stage-split='stages=2 auto=true cluster=%S/Inputs/overhead.yaml' | FileCheck %s --check-prefix=SECONDS
// A cluster that is neither built in nor a readable file.
// RUN: not tessel-opt %s -tessel-stage-split='stages=2 auto=true cluster=%t.missing.yaml' 2>&1 | FileCheck %s --check-prefix=MISSING
tessel.mesh @mesh ["pp"=2]
func.func @main(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %w = tessel.weight "w" : tensor<64x64xf32>
  %a = tessel.matmul %x, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> loc("mm")
  %b = tessel.tanh %a : tensor<64x64xf32> loc("e1")
  %c = tessel.tanh %b : tensor<64x64xf32> loc("e2")
  %d = tessel.tanh %c : tensor<64x64xf32> loc("e3")
  %e = tessel.tanh %d : tensor<64x64xf32> loc("e4")
  %f = tessel.tanh %e : tensor<64x64xf32> loc("e5")
  %g = tessel.tanh %f : tensor<64x64xf32> loc("e6")
  return %g : tensor<64x64xf32>
}

// FLOPS: tessel.matmul {{.*}}tessel.stage = 0
// FLOPS-NEXT: tessel.tanh {{.*}}tessel.stage = 1
// FLOPS-NEXT: tessel.tanh {{.*}}tessel.stage = 1
// FLOPS-NEXT: tessel.tanh {{.*}}tessel.stage = 1

// SECONDS: tessel.matmul {{.*}}tessel.stage = 0
// SECONDS-NEXT: tessel.tanh {{.*}}tessel.stage = 0
// SECONDS-NEXT: tessel.tanh {{.*}}tessel.stage = 0
// SECONDS-NEXT: tessel.tanh {{.*}}tessel.stage = 1
// SECONDS-NEXT: tessel.tanh {{.*}}tessel.stage = 1
// SECONDS-NEXT: tessel.tanh {{.*}}tessel.stage = 1
// SECONDS-NEXT: tessel.tanh {{.*}}tessel.stage = 1

// MISSING: error: 'func.func' op --stages auto: cannot read cluster file
