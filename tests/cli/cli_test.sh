#!/usr/bin/env bash
# Black-box tests of the qdq executable: cli_test.sh CASE QDQ DATA_DIR
#   CASE      one of the functions below (case_*)
#   QDQ       the built qdq binary
#   DATA_DIR  tests/data/onnx-node
# Each case runs in a fresh temporary folder and exits non-zero with a reason on failure.
set -u
case_name=$1
QDQ=$2
DATA=$3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/qdq_cli_${case_name}.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1

fail() { echo "FAILED ($case_name): $*" >&2; exit 1; }

# run_qdq ARGS...: runs qdq, capturing stdout, stderr and the exit code in $out, $err, $rc.
run_qdq() {
  "$QDQ" "$@" >stdout.txt 2>stderr.txt
  rc=$?
  out=$(cat stdout.txt)
  err=$(cat stderr.txt)
}
expect_rc() { [ "$rc" -eq "$1" ] || fail "exit code $rc, expected $1 (stderr: $err)"; }
expect_one_stderr_line() {
  local lines
  lines=$(wc -l <stderr.txt)
  [ "$lines" -eq 1 ] || fail "stderr has $lines lines, expected 1: $err"
  case "$err" in qdq:\ *) ;; *) fail "stderr does not start with 'qdq: ': $err" ;; esac
}
expect_stderr_contains() { case "$err" in *"$1"*) ;; *) fail "stderr lacks '$1': $err" ;; esac; }
expect_stdout_contains() { case "$out" in *"$1"*) ;; *) fail "stdout lacks '$1': $out" ;; esac; }

Q="$DATA/test_quantizelinear"
Q_INPUTS=("$Q/test_data_set_0/input_0.pb" "$Q/test_data_set_0/input_1.pb" "$Q/test_data_set_0/input_2.pb")

