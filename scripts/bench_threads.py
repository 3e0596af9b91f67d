#!/usr/bin/env python3
"""Two threads against one, idle and busy: runs `qdq --threads 2 bench --compare-one-thread` over a
range of sizes, without load, with `--load N` busy threads, and while another process keeps
starting beside it (a loop of `python3 -c pass`), and prints a markdown table of the medians. Beside
qdq's 2T/1T it prints the static split's (the same tasks on two threads with no pool: the bench's
reference for what two threads can gain on this machine).

Several qdq binaries (before and after a change) run alternately, round after round, so that they
share the machine's state; on a shared machine only such side-by-side numbers compare.

    scripts/bench_threads.py [--rounds 3] [--sizes 4096,65536,...] [--cases A,B] [--loads idle,busy,spawn]
                             [--json-out FILE] QDQ [QDQ ...]

Standard library only; timings come from `qdq bench` itself (medians of its interleaved samples).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

DEFAULT_SIZES = [4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
DEFAULT_CASES = ["quantize/float32->uint8/per-tensor", "dequantize/uint8->float32/per-tensor",
                 "quantize/float32->int4/blocked-last-32"]


def size_name(n):
    return f"{n >> 20} Mi" if n >= 1 << 20 else f"{n >> 10} Ki"


class Spawner:
    """Keeps starting short-lived interpreters beside the benchmark (an interpreter's start-up is
    what competed for the second core in the issue's report)."""

    def __init__(self):
        self.proc = None

    def __enter__(self):
        loop = f'while :; do "{sys.executable}" -c pass; done'
        self.proc = subprocess.Popen(["bash", "-c", loop], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        os.killpg(self.proc.pid, 15)
        self.proc.wait()


def run_bench(qdq, size, case, load, repeats):
    cmd = [qdq, "--threads", "2", "bench", "--size", str(size), "--filter", case, "--compare-one-thread",
           "--repeats", str(repeats), "--json"]
    if load == "busy":
        cmd += ["--load", "1"]
    if load == "spawn":
        with Spawner():
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    else:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = [r for r in json.loads(out) if r["case"] == case]
    if len(rows) != 1:
        raise SystemExit(f"bench_threads: {case!r} matched {len(rows)} cases")
    return rows[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("qdq", nargs="+", help="qdq binaries, run alternately")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES))
    parser.add_argument("--loads", default="idle,busy,spawn", help="any of idle, busy (--load 1), spawn")
    parser.add_argument("--json-out", help="also write every sample here")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    cases = args.cases.split(",")
    loads = args.loads.split(",")
    samples = []
    for rnd in range(args.rounds):
        for load in loads:
            for size in sizes:
                for case in cases:
                    for qdq in args.qdq:
                        r = run_bench(qdq, size, case, load, args.repeats)
                        samples.append({"qdq": qdq, "round": rnd, "load": load, "size": size, "case": case,
                                        "one": r["one_thread_gelem_per_s"], "two": r["gelem_per_s"],
                                        "ratio": r["vs_one_thread"],
                                        "static": r["static_split_gelem_per_s"] / r["one_thread_gelem_per_s"]})
                        print(f"# round {rnd} {load:5} {size_name(size):6} {case:44} {os.path.basename(qdq):12} "
                              f"1T {r['one_thread_gelem_per_s']:7.3f} 2T {r['gelem_per_s']:7.3f} "
                              f"2T/1T {r['vs_one_thread']:5.2f} static 2T/1T "
                              f"{r['static_split_gelem_per_s'] / r['one_thread_gelem_per_s']:5.2f}",
                              file=sys.stderr, flush=True)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(samples, f, indent=1)
    names = [os.path.basename(q) for q in args.qdq]
    for load in loads:
        print(f"\n### {load}\n")
        header = "| case | size |" + "".join(f" {n} 1T | {n} 2T | {n} 2T/1T | {n} static 2T/1T |" for n in names)
        print(header)
        print("|---|---|" + "---:|---:|---:|---:|" * len(names))
        for case in cases:
            for size in sizes:
                cells = []
                for qdq in args.qdq:
                    got = [s for s in samples if s["qdq"] == qdq and s["load"] == load and s["size"] == size
                           and s["case"] == case]
                    one = statistics.median(s["one"] for s in got)
                    two = statistics.median(s["two"] for s in got)
                    ratio = statistics.median(s["ratio"] for s in got)
                    lo = min(s["ratio"] for s in got)
                    static = statistics.median(s["static"] for s in got)
                    cells.append(f" {one:.2f} | {two:.2f} | {ratio:.2f} (min {lo:.2f}) | {static:.2f} |")
                print(f"| {case} | {size_name(size)} |" + "".join(cells))


if __name__ == "__main__":
    main()
