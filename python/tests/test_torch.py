"""qdq against PyTorch's torch.quantize_per_tensor / quantize_per_channel and dequantize.

Finding (PyTorch 1.13 as Debian builds it: no FBGEMM, quantized engines qnnpack/onednn): on the CPU,
PyTorch quantizes as  clamp(rint(x * (1/scale)) + zero_point)  — it multiplies by the float32
reciprocal of the scale instead of dividing. ONNX (and qdq) divide:  rint(x / scale).  The two agree
exactly whenever 1/scale is exact (scale a power of two) and differ by one step on inputs whose
quotient lies within a rounding error of a half-integer. PyTorch's dequantize, (q - zp) * scale with
one rounding, agrees with qdq's DequantizeLinear exactly. These tests assert exactly that, and
measure how often quantization differs for other scales.
"""
import numpy as np
import pytest

import qdq

torch = pytest.importorskip("torch", reason="PyTorch (Debian: python3-torch) is not installed")

RNG = np.random.default_rng(7)
KINDS = [(torch.qint8, np.int8, 0), (torch.qint8, np.int8, -5), (torch.quint8, np.uint8, 128),
         (torch.quint8, np.uint8, 3)]


def torch_per_tensor(x, scale, zp, qtype):
    return torch.quantize_per_tensor(torch.from_numpy(x), float(scale), int(zp), qtype)


def reciprocal_formula(x, scale, zp, out_type):
    info = np.iinfo(out_type)
    q = np.rint(x * (np.float32(1) / scale)).astype(np.float64) + np.asarray(zp, np.float64)
    return np.clip(q, info.min, info.max).astype(out_type)


def random_x(n):
    x = RNG.standard_normal(n).astype(np.float32) * 4
    x[::101] *= 100  # some saturate
    return x


@pytest.mark.parametrize("qtype,out_type,zp", KINDS)
@pytest.mark.parametrize("scale", [2.0 ** -7, 2.0 ** -3, 0.5, 1.0, 4.0])
def test_power_of_two_scales_agree_exactly(qtype, out_type, zp, scale):
    x = random_x(200_000)
    s = np.float32(scale)
    t = torch_per_tensor(x, s, zp, qtype)
    y = qdq.quantize_linear(x, s, out_type(zp))
    np.testing.assert_array_equal(t.int_repr().numpy(), y)
    d = qdq.dequantize_linear(y, s, out_type(zp))
    assert np.array_equal(t.dequantize().numpy().view(np.uint32), d.view(np.uint32))


def near_ties(scale):
    """Inputs next to (k + 1/2)·scale: where the reciprocal's rounding error decides the result."""
    k = np.arange(-120, 120, dtype=np.float64)
    base = ((k + 0.5) * np.float64(scale)).astype(np.float32)
    up = np.nextafter(base, np.float32(np.inf))
    down = np.nextafter(base, np.float32(-np.inf))
    return np.concatenate([base, up, down])


@pytest.mark.parametrize("scale", [0.1, 0.02, 0.0123, 0.3, 1 / 3, 0.007])
def test_other_scales_torch_multiplies_by_the_reciprocal(scale):
    s = np.float32(scale)
    for x, label in ((random_x(1_000_000), "random normal"), (near_ties(s), "near half-integers")):
        t = torch_per_tensor(x, s, 0, torch.qint8).int_repr().numpy()
        y = qdq.quantize_linear(x, s, np.int8(0))
        # PyTorch is the reciprocal formula, qdq is ONNX's division.
        np.testing.assert_array_equal(t, reciprocal_formula(x, s, 0, np.int8))
        exact = np.clip(np.rint(x / s), -128, 127).astype(np.int8)
        np.testing.assert_array_equal(y, exact)
        differ = t != y
        assert np.all(np.abs(t[differ].astype(int) - y[differ]) == 1)
        print(f"scale {s:.7g}, {label}: {differ.sum()} of {x.size} differ ({differ.mean():.4%})")


def test_near_ties_do_differ():
    # Proof that the comparison above can fail: 0.1 and 0.02 are not powers of two.
    total = sum(int((torch_per_tensor(near_ties(np.float32(s)), np.float32(s), 0, torch.qint8).int_repr().numpy()
                     != qdq.quantize_linear(near_ties(np.float32(s)), np.float32(s), np.int8(0))).sum())
                for s in (0.1, 0.02))
    assert total > 0


@pytest.mark.parametrize("axis", [0, 1])
def test_per_channel(axis):
    x = (RNG.standard_normal((48, 300)) * 3).astype(np.float32)
    n = x.shape[axis]
    pow2 = np.float32(2.0) ** RNG.integers(-8, 2, size=n).astype(np.float32)
    zp = RNG.integers(-20, 20, size=n).astype(np.int8)
    shape = [1, 1]
    shape[axis] = n

    def torch_q(s):
        return torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(s.astype(np.float64)),
                                          torch.from_numpy(zp.astype(np.int64)), axis, torch.qint8)

    # Power-of-two scales: exact agreement, both ways.
    t = torch_q(pow2)
    y = qdq.quantize_linear(x, pow2, zp, axis=axis)
    np.testing.assert_array_equal(t.int_repr().numpy(), y)
    d = qdq.dequantize_linear(y, pow2, zp, axis=axis)
    assert np.array_equal(t.dequantize().numpy().view(np.uint32), d.view(np.uint32))

    # Arbitrary scales: PyTorch is the reciprocal formula; dequantization still agrees exactly.
    s = RNG.uniform(0.005, 0.2, size=n).astype(np.float32)
    t = torch_q(s)
    y = qdq.quantize_linear(x, s, zp, axis=axis)
    np.testing.assert_array_equal(t.int_repr().numpy(), reciprocal_formula(x, s.reshape(shape), zp.reshape(shape), np.int8))
    tq = t.int_repr().numpy()
    d = qdq.dequantize_linear(tq, s, zp, axis=axis)
    assert np.array_equal(t.dequantize().numpy().view(np.uint32), d.view(np.uint32))
    print(f"per-channel axis {axis}: {(tq != y).sum()} of {y.size} differ")
