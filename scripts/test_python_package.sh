#!/usr/bin/env bash
# The qdq Python package as users install it: builds the wheel with scikit-build-core (pyproject.toml)
# and runs the Python suite from the installed wheel in two virtual environments made by
# scripts/setup.sh: build/venv (NumPy 2 with ml_dtypes, onnx, onnxruntime) and build/venv-noml (NumPy 2
# without ml_dtypes, so results come back as qdq.CodeArray). Exits non-zero on any failure.
#
#   scripts/test_python_package.sh --prebuilt build/release
#       (CI) links the wheel against the libqdq of that CMake build instead of compiling the library a
#       second time; only qdq_onnx and the extension are compiled (~30 s).
#   scripts/test_python_package.sh
#       compiles everything, as `pip install .` does (minutes on 2 cores).
#   scripts/test_python_package.sh --pip-install
#       `pip install .` with build isolation (scikit-build-core and pybind11 fetched from PyPI) into a
#       fresh venv build/venv-pip, then the suite there: what a user does, without the pins.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=wheel
prebuilt=""
case "${1:-}" in
  --prebuilt) prebuilt=$(realpath "${2:?--prebuilt needs a CMake build directory}") ;;
  --pip-install) mode=pip ;;
  "") ;;
  *) echo "usage: $0 [--prebuilt BUILD_DIR | --pip-install]" >&2; exit 2 ;;
esac

pip_quiet=(--quiet --disable-pip-version-check)
run_suite() {  # venv
  echo "python suite in $1 (import qdq from $("$1/bin/python" -c 'import qdq; print(qdq.__file__)'))"
  # Not from python/: there `import qdq` would find the source folder without the extension.
  "$1/bin/python" -m pytest -q -p no:cacheprovider python/tests
}

if [[ $mode == pip ]]; then
  rm -rf build/venv-pip
  /usr/bin/python3 -m venv build/venv-pip
  build/venv-pip/bin/python -m pip install "${pip_quiet[@]}" ".[test]"
  run_suite build/venv-pip
  exit 0
fi

for v in build/venv build/venv-noml; do
  [[ -x $v/bin/python ]] || { echo "$0: $v is missing: run scripts/setup.sh" >&2; exit 1; }
done

# Built without isolation in build/venv, whose scikit-build-core, pybind11 and build are pinned in
# scripts/requirements-test.txt.
args=(--wheel --no-isolation --outdir build/wheel -Cbuild-dir=build/wheel-build)
[[ -n $prebuilt ]] && args+=("-Ccmake.define.QDQ_PREBUILT_DIR=$prebuilt")
rm -rf build/wheel
build/venv/bin/python -m build "${args[@]}" . > build/wheel-build.log 2>&1 \
  || { tail -50 build/wheel-build.log; echo "$0: the wheel build failed (build/wheel-build.log)" >&2; exit 1; }
wheel=$(ls build/wheel/qdq-*.whl)
echo "built $wheel"

for v in build/venv build/venv-noml; do
  "$v/bin/python" -m pip install "${pip_quiet[@]}" --force-reinstall --no-deps "$wheel"
done
[[ $(build/venv/bin/python -c 'import qdq; print(qdq.HAVE_ML_DTYPES)') == True ]] \
  || { echo "$0: qdq in build/venv does not see ml_dtypes" >&2; exit 1; }
[[ $(build/venv-noml/bin/python -c 'import qdq; print(qdq.HAVE_ML_DTYPES)') == False ]] \
  || { echo "$0: build/venv-noml has ml_dtypes" >&2; exit 1; }
run_suite build/venv
run_suite build/venv-noml
