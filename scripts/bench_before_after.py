#!/usr/bin/env python3
"""Before and after a kernel change: runs two qdq CLIs alternately (OLD, NEW, OLD, NEW, ...) with the
same `qdq bench` arguments, records `uptime` beside each run, and prints a markdown table per thread
count of the medians over the rounds: G elements/s of each binary, NEW/OLD, and each binary's ratio
against its run's reference (`vs_reference`: streaming above 2 MiB, the in-cache ceiling below).

    scripts/bench_before_after.py [--rounds 3] [--threads 1,2] [--size 67108864] [--filter TEXT]
                                  [--repeats 3] [--json-dir DIR] OLD_QDQ NEW_QDQ

Standard library only; every figure comes from `qdq bench --json`.
"""
import argparse
import json
import os
import statistics
import subprocess


def bench(qdq, threads, size, repeats, filt):
    cmd = [qdq, "--threads", str(threads), "bench", "--size", str(size), "--repeats", str(repeats), "--json"]
    if filt:
        cmd += ["--filter", filt]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default="1")
    parser.add_argument("--size", type=int, default=67108864)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--filter", default="")
    parser.add_argument("--json-dir", default="")
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    runs = {}  # (binary, threads) -> list of result lists
    for rnd in range(args.rounds):
        for t in threads:
            for label, qdq in (("old", args.old), ("new", args.new)):
                before = uptime()
                rows = bench(qdq, t, args.size, args.repeats, args.filter)
                print(f"# round {rnd} {label} {t}T size {args.size}: {before}", flush=True)
                runs.setdefault((label, t), []).append(rows)
                if args.json_dir:
                    os.makedirs(args.json_dir, exist_ok=True)
                    path = os.path.join(args.json_dir, f"{label}_{args.size}_t{t}_r{rnd}.json")
                    with open(path, "w") as f:
                        json.dump(rows, f, indent=1)
    print(f"# after: {uptime()}")
    for t in threads:
        print(f"\n{t} thread(s), {args.size} elements, medians of {args.rounds} rounds\n")
        print("| case | old G elem/s | new G elem/s | new / old | stream GB/s normal / NT | old vsRef | new vsRef |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        names = [r["case"] for r in runs[("new", t)][0] if r["kernel"] == "simd"]
        for name in names:
            def med(label, key):
                return statistics.median(r[key] for rows in runs[(label, t)] for r in rows
                                         if r["case"] == name and r["kernel"] == "simd")
            old, new = med("old", "gelem_per_s"), med("new", "gelem_per_s")
            normal = statistics.median([med("old", "stream_normal_gbps"), med("new", "stream_normal_gbps")])
            nt = statistics.median([med("old", "stream_nt_gbps"), med("new", "stream_nt_gbps")])
            print(f"| {name} | {old:.3f} | {new:.3f} | {new / old:.2f} | {normal:.1f} / {nt:.1f} | "
                  f"{med('old', 'vs_reference'):.2f} | **{med('new', 'vs_reference'):.2f}** |")


if __name__ == "__main__":
    main()
