#!/usr/bin/python3
"""Writes one small ONNX model per case of the ops exporters write around
attention, embeddings and 1-D/3-D convolutions, its inputs and its expected
output, computed here with numpy loops (independently of Tessel):

    exporter_ops_case.py OUTDIR CASE

writes OUTDIR/CASE.onnx, OUTDIR/CASE.NAME.npy for each input NAME and
OUTDIR/CASE.ref.npy (output "Y"). Needs Debian's python3-onnx.
"""
import itertools
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

rng = np.random.default_rng(26)
ONNX_TYPES = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64,
              np.int32: TensorProto.INT32, np.bool_: TensorProto.BOOL}


def model(nodes, inputs, y, inits=(), opset=17):
    def info(name, a):
        return helper.make_tensor_value_info(name, ONNX_TYPES[a.dtype.type], a.shape)
    g = helper.make_graph(nodes, "g", [info(k, v) for k, v in inputs.items()],
                          [info("Y", y)], initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def const(name, a):
    return helper.make_tensor(name, ONNX_TYPES[a.dtype.type], a.shape, a.flatten().tolist())


def isnan_where():
    x = rng.standard_normal((3, 4)).astype(np.float32)
    x[0, 1] = x[2, 3] = np.nan
    x[1, 2] = 1e30
    nodes = [helper.make_node("IsNaN", ["X"], ["n"]),
             helper.make_node("Where", ["n", "z", "X"], ["Y"])]
    y = x.copy()
    y[np.isnan(x)] = 0
    return model(nodes, {"X": x}, y, [const("z", np.array(0, np.float32))]), {"X": x}, y


def int_mod(fmod):
    def case():
        a = np.array([[-7, 7, -7, 7, 0, 5, -9223372036854775808, 6]] * 2, np.int64)
        b = np.array([3, -3, -3, 3, 4, 0, -1, 6], np.int64)
        y = np.zeros_like(a)
        for i, j in itertools.product(range(2), range(8)):
            p, q = int(a[i, j]), int(b[j])
            if q in (0, -1):
                r = 0  # Tessel's definition (ONNX leaves it undefined)
            else:
                r = abs(p) % abs(q) * (1 if p >= 0 else -1)  # C's remainder
                if not fmod and r != 0 and (r < 0) != (q < 0):
                    r += q
            y[i, j] = r
        nodes = [helper.make_node("Mod", ["A", "B"], ["Y"], fmod=fmod)]
        return model(nodes, {"A": a, "B": b}, y), {"A": a, "B": b}, y
    return case


def float_fmod():
    a = (rng.standard_normal((4, 5)) * 10).astype(np.float32)
    b = np.array([3.0, -2.5, 0.75, -1.0, 7.0], np.float32)
    y = np.array([[np.float32(np.fmod(np.float64(p), np.float64(q))) for p, q in zip(r, b)] for r in a], np.float32)
    nodes = [helper.make_node("Mod", ["A", "B"], ["Y"], fmod=1)]
    return model(nodes, {"A": a, "B": b}, y), {"A": a, "B": b}, y


def gather_elements(axis, data_shape, idx_shape, index_type):
    def case():
        x = rng.standard_normal(data_shape).astype(np.float32)
        dim = data_shape[axis]
        idx = rng.integers(-dim, dim, idx_shape).astype(index_type)
        y = np.zeros(idx_shape, np.float32)
        for pos in itertools.product(*map(range, idx_shape)):
            src = list(pos)
            src[axis] = int(idx[pos]) % dim
            y[pos] = x[tuple(src)]
        nodes = [helper.make_node("GatherElements", ["X", "I"], ["Y"], axis=axis)]
        return model(nodes, {"X": x, "I": idx}, y), {"X": x, "I": idx}, y
    return case


def gather_nd(batch_dims, data_shape, idx_shape):
    def case():
        x = rng.standard_normal(data_shape).astype(np.float32)
        k = idx_shape[-1]
        dims = data_shape[batch_dims:batch_dims + k]
        idx = np.stack([rng.integers(-d, d, idx_shape[:-1]) for d in dims], -1).astype(np.int64)
        out_shape = idx_shape[:-1] + data_shape[batch_dims + k:]
        y = np.zeros(out_shape, np.float32)
        for pos in itertools.product(*map(range, idx_shape[:-1])):
            src = pos[:batch_dims] + tuple(int(i) % d for i, d in zip(idx[pos], dims))
            y[pos] = x[src]
        nodes = [helper.make_node("GatherND", ["X", "I"], ["Y"], batch_dims=batch_dims)]
        return model(nodes, {"X": x, "I": idx}, y), {"X": x, "I": idx}, y
    return case


def cumsum(dtype, axis, exclusive, reverse, shape=(3, 5, 4)):
    def case():
        x = (rng.standard_normal(shape) * 4).astype(dtype)
        y = np.zeros(shape, dtype)
        n = shape[axis]
        for pos in itertools.product(*map(range, shape)):
            i = pos[axis]
            js = [j for j in range(n) if (j > i if reverse else j < i) or (j == i and not exclusive)]
            # Summed in scan order, in the element type (float32 rounding).
            acc = dtype(0)
            for j in (sorted(js, reverse=True) if reverse else sorted(js)):
                src = list(pos)
                src[axis] = j
                acc = dtype(acc + x[tuple(src)])
            y[pos] = acc
        nodes = [helper.make_node("CumSum", ["X", "axis"], ["Y"], exclusive=exclusive, reverse=reverse)]
        inits = [const("axis", np.array(axis - len(shape) if axis == 2 else axis, np.int64))]
        return model(nodes, {"X": x}, y, inits), {"X": x}, y
    return case


def conv_ref(x, w, b, strides, pads, dilations, group):
    """A direct N-d convolution in float64 (NC... layout), as ONNX defines it."""
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    k = w.shape[2:]
    nd = len(k)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(pads[d], pads[d + nd]) for d in range(nd)])
    out = [(xp.shape[2 + d] - dilations[d] * (k[d] - 1) - 1) // strides[d] + 1 for d in range(nd)]
    y = np.zeros((n, o) + tuple(out))
    og = o // group
    for oc in range(o):
        g = oc // og
        for pos in itertools.product(*map(range, out)):
            acc = np.zeros(n)
            for kk in itertools.product(*map(range, k)):
                src = tuple(pos[d] * strides[d] + kk[d] * dilations[d] for d in range(nd))
                acc += np.einsum("nc,c->n", xp[(slice(None), slice(g * cg, (g + 1) * cg)) + src],
                                 w[(oc, slice(None)) + kk].astype(np.float64))
            y[(slice(None), oc) + pos] = acc + (b[oc] if b is not None else 0)
    return y.astype(np.float32)


def conv(x_shape, w_shape, bias, **attrs):
    def case():
        x = rng.standard_normal(x_shape).astype(np.float32)
        w = rng.standard_normal(w_shape).astype(np.float32)
        nd = len(x_shape) - 2
        b = rng.standard_normal(w_shape[0]).astype(np.float32) if bias else None
        y = conv_ref(x, w, b, attrs.get("strides", [1] * nd), attrs.get("pads", [0] * 2 * nd),
                     attrs.get("dilations", [1] * nd), attrs.get("group", 1))
        ins = {"X": x, "W": w}
        if bias:
            ins["B"] = b
        nodes = [helper.make_node("Conv", list(ins), ["Y"], **attrs)]
        return model(nodes, ins, y), ins, y
    return case


def attention(q_shape, kv_shape, heads=None, mask=None, causal=0, scale=None):
    """ONNX Attention (opset 23): softmax(Q K^T * scale + bias) V in float64,
    a fully masked row giving 0; K and V heads repeated for grouped queries."""
    def case():
        q = rng.standard_normal(q_shape).astype(np.float32)
        k = rng.standard_normal(kv_shape).astype(np.float32)
        v = rng.standard_normal(kv_shape).astype(np.float32)
        ins = {"Q": q, "K": k, "V": v}
        attrs = {}
        if heads:
            attrs["q_num_heads"], attrs["kv_num_heads"] = heads
        def heads_of(x, h):  # [B, S, H*E] -> [B, H, S, E]
            return x.reshape(x.shape[0], x.shape[1], h, -1).transpose(0, 2, 1, 3) if heads else x
        q4, k4, v4 = heads_of(q, heads and heads[0]), heads_of(k, heads and heads[1]), heads_of(v, heads and heads[1])
        b, hq, l, e = q4.shape
        s = k4.shape[2]
        bias = np.zeros((l, s))
        if mask == "bool":
            m = rng.random((b, 1, l, s)) < 0.7
            m[-1, 0, 1, :] = False  # a row with no key to attend
            ins["M"] = m
            bias = np.where(m, 0.0, -np.inf)
        elif mask == "float":
            m = (rng.standard_normal((l, s)) * 2).astype(np.float32)
            ins["M"] = m
            bias = m.astype(np.float64)
        if causal:
            attrs["is_causal"] = 1
            bias = np.where(np.tril(np.ones((l, s), bool)), bias, -np.inf)
        if scale is not None:
            attrs["scale"] = scale
        sc = scale if scale is not None else 1 / np.sqrt(e)
        k4 = np.repeat(k4, hq // k4.shape[1], axis=1)
        v4 = np.repeat(v4, hq // v4.shape[1], axis=1)
        logits = np.einsum("bhle,bhse->bhls", q4.astype(np.float64), k4.astype(np.float64)) * sc + bias
        with np.errstate(invalid="ignore"):
            p = np.exp(logits - logits.max(-1, keepdims=True))
            p = p / p.sum(-1, keepdims=True)
        dead = np.broadcast_to(np.isneginf(np.max(bias, -1, keepdims=True)), p.shape)
        p = np.where(dead, 0.0, p)
        y = np.einsum("bhls,bhse->bhle", p, v4.astype(np.float64))
        if heads:
            y = y.transpose(0, 2, 1, 3).reshape(b, l, -1)
        y = y.astype(np.float32)
        nodes = [helper.make_node("Attention", list(ins), ["Y"], **attrs)]
        return model(nodes, ins, y, opset=23), ins, y
    return case


def rotary(x_shape, heads=None, dim=0, interleaved=0, positions=True):
    """ONNX RotaryEmbedding (opset 23), per the spec's algorithm in float64:
    the first `dim` channels of each head rotated pairwise by the caches'
    angles (halves, or even/odd channels when interleaved)."""
    def case():
        x = rng.standard_normal(x_shape).astype(np.float32)
        if len(x_shape) == 4:
            b, h, s, d = x_shape
            x4 = x.transpose(0, 2, 1, 3)
        else:
            b, s, hidden = x_shape
            h, d = heads, hidden // heads
            x4 = x.reshape(b, s, h, d)
        rd = dim or d
        half = rd // 2
        ins = {"X": x}
        if positions:
            angles = rng.standard_normal((s + 3, half)) * 3
            pos = rng.integers(0, s + 3, (b, s)).astype(np.int64)
            ins["cos"] = np.cos(angles).astype(np.float32)
            ins["sin"] = np.sin(angles).astype(np.float32)
            ins["pos"] = pos
            cos, sin = ins["cos"][pos], ins["sin"][pos]
        else:
            angles = rng.standard_normal((b, s, half)) * 3
            ins["cos"] = np.cos(angles).astype(np.float32)
            ins["sin"] = np.sin(angles).astype(np.float32)
            cos, sin = ins["cos"], ins["sin"]
        cos = cos.astype(np.float64)[:, :, None, :]
        sin = sin.astype(np.float64)[:, :, None, :]
        xr = x4[..., :rd].astype(np.float64)
        if interleaved:
            x1, x2 = xr[..., 0::2], xr[..., 1::2]
        else:
            x1, x2 = xr[..., :half], xr[..., half:]
        real, imag = x1 * cos - x2 * sin, x1 * sin + x2 * cos
        rot = np.empty_like(xr)
        if interleaved:
            rot[..., 0::2], rot[..., 1::2] = real, imag
        else:
            rot[..., :half], rot[..., half:] = real, imag
        y4 = np.concatenate([rot, x4[..., rd:].astype(np.float64)], axis=-1)
        y = (y4.transpose(0, 2, 1, 3) if len(x_shape) == 4 else y4.reshape(x_shape)).astype(np.float32)
        attrs = {"interleaved": interleaved}
        if dim:
            attrs["rotary_embedding_dim"] = dim
        if heads:
            attrs["num_heads"] = heads
        nodes = [helper.make_node("RotaryEmbedding", list(ins), ["Y"], **attrs)]
        return model(nodes, ins, y, opset=23), ins, y
    return case


CASES = {
    "isnan_where": isnan_where,
    "mod_int": int_mod(0),
    "fmod_int": int_mod(1),
    "fmod_float": float_fmod,
    "gather_elements_axis1": gather_elements(1, (3, 5), (3, 4), np.int64),
    "gather_elements_smaller": gather_elements(0, (4, 5, 2), (6, 3, 2), np.int32),
    "gather_elements_axis0_dp": gather_elements(0, (4, 5), (6, 5), np.int64),
    "gathernd": gather_nd(0, (3, 4, 5), (2, 6, 2)),
    "gathernd_batch": gather_nd(1, (2, 3, 4, 5), (2, 7, 1)),
    "cumsum_f32": cumsum(np.float32, 1, 0, 0),
    "cumsum_f32_excl_rev": cumsum(np.float32, 2, 1, 1),
    "cumsum_i64_rev": cumsum(np.int64, 0, 0, 1),
    "cumsum_i32_excl": cumsum(np.int32, 2, 1, 0),
    # Scanning dim 0, which the dp plan splits (the scan needs all of it).
    "cumsum_scan_dp": cumsum(np.float32, 0, 0, 1, (4, 5, 2)),
    "conv1d": conv((2, 4, 11), (6, 4, 3), True, pads=[1, 2], strides=[2], dilations=[2]),
    "conv1d_group": conv((1, 4, 9), (4, 1, 5), False, group=4, pads=[2, 2]),
    "conv3d": conv((2, 3, 5, 6, 4), (4, 3, 3, 3, 2), True, pads=[1, 1, 0, 1, 0, 1], strides=[2, 1, 2], dilations=[1, 2, 1]),
    "conv3d_group": conv((1, 4, 4, 4, 4), (4, 2, 2, 1, 3), False, group=2, strides=[1, 2, 1]),
    "attention_bool_mask": attention((2, 4, 5, 8), (2, 4, 6, 8), mask="bool"),
    "attention_gqa_causal": attention((1, 4, 6, 8), (1, 2, 6, 8), causal=1, mask="float", scale=0.3),
    "attention_3d": attention((2, 5, 16), (2, 7, 8), heads=(4, 2), mask="float"),
    "rotary_4d": rotary((2, 3, 5, 8)),
    "rotary_3d_partial_interleaved": rotary((2, 6, 24), heads=2, dim=8, interleaved=1),
    "rotary_no_positions": rotary((1, 2, 4, 6), positions=False),
}


def main():
    out, name = sys.argv[1], sys.argv[2]
    m, inputs, y = CASES[name]()
    if m.opset_import[0].version <= 17:  # what this libonnx knows
        onnx.checker.check_model(m)
    os.makedirs(out, exist_ok=True)
    onnx.save(m, os.path.join(out, name + ".onnx"))
    for k, v in inputs.items():
        np.save(os.path.join(out, "%s.%s.npy" % (name, k)), v)
    np.save(os.path.join(out, name + ".ref.npy"), y)


if __name__ == "__main__":
    main()
