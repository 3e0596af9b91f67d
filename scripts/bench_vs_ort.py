#!/usr/bin/env python3
"""Times qdq's Python API beside its peers on the same cases: ONNX Runtime's CPU kernels (one
single-node session per case, input fed per call), PyTorch's quantize_per_tensor / quantize_per_channel
(when torch imports here) and NumPy's formula (codes one per byte). Prints each peer's time per call,
its ratio to qdq and its version. Shared comparison script of the speed and Python issues.
Usage: build/venv/bin/python scripts/bench_vs_ort.py [--size 4096] [--repeat 5] [--threads 0]
"""
import argparse
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP, helper, numpy_helper

import qdq


def best(f, repeat):
    f()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


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
    return lambda: s.run(None, {"x": x})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="threads for qdq, ONNX Runtime and torch (0 = their default)")
    args = ap.parse_args()
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
         None,
         lambda: np.clip(np.rint(w / np.repeat(s_b, 32, axis=1)), -8, 7).astype(np.int8), None),
    ]
    print(f"{n}x{n} float32, best of {args.repeat}; qdq {qdq.__version__} ({qdq.get_num_threads()} threads), "
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
        cells.append(best(f_torch, args.repeat) if f_torch else "—")
        cells.append(best(f_np, args.repeat))
        fmt = [f"{c * 1e3:.1f} ({c / t_qdq:.1f}×)" if isinstance(c, float) else c for c in cells]
        print(f"| {name} | {t_qdq * 1e3:.1f} | " + " | ".join(fmt) + " |")


if __name__ == "__main__":
    main()
