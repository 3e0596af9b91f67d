#!/usr/bin/env python3
"""Benchmark: `qdq quantize` against ONNX Runtime's own weight quantization on one generated model.

    build/venv/bin/python bench/quantize_model_bench.py [--gib 1] [--dir DIR] [--qdq PATH] [--keep] [--json]

Generates a model of 1 GiB (by default) of float32 MatMul weights in external data: a chain of MatMuls with
[4096, 4096] weights (64 MiB each), random normal values. Then quantizes it, each run in a separate child
process, with
  - qdq int8 (per output channel) and qdq int4 (blocked, 32 along K), `--external-data`;
  - ONNX Runtime 1.32's MatMulNBitsQuantizer (onnxruntime.quantization.matmul_nbits_quantizer), the tool ORT
    documents for weight-only quantization: 4 bits in QDQ mode (DequantizeLinear int4, block 32, symmetric),
    the same output form as qdq int4; and 8 bits, which it only writes as its MatMulNBits contrib operator
    (QOperator mode, block 32; its QDQ mode refuses 8 bits for MatMul), the closest it has to qdq int8.
Before each run, os.sync() flushes what is still to be written back (the generated model, the previous
output), so no run is timed while the kernel writes another's files. qdq fsyncs its output before it
exits (its outputs are atomic and durable); ORT's save does not, so its write-back is not in its time.
Each figure is the child's wall time (process start to exit, model load and save included) and its peak
RSS, from resource.getrusage(RUSAGE_CHILDREN) in a small wrapper process whose only child is the run.
It also records the child's CPU time (user + system, all threads): on a shared machine the wall time
depends on the load, the CPU time much less. Seconds per GB divide by the float32 weight bytes in 10^9. The table shows qdq and ORT side by side with
the ratios (ORT time / qdq time, qdq RSS / ORT RSS). Goal: at least 10x faster, at most 1/4 of the memory.

Needs build/venv (numpy, onnx, onnxruntime) and a built qdq; about 3 x --gib of free disk in --dir.
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

REPO = pathlib.Path(__file__).resolve().parents[1]
SIDE = 4096  # weights are [SIDE, SIDE] float32: 64 MiB each

# Runs one command as the wrapper's only child; prints its wall time and peak RSS as JSON.
WRAPPER = r"""
import json, resource, subprocess, sys, time
start = time.perf_counter()
result = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
seconds = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": result.returncode, "seconds": seconds, "max_rss_kib": usage.ru_maxrss,
                  "cpu_seconds": usage.ru_utime + usage.ru_stime,
                  "stderr": result.stderr[-2000:]}))
"""

ORT_QUANTIZE = r"""
import sys
from onnxruntime.quantization import QuantFormat
from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
source, target, bits, fmt = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
quantizer = MatMulNBitsQuantizer(source, bits=bits, block_size=32, is_symmetric=True,
                                 quant_format=QuantFormat.QDQ if fmt == "QDQ" else QuantFormat.QOperator)
