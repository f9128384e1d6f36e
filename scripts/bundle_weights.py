#!/usr/bin/env python3
"""Keeps the GPU bundle's artifacts from carrying bytes the repository
already carries (scripts/gpu-bundle, scripts/gpu-check; docs/gpu.md).

The bundle travels to the GPU machine beside the working tree, under one
64 MiB limit, and most of its artifacts' bytes are the test models' weights
and inputs, which the tree holds already. So:

  bundle_weights.py strip BUNDLE_DIR REPO
      every file under BUNDLE_DIR/artifacts of 64 KiB or more that equals a
      file under REPO/test becomes FILE.ref (that file's path and sha256);
      every .safetensors file becomes FILE.recipe.json plus FILE.rest: the
      byte ranges of its tensors found verbatim in a file under
      REPO/test/models (ONNX initializers are stored raw), and the rest of
      its bytes (the header, small or transformed tensors) kept as they are.
  bundle_weights.py restore BUNDLE_DIR REPO
      the reverse, each file checked against the sha256 recorded when it was
      stripped; a missing or changed source file is an error that names it.

Standard library only: it runs on the GPU machine's Python.
"""
import hashlib
import json
import os
import struct
import sys

MIN_FILE = 64 * 1024  # smaller files are not worth a reference
MIN_TENSOR = 4096     # nor smaller tensors (and short byte runs may recur)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def tracked_files(repo, sub):
    """Files of at least MIN_FILE bytes under repo/sub, by relative path."""
    out = []
    for root, _, files in os.walk(os.path.join(repo, sub)):
        for name in files:
            p = os.path.join(root, name)
            if os.path.getsize(p) >= MIN_FILE:
                out.append(os.path.relpath(p, repo))
    return sorted(out)


def strip(bundle, repo):
    test_files = tracked_files(repo, "test")
    by_hash = {}
    for rel in test_files:
        by_hash.setdefault(sha256(read(os.path.join(repo, rel))), rel)
    models = [rel for rel in test_files if rel.startswith(os.path.join("test", "models"))]
    blobs = {}  # loaded lazily

    def blob(rel):
        if rel not in blobs:
            blobs[rel] = read(os.path.join(repo, rel))
        return blobs[rel]

    saved = 0
    for root, _, files in os.walk(os.path.join(bundle, "artifacts")):
        for name in sorted(files):
            path = os.path.join(root, name)
            size = os.path.getsize(path)
            if size < MIN_FILE:
                continue
            data = read(path)
            digest = sha256(data)
            if digest in by_hash:
                with open(path + ".ref", "w") as f:
                    json.dump({"path": by_hash[digest], "sha256": digest}, f)
                os.remove(path)
                saved += size
                continue
            if not name.endswith(".safetensors"):
                continue
            (n,) = struct.unpack("<Q", data[:8])
            header = json.loads(data[8:8 + n])
            base = 8 + n
            pieces, rest, at = [], bytearray(), 0
            spans = sorted((v["data_offsets"][0] + base, v["data_offsets"][1] + base)
                           for k, v in header.items() if k != "__metadata__")
            for begin, end in spans:
                if end - begin < MIN_TENSOR:
                    continue
                chunk = data[begin:end]
                for rel in models:
                    off = blob(rel).find(chunk)
                    if off >= 0:
                        if begin > at:
                            pieces.append(["rest", len(rest), begin - at])
                            rest += data[at:begin]
                        pieces.append(["file", rel, off, end - begin])
                        at = end
                        break
            if at == 0:
                continue  # nothing found: keep the file
            if at < len(data):
                pieces.append(["rest", len(rest), len(data) - at])
                rest += data[at:]
            with open(path + ".rest", "wb") as f:
                f.write(rest)
            with open(path + ".recipe.json", "w") as f:
                json.dump({"size": len(data), "sha256": digest, "pieces": pieces}, f)
            os.remove(path)
            saved += len(data) - len(rest)
    print("bundle_weights: %d bytes left to the repository's copies" % saved)


def restore(bundle, repo):
    def source(rel):
        top = os.path.realpath(repo)
        p = os.path.realpath(os.path.join(repo, rel))
        if os.path.commonpath([p, top]) != top:
            sys.exit("bundle_weights: %s reaches outside the repository" % rel)
        if not os.path.exists(p):
            sys.exit("bundle_weights: the repository lacks %s, which the bundle's "
                     "artifacts were made from" % rel)
        return p

    count = 0
    for root, _, files in os.walk(os.path.join(bundle, "artifacts")):
        for name in sorted(files):
            path = os.path.join(root, name)
            if name.endswith(".ref"):
                target = path[:-len(".ref")]
                with open(path) as f:
                    ref = json.load(f)
                data = read(source(ref["path"]))
                if sha256(data) != ref["sha256"]:
                    sys.exit("bundle_weights: %s differs from the file the bundle was "
                             "made with (%s): make the bundle again" % (ref["path"], target))
            elif name.endswith(".recipe.json"):
                target = path[:-len(".recipe.json")]
                with open(path) as f:
                    recipe = json.load(f)
                rest = read(target + ".rest")
                out = bytearray()
                for piece in recipe["pieces"]:
                    if piece[0] == "rest":
                        _, off, length = piece
                        out += rest[off:off + length]
                    else:
                        _, rel, off, length = piece
                        with open(source(rel), "rb") as f:
                            f.seek(off)
                            out += f.read(length)
                data = bytes(out)
                if len(data) != recipe["size"] or sha256(data) != recipe["sha256"]:
                    sys.exit("bundle_weights: %s does not rebuild from the repository "
                             "(a test model changed since the bundle was made): make "
                             "the bundle again" % os.path.relpath(target, bundle))
                os.remove(target + ".rest")
            else:
                continue
            with open(target, "wb") as f:
                f.write(data)
            os.remove(path)
            count += 1
    print("bundle_weights: %d files restored from the repository" % count)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("strip", "restore"):
        sys.exit(__doc__)
    (strip if sys.argv[1] == "strip" else restore)(sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    main()
