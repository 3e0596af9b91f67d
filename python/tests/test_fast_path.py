"""The compiled fast path of quantize_linear / dequantize_linear / dynamic_quantize_linear against the
Python path it stands in for: the same results (values, dtype, type, representation) and the same
errors. Passing an attribute as a NumPy integer (np.int64(0) for 0) sends a call down the Python path,
since the fast path takes only plain ints; both paths must then agree."""
import numpy as np
import pytest

import qdq
from qdq import _qdq

RNG = np.random.default_rng(14)


def slow(value):
    """The same integer, in a form the fast path hands to the Python path."""
    return np.int64(value)


def same(a, b):
    if isinstance(a, qdq.PackedTensor):
        assert isinstance(b, qdq.PackedTensor)
        assert (a.dtype, a.shape) == (b.dtype, b.shape)
        assert a.data.dtype == b.data.dtype and bytes(a) == bytes(b)
        return
    assert type(a) is type(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert getattr(a, "qdq_dtype", None) == getattr(b, "qdq_dtype", None)
    assert np.asarray(a).view(np.uint8).tobytes() == np.asarray(b).view(np.uint8).tobytes()


QUANTIZE_CASES = [
    # (x shape, scale shape, zero point maker or None, keyword arguments)
    ((4, 64), (), lambda s: np.int8(3), {}),
    ((4, 64), (4,), lambda s: np.zeros(s, np.uint8), {"axis": 0}),
    ((4, 64), (4, 2), lambda s: qdq.CodeArray(np.ones(s, np.int8), "int4"), {"axis": 1, "block_size": 32}),
    ((4, 64), (4, 2), None, {"axis": 1, "block_size": 32, "output_dtype": "uint4"}),
    ((256,), (), None, {"output_dtype": "float8e4m3fn", "saturate": False}),
    ((256,), (), None, {"output_dtype": 17, "saturate": True}),
    ((256,), (), lambda s: qdq.CodeArray(np.zeros(s, np.int8), "int2"), {}),
    ((64, 256), (), None, {"output_dtype": "int4"}),  # a 16 KiB result: the pool's aligned memory
]


@pytest.mark.parametrize("case", range(len(QUANTIZE_CASES)))
@pytest.mark.parametrize("form", ["plain", "out", "packed"])
def test_quantize_fast_path_equals_python_path(case, form):
    shape, sshape, zp_maker, kw = QUANTIZE_CASES[case]
    x = RNG.uniform(-3, 3, shape).astype(np.float32)
    s = np.asarray(RNG.uniform(0.01, 0.1, sshape).astype(np.float32))
    zp = None if zp_maker is None else zp_maker(sshape)
    reference = qdq.quantize_linear(x, s, zp, opset=slow(25), **kw)
    extra = {}
    if form == "out":
        extra["out"] = np.empty_like(reference)
        if isinstance(reference, qdq.CodeArray):
            extra["out"] = qdq.CodeArray(np.zeros_like(reference.view(np.ndarray)), reference.qdq_dtype)
    if form == "packed":
        extra["packed"] = True
        reference = qdq.quantize_linear(x, s, zp, opset=slow(25), packed=True, **kw)
    fast = qdq.quantize_linear(x, s, zp, **kw, **extra)
    if form == "out":
        assert fast is extra["out"]
        fast = extra["out"]
    same(fast, reference)


@pytest.mark.parametrize("case", range(len(QUANTIZE_CASES)))
@pytest.mark.parametrize("packed_input", [False, True])
def test_dequantize_fast_path_equals_python_path(case, packed_input):
    shape, sshape, zp_maker, kw = QUANTIZE_CASES[case]
    kw = {k: v for k, v in kw.items() if k in ("axis", "block_size")}
    x = RNG.uniform(-3, 3, shape).astype(np.float32)
    s = np.asarray(RNG.uniform(0.01, 0.1, sshape).astype(np.float32))
    zp = None if zp_maker is None else zp_maker(sshape)
    q = qdq.quantize_linear(x, s, zp, packed=packed_input, **QUANTIZE_CASES[case][3])
    reference = qdq.dequantize_linear(q, s, zp, opset=slow(25), **kw)
    same(qdq.dequantize_linear(q, s, zp, **kw), reference)
    out = np.empty_like(reference)
    assert qdq.dequantize_linear(q, s, zp, out=out, **kw) is out
    same(out, reference)


def test_dynamic_quantize_fast_path_equals_python_path():
    x = RNG.standard_normal((8, 100)).astype(np.float32)
    y, scale, zero_point = qdq.dynamic_quantize_linear(x)
    y2, scale2, zero_point2 = qdq.dynamic_quantize_linear(x, opset=slow(11))
    same(y, y2)
    assert type(scale) is type(scale2) is np.float32 and scale == scale2
    assert type(zero_point) is type(zero_point2) is np.uint8 and zero_point == zero_point2
    out = np.empty_like(y)
    assert qdq.dynamic_quantize_linear(x, out=out)[0] is out
    same(out, y)


@pytest.mark.parametrize("call", [
    lambda o: qdq.quantize_linear(np.ones((2, 3), np.float32), np.ones(2, np.float32), axis=o(1), opset=o(25)),
    lambda o: qdq.quantize_linear(np.ones(4, np.float32), np.float32(1), block_size=o(2), opset=o(25)),
    lambda o: qdq.quantize_linear(np.ones(4, np.float32), np.float32(1), axis=o(0), opset=o(10)),
    lambda o: qdq.dequantize_linear(np.ones(4, np.int8), np.ones(3, np.float32), axis=o(0), opset=o(25)),
    lambda o: qdq.dequantize_linear(np.ones(4, np.int8), np.float32(1), output_dtype=o(1), opset=o(21)),
    lambda o: qdq.quantize_linear(np.ones(4, np.float32), np.float32(1), opset=o(25),
                                  out=np.empty(3, np.uint8)),
    lambda o: qdq.quantize_linear(np.ones(4, np.float32), np.float32(1), opset=o(25), out=np.empty(4, np.int8)),
    lambda o: qdq.dynamic_quantize_linear(np.ones(4, np.float32), opset=o(10)),
])
def test_errors_are_the_python_paths(call):
    with pytest.raises(Exception) as slow_error:
        call(slow)
    with pytest.raises(Exception) as fast_error:
        call(int)
    assert type(fast_error.value) is type(slow_error.value)
    assert str(fast_error.value) == str(slow_error.value)


def test_unusual_arguments_are_handed_back():
    x = np.ones((4, 8), np.float32)
    s = np.float32(0.5)
    args = (None, qdq._AXIS_DEFAULT, 0, True, None, None, 25, None, False)
    assert _qdq._fast_quantize_linear(x, s, *args) is not NotImplemented
    for x_form in (x[:, ::2], x.tolist(), x.astype(">f4"), 1.5):
        assert _qdq._fast_quantize_linear(x_form, s, *args) is NotImplemented
    for i, value in ((1, np.int64(0)), (2, True), (3, np.bool_(True)), (4, "no such type"), (6, 25.0),
                     (7, [1]), (8, 1)):
        changed = list(args)
        changed[i] = value
        assert _qdq._fast_quantize_linear(x, s, *changed) is NotImplemented, (i, value)
    assert _qdq._fast_dequantize_linear(np.ones(4, np.int8), s, None, 0, 0, None, 25, None) is not NotImplemented
    assert _qdq._fast_dequantize_linear(np.ones(4, np.int8), s, None, 0, 0, None, 2**70, None) is NotImplemented
    assert _qdq._fast_dynamic_quantize_linear(x, 11, None) is not NotImplemented
    assert _qdq._fast_dynamic_quantize_linear(qdq.pack(x), 11, None) is NotImplemented


OPERATORS = ["quantize_linear", "dequantize_linear", "dynamic_quantize_linear"]


@pytest.mark.parametrize("name", OPERATORS)
def test_entry_points_present_the_general_functions_signature(name):
    import inspect

    public, general = getattr(qdq, name), getattr(qdq, "_" + name)
    assert public.__name__ == name and public.__module__ == "qdq"
    assert str(inspect.signature(public)) == str(inspect.signature(general))  # axis: the sentinel shows as 1
    assert inspect.getdoc(public) == inspect.getdoc(general)


def test_entry_points_take_every_argument_by_keyword():
    x = RNG.uniform(-3, 3, (4, 64)).astype(np.float32)
    s = np.full(4, 0.05, np.float32)
    zp = np.arange(4, dtype=np.int8)
    q = qdq.quantize_linear(x, s, zp, axis=0)
    same(qdq.quantize_linear(x=x, scale=s, zero_point=zp, axis=0), q)
    same(qdq.quantize_linear(x, zero_point=zp, scale=s, axis=0, opset=25, saturate=True, packed=False), q)
    y = qdq.dequantize_linear(q, s, zp, axis=0)
    same(qdq.dequantize_linear(scale=s, x=q, zero_point=zp, axis=0, block_size=0, output_dtype=None, out=None), y)
    same(qdq.dynamic_quantize_linear(x=x)[0], qdq.dynamic_quantize_linear(x)[0])


@pytest.mark.parametrize("call", [
    lambda f: f["quantize_linear"](np.ones(4, np.float32)),  # no scale
    lambda f: f["quantize_linear"](np.ones(4, np.float32), np.float32(1), None, 1),  # axis is keyword-only
    lambda f: f["quantize_linear"](np.ones(4, np.float32), np.float32(1), scale=np.float32(1)),
    lambda f: f["quantize_linear"](np.ones(4, np.float32), np.float32(1), axes=0),
    lambda f: f["dequantize_linear"](np.ones(4, np.int8), np.float32(1), bogus=None),
    lambda f: f["dequantize_linear"](x=np.ones(4, np.int8)),
    lambda f: f["dynamic_quantize_linear"](np.ones(4, np.float32), 11),
    lambda f: f["dynamic_quantize_linear"](),
])
def test_entry_points_argument_errors_are_the_general_functions(call):
    public = {name: getattr(qdq, name) for name in OPERATORS}
    general = {name: getattr(qdq, "_" + name) for name in OPERATORS}
    with pytest.raises(TypeError) as expected:
        call(general)
    with pytest.raises(TypeError) as got:
        call(public)
    assert str(got.value) == str(expected.value)
    assert str(got.value).startswith(tuple(f"{name}()" for name in OPERATORS))


def test_results_of_16_kib_or_more_are_64_byte_aligned():
    x = np.ones((64, 64), np.float32)  # 16 KiB of float32 out, 4 KiB of int8
    y = qdq.quantize_linear(x, np.float32(1), np.int8(0))
    d = qdq.dequantize_linear(y, np.float32(1))
    assert d.ctypes.data % 64 == 0 and d.flags.c_contiguous and d.flags.writeable
    d[0, 0] = 2  # the caller owns it
    assert d[0, 0] == 2
