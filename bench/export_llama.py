#!/usr/bin/env python3
"""Exports a transformers LlamaForCausalLM built from a config (random
weights, seed 0; transformers' default attention, sdpa) with
torch.onnx.export's default exporter (dynamo, weights in model.onnx.data),
as a user exports a real model: the checks of real size
(docs/scale.md, bench/run-scale-memory) use it. Needs a venv with torch,
transformers, onnx and onnxscript; the tests never do.

    export_llama.py OUT_DIR [--size 7b|0.7b|0.3b|tiny] [--batch B]
                    [--seq S] [--shapes-only | --meta | --strip-only]

Writes OUT_DIR/model.onnx (+ model.onnx.data), input_input_ids.npy and,
unless --no-reference, PyTorch's logits for it (output.npy). --shapes-only
also writes OUT_DIR/shapes/model.onnx: the same graph with every
initializer's values dropped (dims and type kept), the route docs/scale.md
gives for planning a model whose weights are not at hand.
"""
import argparse
import os
import sys
import warnings

warnings.filterwarnings("ignore")

SIZES = {
    # 0.70 B: hidden 1536, 24 layers, 12 heads / 4 KV heads, ff 4096.
    # Llama-2-7B's config (shapes only: --meta).
    "7b": dict(hidden_size=4096, intermediate_size=11008,
               num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=32, vocab_size=32000),
    "0.7b": dict(hidden_size=1536, intermediate_size=4096,
                 num_hidden_layers=24, num_attention_heads=12,
                 num_key_value_heads=4, vocab_size=32000),
    # 0.37 B: hidden 1024, 24 layers, 16 heads / 4 KV heads, ff 3584.
    "0.3b": dict(hidden_size=1024, intermediate_size=3584,
                 num_hidden_layers=24, num_attention_heads=16,
                 num_key_value_heads=4, vocab_size=32000),
    # For trying the script: 2 layers, hidden 64.
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2,
                 vocab_size=128),
}


def logits_only(model):
    """`model` as input_ids -> logits, without a cache."""
    import torch

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids=input_ids, use_cache=False).logits

    return Logits(model).eval()


def strip_values(src, dst):
    """Writes `src` with every float initializer's data dropped (dims and
    type kept; the small integer and bool constants the exporter writes
    keep their values, as a shapes-only copy made for planning does)."""
    import onnx
    model = onnx.load(src, load_external_data=False)
    floats = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
              onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE)
    for t in model.graph.initializer:
        if t.data_type not in floats:
            if t.data_location == onnx.TensorProto.EXTERNAL:
                # Inline: the copy has no external data file.
                info = {e.key: e.value for e in t.external_data}
                with open(os.path.join(os.path.dirname(src),
                                       info["location"]), "rb") as f:
                    f.seek(int(info.get("offset", 0)))
                    t.raw_data = f.read(int(info["length"]))
                del t.external_data[:]
                t.data_location = onnx.TensorProto.DEFAULT
            continue
        t.ClearField("raw_data")
        for f in ("float_data", "int32_data", "int64_data", "double_data",
                  "uint64_data", "string_data"):
            t.ClearField(f)
        del t.external_data[:]
        t.data_location = onnx.TensorProto.DEFAULT
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    onnx.save(model, dst)


def export_meta(model, ids, out):
    """Writes OUT/shapes/model.onnx from a model on the meta device: no
    weight is ever materialised (a 7 B model plans on a laptop). The graph
    is the exporter's own, unoptimised (its optimiser folds constants,
    which meta tensors do not have); each initializer keeps its name, type
    and dims and has no values."""
    import onnx
    import torch

    prog = torch.onnx.export(logits_only(model), (ids,), dynamo=True,
                             optimize=False, input_names=["input_ids"],
                             output_names=["logits"])
    inits = [(name, v.dtype, [int(d) for d in v.shape], dict(v.metadata_props))
             for name, v in prog.model.graph.initializers.items()]
    path = os.path.join(out, "shapes", "model.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    prog.save(path, include_initializers=False)
    proto = onnx.load(path, load_external_data=False)
    for name, dtype, dims, props in inits:
        t = onnx.TensorProto()
        t.name = name
        t.data_type = int(dtype)
        t.dims.extend(dims)
        proto.graph.initializer.append(t)
        # What torch.export knew of each (PARAMETER or BUFFER: a rotary
        # table's inv_freq does not train), where the importer reads it.
        if props:
            vi = onnx.helper.make_tensor_value_info(name, int(dtype), dims)
            for k, v in props.items():
                vi.metadata_props.add(key=k, value=v)
            proto.graph.value_info.append(vi)
    onnx.save(proto, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--size", choices=sorted(SIZES), default="0.7b")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--shapes-only", action="store_true")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--meta", action="store_true",
                    help="only OUT_DIR/shapes/model.onnx, from a model on "
                         "the meta device (no weights made: any size)")
    ap.add_argument("--strip-only", action="store_true",
                    help="only write shapes/ from an existing OUT_DIR")
    args = ap.parse_args()
    if args.strip_only:
        strip_values(os.path.join(args.out, "model.onnx"),
                     os.path.join(args.out, "shapes", "model.onnx"))
        return 0

    import numpy as np
    import torch
    import transformers

    if args.meta:
        config = transformers.LlamaConfig(
            **SIZES[args.size], max_position_embeddings=max(2048, args.seq),
            tie_word_embeddings=False)
        with torch.device("meta"):
            model = transformers.LlamaForCausalLM(config).eval()
        n = sum(p.numel() for p in model.parameters())
        print("llama %s (meta): %.3f B parameters, batch %d x seq %d"
              % (args.size, n / 1e9, args.batch, args.seq), flush=True)
        export_meta(model, torch.zeros((args.batch, args.seq),
                                       dtype=torch.long), args.out)
        print("wrote", os.path.join(args.out, "shapes"), flush=True)
        return 0

    config = transformers.LlamaConfig(
        **SIZES[args.size], max_position_embeddings=max(2048, args.seq),
        tie_word_embeddings=False)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).float().eval()
    n = sum(p.numel() for p in model.parameters())
    print("llama %s: %.3f B parameters, batch %d x seq %d"
          % (args.size, n / 1e9, args.batch, args.seq), flush=True)

    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq))
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "input_input_ids.npy"), ids.numpy())
    wrapped = logits_only(model)
    path = os.path.join(args.out, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(wrapped, (ids,), path, input_names=["input_ids"],
                          output_names=["logits"], dynamo=True,
                          external_data=True)
        if not args.no_reference:
            np.save(os.path.join(args.out, "output.npy"),
                    wrapped(ids).numpy())
    if args.shapes_only:
        strip_values(path, os.path.join(args.out, "shapes", "model.onnx"))
    print("wrote", args.out, flush=True)


if __name__ == "__main__":
    sys.exit(main())