quantizer.process()
quantizer.model.save_model_to_file(target, True)
"""


def generate(folder, gib):
    """Writes model.onnx + model.weights (external data) with `gib` GiB of float32 MatMul weights."""
    count = max(1, round(gib * (1 << 30) / (SIDE * SIDE * 4)))
    rng = np.random.Generator(np.random.PCG64(1))
    nodes, initializers = [], []
    offset = 0
    with open(folder / "model.weights", "wb") as data:
        for i in range(count):
            weight = (rng.standard_normal((SIDE, SIDE), dtype=np.float32) / np.float32(64)).tobytes()
            data.write(weight)
            tensor = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[SIDE, SIDE],
                                 data_location=TensorProto.EXTERNAL)
            for key, value in (("location", "model.weights"), ("offset", str(offset)), ("length", str(len(weight)))):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            initializers.append(tensor)
            offset += len(weight)
            nodes.append(helper.make_node("MatMul", ["x" if i == 0 else f"h{i}", f"w{i}"],
                                          ["y" if i == count - 1 else f"h{i + 1}"], name=f"matmul{i}"))
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", SIDE])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", SIDE])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    onnx.save(model, str(folder / "model.onnx"))
    return offset


def measure(command):
    result = subprocess.run([sys.executable, "-c", WRAPPER, *map(str, command)], capture_output=True, text=True,
                            check=True)
    report = json.loads(result.stdout)
    if report["rc"] != 0:
        raise SystemExit(f"bench: {' '.join(map(str, command))} exited {report['rc']}:\n{report['stderr']}")
    return report


def dequantize_count(path, op_type):
    model = onnx.load(str(path), load_external_data=False)
    return sum(node.op_type == op_type for node in model.graph.node)


def clear(folder, keep):
    for path in folder.iterdir():
        if path.name not in keep:
            path.unlink()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=1.0, help="GiB of float32 weights (default 1)")
    parser.add_argument("--dir", type=pathlib.Path, help="work folder (default: a new one under $TMPDIR)")
    parser.add_argument("--qdq", type=pathlib.Path, default=REPO / "build" / "release" / "tools" / "qdq" / "qdq")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument("--only", choices=("qdq", "ort"), help="run only qdq's or only ORT's quantizations")
    args = parser.parse_args()
    if args.only != "ort" and not args.qdq.is_file():
        raise SystemExit(f"bench: no qdq at {args.qdq}: build it first (cmake --build build/release --target qdq_cli)")

    folder = args.dir or pathlib.Path(tempfile.mkdtemp(prefix="qdq-quantize-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        load_before = os.getloadavg()
        start = time.perf_counter()
        weight_bytes = generate(folder, args.gib)
        print(f"generated {weight_bytes / 2**30:.2f} GiB of float32 MatMul weights in "
              f"{time.perf_counter() - start:.1f} s ({folder})", flush=True)
        model = folder / "model.onnx"
        runs = {
            "qdq int8": [args.qdq, "quantize", model, "-o", folder / "qdq_int8.onnx", "--format", "int8",
                         "--external-data"],
            "qdq int4": [args.qdq, "quantize", model, "-o", folder / "qdq_int4.onnx", "--format", "int4",
                         "--block-size", "32", "--external-data"],
            "ort 8-bit": [sys.executable, "-c", ORT_QUANTIZE, model, folder / "ort_8bit.onnx", 8, "QOperator"],
            "ort 4-bit": [sys.executable, "-c", ORT_QUANTIZE, model, folder / "ort_4bit.onnx", 4, "QDQ"],
        }
        expected = {"qdq int8": ("qdq_int8.onnx", "DequantizeLinear"), "qdq int4": ("qdq_int4.onnx", "DequantizeLinear"),
                    "ort 8-bit": ("ort_8bit.onnx", "MatMulNBits"), "ort 4-bit": ("ort_4bit.onnx", "DequantizeLinear")}
        figures = {}
        for name, command in runs.items():
            if args.only and not name.startswith(args.only):
                continue
            # Every run starts from the same state: the model in the page cache and nothing left to write
            # back (the generated model, or an earlier run's output, would otherwise be flushed by the
            # kernel while the next run is timed).
            os.sync()
            figures[name] = measure(command)
            output, op_type = expected[name]
            quantized = dequantize_count(folder / output, op_type)
            if quantized != weight_bytes // (SIDE * SIDE * 4):
                raise SystemExit(f"bench: {name} quantized {quantized} of the MatMul weights, not all of them")
            figures[name]["gb_per_s"] = weight_bytes / 1e9 / figures[name]["seconds"]
            print(f"  {name}: {figures[name]['seconds']:.2f} s ({figures[name]['cpu_seconds']:.2f} s CPU), "
                  f"peak RSS {figures[name]['max_rss_kib'] / 1024:.0f} MiB", flush=True)
            clear(folder, {"model.onnx", "model.weights"})
        load_after = os.getloadavg()
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)

    gb = weight_bytes / 1e9
    print(f"\n{weight_bytes / 2**30:.2f} GiB ({gb:.2f} GB) of float32 MatMul weights, {os.cpu_count()} CPUs, "
          f"load average {load_before[0]:.1f} before / {load_after[0]:.1f} after\n")
    print("| weights | qdq s/GB (CPU s/GB) | qdq peak RSS | ONNX Runtime (MatMulNBitsQuantizer) "
          "| ORT s/GB (CPU s/GB) | ORT peak RSS | speed-up (CPU) | memory |")
    print("|---|---|---|---|---|---|---|---|")
    pairs = (("int8 per channel", "qdq int8", "ort 8-bit", "8 bits, MatMulNBits, block 32"),
             ("int4 blocked 32", "qdq int4", "ort 4-bit", "4 bits, QDQ, block 32"))
    for label, ours, theirs, description in pairs:
        if ours not in figures or theirs not in figures:
            continue
        a, b = figures[ours], figures[theirs]
        print(f"| {label} | {a['seconds'] / gb:.2f} ({a['cpu_seconds'] / gb:.2f}) | {a['max_rss_kib'] / 1024:.0f} MiB "
              f"| {description} | {b['seconds'] / gb:.2f} ({b['cpu_seconds'] / gb:.2f}) | {b['max_rss_kib'] / 1024:.0f} MiB "
              f"| {b['seconds'] / a['seconds']:.1f}x ({b['cpu_seconds'] / a['cpu_seconds']:.1f}x) "
              f"| {a['max_rss_kib'] / b['max_rss_kib']:.2f}x |")
    for name, run in figures.items():
        print(f"{name}: {run['seconds']:.2f} s = {run['seconds'] / gb:.2f} s/GB, {run['cpu_seconds']:.2f} s CPU, "
              f"peak RSS {run['max_rss_kib'] / 1024:.0f} MiB")
    if args.json:
        for run in figures.values():
            run.pop("stderr", None)
        print(json.dumps({"weight_bytes": weight_bytes, "load_average": [load_before, load_after], "runs": figures}))


if __name__ == "__main__":
    main()
