#!/usr/bin/env bash
# Sanitizers and fuzzers (called by scripts/test.sh; also runs on its own). Exits non-zero on any
# sanitizer report, test failure or fuzzer crash.
#
#   1. ASan + UBSan (clang, build/asan, -O1 -gline-tables-only, also the fuzzer build): the whole
#      ctest suite except
#        - label `large` (4-6 GiB tensors; ASan's shadow memory and slowdown make them impractical,
#          and they run in the release build),
#        - label `consumer` (they configure and build separate projects against a plain install:
#          minutes of build time and no sanitized code of ours in them),
#        - python (not built: the module would need libasan LD_PRELOADed into an uninstrumented
#          python3, whose own allocations then flood LeakSanitizer; the C++ it wraps is what the
#          tests here cover).
#   2. TSan (GCC, build/tsan): the unit tests with QDQ_NUM_THREADS=2 and the threaded stress test
#      (ctest labels `unit` and `threads`; every GoogleTest case is its own ctest test).
#   3. libFuzzer (the same build/asan, whose library and harness carry the fuzzers' coverage
#      instrumentation: one clang build serves both, which saves a build of the SIMD kernels):
#      fuzz_operators and fuzz_onnx, each for QDQ_FUZZ_SECONDS (default 60) from the committed seed
#      corpus, side by side on two cores. Execution counts go to build/asan/fuzz-stats.txt; a crash
#      input is saved as build/asan/fuzz_*-crash-* (commit it under
#      tests/robustness/regressions/<target>/ once fixed).
#
# Environment: QDQ_JOBS (build parallelism, default nproc), QDQ_FUZZ_SECONDS, QDQ_SANITIZE_STEPS
# (any of "asan tsan fuzz", default all three).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${QDQ_JOBS:-$(nproc)}
fuzz_seconds=${QDQ_FUZZ_SECONDS:-60}
steps=${QDQ_SANITIZE_STEPS:-asan tsan fuzz}
start=$SECONDS
step() { printf '\n=== sanitize: %s (%ds)\n' "$1" $((SECONDS - start)); }
# Whether build dir $1 defines target $2. The list is read whole before grep sees it: under
# pipefail, `ninja ... | grep -q` is false whenever grep exits on its match before ninja has
# finished writing (ninja dies of SIGPIPE), which silently dropped the TSan unit tests on CI.
has_target() {
  local listing
  listing=$(ninja -C "$1" -t targets all 2> /dev/null) || return 1
  grep -q "^$2:" <<< "$listing"
}

# Any report is fatal, and says where.
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:abort_on_error=1:exitcode=66:second_deadlock_stack=1

# Debug information is line tables only (clang -gline-tables-only, GCC -g1): reports still name file,
# line and function, and the SIMD kernels' units compile in 0.75x (clang ASan) and 0.5x (GCC TSan)
# the time of full -g, which was most of this script's time on CI's two cores.
common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
        -DQDQ_BUILD_PYTHON=OFF -DQDQ_BUILD_BENCH=OFF -DQDQ_INSTALL=OFF -DQDQ_SIMD_TARGETS=AVX2)

if [[ $steps == *asan* || $steps == *fuzz* ]]; then
  if ! command -v clang++ > /dev/null; then
    echo "sanitize: clang++ not found (scripts/setup.sh installs clang)" >&2
    exit 1
  fi
  step "ASan + UBSan build with the fuzzers (build/asan, clang)"
  # clang: GCC's UBSan instrumentation makes the SIMD kernels' translation units take minutes each.
  # The C compiler too: the C API's test programs (tests/) link with clang++'s sanitizer runtime.
  cmake -S . -B build/asan "${common[@]}" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" -DQDQ_SANITIZE=address -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DQDQ_BUILD_FUZZERS=ON > /dev/null
  if [[ $steps == *asan* ]]; then
    # Everything the remaining tests need (consumer tests build their own projects; not run here).
    cmake --build build/asan -j "$jobs"
  else
    cmake --build build/asan -j "$jobs" --target fuzz_operators $(has_target build/asan fuzz_onnx && echo fuzz_onnx)
  fi
fi

if [[ $steps == *asan* ]]; then
  step "ASan + UBSan: ctest (all but large, consumer)"
  (cd build/asan && ctest --output-on-failure -j "$jobs" -LE 'large|consumer' --timeout 900)
fi

if [[ $steps == *tsan* ]]; then
  step "TSan build (build/tsan)"
  cmake -S . -B build/tsan "${common[@]}" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" -DQDQ_SANITIZE=thread -DQDQ_BUILD_TOOLS=OFF > /dev/null
  cmake --build build/tsan -j "$jobs" --target qdq_unit_tests qdq_robustness_tests
  step "TSan: unit tests (QDQ_NUM_THREADS=2) and threaded stress"
  (cd build/tsan && QDQ_NUM_THREADS=2 ctest --output-on-failure -j "$jobs" -L '^(unit|threads)$' --timeout 900)
fi

if [[ $steps == *fuzz* ]]; then
  fuzzers=(fuzz_operators)
  if has_target build/asan fuzz_onnx; then fuzzers+=(fuzz_onnx); fi

  step "libFuzzer: ${fuzzers[*]}, ${fuzz_seconds}s each, side by side"
  stats=build/asan/fuzz-stats.txt
  : > "$stats"
  pids=()
  for f in "${fuzzers[@]}"; do
    corpus_name=${f#fuzz_}
    if [[ -z $(ls -A "fuzz/corpus/$corpus_name" 2> /dev/null) ]]; then
      echo "sanitize: the seed corpus fuzz/corpus/$corpus_name is missing or empty" >&2
      exit 1
    fi
    work=build/asan/corpus-$corpus_name
    rm -rf "$work" && mkdir -p "$work"
    # -max_len: the operator harness reads ~40-120 bytes; ONNX seeds are up to a few hundred.
    max_len=256
    [[ $f == fuzz_onnx ]] && max_len=4096
    (
      "build/asan/fuzz/$f" "$work" "fuzz/corpus/$corpus_name" \
        -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=4096 -max_len=$max_len \
        -artifact_prefix="build/asan/$f-" -print_final_stats=1 > "build/asan/$f.log" 2>&1
    ) &
    pids+=($!)
  done
  status=0
  for i in "${!fuzzers[@]}"; do
    f=${fuzzers[$i]}
    if ! wait "${pids[$i]}"; then
      status=1
      echo "sanitize: $f found a problem:" >&2
      grep -E 'ERROR|runtime error|invariant|SUMMARY|Test unit written|==[0-9]+==' "build/asan/$f.log" | head -40 >&2 || true
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build/asan/$f.log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "build/asan/$f.log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+' "build/asan/$f.log" | tail -1 || true)
    corpus=$(ls "build/asan/corpus-${f#fuzz_}" | wc -l)
    printf '%s: %s executions in %ss (%s/s), %s, %s corpus inputs\n' "$f" "${runs:-?}" "$fuzz_seconds" "${rate:-?}" "${cov:-cov: ?}" "$corpus" | tee -a "$stats"
  done
  ((status == 0)) || exit 1
fi

step "sanitizers and fuzzers passed"
