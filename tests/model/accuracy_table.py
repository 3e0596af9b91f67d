"""Prints the accuracy table of docs/model-quantization.md: `qdq quantize --check` on every real model and format.

    build/venv/bin/python tests/model/accuracy_table.py [QDQ]

For each (model, format): the largest relative output error of the check (in ONNX Runtime, in onnx.reference
for the MX formats), the bound tests/model/test_models.py asserts, and the quantized tensors' SQNR (the
report's): -10 log10 of the element-weighted mean noise-to-signal ratio 10^(-SQNR/10) over the tensors (what
the weights lose on average, per element), and the lowest tensor's.
"""

import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import modelcheck  # noqa: E402
from test_models import BOUNDS  # noqa: E402


def main():
    qdq = sys.argv[1] if len(sys.argv) > 1 else str(modelcheck.REPO / "build" / "release" / "tools" / "qdq" / "qdq")
    env = dict(os.environ, QDQ_PYTHON=sys.executable, QDQ_CHECK_SCRIPT=str(modelcheck.CHECK_SCRIPT))
    print("| model | format | tensors | weights before → after | SQNR (mean / lowest) | relative error | bound |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        for model in modelcheck.MODELS:
            inputs = modelcheck.write_inputs(model, folder)
            for fmt in modelcheck.FORMATS:
                command = [qdq, "quantize", str(modelcheck.model_path(model)), "-o", str(folder / "q.onnx"),
                           "--format", fmt, "--json", "--check"]
                for name, path in inputs.items():
                    command += ["--check-input", f"{name}={path}"]
                report = json.loads(subprocess.run(command, env=env, capture_output=True, text=True,
                                                   check=True).stdout)
                tensors = report["tensors"]
                # bytes_before counts elements (all weights are float32 here).
                noise = sum(t["bytes_before"] * 10 ** (-t["sqnr_db"] / 10) for t in tensors)
                signal = sum(t["bytes_before"] for t in tensors)
                weighted = 10 * math.log10(signal / noise) if noise > 0 else float("inf")
                lowest = min(t["sqnr_db"] for t in tensors)
                totals = report["totals"]
                error = report["check"]["max_relative_error"]
                print(f"| {model} | {fmt} | {len(tensors)} | {totals['weight_bytes_before'] / 1e6:.2f} → "
                      f"{totals['weight_bytes_after'] / 1e6:.2f} MB | {weighted:.1f} / {lowest:.1f} dB | "
                      f"{error:.4f} | {BOUNDS[model][fmt]} |", flush=True)


if __name__ == "__main__":
    main()
