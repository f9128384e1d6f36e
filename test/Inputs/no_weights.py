"""A weightless ONNX model, for tesselc --weights: tesselc wants one for any
.mlir input, and a module without weights takes nothing from it."""
import os


def no_weights_model(workdir):
    """workdir/no-weights.onnx (an Identity of one float), written once;
    its path."""
    path = os.path.join(workdir, "no-weights.onnx")
    if not os.path.exists(path):
        from onnx import TensorProto, helper, save
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
        graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])],
                                  "none", [x], [y])
        save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path
