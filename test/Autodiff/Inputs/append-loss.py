"""Appends a scalar loss, the mean of the (single) output, to an imported
function: `append-loss.py IN.mlir OUT.mlir`. The output stays a result; the
loss becomes the last one, named `loss` (gpt2.test)."""
import re
import sys

text = open(sys.argv[1]).read()
ret = re.search(r"return (%\w+) : (tensor<([0-9x]+)xf32>)", text)
value, ty, dims = ret.group(1), ret.group(2), ret.group(3).split("x")
all_dims = ", ".join(str(i) for i in range(len(dims)))
text = text.replace(ret.group(0),
    f"%loss = tessel.reduce_mean {value} dims = [{all_dims}] : ({ty}) -> tensor<f32>\n"
    f"    return {value}, %loss : {ty}, tensor<f32>")
text = re.sub(r"(func\.func @main\([^)]*\)) -> " + re.escape(ty),
              lambda m: f"{m.group(1)} -> ({ty}, tensor<f32>)", text)
text = re.sub(r'tessel\.output_names = \["(\w+)"\]',
              r'tessel.output_names = ["\1", "loss"]', text)
open(sys.argv[2], "w").write(text)
