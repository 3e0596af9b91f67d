#!/usr/bin/env python3
"""Instructions per call of one qdq Python call, counted by valgrind's callgrind: a run of N calls
minus a run of M calls, over N - M (interpreter start-up and imports cancel out). The collector is
off and OpenBLAS on one thread, so the count repeats to the instruction.

Usage: build/venv/bin/python scripts/python_call_instructions.py CASE [--calls 2100] [--base 100]
  CASE: int8-axis-64     qdq.dequantize_linear of a (64, 1) int8 tensor, 64 scales and zero points, axis=0
        uint4-tensor-64k qdq.dequantize_linear of 64 Ki ml_dtypes uint4 codes, scalar scale and zero point
        int8-axis-64-lib the library's own call for the first case (qdq._qdq._time_library_call)
The qdq measured is the one this interpreter imports (the installed wheel, or PYTHONPATH)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def run_case(case, n):
    import gc

    import numpy as np

    import qdq

    qdq.set_num_threads(1)
    gc.disable()
    if case.startswith("int8-axis-64"):
        x = (np.arange(64) % 200 - 100).astype(np.int8).reshape(64, 1)
        s = np.linspace(0.01, 0.1, 64).astype(np.float32)
        z = (np.arange(64) % 7).astype(np.int8)
        if case.endswith("-lib"):
            qdq._qdq._time_library_call(False, x, 3, s, 1, z, 3, {"axis": 0}, 25, n, 1)
            return
        call = lambda: qdq.dequantize_linear(x, s, z, axis=0)  # noqa: E731
    elif case == "uint4-tensor-64k":
        import ml_dtypes

        x = (np.arange(65536) % 16).astype(ml_dtypes.uint4)
        s = np.float32(0.05)
        z = np.asarray(3, dtype=ml_dtypes.uint4)
        call = lambda: qdq.dequantize_linear(x, s, z)  # noqa: E731
    else:
        raise SystemExit(f"unknown case {case}")
    call()  # lazily made state outside the count
    for _ in range(n):
        call()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case")
    ap.add_argument("--calls", type=int, default=2100)
    ap.add_argument("--base", type=int, default=100)
    ap.add_argument("--run", type=int, help=argparse.SUPPRESS)  # the measured child
    args = ap.parse_args()
    if args.run is not None:
        run_case(args.case, args.run)
        return
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    totals = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (args.base, args.calls):
            out = os.path.join(tmp, f"callgrind.{n}")
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
                            os.path.abspath(__file__), args.case, "--run", str(n)],
                           env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            text = open(out).read()
            totals.append(int(re.search(r"^(?:summary|totals): (\d+)", text, re.M).group(1)))
    print(f"{args.case}: {(totals[1] - totals[0]) // (args.calls - args.base)} instructions per call")


if __name__ == "__main__":
    main()
