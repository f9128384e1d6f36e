#!/usr/bin/python3
"""Writes the seed corpus for tessel-onnx-import-fuzzer into OUT_DIR.

Seeds, all small binary ONNX models:
  - every ONNX-text model in test/Import/*.test (split-file chunks too);
  - the test models (test/models/*/model.onnx) with initializers of more than
    256 elements turned into graph inputs, so the graph stays whole but the
    seed is a few KB;
  - the libonnx-testdata node models that test/onnx-conformance/scope.txt
    lists in scope (every op the importer supports, one model per test).

  make_seed_corpus.py OUT_DIR        (run with /usr/bin/python3: python3-onnx)
"""
import glob
import hashlib
import os
import re
import sys

import onnx
import onnx.parser

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
NODE_DATA = "/usr/share/libonnx-testdata/data/node"
MAX_SEED = 64 * 1024


def save(out, data, tag):
    if len(data) > MAX_SEED:
        return 0
    name = "%s-%s.onnx" % (tag, hashlib.sha1(data).hexdigest()[:12])
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
    return 1


def text_models(path):
    with open(path) as f:
        text = f.read()
    chunks = re.split(r"^#--- .*$", text, flags=re.M)
    for chunk in chunks:
        body = "\n".join(l for l in chunk.splitlines() if not l.lstrip().startswith("#"))
        if "<" not in body:
            continue
        try:
            yield onnx.parser.parse_model(body[body.index("<"):])
        except Exception:
            continue


def stripped(model):
    g = model.graph
    big = [t for t in g.initializer if len(t.raw_data) > 1024 or
           len(t.float_data) + len(t.int64_data) > 256]
    for t in big:
        g.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims))
        g.initializer.remove(t)
    return model


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for path in sorted(glob.glob(os.path.join(ROOT, "test", "Import", "*.test"))):
        for m in text_models(path):
            n += save(out, m.SerializeToString(), "import")
    for path in sorted(glob.glob(os.path.join(ROOT, "test", "models", "*", "model.onnx"))):
        m = onnx.load(path, load_external_data=False)
        n += save(out, stripped(m).SerializeToString(),
                  os.path.basename(os.path.dirname(path)))
    scope = os.path.join(ROOT, "test", "onnx-conformance", "scope.txt")
    if os.path.exists(scope) and os.path.isdir(NODE_DATA):
        section = None
        for line in open(scope):
            s = line.strip()
            if s.startswith("["):
                section = s
            elif s and not s.startswith("#") and section in ("[pass]", "[xfail]"):
                p = os.path.join(NODE_DATA, s.split()[0], "model.onnx")
                if os.path.exists(p):
                    n += save(out, open(p, "rb").read(), "node")
    print("make_seed_corpus.py: %d seeds in %s" % (n, out))


if __name__ == "__main__":
    main()
