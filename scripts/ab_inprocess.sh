#!/usr/bin/env bash
# Before/after speed of two builds of qdq in one process, for changes smaller than the drift of a
# shared machine (bench/ab/ab_driver.cpp says why). Each build tree must have built the targets qdq
# and qdq_bench_core (e.g. `ninja -C BUILD qdq qdq_bench_core`); one thread, in-cache or any size.
#
#   scripts/ab_inprocess.sh [--rounds N] [--size ELEMENTS] BEFORE_BUILD AFTER_BUILD CASE...
#   e.g. git worktree add /tmp/before HEAD~1 && cmake -S /tmp/before -B /tmp/before/build -G Ninja \
#          -DCMAKE_BUILD_TYPE=Release && ninja -C /tmp/before/build qdq qdq_bench_core
#        scripts/ab_inprocess.sh /tmp/before/build build/release 'dequantize/int4->float32/blocked-last-32'
#   QDQ_AB_TARGET=AVX2 runs both sides' kernels on that Highway target (as `qdq bench --target`), and
#   QDQ_AB_OFFSET=16 starts x and y 16 bytes past a cache line (as `qdq bench --offset`).
#   Each side's tensors come from its own libqdq_bench_core.a: from the commit that put them on 2 MiB
#   pages on (`qdq bench --small-pages` says why), compare in cache only against a side whose bench
#   core does the same (an older tree: copy a newer libqdq_bench_core.a into it), or the two sides'
#   pages differ.
set -euo pipefail
rounds=600
size=65536
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    *) break ;;
  esac
done
if [[ $# -lt 3 ]]; then
  sed -n '2,14p' "$0" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
before="$(cd "$1" && pwd)"
after="$(cd "$2" && pwd)"
shift 2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
side() {  # build tree, output library (Highway is headers only: nothing of it to link)
  local build="$1" source
  source="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")"
  for lib in "$build/src/libqdq.a" "$build/bench/libqdq_bench_core.a"; do
    [[ -f "$lib" ]] || { echo "error: $lib is missing: build the targets qdq and qdq_bench_core in $build" >&2; exit 1; }
  done
  "${CXX:-c++}" -O2 -std=c++20 -fPIC -shared -Wl,-Bsymbolic -I"$source/bench" -I"$source/include" \
    "$root/bench/ab/ab_case.cpp" -Wl,--whole-archive "$build/bench/libqdq_bench_core.a" \
    -Wl,--no-whole-archive "$build/src/libqdq.a" -lpthread -o "$2"
}
side "$before" "$work/before.so"
side "$after" "$work/after.so"
"${CXX:-c++}" -O2 -std=c++20 "$root/bench/ab/ab_driver.cpp" -ldl -o "$work/ab_driver"
echo "before: $before"
echo "after:  $after"
echo "elements: $size, rounds: $rounds, one thread, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/ab_driver" "$work/before.so" "$work/after.so" "$size" "$rounds" "$@"
