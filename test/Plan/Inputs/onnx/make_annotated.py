"""Writes the ONNX models with multi-device annotations that
test/Plan/onnx-annotations.test reads, with ONNX's own Python package
(onnx >= 1.16: NodeProto.device_configurations, ModelProto.configuration),
independently of Tessel's reader and writer.

  /work/zoo-venv/bin/python test/Plan/Inputs/onnx/make_annotated.py

From test/models/mlp (x -> fc1 -> gelu -> fc2 -> relu -> fc3; Gemm weights
[out, in]), on 4 devices meant as the mesh dp=2,tp=2 (rank = dp * 2 + tp):
- mlp-dp2tp2.onnx: x split on its batch over dp (shards on {0,1}, {2,3});
  fc1.weight and fc1.bias split on their output dim over tp (shards on
  {0,2}, {1,3}); fc2.weight split on its input dim over tp; /fc1/Gemm's
  output annotated too (a computed tensor: left to propagation).
- mlp-pp2tp2.onnx, meant as pp=2,tp=2 (rank = pp * 2 + tp): fc1 in stage 0,
  fc2 and fc3 in stage 1; fc2.weight split on its output dim over tp in
  stage 1 (shards on devices 2 and 3).
"""
import os

import onnx
from onnx import helper

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..", "..", "..")


def spec(tensor, devices, dims, groups=None):
    s = onnx.ShardingSpecProto(tensor_name=tensor, device=devices)
    for key, members in (groups or {}).items():
        s.index_to_device_group_map.append(
            onnx.IntIntListEntryProto(key=key, value=members))
    for axis, shards in dims:
        s.sharded_dim.append(onnx.ShardedDimProto(
            axis=axis, simple_sharding=[onnx.SimpleShardedDimProto(num_shards=shards)]))
    return s


def annotate(model, node_specs, path):
    model.configuration.append(
        onnx.DeviceConfigurationProto(name="four", num_devices=4))
    for node in model.graph.node:
        if node.name in node_specs:
            specs, stage = node_specs[node.name]
            c = onnx.NodeDeviceConfigurationProto(configuration_id="four",
                                                  sharding_spec=specs)
            if stage is not None:
                c.pipeline_stage = stage
            node.device_configurations.append(c)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(here, path))


def mlp():
    return onnx.load(os.path.join(root, "test", "models", "mlp", "model.onnx"))


tp = {-1: [0, 2], -2: [1, 3]}
annotate(mlp(), {
    "/fc1/Gemm": ([spec("x", [-1, -2], [(0, 2)], {-1: [0, 1], -2: [2, 3]}),
                   spec("fc1.weight", [-1, -2], [(0, 2)], tp),
                   spec("fc1.bias", [-1, -2], [(-1, 2)], tp),
                   spec("/fc1/Gemm_output_0", [-1, -2], [(1, 2)], tp)], None),
    "/fc2/Gemm": ([spec("fc2.weight", [-1, -2], [(1, 2)], tp)], None),
}, "mlp-dp2tp2.onnx")

annotate(mlp(), {
    "/fc1/Gemm": ([], 0),
    "/fc2/Gemm": ([spec("fc2.weight", [2, 3], [(0, 2)])], 1),
    "/fc3/Gemm": ([], 1),
}, "mlp-pp2tp2.onnx")


# A one-MatMul model (y = x @ w, x [4, 8], w [8, 6]) for the refusals and
# for reading --emit=onnx's output with protoc --decode_raw.
def tiny(specs, configurations=(("two", 2),)):
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4, 6])
    w = helper.make_tensor("w", onnx.TensorProto.FLOAT, [8, 6],
                           [0.01 * i for i in range(48)])
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    if specs is not None:
        node.device_configurations.append(onnx.NodeDeviceConfigurationProto(
            configuration_id="two", sharding_spec=specs))
    model = helper.make_model(helper.make_graph([node], "tiny", [x], [y], [w]),
                              opset_imports=[helper.make_opsetid("", 17)])
    for name, n in configurations:
        model.configuration.append(
            onnx.DeviceConfigurationProto(name=name, num_devices=n))
    return model


def save(model, path):
    onnx.save(model, os.path.join(here, path))


save(tiny(None, ()), "tiny.onnx")
save(tiny([spec("w", [0, 1], [(1, 2)])]), "tiny-columns.onnx")
save(tiny([spec("w", [0, 7], [(1, 2)])]), "bad-device.onnx")
save(tiny([spec("nope", [0, 1], [(1, 2)])]), "bad-tensor.onnx")
save(tiny([spec("w", [0, 1, 1], [(1, 2)])]), "bad-count.onnx")
save(tiny([spec("w", [0, 1], [(2, 2)])]), "bad-axis.onnx")
save(tiny([spec("w", [-1], [], {-1: [0]})]), "subset.onnx")
