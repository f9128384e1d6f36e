#!/usr/bin/python3
"""Writes an ONNX model (binary protobuf) from ONNX's textual syntax.

Importer tests keep their models readable as .onnxtext (onnx.parser syntax,
'#' comments allowed) and convert them in their RUN lines:

  %python %S/Inputs/onnxtext2pb.py %s %t.onnx
  %python %S/Inputs/onnxtext2pb.py %s %t/m.onnx --external-data weights.bin
  %python %S/Inputs/onnxtext2pb.py %s %t.onnx --truncate 40
  %python %S/Inputs/onnxtext2pb.py %s %t.onnx --rename "x=input.1"

Needs Debian's python3-onnx (run it with /usr/bin/python3).
"""
import argparse
import os
import sys

import onnx
import onnx.parser
from onnx import numpy_helper


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help=".onnxtext file")
    p.add_argument("output", help=".onnx file to write")
    p.add_argument("--external-data", metavar="LOCATION",
                   help="move every initializer of 64 elements or more into "
                        "LOCATION, a file beside the output")
    p.add_argument("--missing-external-data", action="store_true",
                   help="with --external-data: do not write the data file")
    p.add_argument("--short-external-data", type=int, metavar="BYTES",
                   help="with --external-data: write only BYTES bytes of it")
    p.add_argument("--external-entry", action="append", default=[],
                   metavar="KEY=VALUE",
                   help="with --external-data: record KEY=VALUE in every "
                        "external tensor (e.g. location=/etc/passwd; the data "
                        "is still written to --external-data)")
    p.add_argument("--drop-input-shape", metavar="NAME",
                   help="remove the shape of graph input NAME (unknown rank)")
    p.add_argument("--name-nodes", action="store_true",
                   help="name node k '/OpType_k', as exporters name nodes")
    p.add_argument("--rename", action="append", default=[],
                   metavar="OLD=NEW",
                   help="rename value OLD to NEW everywhere (names the text "
                        "syntax cannot spell: 'input.1', 'onnx::Gather_0')")
    p.add_argument("--truncate", type=int, metavar="BYTES",
                   help="keep only the first BYTES bytes of the model")
    args = p.parse_args()

    with open(args.input) as f:
        model = onnx.parser.parse_model(f.read())

    if args.name_nodes:
        for k, node in enumerate(model.graph.node):
            node.name = "/%s_%d" % (node.op_type, k)

    renames = dict(r.split("=", 1) for r in args.rename)
    if renames:
        g = model.graph
        for value in list(g.input) + list(g.output) + list(g.value_info):
            value.name = renames.get(value.name, value.name)
        for init in g.initializer:
            init.name = renames.get(init.name, init.name)
        for node in g.node:
            node.input[:] = [renames.get(n, n) for n in node.input]
            node.output[:] = [renames.get(n, n) for n in node.output]

    if args.drop_input_shape:
        for value in model.graph.input:
            if value.name == args.drop_input_shape:
                value.type.tensor_type.ClearField("shape")

    if args.external_data:
        out_dir = os.path.dirname(os.path.abspath(args.output))
        blob = bytearray()
        for init in model.graph.initializer:
            array = numpy_helper.to_array(init)
            if array.size < 64:
                continue
            raw = array.tobytes()
            offset = len(blob)
            blob += raw
            name, dtype, dims = init.name, init.data_type, list(init.dims)
            init.Clear()
            init.name = name
            init.data_type = dtype
            init.dims.extend(dims)
            init.data_location = onnx.TensorProto.EXTERNAL
            entries = {"location": args.external_data, "offset": str(offset),
                       "length": str(len(raw))}
            entries.update(e.split("=", 1) for e in args.external_entry)
            for key, value in entries.items():
                entry = init.external_data.add()
                entry.key = key
                entry.value = value
        if not args.missing_external_data:
            if args.short_external_data is not None:
                blob = blob[:args.short_external_data]
            with open(os.path.join(out_dir, args.external_data), "wb") as f:
                f.write(blob)

    data = model.SerializeToString()
    if args.truncate is not None:
        data = data[:args.truncate]
    with open(args.output, "wb") as f:
        f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
