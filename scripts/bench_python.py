#!/usr/bin/env python3
"""The two speed goals of qdq's Python API (issue 14), measured case by case:

  * a Python call costs at most 1.3x the same call in `qdq bench` (same case, element count, layout,
    scale and zero-point shapes, thread count);
  * a Python call is at least 10x faster than NumPy's formula for the same job (codes one per byte,
    scales broadcast without repeating them: NumPy's best case).

Each case uses `qdq bench`'s own layout for it (bench/bench_core.cpp, layout_for): per-axis is
(64, n/64) with 64 channel scales, blocked-last (n/1024, 1024) with blocks of 32 along axis 1,
blocked-axis0 (256, n/256) with blocks of 32 rows; at --large (16 Mi elements) that is the element
and scale count of a 4096x4096 matrix. Integer types carry a zero point, as in the bench.

Per case it prints the `qdq bench` time, the Python call's time three ways (plain: a new result
array; out=: into a reused array; packed: QuantizeLinear returning ONNX's packed bytes, or
DequantizeLinear reading them, into out=), each as a ratio to the bench, and NumPy's formula with
the plain call's speed-up over it, beside the bytes NumPy's passes move over the bytes qdq moves (the
speed-up when both run at memory speed, on tensors far larger than the caches). Times are medians
of samples of >= 2 ms each (many calls for small tensors, like the bench), the Python calls and the
bench interleaved round by round; a shared machine makes single numbers noisy, so the best of
--rounds medians is printed.

--pairwise prints instead, per case, the plain and out= calls' time over the packed call's, the calls
alternated pairwise in one process (the packed call is the library's call plus the Python layer's
fixed cost): a measure of the conversion and allocation overhead that a loaded machine barely moves.

The qdq it imports must be built against a pybind11 that knows NumPy 2 (build/venv's NumPy): the
wheel scripts/test_python_package.sh installs into build/venv, or a build configured with
-Dpybind11_DIR=$(build/venv/bin/python -m pybind11 --cmakedir) and put first on PYTHONPATH
(Debian's pybind11 2.10 reads NumPy 2's dtypes wrongly).

Usage: PYTHONPATH=build/release/python build/venv/bin/python scripts/bench_python.py \
           --qdq build/release/tools/qdq/qdq [--threads 1] [--sizes 65536,16777216] [--filter int4]
       ... scripts/bench_python.py --pairwise [--seconds 1] [--sizes ...] [--filter ...]
"""
import argparse
import json
import os
import subprocess
import time

import numpy as np

import qdq

try:
    import ml_dtypes
except ImportError:  # the float8 formula needs it; those cases are then skipped
    ml_dtypes = None

# (op, quantized type, granularity): the `qdq bench` case is op/float32->type/granularity (or reversed).
CASES = [
    ("quantize", "int8", "per-axis"),
    ("quantize", "uint8", "per-axis"),
    ("quantize", "int4", "blocked-last-32"),
    ("quantize", "int4", "blocked-axis0-32"),
    ("quantize", "uint4", "blocked-last-32"),
    ("quantize", "uint4", "blocked-axis0-32"),
    ("quantize", "uint4", "per-tensor"),
    ("quantize", "int2", "per-tensor"),
    ("quantize", "float8e4m3fn", "per-tensor"),
    ("quantize", "float8e4m3fn", "blocked-last-32"),
    ("dequantize", "int8", "per-axis"),
    ("dequantize", "uint8", "per-axis"),
    ("dequantize", "int4", "blocked-last-32"),
    ("dequantize", "int4", "blocked-axis0-32"),
    ("dequantize", "uint4", "blocked-last-32"),
    ("dequantize", "uint4", "blocked-axis0-32"),
    ("dequantize", "uint4", "per-tensor"),
    ("dequantize", "int2", "per-tensor"),
    ("dequantize", "float8e4m3fn", "per-tensor"),
    ("dequantize", "float8e4m3fn", "blocked-last-32"),
]

RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1), "uint2": (0, 3)}
BENCH_ZERO_POINT = {8: 3, 4: 1, 2: 1}  # the bench's zero-point bytes 3, 0x11, 0x55: element value 3 / 1 / 1


def bench_name(op, dtype, granularity):
    short = dtype
    return f"{op}/float32->{short}/{granularity}" if op == "quantize" else f"{op}/{short}->float32/{granularity}"


def median_seconds(f, samples):
    """Median seconds per call over `samples` samples of >= 2 ms each (the bench's method)."""
    calls = 1
    while True:
        t = time.perf_counter()
        for _ in range(calls):
            f()
        if time.perf_counter() - t >= 2e-3 or calls >= 1 << 20:
            break
        calls *= 4
    times = []
    for _ in range(samples):
        t = time.perf_counter()
        for _ in range(calls):
            f()
        times.append((time.perf_counter() - t) / calls)
    return float(np.median(times))


