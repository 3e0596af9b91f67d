#!/usr/bin/env python3
"""The two speed goals of qdq's Python API (issue 14), measured case by case:

  * a Python call costs at most 1.3x the library's own call (what `qdq bench` times) for the same
    case, element count, layout, scale and zero-point shapes and thread count;
  * a Python call is at least 10x faster than NumPy's formula for the same job, where the traffic
    bound allows it.

Each case uses `qdq bench`'s own layout for it (bench/bench_core.cpp, layout_for): per-axis is
(64, n/64) with 64 channel scales, blocked-last (n/1024, 1024) with blocks of 32 along axis 1,
blocked-axis0 (256, n/256) with blocks of 32 rows; at 16 Mi elements that is the element and scale
count of a 4096x4096 matrix. Integer types carry a zero point, as in the bench.

Per case it prints:
  * `qdq bench`'s time (with --qdq; a separate process, so it sees the machine's load of other
    seconds);
  * the library's call timed in this process (qdq._qdq._time_library_call: the tensors prepared
    once, sub-byte ones packed, then the operator called in a loop, as the bench does), and the plain
    Python call (a new result, sub-byte types one code per byte): medians of samples of the two
    alternated for --seconds, and the median of the pair ratios, Python / library, which a load
    that changes slowly barely moves; the same ratio for out= (a reused result array);
  * NumPy's best formula for the same job (float32 throughout, every pass in place or into a
    preallocated array, np.rint then a clip that writes the codes one per byte, scales broadcast
    without copying; checked to give qdq's result bit for bit), the Python call's speed-up over it,
    and the traffic bound on that speed-up: the bytes per element NumPy's passes move (each reads
    and writes a whole tensor) over the bytes qdq's call moves (x read once, the result written
    once), i.e. the speed-up where both run at the speed of memory or cache. Where the bound is
    under 10x, the 10x goal cannot be met by any implementation that reads and writes the tensors.

--pairwise prints instead, per case, the plain and out= calls' time over the packed call's (the
library's call on ONNX's bytes plus the Python layer's fixed cost), alternated pairwise.

The qdq it imports must be built against a pybind11 that knows NumPy 2 (build/venv's NumPy): the
wheel scripts/test_python_package.sh installs into build/venv, or a build configured with
-Dpybind11_DIR=$(build/venv/bin/python -m pybind11 --cmakedir) and put first on PYTHONPATH
(Debian's pybind11 2.10 reads NumPy 2's dtypes wrongly).

Usage: build/venv/bin/python scripts/bench_python.py [--qdq build/release/tools/qdq/qdq] [--threads 1]
           [--sizes 65536,16777216] [--filter int4] [--seconds 1]
       ... scripts/bench_python.py --pairwise [--seconds 1] [--sizes ...] [--filter ...]
"""
import argparse
import json
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
    # x as ml_dtypes makes it (`values.astype(ml_dtypes.int4)`: a negative value's code in the low bits
    # only), not as qdq returns it (sign-extended): the binding sign-extends it for the 8-bit kernel.
    # Needs ml_dtypes; `qdq bench` and the library's call are the same case's.
    ("dequantize", "int4", "blocked-last-32", "ml_dtypes"),
    ("dequantize", "int2", "per-tensor", "ml_dtypes"),
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


