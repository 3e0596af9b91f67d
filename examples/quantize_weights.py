#!/usr/bin/env python3
"""Quantize a float32 weight matrix three ways with qdq and report size, error and speed.

    PYTHONPATH=<build>/python python3 examples/quantize_weights.py [--size N] [--seed S]

For a N x N matrix of N(0, 0.02^2) weights (fixed seed) it quantizes
  * int8 per output channel (axis 0, symmetric: scale = max|w_row| / 127),
  * int4 in blocks of 32 along the input axis (symmetric: scale = max|w_block| / 7),
  * float8e4m3fn per tensor (scale = max|w| / 448),
and prints for each the stored bytes (ONNX's layout: int4 packed two per byte, plus float32 scales),
the largest absolute error after dequantization, the SQNR in dB, the time qdq's QuantizeLinear took,
and the time NumPy's formula np.clip(np.rint(w / scale), lo, hi) takes for the same result (NumPy
has no float8 type, so there is no NumPy formula for that row).
"""
import argparse
import time

import numpy as np

import qdq


def best_time(fn, repeat=3):
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def sqnr_db(w, w_hat):
    noise = np.sum((w.astype(np.float64) - w_hat) ** 2)
    return 10 * np.log10(np.sum(w.astype(np.float64) ** 2) / noise)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    n = args.size
    w = (np.random.default_rng(args.seed).standard_normal((n, n), dtype=np.float32) * np.float32(0.02))
    print(f"qdq {qdq.__version__}, numpy {np.__version__}, {qdq.get_num_threads()} qdq thread(s); "
          f"weights {n}x{n} float32 = {w.nbytes:,} bytes")

    rows = []

    # int8, per output channel.
    s8 = (np.abs(w).max(axis=1) / np.float32(127)).astype(np.float32)
    t_qdq, q8 = best_time(lambda: qdq.quantize_linear(w, s8, np.zeros(n, np.int8), axis=0))
    t_np, ref8 = best_time(lambda: np.clip(np.rint(w / s8[:, None]), -128, 127).astype(np.int8))
    assert np.array_equal(q8, ref8)
    w8 = qdq.dequantize_linear(q8, s8, np.zeros(n, np.int8), axis=0)
    rows.append(("int8 per-channel", q8.size + s8.nbytes, w8, t_qdq, t_np))

    # int4, blocks of 32 along axis 1.
    block = 32
    s4 = (np.abs(w).reshape(n, n // block, block).max(axis=2) / np.float32(7)).astype(np.float32)
    t_qdq, q4 = best_time(lambda: qdq.quantize_linear(w, s4, axis=1, block_size=block, output_dtype="int4"))
    t_np, ref4 = best_time(lambda: np.clip(np.rint(w.reshape(n, n // block, block) / s4[:, :, None]), -8, 7)
                           .astype(np.int8).reshape(n, n))
    assert np.array_equal(qdq._as_input(q4, "q4")[0], ref4)
    w4 = qdq.dequantize_linear(q4, s4, axis=1, block_size=block)
    rows.append((f"int4 blocked ({block})", (q4.size + 1) // 2 + s4.nbytes, w4, t_qdq, t_np))

    # float8e4m3fn, per tensor.
    sf8 = np.float32(np.abs(w).max() / np.float32(448))
    t_qdq, qf8 = best_time(lambda: qdq.quantize_linear(w, sf8, output_dtype="float8e4m3fn"))
    wf8 = qdq.dequantize_linear(qf8, sf8)
    rows.append(("float8e4m3fn per-tensor", qf8.size + 4, wf8, t_qdq, None))

    print(f"{'format':<24} {'bytes':>12} {'max abs err':>12} {'SQNR dB':>8} {'qdq ms':>8} {'numpy ms':>9}")
    for name, nbytes, w_hat, t_qdq, t_np in rows:
        err = float(np.abs(w_hat - w).max())
        numpy_ms = f"{t_np * 1e3:9.1f}" if t_np is not None else f"{'n/a':>9}"
        print(f"{name:<24} {nbytes:>12,} {err:>12.3e} {sqnr_db(w, w_hat):>8.2f} {t_qdq * 1e3:>8.1f} {numpy_ms}")
    print("qdq's int8 and int4 codes are identical to NumPy's formula.")


if __name__ == "__main__":
    main()