class Case:
    """The tensors, the three Python calls and NumPy's formula of one bench case at n elements."""

    def __init__(self, op, dtype, granularity, n, rng):
        self.name = bench_name(op, dtype, granularity)
        self.dtype = dtype
        block = 32 if granularity.startswith("blocked") else 0
        if granularity == "per-tensor":
            shape, sshape, axis = (n,), (), 0
        elif granularity == "per-axis":
            shape, sshape, axis = (64, n // 64), (64,), 0
        elif granularity.startswith("blocked-last"):
            shape, sshape, axis = (n // 1024, 1024), (n // 1024, 1024 // block), 1
        else:
            shape, sshape, axis = (256, n // 256), (256 // block, n // 256), 0
        kw = {"axis": axis}
        if block:
            kw["block_size"] = block
        x = rng.uniform(-2, 2, shape).astype(np.float32)
        s = rng.uniform(0.01, 0.02, sshape).astype(np.float32)
        # s broadcast against x without materialising it (NumPy's best case): x viewed as blocks.
        if granularity == "per-tensor":
            xb, sb = x, s
        elif granularity == "per-axis":
            xb, sb = x, s[:, None]
        elif granularity.startswith("blocked-last"):
            xb, sb = x.reshape(shape[0], sshape[1], block), s[:, :, None]
        else:
            xb, sb = x.reshape(sshape[0], block, shape[1]), s[:, None, :]
        integer = dtype in RANGES
        if integer:
            bits = qdq._qdq.bit_width(qdq._type_number(dtype, "t"))
            zp_value = BENCH_ZERO_POINT[bits]
            zp = qdq.CodeArray(np.full(sshape, zp_value, np.int8 if dtype.startswith("int") else np.uint8), dtype) \
                if bits < 8 else np.full(sshape, zp_value, np.dtype(dtype))
            kw_q = dict(kw)
        else:
            zp = None
            kw_q = dict(kw, output_dtype=dtype)
        y = qdq.quantize_linear(x, s, zp, **kw_q)
        y_packed = qdq.quantize_linear(x, s, zp, packed=True, **kw_q)
        y_out = np.empty_like(y)
        x_out = np.empty_like(x)
        if op == "quantize":
            self.calls = [lambda: qdq.quantize_linear(x, s, zp, **kw_q),
                          lambda: qdq.quantize_linear(x, s, zp, out=y_out, **kw_q),
                          lambda: qdq.quantize_linear(x, s, zp, packed=True, **kw_q)]
            if integer:
                lo, hi = RANGES[dtype]
                itype = np.int8 if lo < 0 else np.uint8
                self.formula = lambda: np.clip(np.rint(xb / sb) + zp_value, lo, hi).astype(itype)
            else:
                f8 = ml_dtypes.float8_e4m3fn if ml_dtypes else None
                self.formula = lambda: np.clip(xb / sb, -448, 448).astype(f8)
        else:
            self.calls = [lambda: qdq.dequantize_linear(y, s, zp, **kw),
                          lambda: qdq.dequantize_linear(y, s, zp, out=x_out, **kw),
                          lambda: qdq.dequantize_linear(y_packed, s, zp, out=x_out, **kw)]
            codes = qdq._as_input(y, "y")[0] if integer else y  # one code per byte, as int8/uint8
            codes = codes.reshape(xb.shape)
            if integer:
                self.formula = lambda: (codes.astype(np.float32) - np.float32(zp_value)) * sb
            else:
                self.formula = lambda: codes.astype(np.float32) * sb
        self.skip = not integer and ml_dtypes is None
        # Bytes per element each side moves through memory when the tensors are far larger than the
        # caches: qdq reads x and writes y once; every NumPy pass reads and writes a whole array
        # (float32 temporaries). Their ratio is the speed-up at equal bandwidth: what qdq can reach
        # there when NumPy's passes run at memory speed too (more only where NumPy is slower).
        bits = qdq._qdq.bit_width(qdq._type_number(dtype, "t"))
        self.qdq_bytes = 4 + bits / 8
        if op == "quantize":  # x / s, rint, + zero point, clip, astype (integers); x / s, clip, astype (float8)
            self.formula_bytes = (8 + 8 + 8 + 8 + 5) if integer else (8 + 8 + 5)
        else:  # astype(float32), - zero point (integers), * s
            self.formula_bytes = (5 + 8 + 8) if integer else (5 + 8)


def selected_cases(args):
    """The cases to measure, in table order: (n, Case) for each size and each case that --filter
    selects and that runs here."""
    rng = np.random.default_rng(0)
    for n in (int(v) for v in args.sizes.split(",")):
        for op, dtype, granularity in CASES:
            if args.filter not in bench_name(op, dtype, granularity):
                continue
            case = Case(op, dtype, granularity, n, rng)
            if not case.skip:
                yield n, case


def pair_ratio(a, b, seconds=1.0):
    """Median over alternating pairs of calls (a then b, for about `seconds`) of a's time over b's:
    a load that changes slowly slows both calls of a pair alike, so the ratio stays put."""
    a(), b()
    ratios = []
    end = time.perf_counter() + seconds
    while len(ratios) < 5 or time.perf_counter() < end:
        t0 = time.perf_counter()
        a()
        t1 = time.perf_counter()
        b()
        t2 = time.perf_counter()
        ratios.append((t1 - t0) / (t2 - t1))
    return float(np.median(ratios))


def pairwise(args, threads):
    """--pairwise: the plain and out= calls over the packed call (the library's call on ONNX's bytes
    plus the Python layer's fixed cost), alternated pairwise in this process."""
    print(f"qdq {qdq.__version__}, numpy {np.__version__}, {threads} thread(s); median of pair ratios over "
          f"~{args.seconds:g} s per cell")
    print("| case | elements | Python call / packed | out= / packed |")
    print("|---|---|---|---|")
    for n, case in selected_cases(args):
        plain, out, packed = case.calls
        print(f"| {case.name} | {n} | {pair_ratio(plain, packed, args.seconds):.2f}× | "
              f"{pair_ratio(out, packed, args.seconds):.2f}× |", flush=True)


def bench_seconds(qdq_binary, name, n, threads, samples):
    r = subprocess.run([qdq_binary, "bench", "--json", "--size", str(n), "--repeats", str(samples), "--filter", name],
                       capture_output=True, text=True, check=True, env=dict(os.environ, QDQ_NUM_THREADS=str(threads)))
    rows = [row for row in json.loads(r.stdout)
            if row["case"] == name and row["threads"] == threads and row["kernel"] == "simd"]
    if not rows:
        raise SystemExit(f"qdq bench has no case {name!r} at {threads} thread(s)")
    return rows[0]["seconds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--qdq", help="the qdq command line (for `qdq bench`; not needed with --pairwise)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sizes", default="65536,16777216", help="element counts, comma-separated")
    ap.add_argument("--samples", type=int, default=7, help="samples per median")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the best median is printed")
    ap.add_argument("--filter", default="", help="only cases whose bench name contains this")
    ap.add_argument("--pairwise", action="store_true",
                    help="instead: the plain and out= calls over the packed call, alternated pairwise (robust to load)")
    ap.add_argument("--seconds", type=float, default=1.0, help="--pairwise: seconds per cell")
    args = ap.parse_args()
    qdq.set_num_threads(args.threads)
    threads = qdq.get_num_threads()
    if args.pairwise:
        return pairwise(args, threads)
    print(f"qdq {qdq.__version__}, numpy {np.__version__}, ml_dtypes {getattr(ml_dtypes, '__version__', 'absent')}, "
          f"{threads} thread(s); best of {args.rounds} interleaved medians of {args.samples} samples")
    print("| case | elements | qdq bench (ms) | Python call (ms, ×bench) | out= (×bench) | packed (×bench) "
          "| NumPy formula (ms, Python call's speed-up) | bytes moved, NumPy / qdq |")
    print("|---|---|---|---|---|---|---|---|")
    if not args.qdq:
        ap.error("--qdq is required (except with --pairwise)")
    worst_ratio, worst_speedup = 0.0, float("inf")
    for n, case in selected_cases(args):
        best_calls, best_bench = [float("inf")] * 3, float("inf")
        for _ in range(args.rounds):
            for k, f in enumerate(case.calls):
                best_calls[k] = min(best_calls[k], median_seconds(f, args.samples))
            best_bench = min(best_bench, bench_seconds(args.qdq, case.name, n, threads, args.samples))
        t_np = median_seconds(case.formula, max(3, args.samples // 2))
        ratios = [t / best_bench for t in best_calls]
        if qdq._qdq.bit_width(qdq._type_number(case.dtype, "t")) < 8:
            worst_ratio = max(worst_ratio, ratios[0])
        worst_speedup = min(worst_speedup, t_np / best_calls[0])
        print(f"| {case.name} | {n} | {best_bench * 1e3:.3f} | {best_calls[0] * 1e3:.3f} ({ratios[0]:.2f}×) | "
              f"{ratios[1]:.2f}× | {ratios[2]:.2f}× | {t_np * 1e3:.3f} ({t_np / best_calls[0]:.1f}×) | "
              f"{case.formula_bytes / case.qdq_bytes:.1f}× |", flush=True)
    print(f"worst sub-byte plain call / bench: {worst_ratio:.2f}× (goal <= 1.3); "
          f"worst speed-up over NumPy's formula: {worst_speedup:.1f}× (goal >= 10)")


if __name__ == "__main__":
    main()
