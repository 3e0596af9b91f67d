#!/usr/bin/env bash
# Builds qdq and runs every test: unit, ONNX conformance, CLI, Python, consumers, docs, sanitizers,
# fuzzers. Used by .ci/run. Assumes scripts/setup.sh has run. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${QDQ_JOBS:-$(nproc)}
python=/usr/bin/python3
start=$SECONDS
step() { printf '\n=== %s (%ds)\n' "$1" $((SECONDS - start)); }

step "release build"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=$python >/dev/null
cmake --build build/release -j "$jobs"

step "ctest (release)"
(cd build/release && ctest --output-on-failure -j "$jobs" -LE large)

step "unit tests shuffled, twice (no test may depend on another's order)"
# gtest --gtest_brief does not print its seed, so it is chosen here (QDQ_SHUFFLE_SEED repeats a run).
seed=${QDQ_SHUFFLE_SEED:-$((RANDOM % 99999 + 1))}
echo "shuffle seed $seed, then $((seed + 1)) (rerun: qdq_unit_tests --gtest_shuffle --gtest_random_seed=$seed)"
./build/release/tests/qdq_unit_tests --gtest_shuffle --gtest_repeat=2 --gtest_random_seed="$seed" --gtest_brief=1

step "unit tests of the operators with QDQ_STREAM_STORES=always (every call's kernel streams its stores)"
QDQ_STREAM_STORES=always ./build/release/tests/qdq_unit_tests --gtest_brief=1 \
  --gtest_filter='Threads.*:PackedOutputs.*:RoundTrip.*:*Conformance.*:StorePolicy.*'

step "QDQ_SIMD=OFF build (build/nosimd): the unit tests on the scalar kernels alone"
cmake -S . -B build/nosimd -G Ninja -DCMAKE_BUILD_TYPE=Release -DQDQ_SIMD=OFF -DQDQ_BUILD_TOOLS=OFF \
      -DQDQ_BUILD_BENCH=OFF -DQDQ_BUILD_PYTHON=OFF -DQDQ_INSTALL=OFF >/dev/null
cmake --build build/nosimd -j "$jobs" --target qdq_unit_tests
./build/nosimd/tests/qdq_unit_tests --gtest_brief=1

step "ONNX conformance suite through the CLI"
./build/release/tools/qdq/qdq test tests/data/onnx-node

step "model-level tests (qdq CLI on ONNX models; onnx and onnxruntime from build/venv)"
build/venv/bin/python -m pytest -q tests/model

step "Python package: wheel (scikit-build-core) tested in venvs with and without ml_dtypes"
bash scripts/test_python_package.sh --prebuilt build/release

step "scripts/bench_python.py runs (its NumPy formulas must equal qdq's results bit for bit; timings not checked)"
build/venv/bin/python scripts/bench_python.py --sizes 65536 --seconds 0.02 --samples 3 | tail -1

step "differential vs onnx.reference and onnxruntime (seeded, counts below)"
build/venv/bin/python scripts/differential.py --cases 20000 --seed 20250601

step "ONNX backend node tests generated from the onnx wheel, through the CLI"
build/venv/bin/python scripts/onnx_node_tests.py build/onnx-node-wheel
./build/release/tools/qdq/qdq test build/onnx-node-wheel

if [[ -x scripts/check_docs.sh ]]; then
  step "API reference (doxygen, no warnings)"
  bash scripts/check_docs.sh
fi

if [[ -x scripts/sanitize.sh ]]; then
  step "sanitizers and fuzzers"
  bash scripts/sanitize.sh
fi

step "large-tensor tests"
(cd build/release && ctest --output-on-failure -L large)

step "C/C++ formatting (scripts/format.sh --check lists the files clang-format would change)"
bash scripts/format.sh --check

step "done"