case_version() {
  run_qdq --version
  expect_rc 0
  [[ "$out" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "version output '$out'"
}

case_help() {
  run_qdq --help
  expect_rc 0
  expect_stdout_contains "run"
  expect_stdout_contains "test"
  expect_stdout_contains "--threads"
  for sub in run test; do
    run_qdq "$sub" --help
    expect_rc 0
    expect_stdout_contains "Usage: qdq $sub"
  done
}

case_usage_errors() {
  for args in "" "bogus" "--threads" "--threads x test $DATA" "--threads -1 test $DATA" "run" "test" \
              "test --no-such-option $DATA" "run --output-dir"; do
    # shellcheck disable=SC2086
    run_qdq $args
    expect_rc 2
    expect_one_stderr_line
  done
}

case_run_writes_outputs() {
  run_qdq run "$Q/model.onnx" "${Q_INPUTS[@]}" -o out
  expect_rc 0
  [ -f out/output_0.pb ] || fail "out/output_0.pb missing"
  [ "$(ls out)" = "output_0.pb" ] || fail "unexpected files: $(ls out)"
  expect_stdout_contains "out/output_0.pb: y UINT8 [6]"
  # raw_data output with the graph's name: byte-identical to ONNX's from_array file.
  cmp -s out/output_0.pb "$Q/test_data_set_0/output_0.pb" || fail "output differs from the conformance file"
  # Default output folder: the current one; global options after the subcommand.
  run_qdq run "$Q/model.onnx" "${Q_INPUTS[@]}" --threads 2
  expect_rc 0
  cmp -s output_0.pb "$Q/test_data_set_0/output_0.pb" || fail "output_0.pb in cwd differs"
}

case_run_three_outputs_then_test() {
  # qdq run's outputs form a node test that qdq test accepts.
  local t="$DATA/test_dynamicquantizelinear"
  mkdir -p mine/my_test/test_data_set_0
  cp "$t/model.onnx" mine/my_test/
  cp "$t/test_data_set_0/input_0.pb" mine/my_test/test_data_set_0/
  run_qdq run "$t/model.onnx" "$t/test_data_set_0/input_0.pb" -o mine/my_test/test_data_set_0
  expect_rc 0
  for k in 0 1 2; do [ -f "mine/my_test/test_data_set_0/output_$k.pb" ] || fail "output_$k.pb missing"; done
  run_qdq test mine
  expect_rc 0
  [ "$out" = $'PASS my_test\n1 passed, 0 failed' ] || fail "unexpected output: $out"
}

# A failing run leaves no output file, prints one line naming the file, exits 1.
expect_failed_run() {
  local needle=$1
  shift
  run_qdq run "$@" -o out
  expect_rc 1
  expect_one_stderr_line
  expect_stderr_contains "$needle"
  [ -z "$(ls -A out 2>/dev/null)" ] || fail "files left behind: $(ls -A out)"
  [ -z "$out" ] || fail "stdout not empty: $out"
}

case_run_failures() {
  expect_failed_run "missing.pb: cannot open" "$Q/model.onnx" "${Q_INPUTS[0]}" missing.pb "${Q_INPUTS[2]}"
  head -c 10 "${Q_INPUTS[0]}" >truncated.pb
  expect_failed_run "truncated.pb: not a valid serialized TensorProto" "$Q/model.onnx" truncated.pb "${Q_INPUTS[1]}" "${Q_INPUTS[2]}"
  expect_failed_run "model.onnx: the model takes 3 inputs, 2 given" "$Q/model.onnx" "${Q_INPUTS[0]}" "${Q_INPUTS[1]}"
  expect_failed_run "no_model.onnx: cannot open" no_model.onnx "${Q_INPUTS[@]}"
  printf 'not a model' >garbage.onnx
  expect_failed_run "garbage.onnx: not a valid ONNX model" garbage.onnx "${Q_INPUTS[@]}"
  # Inputs in the wrong order: a type error from the model, still no file.
  expect_failed_run "model.onnx: input 0 ('x')" "$Q/model.onnx" "${Q_INPUTS[1]}" "${Q_INPUTS[0]}" "${Q_INPUTS[2]}"
  # An operator error names the model and node.
  # An operator error names the model and node: a FLOAT8 zero point must be zero in DequantizeLinear.
  local zp="$DATA/test_dequantizelinear_e4m3fn_zero_point"
  printf '\x08\x01\x10\x11\x2a\x01\x38\x42\x0azero_point' >nonzero_zp.pb
  expect_failed_run "model.onnx: node 0 (DequantizeLinear)" "$zp/model.onnx" \
    "$zp/test_data_set_0/input_0.pb" "$zp/test_data_set_0/input_1.pb" nonzero_zp.pb
  # An existing output file is left untouched by a failing run.
  mkdir -p keep && echo precious >keep/output_0.pb
  run_qdq run "$Q/model.onnx" "${Q_INPUTS[0]}" -o keep
  expect_rc 1
  [ "$(cat keep/output_0.pb)" = precious ] || fail "existing output overwritten"
  [ "$(ls -A keep)" = output_0.pb ] || fail "files left behind in keep: $(ls -A keep)"
  # An unwritable output folder.
  run_qdq run "$Q/model.onnx" "${Q_INPUTS[@]}" -o /proc/qdq_no_such_dir
  expect_rc 1
  expect_one_stderr_line
  expect_stderr_contains "/proc/qdq_no_such_dir: cannot create the output folder"
}

case_conformance() {
  run_qdq test "$DATA"
  expect_rc 0
  [ "$(tail -n 1 stdout.txt)" = "30 passed, 0 failed" ] || fail "last line: $(tail -n 1 stdout.txt)"
  [ "$(grep -c '^PASS ' stdout.txt)" -eq 30 ] || fail "expected 30 PASS lines"
  [ -z "$err" ] || fail "stderr not empty: $err"
  # Sorted by name.
  grep '^PASS ' stdout.txt | sort -c || fail "test names not sorted"
  run_qdq --threads 1 --force-scalar test "$DATA"
  expect_rc 0
  [ "$(tail -n 1 stdout.txt)" = "30 passed, 0 failed" ] || fail "scalar: $(tail -n 1 stdout.txt)"
}

case_test_single_folder_and_dump() {
  run_qdq test "$DATA/test_quantizelinear_int4/" --dump-outputs dump
  expect_rc 0
  [ "$out" = $'PASS test_quantizelinear_int4\n1 passed, 0 failed' ] || fail "unexpected output: $out"
  [ -f dump/test_quantizelinear_int4/output_0.pb ] || fail "dumped output missing"
}

case_test_reports_failures() {
  # A copy of a test with a wrong expected output, and one with a broken input.
  mkdir -p suite
  cp -r "$Q" suite/a_wrong
  cp -r "$DATA/test_dequantizelinear_int4" suite/b_broken
  cp -r "$DATA/test_dequantizelinear" suite/c_good
  cp "$DATA/test_quantizelinear_int4/test_data_set_0/output_0.pb" suite/a_wrong/test_data_set_0/output_0.pb
  head -c 5 "$DATA/test_dequantizelinear_int4/test_data_set_0/input_0.pb" >suite/b_broken/test_data_set_0/input_0.pb
  mkdir suite/not_a_test
  run_qdq test suite
  expect_rc 1
  [ "$(sed -n 1p stdout.txt)" = "FAIL a_wrong: output_0 is UINT8 [6], expected INT4 [3,4]" ] || fail "line 1: $(sed -n 1p stdout.txt)"
  case "$(sed -n 2p stdout.txt)" in "FAIL b_broken: "*"input_0.pb: not a valid serialized TensorProto"*) ;; *) fail "line 2: $(sed -n 2p stdout.txt)" ;; esac
  [ "$(sed -n 3p stdout.txt)" = "PASS c_good" ] || fail "line 3: $(sed -n 3p stdout.txt)"
  [ "$(sed -n 4p stdout.txt)" = "1 passed, 2 failed" ] || fail "line 4: $(sed -n 4p stdout.txt)"
  # Bad paths are errors, not failed tests.
  run_qdq test nowhere
  expect_rc 1
  expect_one_stderr_line
  expect_stderr_contains "nowhere: no such folder"
  run_qdq test suite/not_a_test
  expect_rc 1
  expect_one_stderr_line
  expect_stderr_contains "no node tests"
}

