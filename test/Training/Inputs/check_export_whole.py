"""check_export_whole.py SOURCE.onnx EXPORTED.onnx CHECKPOINT_DIR: the exported
model is self-contained (no external data) and valid; each initializer the
checkpoint holds equals the checkpoint's value, every other one equals the
source model's (read with onnx's own external-data loader)."""
import os, sys
import numpy as np
import onnx
from onnx import numpy_helper
from safetensors_np import read_safetensors

src, out, ck = sys.argv[1:4]
exported = onnx.load(out, load_external_data=False)
assert not any(t.data_location == onnx.TensorProto.EXTERNAL
               for t in exported.graph.initializer), "external data left"
if exported.opset_import[0].version <= 17:  # what this libonnx knows
    onnx.checker.check_model(exported)
source = {t.name: numpy_helper.to_array(t) for t in onnx.load(src).graph.initializer}

state = read_safetensors(os.path.join(ck, "rank0.safetensors"))
trained = kept = 0
for t in exported.graph.initializer:
    a = numpy_helper.to_array(t)
    if t.name in state:
        assert np.array_equal(a, state[t.name]), t.name
        trained += 1
    else:
        assert np.array_equal(a, source[t.name]), t.name
        kept += 1
print("exported: %d trained initializers as the checkpoint, %d others as the source, "
      "no external data" % (trained, kept))
