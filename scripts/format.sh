#!/usr/bin/env bash
# Formats qdq's C and C++ sources with clang-format and the repository's .clang-format: every
# tracked .c/.cc/.cpp/.h/.hpp file under include/ src/ tools/ python/src/ tests/ bench/ fuzz/,
# except the test data (tests/data/). The .inc lists are left as they are: they are tables, one
# entry per line in aligned columns (or generated, op_versions.inc), which clang-format would unalign.
#
#   scripts/format.sh           format the files in place
#   scripts/format.sh --check   change nothing; list the files that are not formatted and exit 1 if any
#
# Environment: CLANG_FORMAT (default clang-format; scripts/setup.sh installs Debian's, version 14).
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format}
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: scripts/format.sh [--check]" >&2; exit 2 ;;
esac
if ! command -v "$clang_format" > /dev/null; then
  echo "format: $clang_format not found (Debian: apt-get install clang-format)" >&2
  exit 1
fi

mapfile -t files < <(git ls-files -- include src tools python/src tests bench fuzz |
                     grep -E '\.(c|cc|cpp|h|hpp)$' | grep -v '^tests/data/')
if ((check == 0)); then
  "$clang_format" -i --style=file -- "${files[@]}"
  exit 0
fi
unformatted=0
for f in "${files[@]}"; do
  if ! "$clang_format" --style=file --dry-run -Werror -- "$f" > /dev/null 2>&1; then
    echo "$f"
    unformatted=$((unformatted + 1))
  fi
done
if ((unformatted > 0)); then
  echo "format: $unformatted of ${#files[@]} files are not formatted (run scripts/format.sh)" >&2
  exit 1
fi
