#!/usr/bin/env bash
# The main job: build qdq, check it against the official ONNX conformance tests, run one QDQ model, and
# quantize a real trained model to int4, checking its outputs against the original in ONNX Runtime.
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
QDQ_PYTHON=build/venv/bin/python $qdq quantize tests/data/models/magika_standard_v3_3.onnx \
  -o "$out/magika.int4.onnx" --format int4 --check
