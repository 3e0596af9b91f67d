#!/usr/bin/env python3
"""Normal against non-temporal stores: runs `qdq bench` over a range of output sizes, on 1 and 2
threads, and prints a markdown table of the streaming reference's two loops (medians of the rounds),
to find the output size from which non-temporal stores win on this machine.

    scripts/bench_nt_stores.py [--rounds 3] [--threads 1,2] [--case dequantize/uint8->float32/per-tensor]
                               [--out-sizes 262144,...] QDQ

Sizes are output bytes; the case's element count is derived from its bytes per output element (4 for
dequantize to float32, 1 for quantize to 8 bits). Standard library only; timings come from `qdq bench`.
"""
import argparse
import json
import statistics
import subprocess

DEFAULT_OUT_SIZES = [256 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20, 128 << 20, 256 << 20]


def size_name(n):
    return f"{n >> 20} Mi" if n >= 1 << 20 else f"{n >> 10} Ki"


def run(qdq, case, elements, threads, repeats):
    cmd = [qdq, "--threads", str(threads), "bench", "--size", str(elements), "--filter", case, "--repeats", str(repeats), "--json"]
    rows = [r for r in json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout) if r["case"] == case]
    if len(rows) != 1:
        raise SystemExit(f"bench_nt_stores: {case!r} matched {len(rows)} cases")
    return rows[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("qdq")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--case", default="dequantize/uint8->float32/per-tensor")
    parser.add_argument("--out-sizes", default=",".join(map(str, DEFAULT_OUT_SIZES)))
    args = parser.parse_args()
    out_per_element = 4 if args.case.split("/")[1].endswith("float32") else 1
    sizes = [int(s) for s in args.out_sizes.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    samples = {}
    for rnd in range(args.rounds):
        for size in sizes:
            for t in threads:
                r = run(args.qdq, args.case, max(1024, size // out_per_element), t, args.repeats)
                samples.setdefault((size, t), []).append((r["stream_normal_gbps"], r["stream_nt_gbps"]))
                print(f"# round {rnd} {size_name(size):>6} out {t}T normal {r['stream_normal_gbps']:7.2f} "
                      f"non-temporal {r['stream_nt_gbps']:7.2f} GB/s", flush=True)
    print(f"\n{args.case}, GB/s of the case's traffic (read + written), median of {args.rounds} rounds\n")
    print("| output | threads | normal stores | non-temporal | non-temporal / normal |")
    print("|---|---:|---:|---:|---:|")
    for size in sizes:
        for t in threads:
            normal = statistics.median(s[0] for s in samples[(size, t)])
            nt = statistics.median(s[1] for s in samples[(size, t)])
            ratios = [s[1] / s[0] for s in samples[(size, t)]]
            print(f"| {size_name(size)} | {t} | {normal:.1f} | {nt:.1f} | {statistics.median(ratios):.2f} "
                  f"(min {min(ratios):.2f}) |")


if __name__ == "__main__":
    main()