def aligned_empty_like(a, alignment=64):
    """An uninitialised array like `a` (dtype, shape, CodeArray type) whose data is 64-byte aligned, as
    the library call's result buffer is: np.empty aligns to 16 bytes, and a kernel's vector stores
    into a buffer that is not aligned to a cache line cost up to a third more at 64 Ki elements, a
    property of the caller's buffer, not of the Python layer measured here."""
    raw = np.empty(a.nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    if isinstance(a, qdq.CodeArray):  # (not CodeArray(out, ...), which checks the uninitialised codes)
        out = out.view(qdq.CodeArray)
        out.qdq_dtype = a.qdq_dtype
    return out


class Case:
    """The tensors, the three Python calls and NumPy's formula of one bench case at n elements."""

    def __init__(self, op, dtype, granularity, n, rng, layout=None):
        self.name = bench_name(op, dtype, granularity)  # `qdq bench`'s case
        self.label = self.name + (" (x in ml_dtypes' own layout)" if layout else "")
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
        bits = qdq._qdq.bit_width(qdq._type_number(dtype, "t"))
        if integer:
            zp_value = BENCH_ZERO_POINT[bits]
            zp = qdq.CodeArray(np.full(sshape, zp_value, np.int8 if dtype.startswith("int") else np.uint8), dtype) \
                if bits < 8 else np.full(sshape, zp_value, np.dtype(dtype))
            kw_q = dict(kw)
        else:
            zp = None
            kw_q = dict(kw, output_dtype=dtype)
        y = qdq.quantize_linear(x, s, zp, **kw_q)
        y_packed = qdq.quantize_linear(x, s, zp, packed=True, **kw_q)
        y_out = aligned_empty_like(y)
        x_out = aligned_empty_like(x)
        # The library's call alone, timed in this process (_qdq._time_library_call) on the same tensors.
        attrs = {"axis": axis, **({"block_size": block} if block else {})}
        sa, st = qdq._as_input(s, "scale", raw_sub_byte=True)
        za, zt = qdq._zero_point_input(zp)
        if op == "quantize":
            xa, xt = qdq._as_input(x, "x", raw_sub_byte=True)
            if not integer:
                attrs["output_dtype"] = qdq._type_number(dtype, "t")
        else:
            xa, xt = qdq._as_input(y, "x", raw_sub_byte=True)
        self.library = lambda calls, samples=1: qdq._qdq._time_library_call(
            op == "quantize", xa, xt, sa, st, za, zt, attrs, 25, calls, samples)
        # NumPy's best formula, as an expert writes it: float32 throughout, every pass in place or into
        # a preallocated array (out=), np.rint then a clip that writes the integer codes (one per byte)
        # or the float8 result directly (casting="unsafe"), scales broadcast without copying.
        tmp = np.empty(xb.shape, np.float32)
        if op == "quantize":
            self.calls = [lambda: qdq.quantize_linear(x, s, zp, **kw_q),
                          lambda: qdq.quantize_linear(x, s, zp, out=y_out, **kw_q),
                          lambda: qdq.quantize_linear(x, s, zp, packed=True, **kw_q)]
            if integer:
                lo, hi = RANGES[dtype]
                codes = np.empty(xb.shape, np.int8 if lo < 0 else np.uint8)
                zpf = np.float32(zp_value)

                def formula():  # 4 passes: divide, rint, add, clip into the codes
                    np.divide(xb, sb, out=tmp)
                    np.rint(tmp, out=tmp)
                    np.add(tmp, zpf, out=tmp)
                    np.clip(tmp, lo, hi, out=codes, casting="unsafe")
                    return codes
                self.formula_bytes = 8 + 8 + 8 + 5
                expected = qdq._as_input(y, "y")[0].reshape(xb.shape)
            else:
                codes = np.empty(xb.shape, ml_dtypes.float8_e4m3fn) if ml_dtypes else None

                def formula():  # 2 passes: divide, clip into the float8 codes
                    np.divide(xb, sb, out=tmp)
                    np.clip(tmp, -448, 448, out=codes, casting="unsafe")
                    return codes
                self.formula_bytes = 8 + 5
                expected = y.reshape(xb.shape) if ml_dtypes else None
        else:
            x_in = y
            if layout == "ml_dtypes" and ml_dtypes is not None:
                x_in = np.asarray(y).view(np.int8).astype(np.dtype(getattr(ml_dtypes, dtype)))
            self.calls = [lambda: qdq.dequantize_linear(x_in, s, zp, **kw),
                          lambda: qdq.dequantize_linear(x_in, s, zp, out=x_out, **kw),
                          lambda: qdq.dequantize_linear(y_packed, s, zp, out=x_out, **kw)]
            expected = qdq.dequantize_linear(x_in, s, zp, **kw).reshape(xb.shape)
            if integer:
                codes = qdq._as_input(y, "y")[0].reshape(xb.shape)  # one code per byte, as int8/uint8
                zpf = np.float32(zp_value)

                def formula():  # 2 passes: subtract (reading the codes), multiply
                    np.subtract(codes, zpf, out=tmp)
                    np.multiply(tmp, sb, out=tmp)
                    return tmp
                self.formula_bytes = 5 + 8
            else:
                codes = y.reshape(xb.shape)

                def formula():  # 1 pass: multiply (ml_dtypes converts the float8 codes in the loop)
                    np.multiply(codes, sb, out=tmp)
                    return tmp
                self.formula_bytes = 5
        self.formula = formula
        self.skip = (not integer or layout is not None) and ml_dtypes is None
        if not self.skip:  # the formula does the same job: same codes or values, bit for bit
            got = formula()
            if not np.array_equal(got.view(np.uint8), np.ascontiguousarray(expected).view(np.uint8)):
                raise SystemExit(f"{self.label}: NumPy's formula does not give qdq's result")
        # Bytes per element each side moves through memory (or cache) with one read of every input and
        # one write of every output per pass: qdq's plain call reads x and writes its result once (one
        # code per byte, like the formula; float32 values), NumPy's passes each read and write a whole
        # tensor. Their ratio bounds the speed-up where both run at the speed of memory (or of the cache).
        self.qdq_bytes = 4 + 1
        self.bound = self.formula_bytes / self.qdq_bytes


def selected_cases(args):
    """The cases to measure, in table order: (n, Case) for each size and each case that --filter
    selects and that runs here."""
    rng = np.random.default_rng(0)
    for n in (int(v) for v in args.sizes.split(",")):
        for op, dtype, granularity, *layout in CASES:
            if args.filter not in bench_name(op, dtype, granularity):
                continue
            case = Case(op, dtype, granularity, n, rng, *layout)
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
        print(f"| {case.label} | {n} | {pair_ratio(plain, packed, args.seconds):.2f}× | "
              f"{pair_ratio(out, packed, args.seconds):.2f}× |", flush=True)


def bench_seconds(qdq_binary, name, n, threads, samples):
    # --threads, not QDQ_NUM_THREADS: `qdq bench` runs one thread unless its option says otherwise.
    # --small-pages: on 4 KiB pages, as NumPy's arrays are.
    r = subprocess.run([qdq_binary, "--threads", str(threads), "bench", "--json", "--size", str(n), "--repeats",
                        str(samples), "--filter", name, "--small-pages"], capture_output=True, text=True, check=True)
    rows = [row for row in json.loads(r.stdout)
            if row["case"] == name and row["threads"] == threads and row["kernel"] == "simd"]
    if not rows:
        raise SystemExit(f"qdq bench has no case {name!r} at {threads} thread(s)")
    return rows[0]["seconds"]


def calls_per_sample(f, seconds=5e-4):
    calls = 1
    while True:
        t = time.perf_counter()
        for _ in range(calls):
            f()
        if time.perf_counter() - t >= seconds or calls >= 1 << 20:
            return calls
        calls *= 2


def versus_library(f, library, seconds):
    """(median seconds of f, of the library's call, median of the pair ratios): samples of f and of
    the same call timed inside the library (`qdq bench`'s method), alternated for about `seconds`, so
    that both see the same machine load."""
    calls = calls_per_sample(f)
    own, lib, ratios = [], [], []
    end = time.perf_counter() + seconds
    while len(ratios) < 7 or time.perf_counter() < end:
        t = time.perf_counter()
        for _ in range(calls):
            f()
        own.append((time.perf_counter() - t) / calls)
        lib.append(library(calls))
        ratios.append(own[-1] / lib[-1])
    return float(np.median(own)), float(np.median(lib)), float(np.median(ratios))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--qdq", help="the qdq command line, for the `qdq bench` column (optional)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sizes", default="65536,16777216", help="element counts, comma-separated")
    ap.add_argument("--samples", type=int, default=7, help="samples per median (qdq bench, NumPy's formula)")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of `qdq bench`; the best median is printed")
    ap.add_argument("--filter", default="", help="only cases whose bench name contains this")
    ap.add_argument("--pairwise", action="store_true",
                    help="instead: the plain and out= calls over the packed call, alternated pairwise (robust to load)")
    ap.add_argument("--seconds", type=float, default=1.0, help="seconds of alternated samples per cell")
    args = ap.parse_args()
    qdq.set_num_threads(args.threads)
    threads = qdq.get_num_threads()
    if args.pairwise:
        return pairwise(args, threads)
    print(f"qdq {qdq.__version__}, numpy {np.__version__}, ml_dtypes {getattr(ml_dtypes, '__version__', 'absent')}, "
          f"{threads} thread(s); medians of samples alternated with the library's call for ~{args.seconds:g} s")
    print("| case | elements | qdq bench (ms) | library call (ms) | Python call (ms) | Python / library | "
          "out= / library | NumPy's best formula (ms) | speed-up over NumPy (measured) | traffic bound (computed) | "
          "10× within the bound? |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    worst_ratio, worst_8bit = 0.0, 0.0
    for n, case in selected_cases(args):
        plain, out, _ = case.calls
        t_py, t_lib, ratio = versus_library(plain, case.library, args.seconds)
        _, _, ratio_out = versus_library(out, case.library, args.seconds / 2)
        bench = "–"
        if args.qdq:
            best_bench = min(bench_seconds(args.qdq, case.name, n, threads, args.samples)
                             for _ in range(max(1, args.rounds)))
            bench = f"{best_bench * 1e3:.3f}"
        t_np = median_seconds(case.formula, max(3, args.samples // 2))
        if qdq._qdq.bit_width(qdq._type_number(case.dtype, "t")) < 8:
            worst_ratio = max(worst_ratio, ratio)
        else:
            worst_8bit = max(worst_8bit, ratio)
        speedup = t_np / t_py
        print(f"| {case.label} | {n} | {bench} | {t_lib * 1e3:.3f} | {t_py * 1e3:.3f} | {ratio:.2f}× | "
              f"{ratio_out:.2f}× | {t_np * 1e3:.3f} | {speedup:.1f}× | {case.bound:.1f}× | "
              f"{'yes' if case.bound >= 10 else 'no: bound < 10×'} |", flush=True)
    print(f"worst Python call / library call: sub-byte {worst_ratio:.2f}×, 8-bit {worst_8bit:.2f}× (goal <= 1.3)")


if __name__ == "__main__":
    main()
