#!/usr/bin/python3
"""Writes MODEL.onnx with the record tessel.export adds (metadata
'tessel.parameters'), as tessel.export would write it for a module whose
parameters are NAMES (requires_grad=False for those in --frozen).

  add_parameter_record.py IN.onnx OUT.onnx --params a,b,c|--meta META.json [--frozen a] [--buffers x]
  add_parameter_record.py IN.onnx OUT.onnx --raw TEXT     (the record as given)
"""
import argparse
import json

import onnx

ap = argparse.ArgumentParser()
ap.add_argument("src")
ap.add_argument("dst")
ap.add_argument("--params", default="")
ap.add_argument("--meta", help="a zoo meta.json: its parameters are --params")
ap.add_argument("--frozen", default="")
ap.add_argument("--buffers", default="")
ap.add_argument("--raw")
a = ap.parse_args()
model = onnx.load(a.src)
if a.raw is not None:
    text = a.raw
else:
    frozen = set(filter(None, a.frozen.split(",")))
    if a.meta:
        a.params = ",".join(p["name"] for p in json.load(open(a.meta))["parameters"])
    text = json.dumps({
        "parameters": [{"name": n, "shape": [], "requires_grad": n not in frozen,
                        "tied_to": None} for n in filter(None, a.params.split(","))],
        "buffers": [{"name": n, "shape": [], "dtype": "torch.float32"}
                    for n in filter(None, a.buffers.split(","))]})
entry = model.metadata_props.add()
entry.key = "tessel.parameters"
entry.value = text
onnx.save(model, a.dst)