case_value_mismatch_message() {
  # Expected output of test_quantizelinear with one byte changed: 128 -> 0x7f at element 0.
  mkdir -p t && cp -r "$Q" t/q
  local f=t/q/test_data_set_0/output_0.pb
  local size
  size=$(stat -c %s "$f")
  # The raw_data payload is the last 6 bytes; change the first of them.
  printf '\x7f' | dd of="$f" bs=1 seek=$((size - 6)) conv=notrunc status=none
  run_qdq test t
  expect_rc 1
  case "$(sed -n 1p stdout.txt)" in "FAIL q: output_0[0] = "*" (0x"*"), expected 127 (0x7f) (1 of 6 elements differ)") ;;
    *) fail "line 1: $(sed -n 1p stdout.txt)" ;; esac
}

case_sigpipe() {
  # The reader is gone before qdq writes: qdq must not die of SIGPIPE (exit 141) but report the
  # write error and exit 1.
  # The reader closes its end of the pipe, then tells the writer (through a FIFO) to start: no timing.
  mkfifo go.fifo
  { read -r _ <go.fifo; "$QDQ" test "$DATA" 2>stderr.txt; echo $? >rc.txt; } | { exec 0<&-; echo go >go.fifo; }
  local code
  code=$(cat rc.txt)
  [ "$code" -eq 1 ] || fail "exit code $code after a closed pipe, expected 1"
  err=$(cat stderr.txt)
  expect_one_stderr_line
  expect_stderr_contains "error writing to standard output"
}

