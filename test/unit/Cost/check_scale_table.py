#!/usr/bin/env python3
"""Runs bench/run-scale-table --csv and checks issue 29's at-scale bar
against the published figures in scale-table-published.csv (kept here, not
in the code under test): the header, one row per model in the file's
order, with the paper's tp/pp/dp, predicted TFLOP/s within 10 % of the
published ones, and the search's choice predicted at least as fast."""
import csv
import os
import subprocess
import sys

HEADER = ("params_b,gpus,tp,pp,dp,global_batch,predicted_tflops,auto_tp,"
          "auto_pp,auto_dp,auto_predicted_tflops,search_seconds")


def main():
    script, published_path = sys.argv[1], sys.argv[2]
    with open(published_path) as f:
        published = list(csv.DictReader(l for l in f if not l.startswith("#")))
    out = subprocess.run([script, "--csv"], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    lines = out.strip().split("\n")
    errors = []
    if lines[0] != HEADER:
        errors.append(f"header is {lines[0]!r}")
    rows = list(csv.DictReader(lines))
    if len(rows) != len(published):
        errors.append(f"{len(rows)} rows, want {len(published)}")
    for got, want in zip(rows, published):
        name = want["params_b"]
        for key in ("params_b", "gpus", "tp", "pp"):
            if float(got[key]) != float(want[key]):
                errors.append(f"{name}: {key} {got[key]}, want {want[key]}")
        dp = int(want["gpus"]) // (int(want["tp"]) * int(want["pp"]))
        if int(got["dp"]) != dp or int(got["global_batch"]) != int(want["batch"]):
            errors.append(f"{name}: dp/batch {got['dp']}/{got['global_batch']}")
        auto_devices = (int(got["auto_tp"]) * int(got["auto_pp"]) *
                        int(got["auto_dp"]))
        if auto_devices != int(want["gpus"]):
            errors.append(f"{name}: auto uses {auto_devices} GPUs")
        predicted = float(got["predicted_tflops"])
        if float(got["auto_predicted_tflops"]) < predicted:
            errors.append(f"{name}: auto {got['auto_predicted_tflops']} < "
                          f"the paper's plan {predicted}")
        if want["published_tflops"]:
            pub = float(want["published_tflops"])
            err = (predicted - pub) / pub
            print(f"{name}: predicted {predicted}, published {pub}, "
                  f"error {100 * err:+.1f}%")
            if abs(err) > 0.10:
                errors.append(f"{name}: predicted {predicted} TFLOP/s is "
                              f"{100 * err:+.1f}% off the published {pub}")
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
