#!/usr/bin/env bash
# The qdq tool on failures: `qdq run` must leave no partial or temporary file behind (and not touch
# existing outputs) whatever goes wrong — an output folder that cannot be created, a full disk,
# corrupt or missing inputs — and must report exactly one "qdq: ..." line with exit status 1;
# usage errors exit 2; a reader that goes away (`qdq test ... | head -1`) must not kill qdq with
# SIGPIPE, and a failed write to stdout (/dev/full) must not exit 0.
#
# usage: cli_failures.sh QDQ_BINARY ONNX_NODE_DIR      (registered as the ctest `robustness_cli`)
set -uo pipefail
qdq=$1
data=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/qdq-cli-failures.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

model=$data/test_quantizelinear/model.onnx
inputs=("$data"/test_quantizelinear/test_data_set_0/input_{0,1,2}.pb)
dyn_model=$data/test_dynamicquantizelinear/model.onnx
dyn_input=$data/test_dynamicquantizelinear/test_data_set_0/input_0.pb

# expect_failure NAME EXPECTED_STATUS OUT_DIR -- COMMAND...: the status, one "qdq: " line on stderr,
# and no file under OUT_DIR other than those listed in $tmp/before (taken before the command).
expect_failure() {
  local name=$1 want=$2 out=$3
  shift 4
  (cd "$tmp" && find . -type f | sort) > "$tmp/.before"
  "$@" > "$tmp/.stdout" 2> "$tmp/.stderr"
  local got=$?
  (cd "$tmp" && find . -type f | sort) > "$tmp/.after"
  local ok=1
  [[ $got == "$want" ]] || { fail "$name: exit status $got, expected $want"; ok=0; }
  local lines
  lines=$(wc -l < "$tmp/.stderr")
  if [[ $lines != 1 ]] || ! grep -q '^qdq: ' "$tmp/.stderr"; then
    fail "$name: stderr is not one 'qdq: ' line:"; sed 's/^/    /' "$tmp/.stderr" >&2; ok=0
  fi
  local new
  new=$(comm -13 "$tmp/.before" "$tmp/.after" | grep -v '^\./\.\(stdout\|stderr\|before\|after\)$')
  if [[ -n $new ]]; then fail "$name: left files behind: $new"; ok=0; fi
  ((ok)) && pass "$name ($(head -c 150 "$tmp/.stderr"))"
}

# 0. The tool works at all.
if "$qdq" run "$model" "${inputs[@]}" -o "$tmp/good" > /dev/null && [[ -s $tmp/good/output_0.pb ]]; then
  pass "qdq run writes output_0.pb"
else
  fail "qdq run on a conformance model failed"; exit 1
fi
rm -rf "$tmp/good"

# 1. An output folder that cannot exist (root ignores permissions, so use paths that no one can
#    create): under a regular file (ENOTDIR), an existing regular file, inside /proc.
touch "$tmp/plainfile"
expect_failure "output folder under a regular file" 1 "$tmp" -- "$qdq" run "$model" "${inputs[@]}" -o "$tmp/plainfile/out"
expect_failure "output folder is a regular file" 1 "$tmp" -- "$qdq" run "$model" "${inputs[@]}" -o "$tmp/plainfile"
expect_failure "output folder inside /proc" 1 "$tmp" -- "$qdq" run "$model" "${inputs[@]}" -o "/proc/qdq-no-such-dir/out"
[[ -f $tmp/plainfile && ! -s $tmp/plainfile ]] || fail "the regular file in the way was modified"

# 2. Corrupt, missing or mismatched inputs: nothing written, existing outputs untouched.
mkdir -p "$tmp/keep"
echo old > "$tmp/keep/output_0.pb"
head -c 7 "${inputs[0]}" > "$tmp/truncated.pb"
printf '\xff\xff\xff\xff' > "$tmp/garbage.onnx"
expect_failure "truncated input" 1 "$tmp" -- "$qdq" run "$model" "$tmp/truncated.pb" "${inputs[1]}" "${inputs[2]}" -o "$tmp/keep"
expect_failure "corrupt model" 1 "$tmp" -- "$qdq" run "$tmp/garbage.onnx" "${inputs[@]}" -o "$tmp/keep"
expect_failure "model is a folder" 1 "$tmp" -- "$qdq" run "$tmp" "${inputs[@]}" -o "$tmp/keep"
expect_failure "missing input file" 1 "$tmp" -- "$qdq" run "$model" "$tmp/nonexistent.pb" "${inputs[1]}" "${inputs[2]}" -o "$tmp/keep"
expect_failure "too few inputs" 1 "$tmp" -- "$qdq" run "$model" "${inputs[0]}" -o "$tmp/keep"
expect_failure "input of the wrong type" 1 "$tmp" -- "$qdq" run "$model" "${inputs[1]}" "${inputs[1]}" "${inputs[2]}" -o "$tmp/keep"
expect_failure "missing output folder creation after a failure" 1 "$tmp" -- "$qdq" run "$tmp/garbage.onnx" "${inputs[@]}" -o "$tmp/never/created"
[[ $(cat "$tmp/keep/output_0.pb") == old ]] || fail "an existing output_0.pb was changed by a failed run"
[[ ! -e $tmp/never ]] || fail "a failed run created its output folder"

