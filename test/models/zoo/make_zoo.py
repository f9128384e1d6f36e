#!/usr/bin/env python3
"""Builds the zoo: small random-weight models of real architectures, each
exported by torch.onnx.export's default exporter (dynamo, opset 20, weights
in model.onnx.data) and by dynamo=False (the TorchScript exporter, opset 17),
with PyTorch's references. The tests need none of torch: only these files.

    python make_zoo.py [OUT_DIR] [--only NAME,...]

needs torch, torchvision, transformers, onnx, onnxscript (bench/ venvs have
them: python3 -m venv v && v/bin/pip install torch torchvision transformers
onnx onnxscript). For each architecture NAME it writes OUT_DIR/NAME/:

  dyn/model.onnx (+ model.onnx.data)  torch.onnx.export(m, args, f)
  leg/model.onnx                      torch.onnx.export(..., dynamo=False)
      (a directory is missing when that exporter refuses the model; the
      reason is in meta.json's "refused")
  input_<name>.npy, output.npy        one batch and PyTorch's eval output
  meta.json                           inputs, output, parameters (name,
                                      shape, requires_grad) with ties
                                      (named_parameters(remove_duplicate=
                                      False)), buffers, the exporters' results
and for causal language models train/ (bench/compare_train.py's format):
  batches.npy  i64 [steps, batch, seq+1]: step k trains on [:, :-1] -> [:, 1:]
  grads.npz    the first step's gradient of every parameter, by name
  train.json   optimizer, first_loss, trajectory_full (5 AdamW losses)
  trained.npz  (--trained NAME,...: for the architectures the weights tests
               use) the state_dict after the 5 steps, every tied name too

    python make_zoo.py [OUT_DIR] --trained gpt2,llama

adds train/trained.npz to existing architectures without rewriting them:
the model is rebuilt from seed 0 and must give output.npy again.
"""
import argparse
import json
import os
import shutil
import sys
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore")
BATCH, SEQ, STEPS = 2, 16, 5
ADAMW = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)


class LogitsOnly(torch.nn.Module):
    """A transformers model as tensor in, tensor out (no cache, no dicts)."""

    def __init__(self, model, key):
        super().__init__()
        self.model = model
        self.key = key

    def forward(self, x):
        kw = {"use_cache": False} if hasattr(self.model, "lm_head") else {}
        out = self.model(**{self.key: x}, **kw)
        return out[0]


