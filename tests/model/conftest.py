"""Model-level tests: qdq's command line on whole ONNX models, checked with onnx and onnxruntime.

Run with the project's venv (scripts/setup.sh makes it): build/venv/bin/python -m pytest tests/model
The qdq binary is build/release/tools/qdq/qdq unless QDQ_CLI names another one.
"""

import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def qdq_cli() -> pathlib.Path:
    """The qdq executable under test."""
    path = pathlib.Path(os.environ.get("QDQ_CLI", REPO / "build" / "release" / "tools" / "qdq" / "qdq"))
    if not path.is_file():
        pytest.fail(f"qdq executable not found at {path}: build it first (scripts/test.sh does)")
    return path


@pytest.fixture(scope="session")
def run_qdq(qdq_cli):
    """Runs the qdq CLI with the given arguments; returns the CompletedProcess (text mode)."""

    def run(*args, check=True, **kwargs):
        result = subprocess.run([str(qdq_cli), *map(str, args)], capture_output=True, text=True, **kwargs)
        if check and result.returncode != 0:
            raise AssertionError(f"qdq {' '.join(map(str, args))} exited {result.returncode}:\n{result.stderr}")
        return result

    return run
