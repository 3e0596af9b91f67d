#!/usr/bin/env python3
"""Times qdq's Python API beside its peers on the same cases: ONNX Runtime's CPU kernels (one
single-node session per case, input fed per call), PyTorch's quantize_per_tensor / quantize_per_channel
(when torch imports here) and NumPy's formula (codes one per byte). Prints each peer's time per call,
its ratio to qdq and its version. Shared comparison script of the speed and Python issues.
Usage: build/venv/bin/python scripts/bench_vs_ort.py [--size 4096] [--repeat 5] [--threads 0]
       build/venv/bin/python scripts/bench_vs_ort.py --ort-nodes build/release/tools/qdq/qdq [--elements 65536,67108864]
       build/venv/bin/python scripts/bench_vs_ort.py --vs-bench build/release/tools/qdq/qdq [--threads 1]
--vs-bench times qdq's Python calls (plain, out=, packed) beside `qdq bench` on the same cases, element
counts and thread count, interleaved round by round, and prints each call's time over the kernel's
(the sub-byte goal: at most 1.3) and its speed-up over NumPy's formula (goal: at least 10).
"""
import argparse
import json
import subprocess
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP, helper, numpy_helper

import qdq


def best(f, repeat):
    """The median of `repeat` timed calls after one untimed call (robust to a loaded machine)."""
    f()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def ort_session(op, x, inits, attrs, out_type, threads):
    names = ["x"] + [f"p{k}" for k in range(len(inits))]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)],
                              [helper.make_tensor_value_info("y", out_type, None)],
                              initializer=[numpy_helper.from_array(a, n) for a, n in zip(inits, names[1:])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    # Results stay OrtValues: the Python binding has no NumPy type for int4, and the conversion is
    # not ONNX Runtime's kernel.
    return lambda: s.run_with_ort_values(["y"], {"x": ort.OrtValue.ortvalue_from_numpy(x)})


# (qdq bench case, label, Python call variants): the calls get (w, scale) for quantize cases and
# (codes, packed codes, scale) for dequantize cases, per-axis along axis 0 and blocks along the last axis.
VS_BENCH = [
    ("quantize/float32->int8/per-axis", "Q int8 per channel", "int8", 0),
    ("quantize/float32->int4/blocked-last-32", "Q int4 blocked 32", "int4", 32),
    ("quantize/float32->uint4/per-tensor", "Q uint4 per tensor", "uint4", -1),
    ("quantize/float32->int2/per-tensor", "Q int2 per tensor", "int2", -1),
    ("quantize/float32->float4e2m1/per-tensor", "Q float4e2m1 per tensor", "float4e2m1", -1),
    ("dequantize/int8->float32/per-axis", "DQ int8 per channel", "int8", 0),
    ("dequantize/int4->float32/blocked-last-32", "DQ int4 blocked 32", "int4", 32),
    ("dequantize/uint4->float32/per-tensor", "DQ uint4 per tensor", "uint4", -1),
    ("dequantize/int2->float32/per-tensor", "DQ int2 per tensor", "int2", -1),
]


def vs_bench(args):
    n = args.size
    qdq.set_num_threads(args.threads or 1)
    threads = qdq.get_num_threads()
    rng = np.random.default_rng(0)
    w = rng.standard_normal((n, n), dtype=np.float32)
    out_f = np.empty_like(w)
    rounds = {}
    print(f"{n}x{n} elements, {threads} thread(s), median of {args.repeat} per round, 3 rounds interleaved with "
          f"`qdq bench --size {n * n}`; qdq {qdq.__version__}, numpy {np.__version__}")
    print("| case | qdq bench (ms) | Python call (ms, ×bench) | out= (×bench) | packed (×bench) | NumPy formula (ms, ×Python call) |")
    print("|---|---|---|---|---|---|")
    for case, label, dtype, layout in VS_BENCH:
        bits = qdq._qdq.bit_width(qdq._type_number(dtype, "t"))
        lo, hi = {8: (-128, 127)}.get(bits, (0, 0))
        if layout == 0:
            s = (np.abs(w).max(axis=1) / 127).astype(np.float32)
            kw, s_full = {"axis": 0}, s[:, None]
        elif layout > 0:
            s = (np.abs(w).reshape(n, n // layout, layout).max(axis=2) / 7).astype(np.float32)
            kw, s_full = {"axis": 1, "block_size": layout}, None
        else:
            s = np.float32(np.abs(w).max() / 6)
            kw, s_full = {}, s
        quant = case.startswith("quantize")
        y = qdq.quantize_linear(w, s, output_dtype=dtype, **kw)
        p = qdq.quantize_linear(w, s, output_dtype=dtype, packed=True, **kw)
        out_q = np.empty_like(y)
        if quant:
            calls = [lambda: qdq.quantize_linear(w, s, output_dtype=dtype, **kw),
                     lambda: qdq.quantize_linear(w, s, output_dtype=dtype, out=out_q, **kw),
                     lambda: qdq.quantize_linear(w, s, output_dtype=dtype, packed=True, **kw)]
        else:
            calls = [lambda: qdq.dequantize_linear(y, s, **kw),
                     lambda: qdq.dequantize_linear(y, s, out=out_f, **kw),
                     lambda: qdq.dequantize_linear(p, s, out=out_f, **kw)]
        sf = s_full if s_full is not None else np.repeat(s, layout, axis=1)
        codes = qdq._as_input(y, "y")[0]  # NumPy's best case: the codes one per byte, as int8/uint8
        if dtype == "float4e2m1":
            formula = lambda: np.clip(w / sf, -6, 6).astype(np.float32)  # noqa: E731 (no rounding: flattering)
        elif quant:
            rng_ = {"int8": (-128, 127), "int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1)}[dtype]
            formula = lambda: np.clip(np.rint(w / sf), *rng_).astype(np.int8)  # noqa: E731
        else:
            formula = lambda: codes.astype(np.float32) * sf  # noqa: E731
        best_calls = [float("inf")] * 3
        best_bench = float("inf")
        for _ in range(3):
            for k, f in enumerate(calls):
                best_calls[k] = min(best_calls[k], best(f, args.repeat))
            # --small-pages: on 4 KiB pages, as the Python calls' arrays are.
            r = subprocess.run([args.vs_bench, "bench", "--json", "--size", str(n * n), "--repeats", str(args.repeat),
                                "--filter", case, "--small-pages"], capture_output=True, text=True, check=True,
                               env={"QDQ_NUM_THREADS": str(threads)})
            rows = [row for row in json.loads(r.stdout) if row["case"] == case and row["threads"] == threads
                    and row["kernel"] == "simd"]
            best_bench = min([best_bench] + [row["seconds"] for row in rows])
        t_np = best(formula, max(1, args.repeat // 2))
        print(f"| {label} | {best_bench * 1e3:.1f} | {best_calls[0] * 1e3:.1f} ({best_calls[0] / best_bench:.2f}×) | "
              f"{best_calls[1] / best_bench:.2f}× | {best_calls[2] / best_bench:.2f}× | "
              f"{t_np * 1e3:.1f} ({t_np / best_calls[0]:.1f}×) |")


# `--ort-nodes QDQ`: qdq bench's cases as one-node ONNX Runtime models (same layouts, scales, zero
# points and element counts as bench/bench_core.cpp), K copies of the node in one graph so that
# ONNX Runtime's per-run cost (~10-40 µs) is shared by K calls in cache (K is kept small enough for
# all K outputs to stay in cache); each case beside `qdq bench` run in the same minute, with the same
# thread count. (qdq bench case, ONNX op, quantized type, layout)
ORT_NODES = [
    ("quantize/float32->uint8/per-tensor", "QuantizeLinear", TP.UINT8, "per-tensor"),
    ("quantize/float32->int8/per-axis", "QuantizeLinear", TP.INT8, "per-axis"),
    ("quantize/float32->int4/blocked-last-32", "QuantizeLinear", TP.INT4, "blocked-last"),
    ("dequantize/uint8->float32/per-tensor", "DequantizeLinear", TP.UINT8, "per-tensor"),
    ("dequantize/int8->float32/per-axis", "DequantizeLinear", TP.INT8, "per-axis"),
    ("dequantize/int4->float32/blocked-last-32", "DequantizeLinear", TP.INT4, "blocked-last"),
    ("dynamic/float32->uint8/per-tensor", "DynamicQuantizeLinear", TP.UINT8, "per-tensor"),
]


def ort_nodes_session(case, op, qtype, layout, n, copies, threads):
    rng = np.random.default_rng(42)
    shape = {"per-tensor": [n], "per-axis": [64, n // 64], "blocked-last": [n // 1024, 1024]}[layout]
    scale_shape = {"per-tensor": [], "per-axis": [64], "blocked-last": [n // 1024, 32]}[layout]
    attrs = {"per-tensor": {}, "per-axis": {"axis": 0}, "blocked-last": {"axis": 1, "block_size": 32}}[layout]
    scale = rng.uniform(0.01, 0.02, scale_shape).astype(np.float32)
    inits = [numpy_helper.from_array(scale, "s")]
    names = ["x", "s"]
    if op == "DynamicQuantizeLinear":  # x alone; the scale and zero point are outputs
        inits, names = [], ["x"]
    elif qtype in (TP.UINT8, TP.INT8):
        zp = np.full(scale_shape, 3, np.uint8 if qtype == TP.UINT8 else np.int8)
        inits.append(numpy_helper.from_array(zp, "z"))
        names.append("z")
    elif op == "QuantizeLinear":
        attrs = dict(attrs, output_dtype=qtype)
    if op in ("QuantizeLinear", "DynamicQuantizeLinear"):
        x = rng.uniform(-2, 2, shape).astype(np.float32)
        x_type, y_type = TP.FLOAT, qtype
    else:
        x_type, y_type = qtype, TP.FLOAT
        if qtype == TP.INT4:  # the codes as an int4 initializer-free input: quantize a float tensor first
            x = None
        else:
            x = rng.integers(0, 256, shape, dtype=np.uint8).view(np.uint8 if qtype == TP.UINT8 else np.int8)
    extra = [("scale", TP.FLOAT), ("zero_point", TP.UINT8)] if op == "DynamicQuantizeLinear" else []
    nodes = [helper.make_node(op, names, [f"y{k}"] + [f"{e}{k}" for e, _ in extra], **attrs) for k in range(copies)]
    outputs = [helper.make_tensor_value_info(f"y{k}", y_type, shape) for k in range(copies)]
    outputs += [helper.make_tensor_value_info(f"{e}{k}", t, []) for k in range(copies) for e, t in extra]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", x_type, shape)], outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    if x is None:  # int4 codes: ONNX Runtime makes them from floats (NumPy has no int4)
        q = helper.make_node("QuantizeLinear", ["f", "s"], ["q"], axis=1, block_size=32, output_dtype=TP.INT4)
        g = helper.make_graph([q], "q", [helper.make_tensor_value_info("f", TP.FLOAT, shape)],
                              [helper.make_tensor_value_info("q", TP.INT4, shape)], initializer=inits[:1])
        qs = ort.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
                                  .SerializeToString(), providers=["CPUExecutionProvider"])
        x_value = qs.run_with_ort_values(["q"], {"f": ort.OrtValue.ortvalue_from_numpy(
            rng.uniform(-0.1, 0.1, shape).astype(np.float32))})[0]
    else:
        x_value = ort.OrtValue.ortvalue_from_numpy(x)
    out_names = [f"y{k}" for k in range(copies)]
    return lambda: sess.run_with_ort_values(out_names, {"x": x_value})


def numpy_small_pages():
    """Stops NumPy asking for huge pages for its large arrays (its default on Linux), so that the x
    ONNX Runtime is fed sits on 4 KiB pages as its own outputs do and as `qdq bench --small-pages`
    puts both of qdq's buffers: on 2 MiB pages a 64 Mi float32 x read 1.3x faster on Zen 4."""
    try:
        from numpy._core import multiarray
    except ImportError:  # NumPy 1.x
        from numpy.core import multiarray
    multiarray._set_madvise_hugepage(False)


def ort_nodes(args):
    numpy_small_pages()
    sizes = [int(v) for v in args.elements.split(",")]
    thread_counts = [int(v) for v in args.thread_list.split(",")]
    print(f"qdq bench beside ONNX Runtime {ort.__version__} one-node models (K copies per graph, time per node), "
          f"median of {args.repeat}; ratio = ORT time / qdq time (> 1: qdq faster)")
    print("| case | elements | threads | K | qdq bench (µs) | ORT per node (µs) | ORT / qdq |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for case, op, qtype, layout in ORT_NODES:
        for n in sizes:
            for t in thread_counts:
                # As many copies as keep every node's input and output (about 5 bytes per element) within
                # 2 MiB, so that an in-cache case stays in cache.
                copies = max(1, min(64, (2 << 20) // (5 * n)))
                run = ort_nodes_session(case, op, qtype, layout, n, copies, t)
                t_ort = best(run, args.repeat) / copies
                # --small-pages: on 4 KiB pages, as ONNX Runtime's tensors are.
                r = subprocess.run([args.ort_nodes, "--threads", str(t), "bench", "--json", "--size", str(n), "--repeats",
                                    str(args.repeat), "--filter", case, "--small-pages"], capture_output=True, text=True,
                                   check=True)
                rows = [row for row in json.loads(r.stdout) if row["case"] == case and row["kernel"] == "simd"]
                t_qdq = rows[0]["seconds"]
                size = f"{n >> 20} Mi" if n >= 1 << 20 else f"{n >> 10} Ki"
                print(f"| {case} | {size} | {t} | {copies} | {t_qdq * 1e6:.1f} | {t_ort * 1e6:.1f} | {t_ort / t_qdq:.2f} |",
                      flush=True)


# PyTorch timed in another interpreter (--torch-python), for machines whose PyTorch is not in this
# venv (Debian's python3-torch, built against Debian's NumPy): the same cases, sizes and threads.
TORCH_SCRIPT = """
import json, sys, time, numpy as np, torch
n, threads, repeat = (int(a) for a in sys.argv[1:4])
if threads: torch.set_num_threads(threads)
w = torch.from_numpy(np.random.default_rng(0).standard_normal((n, n), dtype=np.float32))
s_t = float(w.abs().max() / 127)
s_c = (w.abs().amax(dim=1) / 127).double()
def best(f):
    f(); ts = []
    for _ in range(repeat):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]
q8 = torch.quantize_per_channel(w, s_c, torch.zeros(n, dtype=torch.int64), 0, torch.qint8)
print(json.dumps({"version": torch.__version__,
    "QuantizeLinear int8 per tensor": best(lambda: torch.quantize_per_tensor(w, s_t, 0, torch.qint8)),
    "QuantizeLinear int8 per channel": best(lambda: torch.quantize_per_channel(w, s_c, torch.zeros(n, dtype=torch.int64), 0, torch.qint8)),
    "DequantizeLinear int8 per channel": best(lambda: q8.dequantize())}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--torch-python", metavar="PYTHON",
                    help="time PyTorch with this interpreter when torch does not import here (e.g. /usr/bin/python3)")
    ap.add_argument("--vs-bench", metavar="QDQ_BINARY", help="compare the Python calls with `qdq bench` instead")
    ap.add_argument("--ort-nodes", metavar="QDQ_BINARY",
                    help="time qdq bench's cases as one-node ONNX Runtime models (K copies per graph) beside `qdq bench`")
    ap.add_argument("--elements", default="65536,67108864", help="--ort-nodes: element counts")
    ap.add_argument("--thread-list", default="1,2", help="--ort-nodes: thread counts")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="threads for qdq, ONNX Runtime and torch (0 = their default)")
    args = ap.parse_args()
    if args.vs_bench:
        return vs_bench(args)
    if args.ort_nodes:
        return ort_nodes(args)
    n = args.size
    qdq.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((n, n), dtype=np.float32)
    s_t = np.float32(np.abs(w).max() / 127)
    s_c = (np.abs(w).max(axis=1) / 127).astype(np.float32)
    z_c = np.zeros(n, np.int8)
    s_b = (np.abs(w).reshape(n, n // 32, 32).max(axis=2) / 7).astype(np.float32)
    q8 = qdq.quantize_linear(w, s_c, z_c, axis=0)
    try:
        import torch
        torch.set_num_threads(args.threads or torch.get_num_threads())
        tw = torch.from_numpy(w)
        tv = f"torch {torch.__version__}"
    except ImportError:
        torch = None
        tv = "torch: not installed in this environment"
    torch_times = {}
    if torch is None and args.torch_python:
        r = subprocess.run([args.torch_python, "-c", TORCH_SCRIPT, str(n), str(args.threads or qdq.get_num_threads()),
                            str(args.repeat)], capture_output=True, text=True, check=True)
        torch_times = json.loads(r.stdout.strip().splitlines()[-1])
        tv = f"torch {torch_times['version']} (timed by {args.torch_python})"
    cases = [
        ("QuantizeLinear int8 per tensor", lambda: qdq.quantize_linear(w, s_t, np.int8(0)),
         ("QuantizeLinear", w, [np.array(s_t), np.array(0, np.int8)], {}, TP.INT8),
         lambda: np.clip(np.rint(w / s_t), -128, 127).astype(np.int8),
         (lambda: torch.quantize_per_tensor(tw, float(s_t), 0, torch.qint8)) if torch else None),
        ("QuantizeLinear int8 per channel", lambda: qdq.quantize_linear(w, s_c, z_c, axis=0),
         ("QuantizeLinear", w, [s_c, z_c], {"axis": 0}, TP.INT8),
         lambda: np.clip(np.rint(w / s_c[:, None]), -128, 127).astype(np.int8),
         (lambda: torch.quantize_per_channel(tw, torch.from_numpy(s_c.astype(np.float64)), torch.zeros(n, dtype=torch.int64), 0, torch.qint8)) if torch else None),
        ("DequantizeLinear int8 per channel", lambda: qdq.dequantize_linear(q8, s_c, z_c, axis=0),
         ("DequantizeLinear", q8, [s_c, z_c], {"axis": 0}, TP.FLOAT),
         lambda: (q8.astype(np.float32) - z_c[:, None]) * s_c[:, None], None),
        ("QuantizeLinear int4 blocked 32", lambda: qdq.quantize_linear(w, s_b, axis=1, block_size=32, output_dtype="int4"),
         ("QuantizeLinear", w, [s_b], {"axis": 1, "block_size": 32, "output_dtype": TP.INT4}, TP.INT4),
         lambda: np.clip(np.rint(w / np.repeat(s_b, 32, axis=1)), -8, 7).astype(np.int8), None),
    ]
    print(f"{n}x{n} float32, median of {args.repeat}; qdq {qdq.__version__} ({qdq.get_num_threads()} threads), "
          f"onnxruntime {ort.__version__}, numpy {np.__version__}, {tv}")
    print(f"| case | qdq (ms) | ONNX Runtime (ms, ×qdq) | PyTorch (ms, ×qdq) | NumPy formula (ms, ×qdq) |")
    print("|---|---|---|---|---|")
    for name, f_qdq, ort_case, f_np, f_torch in cases:
        t_qdq = best(f_qdq, args.repeat)
        cells = []
        if ort_case:
            try:
                cells.append(best(ort_session(*ort_case, args.threads), args.repeat))
            except Exception as e:  # noqa: BLE001
                cells.append(f"refused ({str(e)[:40]})")
        else:
            cells.append("not run (int4 output not fetchable as NumPy)")
        cells.append(best(f_torch, args.repeat) if f_torch else torch_times.get(name, "—"))
        cells.append(best(f_np, args.repeat))
        digits = 1 if t_qdq >= 1e-3 else 4  # in cache (e.g. --size 256) a call takes microseconds
        fmt = [f"{c * 1e3:.{digits}f} ({c / t_qdq:.1f}×)" if isinstance(c, float) else c for c in cells]
        print(f"| {name} | {t_qdq * 1e3:.{digits}f} | " + " | ".join(fmt) + " |")


if __name__ == "__main__":
    main()
