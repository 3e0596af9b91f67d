#!/usr/bin/env bash
# Installs everything qdq builds and tests with, from Debian 12's packages. Run as root.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev   # tests, benchmarks
  libprotobuf-dev protobuf-compiler            # ONNX files
  libhwy-dev                                   # SIMD dispatch
  libcli11-dev                                 # the qdq command line
  python3 python3-dev pybind11-dev python3-pybind11 python3-numpy python3-pytest  # Python module
  doxygen                                      # API reference check
  clang libclang-rt-14-dev                     # fuzzers, sanitizers
)
# PyTorch is only used to compare against torch.quantize_per_tensor; the tests skip without it.
optional=(python3-torch)

missing=()
for p in "${packages[@]}" "${optional[@]}"; do
  [[ $(dpkg-query -W -f='${Status}' "$p" 2> /dev/null) == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
  apt-get install -y -qq --no-install-recommends "${optional[@]}" >/dev/null || echo "setup: optional packages not installed: ${optional[*]}"
fi
echo "setup: all build and test dependencies are installed"
