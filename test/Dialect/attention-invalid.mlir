// The verifier messages of tessel.attention and tessel.attention_grad
// (TesselOps.td C1-C6, TrainingOps.td C1-C2), and the half attention's f32
// mask and nan_fill.
// RUN: tessel-opt %s -split-input-file -verify-diagnostics

func.func @rank(%q: tensor<8xf32>, %kt: tensor<8xf32>, %v: tensor<8xf32>) {
  // expected-error@+1 {{q, kt and v must have one rank of at least 2, got [8], [8], [8]}}
  %o, %l = tessel.attention %q, %kt, %v : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<f32>)
  return
}

// -----

func.func @types(%q: tensor<4x8xbf16>, %kt: tensor<8x4xf32>, %v: tensor<4x8xbf16>) {
  // expected-error@+1 {{q, kt and v must have one element type}}
  %o, %l = tessel.attention %q, %kt, %v : (tensor<4x8xbf16>, tensor<8x4xf32>, tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4xf32>)
  return
}

// -----

func.func @head_dim(%q: tensor<4x8xf32>, %kt: tensor<6x4xf32>, %v: tensor<4x8xf32>) {
  // expected-error@+1 {{kt [6, 4] must have q's head dim 8 in dim 0}}
  %o, %l = tessel.attention %q, %kt, %v : (tensor<4x8xf32>, tensor<6x4xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @keys(%q: tensor<4x8xf32>, %kt: tensor<8x4xf32>, %v: tensor<5x8xf32>) {
  // expected-error@+1 {{v [5, 8] must have kt's 4 keys in dim 0}}
  %o, %l = tessel.attention %q, %kt, %v : (tensor<4x8xf32>, tensor<8x4xf32>, tensor<5x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>)
  return
}

// -----

// A half attention reads its mask in q's type or in f32, not in another.
func.func @mask_type(%q: tensor<4x8xbf16>, %kt: tensor<8x4xbf16>, %v: tensor<4x8xbf16>, %m: tensor<4x4xf16>) {
  // expected-error@+1 {{mask must have q's element type 'bf16' or f32}}
  %o, %l = tessel.attention %q, %kt, %v mask %m : (tensor<4x8xbf16>, tensor<8x4xbf16>, tensor<4x8xbf16>, tensor<4x4xf16>) -> (tensor<4x8xbf16>, tensor<4xf32>)
  return
}

// -----

func.func @fill_type(%q: tensor<4x8xf16>, %kt: tensor<8x4xf16>, %v: tensor<4x8xf16>, %f: tensor<bf16>) {
  // expected-error@+1 {{nan_fill has type 'tensor<bf16>', expected a rank-0 tensor of 'f16' or f32}}
  %o, %l = tessel.attention %q, %kt, %v nan_fill %f : (tensor<4x8xf16>, tensor<8x4xf16>, tensor<4x8xf16>, tensor<bf16>) -> (tensor<4x8xf16>, tensor<4xf32>)
  return
}

// -----

func.func @mask_broadcast(%q: tensor<4x8xf32>, %kt: tensor<8x4xf32>, %v: tensor<4x8xf32>, %m: tensor<3x4xf32>) {
  // expected-error@+1 {{mask [3, 4] does not broadcast to the scores [4, 4]}}
  %o, %l = tessel.attention %q, %kt, %v mask %m : (tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<3x4xf32>) -> (tensor<4x8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @keep_needs_masked_score(%q: tensor<4x8xf32>, %kt: tensor<8x4xf32>, %v: tensor<4x8xf32>, %m: tensor<4x4xf32>, %k: tensor<4x4xi1>) {
  // expected-error@+1 {{keep selects between the scores plus the mask and masked_score plus the mask; the op needs both a mask and a masked_score}}
  %o, %l = tessel.attention %q, %kt, %v mask %m keep %k : (tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x4xi1>) -> (tensor<4x8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @keep_broadcast(%q: tensor<4x8xf32>, %kt: tensor<8x4xf32>, %v: tensor<4x8xf32>, %m: tensor<4x4xf32>, %k: tensor<4x3xi1>) {
  // expected-error@+1 {{keep [4, 3] does not broadcast to the scores [4, 4]}}
  %o, %l = tessel.attention %q, %kt, %v mask %m keep %k {masked_score = -1.0e4 : f32} : (tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x3xi1>) -> (tensor<4x8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @grad_types(%q: tensor<4x8xbf16>, %kt: tensor<8x4xbf16>, %v: tensor<4x8xbf16>, %o: tensor<4x8xbf16>, %l: tensor<4xf32>, %g: tensor<4x8xf32>) {
  // expected-error@+1 {{grad has type 'tensor<4x8xf32>', expected 'tensor<4x8xbf16>'}}
  %dq, %dkt, %dv = tessel.attention_grad %q, %kt, %v, %o, %l, %g : (tensor<4x8xbf16>, tensor<8x4xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4xf32>, tensor<4x8xf32>) -> (tensor<4x8xbf16>, tensor<8x4xbf16>, tensor<4x8xbf16>)
  return
}

// -----

// The half attention that -tessel-float-normalization keeps: valid.
func.func @half(%q: tensor<2x4x8xbf16>, %kt: tensor<2x8x4xbf16>, %v: tensor<2x4x8xbf16>, %m: tensor<4x4xf32>, %f: tensor<f32>) -> tensor<2x4x8xbf16> {
  %o, %l = tessel.attention %q, %kt, %v mask %m nan_fill %f : (tensor<2x4x8xbf16>, tensor<2x8x4xbf16>, tensor<2x4x8xbf16>, tensor<4x4xf32>, tensor<f32>) -> (tensor<2x4x8xbf16>, tensor<2x4xf32>)
  return %o : tensor<2x4x8xbf16>
}

// -----

// where(keep, s, c) + mask's attention and its gradient: valid.
func.func @keep(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %m: tensor<2x1x4xf32>, %k: tensor<4x4xi1>, %g: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %o, %l = tessel.attention %q, %kt, %v mask %m keep %k {masked_score = -3.40282347E+38 : f32} : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>, tensor<2x1x4xf32>, tensor<4x4xi1>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  %dq, %dkt, %dv = tessel.attention_grad %q, %kt, %v, %o, %l, %g mask %m keep %k {masked_score = -3.40282347E+38 : f32} : (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<2x4x8xf32>, tensor<2x1x4xf32>, tensor<4x4xi1>) -> (tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>)
  return %dq : tensor<2x4x8xf32>
}
