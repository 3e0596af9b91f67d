#!/usr/bin/env bash
# The main job: build qdq, check it against the official ONNX conformance tests, and run one model.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=/usr/bin/python3 >/dev/null
cmake --build build/release -j "$(nproc)"
qdq=./build/release/tools/qdq/qdq
$qdq test tests/data/onnx-node
out=$(mktemp -d)
$qdq run tests/data/onnx-node/test_quantizelinear_blocked_asymmetric/model.onnx \
  tests/data/onnx-node/test_quantizelinear_blocked_asymmetric/test_data_set_0/input_{0,1,2}.pb -o "$out"
echo "qdq run wrote: $(ls "$out")"
