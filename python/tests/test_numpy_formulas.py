"""qdq against the operators' formulas written in NumPy, on random data.

NumPy divides and multiplies float32 (and float16, through float32 with one final rounding) arrays
with one correctly rounded operation, and np.rint rounds half to even — exactly the arithmetic ONNX
specifies — so agreement must be bit-exact.
"""
import numpy as np
import pytest

import qdq

RNG = np.random.default_rng(20240611)
INT_TYPES = [np.int8, np.uint8, np.int16, np.uint16]


def quantize_formula(x, scale, zero_point, out_type):
    with np.errstate(over="ignore"):  # quotients beyond the input type's range are +-inf: saturated
        q = np.rint(x / scale).astype(np.float64) + zero_point.astype(np.float64)
    info = np.iinfo(out_type)
    return np.clip(q, info.min, info.max).astype(out_type)


def dequantize_formula(q, scale, zero_point, out_type=np.float32):
    diff = (q.astype(np.int64) - zero_point.astype(np.int64)).astype(np.float32)
    return (diff * scale.astype(np.float32)).astype(out_type)


def random_x(shape, dtype=np.float32):
    # Normal values, a few far outside every range (saturation), and exact multiples of the scale.
    x = RNG.standard_normal(shape) * 4
    x.flat[:: 17] *= 1000
    return x.astype(dtype)


def random_zero_point(shape, out_type):
    info = np.iinfo(out_type)
    lo, hi = max(info.min, -20), min(info.max, 20) if info.min < 0 else min(info.max, 200)
    return RNG.integers(lo, hi + 1, size=shape).astype(out_type)


@pytest.mark.parametrize("out_type", INT_TYPES)
@pytest.mark.parametrize("trial", range(5))
def test_per_tensor(out_type, trial):
    x = random_x((257, 31))
    s = np.float32(RNG.uniform(1e-3, 0.5))
    zp = random_zero_point((), out_type)
    y = qdq.quantize_linear(x, s, zp)
    assert y.dtype == out_type
    np.testing.assert_array_equal(y, quantize_formula(x, s, zp, out_type))
    d = qdq.dequantize_linear(y, s, zp)
    assert np.array_equal(d.view(np.uint32), dequantize_formula(y, s, zp).view(np.uint32))


@pytest.mark.parametrize("out_type", [np.int8, np.uint8])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_per_axis(out_type, axis):
    x = random_x((6, 33, 10))
    n = x.shape[axis]
    s = RNG.uniform(1e-3, 0.5, size=n).astype(np.float32)
    zp = random_zero_point(n, out_type)
    shape = [1] * x.ndim
    shape[axis] = n
    y = qdq.quantize_linear(x, s, zp, axis=axis)
    np.testing.assert_array_equal(y, quantize_formula(x, s.reshape(shape), zp.reshape(shape), out_type))
    d = qdq.dequantize_linear(y, s, zp, axis=axis)
    ref = dequantize_formula(y, s.reshape(shape), zp.reshape(shape))
    assert np.array_equal(d.view(np.uint32), ref.view(np.uint32))


@pytest.mark.parametrize("block", [2, 32])
def test_blocked_int8(block):
    x = random_x((16, 4 * block + 3))  # a partial last block
    nblocks = -(-x.shape[1] // block)
    s = RNG.uniform(1e-3, 0.5, size=(16, nblocks)).astype(np.float32)
    zp = random_zero_point((16, nblocks), np.int8)
    expand = lambda a: np.repeat(a, block, axis=1)[:, : x.shape[1]]  # noqa: E731
    y = qdq.quantize_linear(x, s, zp, axis=1, block_size=block)
    np.testing.assert_array_equal(y, quantize_formula(x, expand(s), expand(zp), np.int8))
    d = qdq.dequantize_linear(y, s, zp, axis=1, block_size=block)
    assert np.array_equal(d.view(np.uint32), dequantize_formula(y, expand(s), expand(zp)).view(np.uint32))


def test_blocked_int4():
    x = random_x((64, 256))
    s = (np.abs(x).reshape(64, 8, 32).max(axis=2) / 7).astype(np.float32)
    y = qdq.quantize_linear(x, s, axis=1, block_size=32, output_dtype="int4")
    assert qdq.element_type(y) == "int4"
    values, _ = qdq._as_input(y, "y")
    ref = np.clip(np.rint(x / np.repeat(s, 32, axis=1)), -8, 7).astype(np.int8)
    np.testing.assert_array_equal(values, ref)


def test_float16():
    x = random_x((1000,), np.float16)
    x = x[np.isfinite(x)]
    s = np.float16(0.0371)
    zp = np.int8(3)
    y = qdq.quantize_linear(x, s, zp)
    np.testing.assert_array_equal(y, quantize_formula(x, s, zp, np.int8))
    d = qdq.dequantize_linear(y, s, zp)
    assert d.dtype == np.float16
    assert np.array_equal(d.view(np.uint16), dequantize_formula(y, s, zp, np.float16).view(np.uint16))


def test_int32_dequantize():
    q = RNG.integers(-2**31, 2**31 - 1, size=1000, dtype=np.int64).astype(np.int32)
    s = np.float32(1.5e-5)
    zp = np.int32(-123456)
    d = qdq.dequantize_linear(q, s, zp)
    assert np.array_equal(d.view(np.uint32), dequantize_formula(q, s, zp).view(np.uint32))


@pytest.mark.parametrize("trial", range(4))
def test_dynamic_quantize_linear(trial):
    x = (RNG.standard_normal(5000) * RNG.uniform(0.1, 10) + RNG.uniform(-3, 3)).astype(np.float32)
    y, scale, zp = qdq.dynamic_quantize_linear(x)
    f = np.float32
    lo, hi = min(f(0), x.min()), max(f(0), x.max())
    ref_scale = f(hi - lo) / f(255)
    ref_zp = np.uint8(np.rint(np.clip(f(0) - lo / ref_scale, f(0), f(255))))
    assert scale == ref_scale and zp == ref_zp
    np.testing.assert_array_equal(y, quantize_formula(x, ref_scale, ref_zp, np.uint8))
