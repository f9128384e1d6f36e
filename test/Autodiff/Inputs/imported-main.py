#!/usr/bin/env python3
"""Writes the @main of `tesselc --emit=mlir` (an imported ONNX model whose
output is a scalar loss) as fdcheck.py reads it: the function alone, without
its module and its input/output name attributes, after the given
`// FD-...` directive lines.

    imported-main.py IN.mlir OUT.mlir ["// FD-INPUT: %s uniform 0.5 1.5" ...]
"""
import re
import sys

src, dst, directives = sys.argv[1], sys.argv[2], sys.argv[3:]
text = open(src).read()
text = re.sub(r" attributes \{tessel\.input_names[^}]*\}", "", text)
lines = text.strip().split("\n")
if not lines[0].startswith("module") or lines[-1] != "}":
    sys.exit("imported-main.py: %s is not one module" % src)
with open(dst, "w") as f:
    f.write("\n".join(directives + lines[1:-1]) + "\n")
