#!/usr/bin/env bash
# Runs two qdq CLIs (before and after a change) alternately on the same machine, so that their
# numbers share the machine's state; writes `qdq bench --json` output to OUTDIR. The README's
# performance table was made this way.
#
#   scripts/bench_side_by_side.sh OLD_QDQ NEW_QDQ OUTDIR
set -euo pipefail
old=$1 new=$2 out=$3
mkdir -p "$out"
for run in 1 2 3; do
  "$old" bench --size 65536 --repeats 7 --json > "$out/old_64k_$run.json"
  "$new" bench --size 65536 --repeats 7 --json > "$out/new_64k_$run.json"
done
for threads in 1 2; do
  "$old" --threads "$threads" bench --size 262144 --repeats 9 --filter per-tensor --json > "$out/old_256k_t$threads.json"
  "$new" --threads "$threads" bench --size 262144 --repeats 9 --filter per-tensor --json > "$out/new_256k_t$threads.json"
done
for case in "float32->uint8/per-tensor" "float32->int8/per-tensor" "float32->int4/per-tensor" "float32->int4/blocked-last-32" \
            "float32->float8e4m3fn/per-tensor" "float16->uint8/per-tensor" "uint8->float32/per-tensor" \
            "int4->float32/blocked-last-32" "float8e4m3fn->float32/per-tensor" "uint8->float16/per-tensor"; do
  name=$(printf '%s' "$case" | tr '/>' '__')
  "$old" bench --size 67108864 --repeats 3 --filter "$case" --json > "$out/old_64m_$name.json"
  "$new" bench --size 67108864 --repeats 3 --filter "$case" --json > "$out/new_64m_$name.json"
done
