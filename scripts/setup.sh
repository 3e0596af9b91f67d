#!/usr/bin/env bash
# Installs everything qdq builds and tests with: Debian 12 packages, and the PyPI oracles in build/venv.
# Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev   # tests, benchmarks
  libprotobuf-dev protobuf-compiler            # ONNX files
  libhwy-dev                                   # SIMD dispatch
  libcli11-dev                                 # the qdq command line
  python3 python3-dev pybind11-dev python3-pybind11 python3-numpy python3-pytest  # Python module
  doxygen                                      # API reference check
  clang libclang-rt-14-dev                     # fuzzers, sanitizers
  clang-format                                 # scripts/format.sh
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

# The oracles and peers from PyPI (onnx's reference evaluator and checker, ONNX Runtime, ml_dtypes,
# NumPy 2) live in a virtual environment of the project's own, built on Debian's python3 so that
# extensions built against python3-dev load in it. A failed install fails the setup: no test may be
# skipped silently because an oracle is missing.
venv=build/venv
requirements=scripts/requirements-test.txt
stamp=$venv/.requirements
if [[ ! -x $venv/bin/python ]] || ! cmp -s "$requirements" "$stamp"; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$stamp"
fi
# A second venv without ml_dtypes (only NumPy and pytest, at the same pins), so that the Python suite
# also runs where qdq must return qdq.CodeArray: scripts/test_python_package.sh installs the wheel in
# both. A venv of its own rather than hiding ml_dtypes: the package is really absent, as for a user.
venv_noml=build/venv-noml
stamp_noml=$venv_noml/.requirements
if [[ ! -x $venv_noml/bin/python ]] || ! cmp -s "$requirements" "$stamp_noml"; then
  rm -rf "$venv_noml"
  /usr/bin/python3 -m venv "$venv_noml"
  "$venv_noml/bin/python" -m pip install --quiet --disable-pip-version-check \
    $(grep -E '^(numpy|pytest)==' "$requirements")
  cp "$requirements" "$stamp_noml"
fi
"$venv_noml/bin/python" -c 'import numpy, pytest' \
  || { echo "setup: the PyPI packages in $venv_noml do not import" >&2; exit 1; }
if "$venv_noml/bin/python" -c 'import ml_dtypes' 2> /dev/null; then
  echo "setup: $venv_noml must not have ml_dtypes" >&2; exit 1
fi
"$venv/bin/python" -c 'import numpy, ml_dtypes, onnx, onnxruntime, pytest, scikit_build_core, pybind11, build' \
  || { echo "setup: the PyPI packages in $venv do not import" >&2; exit 1; }
echo "setup: all build and test dependencies are installed ($venv: $("$venv/bin/python" -c \
  'import numpy, onnx, onnxruntime, ml_dtypes; print(f"numpy {numpy.__version__}, onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__}, ml_dtypes {ml_dtypes.__version__}")'))"
