#!/usr/bin/env bash
# Builds qdq's API reference (Doxygen over include/qdq, with docs/using-qdq-from-cpp.md as the main
# page) and fails on any Doxygen warning. Also checks that the guide's example is, line for line,
# tests/consumer/round_trip.cpp (the program the consumer tests build and run).
#
#   scripts/check_docs.sh [output-dir]      default: build/docs in the repository root
#
# The reference lands in <output-dir>/html/index.html. Exit status: 0 clean, 1 warnings or a stale
# example, 2 doxygen missing.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
out=${1:-build/docs}
mkdir -p "$out"
out=$(cd "$out" && pwd)

if ! command -v doxygen >/dev/null 2>&1; then
  echo "check_docs: doxygen not found (Debian/Ubuntu: apt-get install doxygen)" >&2
  exit 2
fi

status=0

# 1. The guide's example is the consumer tests' program.
guide=docs/using-qdq-from-cpp.md
example=tests/consumer/round_trip.cpp
first_line=$(head -n 1 "$example")
# The fenced ```cpp block whose first line is the example's first line.
awk -v first="$first_line" '
  !inside && /^```cpp[[:space:]]*$/ { start = 1; next }
  start { start = 0; if ($0 == first) { inside = 1; print; next } }
  inside && /^```[[:space:]]*$/ { exit }
  inside { print }
' "$guide" > "$out/guide-example.cpp"
if ! diff -u "$example" "$out/guide-example.cpp" > "$out/guide-example.diff"; then
  echo "check_docs: the example in $guide differs from $example:" >&2
  cat "$out/guide-example.diff" >&2
  status=1
fi

# 2. Doxygen, warnings collected in a log; any line there is a failure.
version=$(awk '/#define QDQ_VERSION_(MAJOR|MINOR|PATCH)/ { v = v sep $3; sep = "." } END { print v }' \
  include/qdq/version.hpp)
log="$out/doxygen-warnings.log"
rm -f "$log"
doxygen_status=0
{
  cat docs/Doxyfile
  echo "OUTPUT_DIRECTORY = \"$out\""
  echo "PROJECT_NUMBER = $version"
  echo "WARN_LOGFILE = \"$log\""
} | doxygen - > "$out/doxygen.out" 2>&1 || doxygen_status=$?

if [[ -s "$log" ]]; then
  echo "check_docs: doxygen warnings:" >&2
  cat "$log" >&2
  status=1
fi
if [[ $doxygen_status -ne 0 ]]; then
  echo "check_docs: doxygen exited with status $doxygen_status" >&2
  cat "$out/doxygen.out" >&2
  status=1
elif [[ -s "$out/doxygen.out" ]]; then
  # QUIET = YES: anything printed is worth a look (and is treated as a warning).
  echo "check_docs: unexpected doxygen output:" >&2
  cat "$out/doxygen.out" >&2
  status=1
fi

if [[ $status -eq 0 ]]; then
  echo "check_docs: OK, qdq $version API reference in $out/html/index.html"
fi
exit $status
