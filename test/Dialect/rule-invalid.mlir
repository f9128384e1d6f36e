// Every verifier and parser message of #tessel.rule.
// RUN: tessel-opt %s -split-input-file -verify-diagnostics

// rule_c1: sizes are positive.
// expected-error@+1 {{factor 'j' has non-positive size 0}}
func.func @rule_c1_size() attributes {r.rule = #tessel.rule<([i, j]) -> ([i]) {i=4, j=0}>} {
  return
}

// -----

// rule_c1: every factor index is in range.
// expected-error@+1 {{factor index 2 is out of range [0, 2)}}
func.func @rule_c1_range() attributes {r.rule = #tessel.rule<([i, k]) -> ([i]) {i=4, j=2}>} {
  return
}

// -----

// rule_c2: reduction factors are in range.
// expected-error@+1 {{factor index 3 is out of range [0, 2)}}
func.func @rule_c2() attributes {r.rule = #tessel.rule<([i, j]) -> ([i]) {i=4, j=2} reduction={l}>} {
  return
}

// -----

// expected-error@+1 {{factor 'k' is out of order: name factors i, j, k, ...}}
func.func @rule_order() attributes {r.rule = #tessel.rule<([i, k]) -> ([i]) {i=4, k=2}>} {
  return
}

// -----

// expected-error@+1 {{bad factor names 'I'}}
func.func @rule_names() attributes {r.rule = #tessel.rule<([I]) -> () {i=4}>} {
  return
}

// -----

// expected-error@+1 {{expected factor names or 1}}
func.func @rule_unit() attributes {r.rule = #tessel.rule<([2]) -> () {}>} {
  return
}

// -----

// expected-error@+1 {{bad factor name 'ij'}}
func.func @rule_set() attributes {r.rule = #tessel.rule<([ij]) -> () {i=4, j=2} reduction={ij}>} {
  return
}