# 3. A full disk: a 16 KiB tmpfs in a private mount namespace (needs root and unshare; skipped
#    with a note otherwise). Nearly full, so that the first of DynamicQuantizeLinear's three output
#    files fits and a later one does not: all must disappear again.
if command -v unshare > /dev/null && unshare -m true 2> /dev/null; then
  mkdir -p "$tmp/full"
  unshare -m bash -c '
    set -u
    mount -t tmpfs -o size=16k tmpfs "$1" || exit 77
    dd if=/dev/zero of="$1/filler" bs=1k count=64 2> /dev/null
    rm -f "$1/filler"; dd if=/dev/zero of="$1/filler" bs=1k count=12 2> /dev/null
    find "$1" -type f | sort > "$5/.diskfull.before"
    "$2" run "$3" "$4" -o "$1/out" > /dev/null 2> "$5/.diskfull.stderr"; status=$?
    "$2" run "$3" "$4" -o "$1" > /dev/null 2>> "$5/.diskfull.stderr"; status2=$?
    find "$1" -type f | sort > "$5/.diskfull.after"
    echo "$status $status2" > "$5/.diskfull.status"
    diff "$5/.diskfull.before" "$5/.diskfull.after" > "$5/.diskfull.diff"
  ' bash "$tmp/full" "$qdq" "$dyn_model" "$dyn_input" "$tmp"
  case $? in
    77) echo "skip: disk full (cannot mount a tmpfs here)" ;;
    *)
      read -r s1 s2 < "$tmp/.diskfull.status"
      if [[ $s1 == 1 && $s2 == 1 && ! -s $tmp/.diskfull.diff ]] && [[ $(grep -c '^qdq: ' "$tmp/.diskfull.stderr") == 2 ]]; then
        pass "disk full: exit 1, no files left ($(head -1 "$tmp/.diskfull.stderr"))"
      else
        fail "disk full: statuses $s1 $s2, leftover files: $(cat "$tmp/.diskfull.diff"); stderr: $(cat "$tmp/.diskfull.stderr")"
      fi
      ;;
  esac
  rm -f "$tmp"/.diskfull.*
else
  echo "skip: disk full (unshare -m not permitted)"
fi

# 4. Standard output: a full device, and a reader that goes away.
"$qdq" test "$data" > /dev/full 2> "$tmp/.stderr"
status=$?
if [[ $status == 1 ]] && grep -q '^qdq: .*standard output' "$tmp/.stderr"; then
  pass "stdout on /dev/full: exit 1 with a message"
else
  fail "stdout on /dev/full: exit status $status, stderr: $(cat "$tmp/.stderr")"
fi
# Enough output to overflow the pipe buffer after head has gone: the data set listed 300 times.
paths=()
for _ in $(seq 300); do paths+=("$data"); done
"$qdq" test "${paths[@]}" 2> "$tmp/.stderr" | head -1 > /dev/null
status=${PIPESTATUS[0]}
if [[ $status == 0 || $status == 1 ]]; then
  pass "qdq test | head -1: exit status $status, no SIGPIPE ($(head -c 100 "$tmp/.stderr"))"
else
  fail "qdq test | head -1: exit status $status (141 = killed by SIGPIPE)"
fi

# 5. Usage errors exit 2; --help and --version exit 0.
for args in "" "frobnicate" "run" "--threads -1 test $data" "--no-such-option test $data"; do
  # shellcheck disable=SC2086
  "$qdq" $args > /dev/null 2>&1
  status=$?
  [[ $status == 2 ]] && pass "usage error '$args': 2" || fail "usage error '$args': exit status $status, expected 2"
done
for args in "--help" "--version" "run --help"; do
  # shellcheck disable=SC2086
  "$qdq" $args > /dev/null 2>&1 && pass "'$args': 0" || fail "'$args': exit status $?"
done

if ((failures)); then
  echo "$failures CLI robustness check(s) failed" >&2
  exit 1
fi
echo "all CLI robustness checks passed"
