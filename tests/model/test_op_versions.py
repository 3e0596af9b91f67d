"""The committed operator-version table is what scripts/gen_op_versions.py makes from the pinned onnx."""

import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_op_versions_table_is_up_to_date():
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_op_versions.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
