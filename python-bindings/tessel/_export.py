"""tessel.export: a torch.nn.Module to an ONNX model for Tessel, with what
PyTorch knows and ONNX does not recorded beside the graph.

ONNX has initializers, not parameters: the exporters fold constants into
initializers next to the parameters, merge parameters whose values are equal,
and write a tied weight twice. ``export`` runs ``torch.onnx.export`` and then
writes, in the model's metadata_props under ``tessel.parameters``, a JSON
object that tesselc reads when it trains the model:

    {"parameters": [{"name", "shape", "requires_grad", "tied_to"}, ...],
     "buffers": [{"name", "shape", "dtype"}, ...]}

``tied_to`` names the first name of a parameter that
``named_parameters(remove_duplicate=False)`` lists under several names
(GPT-2's LM head and embedding); ``requires_grad=False`` parameters stay
frozen. Needs torch and onnx (torch is imported only here).
"""

import json

_KEY = "tessel.parameters"


def parameter_record(module):
    """The JSON-able record of `module`'s parameters and buffers."""
    params, seen = [], {}
    for name, p in module.named_parameters(remove_duplicate=False):
        first = seen.setdefault(id(p), name)
        params.append({"name": name, "shape": list(p.shape),
                       "requires_grad": bool(p.requires_grad),
                       "tied_to": first if first != name else None})
    buffers = [{"name": n, "shape": list(b.shape), "dtype": str(b.dtype)}
               for n, b in module.named_buffers()]
    return {"parameters": params, "buffers": buffers}


def export(module, args, path, *, dynamo=True, options=None):
    """Exports `module` called on `args` (a tuple) to the ONNX file `path`
    with torch.onnx.export (dynamo=True: torch's default exporter, weights
    in path + ".data"; dynamo=False: the TorchScript exporter), then records
    its parameters (see the module's doc). `options` (a dict) goes to
    torch.onnx.export (input_names, output_names, opset_version, ...).
    Returns `path`."""
    import onnx
    import torch

    torch.onnx.export(module, args, path, dynamo=dynamo, **(options or {}))
    model = onnx.load(path, load_external_data=False)
    for prop in list(model.metadata_props):
        if prop.key == _KEY:
            model.metadata_props.remove(prop)
    entry = model.metadata_props.add()
    entry.key = _KEY
    entry.value = json.dumps(parameter_record(module))
    onnx.save(model, path)
    return path
