"""Shared fixtures for qdq's Python tests. Run through ctest (test `python`), or by hand:

    PYTHONPATH=<build>/python /usr/bin/python3 -m pytest -q python/tests
"""
import contextlib
import os
import pathlib

import numpy as np
import pytest

import qdq

REPO = pathlib.Path(os.environ.get("QDQ_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
ONNX_NODE = pathlib.Path(os.environ.get("QDQ_TEST_DATA", REPO / "tests" / "data" / "onnx-node"))

# NaN codes of the float types NumPy lacks (float4e2m1 has none).
_NAN_CODE = {
    "float8e4m3fn": lambda c: (c & 0x7F) == 0x7F,
    "float8e4m3fnuz": lambda c: c == 0x80,
    "float8e5m2": lambda c: (c & 0x7F) > 0x7C,
    "float8e5m2fnuz": lambda c: c == 0x80,
    "float8e8m0": lambda c: c == 0xFF,
    "bfloat16": lambda c: (c & 0x7FFF) > 0x7F80,
}


@contextlib.contextmanager
def num_threads(n):
    """qdq's thread count set to n inside the block, and restored after it."""
    old = qdq.get_num_threads()
    qdq.set_num_threads(n)
    try:
        yield
    finally:
        qdq.set_num_threads(old)


def codes(array):
    """(element codes as a plain integer/float array, qdq type name) of any array qdq accepts."""
    a, _ = qdq._as_input(array, "array")
    return np.asarray(a).view(np.ndarray), qdq.element_type(array)


def assert_bit_exact(got, expected, label="output"):
    """Same type, shape and element codes; any NaN equals any NaN of the same type."""
    g, gt = codes(got)
    e, et = codes(expected)
    assert gt == et, f"{label}: type {gt}, expected {et}"
    assert g.shape == e.shape, f"{label}: shape {g.shape}, expected {e.shape}"
    if g.dtype.kind == "f":
        both_nan = np.isnan(g) & np.isnan(e)
        same = (g.view(f"u{g.itemsize}") == e.view(f"u{e.itemsize}")) | both_nan
    else:
        same = g == e
        if gt in _NAN_CODE:
            same |= _NAN_CODE[gt](g.astype(np.int64)) & _NAN_CODE[gt](e.astype(np.int64))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, (f"{label}: {bad.size} of {same.size} elements differ; first at {bad[0]}: "
                           f"got {g.ravel()[bad[0]]!r}, expected {e.ravel()[bad[0]]!r}")


needs_io = pytest.mark.skipif(not qdq._qdq.HAVE_ONNX_IO, reason="qdq built without ONNX file support")
