#!/usr/bin/env python3
"""Writes a GPT-2-shaped tessel module with the Megatron plan as specs.

    gen_gpt2_ir.py --layers 48 --d 1600 --heads 25 --seq 1024 --vocab 50257 > gpt2_xl.mlir
    gen_gpt2_ir.py --plain ...   # no mesh, no specs: for --train --mesh/--plugin

Weights are `tessel.weight` ops (names only; no data), so any size is cheap to
write. Used by bench/run-partition-bench to time propagation + partitioning.
"""
import argparse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=48)
    ap.add_argument("--d", type=int, default=1600)
    ap.add_argument("--heads", type=int, default=25)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--mesh", default='"dp"=2, "tp"=4')
    ap.add_argument("--plain", action="store_true",
                    help="no mesh and no specs; named input and output "
                         "(tesselc --train --mesh ... --plugin ...)")
    a = ap.parse_args()
    b, t, d, h, v = a.batch, a.seq, a.d, a.heads, a.vocab
    hd = d // h
    col = '{tessel.sharding = #tessel.sharding<@mesh, [{}, {"tp"}]>}'
    colb = '{tessel.sharding = #tessel.sharding<@mesh, [{"tp"}]>}'
    row = '{tessel.sharding = #tessel.sharding<@mesh, [{"tp"}, {}]>}'
    if a.plain:
        col = colb = row = ""

    def act(width):
        return "tensor<%dx%dx%dxf32>" % (b, t, width)

    X = act(d)
    out = []
    w = out.append
    if a.plain:
        w('func.func @gpt2(%%ids: tensor<%dx%dxi64>) -> tensor<%dx%dx%dxf32> attributes {tessel.input_names = ["input_ids"], tessel.output_names = ["logits"]} {' % (b, t, b, t, v))
    else:
        w("tessel.mesh @mesh [%s]" % a.mesh)
        w('func.func @gpt2(%%ids: tensor<%dx%dxi64> {tessel.sharding = #tessel.sharding<@mesh, [{"dp"}, {}]>}) -> tensor<%dx%dx%dxf32> {' % (b, t, b, t, v))
    w('  %%wte = tessel.weight "transformer.wte.weight" %s : tensor<%dx%dxf32>' % (col, v, d))
    w('  %%wpe = tessel.weight "transformer.wpe.weight" %s : tensor<%dx%dxf32>' % (col, t, d))
    w("  %%tok = tessel.gather %%wte[%%ids] axis = 0 : (tensor<%dx%dxf32>, tensor<%dx%dxi64>) -> %s" % (v, d, b, t, X))
    w("  %%h0 = tessel.add %%tok, %%wpe : (%s, tensor<%dx%dxf32>) -> %s" % (X, t, d, X))
    w("  %scale = tessel.constant dense<8.0> : tensor<f32>")
    w("  %neg = tessel.constant dense<-3.0e+38> : tensor<f32>")
    S = "tensor<%dx%dx%dx%dxf32>" % (b, h, t, t)
    Q = "tensor<%dx%dx%dx%dxf32>" % (b, h, t, hd)
    K = "tensor<%dx%dx%dx%dxf32>" % (b, h, hd, t)
    R = "tensor<%dx%dx%dx%dxf32>" % (b, t, h, hd)
    for i in range(a.layers):
        p = "transformer.h.%d." % i
        x = "%%h%d" % i
        n = "l%d_" % i

        def W(name, spec, shape, dtype="f32"):
            w('  %%%s%s = tessel.weight "%s%s" %s : tensor<%sx%s>' % (n, name.replace(".", "_"), p, name, spec, "x".join(map(str, shape)), dtype))
            return "%%%s%s" % (n, name.replace(".", "_"))

        def op(name, text):
            w("  %%%s%s = %s" % (n, name, text))
            return "%%%s%s" % (n, name)

        def layer_norm(name, src, module):
            g, beta = W(module + ".weight", "", [d]), W(module + ".bias", "", [d])
            return op(name, "tessel.layer_norm %s, %s, %s axis = 2 : (%s, tensor<%dxf32>, tensor<%dxf32>) -> %s" % (src, g, beta, X, d, d, X))

        def linear(names, src, module, specs, din, dout):
            """src @ module.weight + module.bias, [b, t, din] -> [b, t, dout]."""
            wt, bias = W(module + ".weight", specs[0], [din, dout]), W(module + ".bias", specs[1], [dout])
            y = op(names[0], "tessel.matmul %s, %s : (%s, tensor<%dx%dxf32>) -> %s" % (src, wt, act(din), din, dout, act(dout)))
            return op(names[1], "tessel.add %s, %s : (%s, tensor<%dxf32>) -> %s" % (y, bias, act(dout), dout, act(dout)))

        x1 = layer_norm("x1", x, "ln_1")
        X3 = act(3 * d)
        qkv = linear(("qkv0", "qkv"), x1, "attn.c_attn", (col, colb), d, 3 * d)
        w("  %%%sq0, %%%sk0, %%%sv0 = tessel.split %s dim = 2 sizes = [%d, %d, %d] : (%s) -> (%s, %s, %s)" % (n, n, n, qkv, d, d, d, X3, X, X, X))
        q1 = op("q1", "tessel.reshape %%%sq0 : (%s) -> %s" % (n, X, R))
        k1 = op("k1", "tessel.reshape %%%sk0 : (%s) -> %s" % (n, X, R))
        v1 = op("v1", "tessel.reshape %%%sv0 : (%s) -> %s" % (n, X, R))
        q = op("q", "tessel.transpose %s perm = [0, 2, 1, 3] : (%s) -> %s" % (q1, R, Q))
        kt = op("kt", "tessel.transpose %s perm = [0, 2, 3, 1] : (%s) -> %s" % (k1, R, K))
        vv = op("v", "tessel.transpose %s perm = [0, 2, 1, 3] : (%s) -> %s" % (v1, R, Q))
        s0 = op("s0", "tessel.matmul %s, %s : (%s, %s) -> %s" % (q, kt, Q, K, S))
        s1 = op("s1", "tessel.div %s, %%scale : (%s, tensor<f32>) -> %s" % (s0, S, S))
        mask = W("attn.bias", "", [1, 1, t, t], "i1")
        s2 = op("s2", "tessel.where %s, %s, %%neg : (tensor<1x1x%dx%dxi1>, %s, tensor<f32>) -> %s" % (mask, s1, t, t, S, S))
        pr = op("p", "tessel.softmax %s axis = 3 : %s" % (s2, S))
        o0 = op("o0", "tessel.matmul %s, %s : (%s, %s) -> %s" % (pr, vv, S, Q, Q))
        o1 = op("o1", "tessel.transpose %s perm = [0, 2, 1, 3] : (%s) -> %s" % (o0, Q, R))
        o = op("o", "tessel.reshape %s : (%s) -> %s" % (o1, R, X))
        a1 = linear(("a0", "a1"), o, "attn.c_proj", (row, ""), d, d)
        hh = op("h1", "tessel.add %s, %s : (%s, %s) -> %s" % (x, a1, X, X, X))
        x2 = layer_norm("x2", hh, "ln_2")
        f1 = linear(("f0", "f1"), x2, "mlp.c_fc", (col, colb), d, 4 * d)
        f2 = op("f2", "tessel.gelu %s {tanh_approximation} : %s" % (f1, act(4 * d)))
        m1 = linear(("m0", "m1"), f2, "mlp.c_proj", (row, ""), 4 * d, d)
        w("  %%h%d = tessel.add %s, %s : (%s, %s) -> %s" % (i + 1, hh, m1, X, X, X))
    L = a.layers
    w('  %%lnf_w = tessel.weight "transformer.ln_f.weight" : tensor<%dxf32>' % d)
    w('  %%lnf_b = tessel.weight "transformer.ln_f.bias" : tensor<%dxf32>' % d)
    w("  %%hf = tessel.layer_norm %%h%d, %%lnf_w, %%lnf_b axis = 2 : (%s, tensor<%dxf32>, tensor<%dxf32>) -> %s" % (L, X, d, d, X))
    w("  %%wte_t = tessel.transpose %%wte perm = [1, 0] : (tensor<%dx%dxf32>) -> tensor<%dx%dxf32>" % (v, d, d, v))
    w("  %%logits = tessel.matmul %%hf, %%wte_t : (%s, tensor<%dx%dxf32>) -> tensor<%dx%dx%dxf32>" % (X, d, v, b, t, v))
    w("  return %%logits : tensor<%dx%dx%dxf32>" % (b, t, v))
    w("}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