case_bench_threads() {
  # --compare-one-thread with --load: the one-thread figures and the load beside the --threads ones
  # (what the numbers are is not checked: no timed tests).
  run_qdq --threads 2 bench --size 65536 --repeats 1 --filter 'quantize/float32->uint8/per-tensor' --compare-one-thread --load 1 --json
  expect_rc 0
  expect_stdout_contains '"threads": 2'
  expect_stdout_contains '"load": 1'
  [[ "$out" =~ \"vs_one_thread\":\ [0-9]+\.[0-9]+ ]] && [[ ! "$out" =~ \"vs_one_thread\":\ 0\.000 ]] ||
    fail "no vs_one_thread figure: $out"
  [[ "$out" =~ \"vs_static_split\":\ [0-9]+\.[0-9]+ ]] && [[ ! "$out" =~ \"vs_static_split\":\ 0\.000 ]] ||
    fail "no vs_static_split figure: $out"
  run_qdq --threads 2 bench --size 65536 --repeats 1 --filter 'quantize/float32->uint8/per-tensor' --compare-one-thread
  expect_rc 0
  expect_stdout_contains 'vs1T'
  expect_stdout_contains 'vsStat'
  # One thread: no static split to compare with.
  run_qdq --threads 1 bench --size 65536 --repeats 1 --filter 'quantize/float32->uint8/per-tensor' --compare-one-thread --json
  expect_rc 0
  expect_stdout_contains '"vs_static_split": 0.000'
  run_qdq bench --load 65
  expect_rc 2
}

case_bench_references() {
  # The machine's limits beside each case: both streaming loops, the ceiling loop, which of them the
  # case is set against (in cache: the ceiling; 4 Mi elements: streaming), and the routes field.
  run_qdq bench --size 65536 --repeats 1 --filter 'quantize/float32->int8/per-tensor' --json
  expect_rc 0
  expect_stdout_contains '"reference": "ceiling"'
  # The route measured at first use: either exact route for int8 (a CPU without FMA always divides).
  [[ "$out" =~ \"routes\":\ \"(division|rounding\ check)\" ]] || fail "no quotient route: $out"
  for field in stream_normal_gbps stream_nt_gbps ceiling_gelem_per_s ceiling_ratio vs_reference; do
    [[ "$out" =~ \"$field\":\ [0-9]+\.[0-9]+ ]] && [[ ! "$out" =~ \"$field\":\ 0\.0+[,}] ]] || fail "no $field figure: $out"
  done
  [[ "$out" =~ \"reference_target\":\ \"[A-Za-z0-9_]+\" ]] || fail "no reference_target: $out"
  QDQ_QUANTIZE_ROUTE=divide run_qdq bench --size 65536 --repeats 1 --filter 'quantize/float32->int8/per-tensor' --json
  expect_rc 0
  expect_stdout_contains '"routes": "division"'
  run_qdq bench --size 4194304 --repeats 1 --filter 'dequantize/uint8->float32/per-tensor' --json
  expect_rc 0
  expect_stdout_contains '"reference": "streaming"'
  expect_stdout_contains '"routes": ""'
  # 16 MiB of output: above the store threshold on most machines, so either kind, as the probe says.
  [[ "$out" =~ \"stores\":\ \"(normal|non-temporal)\" ]] || fail "no stores field: $out"
  QDQ_STREAM_STORES=always run_qdq bench --size 65536 --repeats 1 --filter 'dequantize/uint8->float32/per-tensor' --json
  expect_rc 0
  expect_stdout_contains '"stores": "non-temporal"'
  QDQ_STREAM_STORES=never run_qdq bench --size 4194304 --repeats 1 --filter 'dequantize/uint8->float32/per-tensor' --json
  expect_rc 0
  expect_stdout_contains '"stores": "normal"'
  run_qdq bench --size 65536 --repeats 1 --filter 'dequantize/uint8->float32/per-tensor'
  expect_rc 0
  expect_stdout_contains 'vsRef'
  expect_stdout_contains 'stores'
}

case_bench_pages() {
  # Which pages the case's buffers got: 2 MiB where the kernel grants transparent huge pages (a
  # machine with them off reports 4 KiB), 4 KiB always with --small-pages; both in the table too.
  run_qdq bench --size 65536 --repeats 1 --filter 'dequantize/uint8->float32/per-tensor' --json
  expect_rc 0
  [[ "$out" =~ \"pages\":\ \"(2\ MiB|4\ KiB)\" ]] || fail "no pages field: $out"
  run_qdq bench --size 65536 --repeats 1 --filter 'dequantize/uint8->float32/per-tensor' --json --small-pages
  expect_rc 0
  expect_stdout_contains '"pages": "4 KiB"'
  run_qdq bench --size 65536 --repeats 1 --filter 'dequantize/uint8->float32/per-tensor' --small-pages
  expect_rc 0
  expect_stdout_contains 'pages'
  expect_stdout_contains ' 4K'
}

case_bench_line_requests() {
  # The requests for x's lines ahead of the loads: L1 in cache (none for dequantize), as
  # QDQ_PREFETCH says from 1 MiB of x (16 MiB here), per loop where it names them; a bad value is
  # one clear error.
  run_qdq bench --size 65536 --repeats 1 --filter 'float32->uint8/per-tensor' --json
  expect_rc 0
  expect_stdout_contains '"x_requests": "L1"'
  expect_stdout_contains '"x_requests": "L1, L1"'
  QDQ_PREFETCH=l1 run_qdq bench --size 4194304 --repeats 1 --filter 'quantize/float32->uint8/per-tensor' --json
  expect_rc 0
  expect_stdout_contains '"x_requests": "L1"'
  QDQ_PREFETCH=quantize:l2,range:none run_qdq bench --size 4194304 --repeats 1 --filter 'dynamic/float32->uint8' --json
  expect_rc 0
  expect_stdout_contains '"x_requests": "none, L1+L2"'
  QDQ_PREFETCH=dequantize:none run_qdq bench --size 4194304 --repeats 1 --filter 'dequantize/int16->float32/per-tensor' --json
  expect_rc 0
  expect_stdout_contains '"x_requests": "none"'
  QDQ_PREFETCH=sometimes run_qdq bench --size 65536 --repeats 1 --filter 'quantize/float32->uint8/per-tensor'
  expect_rc 1
  expect_stderr_contains "QDQ_PREFETCH is 'sometimes'"
}

case_bench_mx() {
  # The MX cases (MXFP4, MXFP8: blocks of 32 along the last axis with FLOAT8E8M0 scales) run, both ways.
  run_qdq bench --size 65536 --repeats 1 --filter e8m0 --json
  expect_rc 0
  for name in 'quantize/float32->float4e2m1/blocked-last-32-e8m0' 'quantize/float32->float8e4m3fn/blocked-last-32-e8m0' \
    'dequantize/float4e2m1->float32/blocked-last-32-e8m0' 'dequantize/float8e4m3fn->float32/blocked-last-32-e8m0'; do
    expect_stdout_contains "\"case\": \"$name\""
  done
  expect_stdout_contains '"routes": "exact reciprocal"'
}

case_bench_symmetric() {
  # The symmetric cases (integer codes without a zero point input) run, both ways.
  run_qdq bench --size 65536 --repeats 1 --filter symmetric --json
  expect_rc 0
  for name in 'quantize/float32->int8/per-tensor-symmetric' 'quantize/float32->int4/blocked-last-32-symmetric' \
    'dequantize/int8->float32/per-tensor-symmetric' 'dequantize/int4->float32/blocked-last-32-symmetric'; do
    expect_stdout_contains "\"case\": \"$name\""
  done
}

case_bench_dynamic() {
  # DynamicQuantizeLinear's case runs (both passes of the operator) and reports its figures.
  run_qdq bench --size 65536 --repeats 1 --filter dynamic --json
  expect_rc 0
  expect_stdout_contains '"case": "dynamic/float32->uint8/per-tensor"'
  expect_stdout_contains '"op": "dynamic"'
  [[ "$out" =~ \"gelem_per_s\":\ [0-9]+\.[0-9]+ ]] && [[ ! "$out" =~ \"gelem_per_s\":\ 0\.0+[,}] ]] || fail "no speed: $out"
}

case_bench_target() {
  # --target: the kernels and references run on the named target, reported in the JSON; one the
  # build lacks is refused with one clear line and nothing on stdout.
  run_qdq bench --size 65536 --repeats 1 --filter 'quantize/float32->int16/per-tensor' --json
  expect_rc 0
  [[ "$out" =~ \"target\":\ \"([A-Za-z0-9_]+)\" ]] || fail "no target: $out"
  local best=${BASH_REMATCH[1]}
  [[ "$out" =~ \"routes\":\ \"(division|Markstein\ reciprocal)\" ]] || fail "no quotient route: $out"
  run_qdq bench --size 65536 --repeats 1 --filter 'quantize/float32->int16/per-tensor' --json --target "$best"
  expect_rc 0
  expect_stdout_contains "\"target\": \"$best\""
  expect_stdout_contains "\"reference_target\": \"$best\""
  run_qdq bench --size 65536 --repeats 1 --target NOSUCHTARGET
  expect_rc 1
  expect_one_stderr_line
  expect_stderr_contains "NOSUCHTARGET is not compiled into qdq"
  [ -z "$out" ] || fail "output before the error: $out"
}

"case_$case_name"