def hf(name):
    import transformers as T
    small = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, max_position_embeddings=64)
    if name == "llama":
        return LogitsOnly(T.LlamaForCausalLM(T.LlamaConfig(vocab_size=128, num_key_value_heads=4, **small)), "input_ids"), "lm"
    if name == "qwen2_gqa":
        return LogitsOnly(T.Qwen2ForCausalLM(T.Qwen2Config(vocab_size=128, num_key_value_heads=2, **small)), "input_ids"), "lm"
    if name == "mistral_gqa":
        return LogitsOnly(T.MistralForCausalLM(T.MistralConfig(vocab_size=128, num_key_value_heads=2, sliding_window=None, **small)), "input_ids"), "lm"
    if name == "gpt2":
        c = T.GPT2Config(vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_positions=64)
        return LogitsOnly(T.GPT2LMHeadModel(c), "input_ids"), "lm"
    if name == "gpt_neox":
        c = T.GPTNeoXConfig(vocab_size=128, rotary_pct=0.25, **small)
        return LogitsOnly(T.GPTNeoXForCausalLM(c), "input_ids"), "lm"
    if name == "phi":
        c = T.PhiConfig(vocab_size=128, partial_rotary_factor=0.5, **small)
        return LogitsOnly(T.PhiForCausalLM(c), "input_ids"), "lm"
    if name == "bert":
        return LogitsOnly(T.BertModel(T.BertConfig(vocab_size=128, **small)), "input_ids"), "ids"
    if name == "t5_encoder":
        c = T.T5Config(vocab_size=128, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4)
        return LogitsOnly(T.T5EncoderModel(c), "input_ids"), "ids"
    if name == "vit":
        c = T.ViTConfig(image_size=32, patch_size=8, num_channels=3, **small)
        return LogitsOnly(T.ViTModel(c, add_pooling_layer=False), "pixel_values"), ("image", (3, 32, 32))
    if name == "whisper_encoder":
        c = T.WhisperConfig(num_mel_bins=16, d_model=64, encoder_layers=2, encoder_attention_heads=4,
                            encoder_ffn_dim=128, max_source_positions=16, vocab_size=128,
                            pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
        from transformers.models.whisper.modeling_whisper import WhisperEncoder
        return LogitsOnly(WhisperEncoder(c), "input_features"), ("image", (16, 32))
    return None


def tv(name):
    import torchvision as TV
    from torchvision.models.resnet import BasicBlock
    if name == "resnet":
        # torchvision's ResNet with its widths cut 8x (the blocks are torchvision's).
        m = TV.models.resnet.ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10)
        def shrink(mod):
            for n, c in mod.named_children():
                if isinstance(c, torch.nn.Conv2d):
                    setattr(mod, n, torch.nn.Conv2d(c.in_channels // 8 if c.in_channels > 3 else 3,
                                                   c.out_channels // 8, c.kernel_size, c.stride,
                                                   c.padding, bias=c.bias is not None))
                elif isinstance(c, torch.nn.BatchNorm2d):
                    setattr(mod, n, torch.nn.BatchNorm2d(c.num_features // 8))
                elif isinstance(c, torch.nn.Linear):
                    setattr(mod, n, torch.nn.Linear(c.in_features // 8, c.out_features))
                else:
                    shrink(c)
        shrink(m)
        return m, ("image", (3, 32, 32))
    if name == "mobilenet_v2":
        return TV.models.mobilenet_v2(width_mult=0.25, num_classes=10), ("image", (3, 32, 32))
    if name == "convnext":
        from torchvision.models.convnext import CNBlockConfig, ConvNeXt
        cfg = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), CNBlockConfig(64, None, 1)]
        return ConvNeXt(cfg, num_classes=10), ("image", (3, 32, 32))
    return None


def transformer_encoder():
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    class Enc(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(16, 64)
            self.enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        def forward(self, x):
            return self.enc(self.proj(x))
    return Enc(), ("image", (SEQ, 16))


ARCHS = ["llama", "qwen2_gqa", "mistral_gqa", "gpt2", "gpt_neox", "phi", "bert",
         "t5_encoder", "vit", "whisper_encoder", "transformer_encoder", "resnet",
         "mobilenet_v2", "convnext"]


def build(name):
    if name == "transformer_encoder":
        return transformer_encoder()
    return hf(name) or tv(name)


def example(kind, g):
    if kind in ("lm", "ids"):
        return torch.randint(0, 128, (BATCH, SEQ), generator=g)
    return torch.randn((BATCH,) + kind[1], generator=g)


def reference_training(model, batches):
    """PyTorch's own loop: mean token cross-entropy, AdamW, STEPS steps."""
    opt = torch.optim.AdamW(model.parameters(), foreach=False, **ADAMW)
    losses, grads = [], None
    for k in range(batches.shape[0]):
        b = torch.from_numpy(batches[k])
        logits = model(b[:, :-1])
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), b[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        if grads is None:
            grads = {n: p.grad.detach().numpy().copy()
                     for n, p in model.named_parameters() if p.grad is not None}
        opt.step()
        losses.append(float(loss))
    return losses, grads


def unpack_sequences():
    """transformers 5 looks for packed sequences with torch.diff, which the
    TorchScript exporter cannot write; our batches are never packed."""
    try:
        import transformers.masking_utils as mu
        mu.find_packed_sequence_indices = lambda *a, **k: None
    except ImportError:
        pass


def write_trained(out, name):
    """train/trained.npz of an existing architecture: PyTorch's state_dict
    after the reference training, under every name (tied ones too)."""
    d = os.path.join(out, name)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    model, kind = build(name)
    model.eval()
    x = torch.from_numpy(np.load(os.path.join(d, "input_input_ids.npy")))
    with torch.no_grad():
        y = model(x).numpy()
    if not np.array_equal(y, np.load(os.path.join(d, "output.npy"))):
        sys.exit("%s: the rebuilt model does not give output.npy again" % name)
    batches = np.load(os.path.join(d, "train", "batches.npy"))
    losses, _ = reference_training(model, batches)
    want = json.load(open(os.path.join(d, "train", "train.json")))["trajectory_full"]
    if losses != want:
        sys.exit("%s: the rebuilt training gives %s, train.json %s" % (name, losses, want))
    state = {n: p.detach().numpy().copy()
             for n, p in model.named_parameters(remove_duplicate=False)}
    np.savez(os.path.join(d, "train", "trained.npz"), **state)
    print("%s: train/trained.npz (%d names)" % (name, len(state)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--only", default="")
    ap.add_argument("--trained", default="")
    args = ap.parse_args()
    if args.trained:
        for name in args.trained.split(","):
            write_trained(args.out, name)
        return
    names = args.only.split(",") if args.only else ARCHS
    for name in names:
        torch.manual_seed(0)
        g = torch.Generator().manual_seed(1)
        model, kind = build(name)
        model.eval()
        d = os.path.join(args.out, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        x = example(kind if isinstance(kind, tuple) else kind, g)
        input_name = "input_ids" if kind in ("lm", "ids") else "input"
        np.save(os.path.join(d, "input_%s.npy" % input_name), x.numpy())
        with torch.no_grad():
            y = model(x)
        np.save(os.path.join(d, "output.npy"), y.numpy())
        params = []
        seen = {}
        for n, p in model.named_parameters(remove_duplicate=False):
            tie = seen.setdefault(id(p), n)
            params.append({"name": n, "shape": list(p.shape),
                           "requires_grad": p.requires_grad,
                           "tied_to": tie if tie != n else None})
        meta = {"arch": name, "input": input_name, "output": "output",
                "causal_lm": kind == "lm", "parameters": params,
                "buffers": [{"name": n, "shape": list(b.shape), "dtype": str(b.dtype)}
                            for n, b in model.named_buffers()],
                "refused": {}}
        for tag, dyn in (("dyn", True), ("leg", False)):
            sub = os.path.join(d, tag)
            os.makedirs(sub)
            f = os.path.join(sub, "model.onnx")
            try:
                kw = {} if dyn else {"opset_version": 17}
                if not dyn:
                    unpack_sequences()
                torch.onnx.export(model, (x,), f, dynamo=dyn, input_names=[input_name],
                                  output_names=["output"], **kw)
            except Exception as e:  # the exporter's refusal, recorded
                shutil.rmtree(sub)
                meta["refused"][tag] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300])
                print("%s/%s: refused: %s" % (name, tag, meta["refused"][tag]), file=sys.stderr)
        if kind == "lm":
            t = os.path.join(d, "train")
            os.makedirs(t)
            batches = torch.randint(0, 128, (STEPS, BATCH, SEQ + 1), generator=g).numpy()
            np.save(os.path.join(t, "batches.npy"), batches)
            train_model, _ = build(name)  # the same weights (seed 0), train mode
            torch.manual_seed(0)
            train_model, _ = build(name)
            train_model.load_state_dict(model.state_dict())
            # Dropout off (eval mode): these models differ from training mode
            # by dropout alone, and the references must be deterministic.
            train_model.eval()
            losses, grads = reference_training(train_model, batches)
            np.savez(os.path.join(t, "grads.npz"), **grads)
            json.dump({"loss": "mean token cross-entropy of logits[:, t] against input[t+1]",
                       "optimizer": {"adamw": {k: list(v) if isinstance(v, tuple) else v
                                               for k, v in ADAMW.items()}},
                       "first_loss": losses[0], "trajectory_full": losses},
                      open(os.path.join(t, "train.json"), "w"), indent=1)
        json.dump(meta, open(os.path.join(d, "meta.json"), "w"), indent=1)
        size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)
        print("%s: %.2f MB, exports: %s" % (name, size / 1e6,
              ",".join(t for t in ("dyn", "leg") if t not in meta["refused"]) or "none"))


if __name__ == "__main__":
    main()
