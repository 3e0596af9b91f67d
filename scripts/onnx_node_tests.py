#!/usr/bin/env python3
"""Writes the ONNX backend node tests of the installed `onnx` wheel for QuantizeLinear,
DequantizeLinear and DynamicQuantizeLinear as node-test folders (model.onnx + test_data_set_N/), for
`qdq test`, and lists the ones tests/data/onnx-node does not have.

The wheel ships the test generators (onnx/backend/test/case/node/), not their data, so the folders are
made from them here, the way ONNX's `backend-test-tools generate-data` does, for these three operators.
Usage: build/venv/bin/python scripts/onnx_node_tests.py OUTPUT_DIR [--known tests/data/onnx-node]
"""
import argparse
import pathlib
import shutil
import sys
import warnings

import onnx
import onnx.backend.test.case.node as node_test
from onnx import numpy_helper

OPS = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output")
    ap.add_argument("--known", default="tests/data/onnx-node")
    args = ap.parse_args()
    out = pathlib.Path(args.output)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cases = {}
    # One collection of every operator's cases (the generators run once per process, so a filtered
    # collection could only be made for one operator), keeping the single-node tests of these three.
    warnings.simplefilter("ignore")  # the generators' own NumPy overflow warnings
    for case in node_test.collect_testcases(None):
        nodes = case.model.graph.node
        if case.kind == "node" and len(nodes) == 1 and nodes[0].op_type in OPS:
            cases[case.name] = case
    for name, case in sorted(cases.items()):
        folder = out / name
        folder.mkdir()
        (folder / "model.onnx").write_bytes(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            data = folder / f"test_data_set_{i}"
            data.mkdir()
            for kind, values, infos in (("input", inputs, case.model.graph.input),
                                        ("output", outputs, case.model.graph.output)):
                for j, value in enumerate(values):
                    tensor = value if isinstance(value, onnx.TensorProto) else numpy_helper.from_array(value, infos[j].name)
                    (data / f"{kind}_{j}.pb").write_bytes(tensor.SerializeToString())
    known = {p.name for p in pathlib.Path(args.known).iterdir()} if pathlib.Path(args.known).is_dir() else set()
    new = sorted(set(cases) - known)
    print(f"onnx {onnx.__version__}: {len(cases)} node tests of {', '.join(OPS)} written to {out}; "
          f"{len(new)} not in {args.known}{': ' + ', '.join(new) if new else ''}")
    return 0 if cases else 1


if __name__ == "__main__":
    sys.exit(main())
