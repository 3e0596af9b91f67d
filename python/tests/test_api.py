"""The Python API itself: argument handling, types and their two representations, errors, files."""
import pickle
import threading

import numpy as np
import pytest

import qdq
from conftest import ONNX_NODE, assert_bit_exact, codes, needs_io

RNG = np.random.default_rng(1234)


def f32(*values):
    return np.array(values, dtype=np.float32)


# --- basics -----------------------------------------------------------------------------------


def test_all_names_exist():
    for name in qdq.__all__:
        assert hasattr(qdq, name), name
    assert qdq.__version__.count(".") == 2


def test_per_tensor_default_uint8():
    y = qdq.quantize_linear(f32(0, 1, 2.5, -3, 1000, 1.5), np.float32(0.5))
    assert y.dtype == np.uint8
    assert y.tolist() == [0, 2, 5, 0, 255, 3]  # 2.5/0.5 = 5; 1.5/0.5 = 3; negative and large saturate


def test_zero_point_selects_output_type():
    y = qdq.quantize_linear(f32(0, 1, 2.5, -3), np.float32(0.5), np.int8(1))
    assert y.dtype == np.int8 and y.tolist() == [1, 3, 6, -5]
    y = qdq.quantize_linear(f32(70000), np.float32(1), np.uint16(0))
    assert y.dtype == np.uint16 and y.tolist() == [65535]


def test_python_floats_are_float32():
    y = qdq.quantize_linear([0.1, 0.2, 0.3], 0.1)
    assert y.tolist() == [1, 2, 3]
    assert qdq.dequantize_linear(y, 0.5).dtype == np.float32


def test_rank0_and_shapes_preserved():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    y = qdq.quantize_linear(x, np.float32(0.1), np.int8(0))
    assert y.shape == (2, 3, 4)
    y0 = qdq.quantize_linear(np.float32(0.25), np.float32(0.5), np.int8(0))
    assert y0.shape == () and int(y0) == 0  # 0.5 rounds to even
    assert qdq.quantize_linear(np.zeros((0, 3), np.float32), np.float32(1)).shape == (0, 3)


def test_per_axis_and_blocked():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    s = f32(1, 2, 4)
    y = qdq.quantize_linear(x, s, np.zeros(3, np.int8), axis=0)
    assert y.tolist() == np.clip(np.rint(x / s[:, None]), -128, 127).astype(np.int8).tolist()
    sb = np.array([[1, 2], [1, 4], [2, 8]], np.float32)
    yb = qdq.quantize_linear(x, sb, np.zeros((3, 2), np.int8), axis=1, block_size=2)
    ref = np.rint(x / np.repeat(sb, 2, axis=1)).astype(np.int8)
    assert yb.tolist() == ref.tolist()
    back = qdq.dequantize_linear(yb, sb, np.zeros((3, 2), np.int8), axis=1, block_size=2)
    assert back.dtype == np.float32 and back.shape == (3, 4)


def test_dequantize_matches_formula():
    q = RNG.integers(-128, 128, size=(5, 7), dtype=np.int8)
    s = RNG.uniform(0.01, 1, size=7).astype(np.float32)
    zp = RNG.integers(-10, 10, size=7, dtype=np.int8)
    y = qdq.dequantize_linear(q, s, zp, axis=-1)
    ref = (q.astype(np.int32) - zp).astype(np.float32) * s
    assert np.array_equal(y.view(np.uint32), ref.view(np.uint32))


def test_dynamic_quantize_linear():
    x = f32(0, 1, 2.5, -3, 1000)
    y, scale, zp = qdq.dynamic_quantize_linear(x)
    assert isinstance(scale, np.float32) and isinstance(zp, np.uint8)
    assert y.dtype == np.uint8 and y.shape == x.shape
    assert scale == np.float32(1003) / np.float32(255)
    assert int(zp) == 1
    with pytest.raises(ValueError, match="empty|no elements|element"):
        qdq.dynamic_quantize_linear(np.zeros(0, np.float32))


# --- attributes and opsets --------------------------------------------------------------------


def test_opset10_defaults_work():
    y = qdq.quantize_linear(f32(1, 2), np.float32(1), np.uint8(3), opset=10)
    assert y.tolist() == [4, 5]
    assert qdq.dequantize_linear(y, np.float32(2), np.uint8(3), opset=10).tolist() == [2, 4]


@pytest.mark.parametrize("kwargs,pattern", [
    ({"axis": 1}, "axis"),               # explicit axis is passed, even with the default value
    ({"saturate": False}, "saturate"),
    ({"block_size": 2}, "block_size"),
    ({"output_dtype": "int8"}, "output_dtype"),
    ({"precision": "float16"}, "precision"),
])
def test_attributes_an_opset_lacks_are_rejected(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        qdq.quantize_linear(f32(1, 2), np.float32(1), opset=10, **kwargs)


def test_default_valued_attributes_are_not_passed():
    y = qdq.quantize_linear(f32(1, 2), np.float32(1), opset=10, block_size=0, saturate=True,
                            output_dtype=None, precision=0)
    assert y.tolist() == [1, 2]


def test_precision_attribute():
    x = f32(1.0, 3.0)
    s = np.float32(1 / 3)
    y = qdq.quantize_linear(x, s, np.int8(0), precision="float16", opset=23)
    assert y.tolist() == [3, 9]
    with pytest.raises(ValueError, match="precision"):
        qdq.quantize_linear(x, s, np.int8(0), precision="float16", opset=21)
    with pytest.raises(ValueError, match="precision"):
        qdq.quantize_linear(x, s, np.int8(0), precision="int8")


@pytest.mark.parametrize("spec", ["int4", "INT4", "tensor(int4)", 22, np.int64(22)])
def test_output_dtype_spellings_int4(spec):
    y = qdq.quantize_linear(f32(-9, 0, 7.4), np.float32(1), output_dtype=spec)
    assert qdq.element_type(y) == "int4"
    assert codes(y)[0].tolist() == [-8, 0, 7]


@pytest.mark.parametrize("spec", ["int8", np.int8, np.dtype("int8"), 3, "INT8"])
def test_output_dtype_spellings_int8(spec):
    y = qdq.quantize_linear(f32(-200, 0, 7.4), np.float32(1), output_dtype=spec)
    assert y.dtype == np.int8 and y.tolist() == [-128, 0, 7]


@pytest.mark.parametrize("spec", ["float8e4m3fn", "float8_e4m3fn", "FLOAT8E4M3FN", 17])
def test_output_dtype_spellings_float8(spec):
    y = qdq.quantize_linear(f32(1, -2, 1000), np.float32(1), output_dtype=spec)
    assert qdq.element_type(y) == "float8e4m3fn"
    assert codes(y)[0].tolist() == [0x38, 0xC0, 0x7E]  # 1.0, -2.0, 448 (saturated)


def test_saturate_false_float8():
    y = qdq.quantize_linear(f32(1000), np.float32(1), output_dtype="float8e4m3fn", saturate=False)
    assert codes(y)[0].tolist() == [0x7F]  # NaN


def test_dequantize_output_dtype():
    y = qdq.dequantize_linear(np.array([1, 2], np.int8), np.float32(0.5), output_dtype=np.float16)
    assert y.dtype == np.float16 and y.tolist() == [0.5, 1.0]
    with pytest.raises(ValueError, match="output_dtype"):
        qdq.dequantize_linear(np.array([1, 2], np.int8), np.float32(0.5), output_dtype="float16", opset=21)


# --- errors -----------------------------------------------------------------------------------


def test_library_errors_are_value_errors_with_the_message():
    with pytest.raises(ValueError, match="QuantizeLinear") as info:
        qdq.quantize_linear(f32(1, 2, 3), f32(1, 2), axis=0)
    assert "scale" in str(info.value) or "y_scale" in str(info.value)
    with pytest.raises(ValueError):
        qdq.dequantize_linear(f32(1), np.float32(1))  # float x is not a quantized type
    with pytest.raises(ValueError):
        qdq.quantize_linear(np.array([1.0]), np.array(1.0))  # float64 is not an ONNX input type here


@pytest.mark.parametrize("call", [
    lambda: qdq.quantize_linear("abc", 1.0),
    lambda: qdq.quantize_linear(None, 1.0),
    lambda: qdq.quantize_linear(f32(1), object()),
    lambda: qdq.quantize_linear(f32(1), 1.0, {"a": 1}),
    lambda: qdq.quantize_linear(np.array([1 + 2j], np.complex64), 1.0),
    lambda: qdq.quantize_linear(f32(1), 1.0, axis="0"),
    lambda: qdq.quantize_linear(f32(1), 1.0, axis=True),
    lambda: qdq.quantize_linear(f32(1), 1.0, opset=25.0),
    lambda: qdq.quantize_linear(f32(1), 1.0, block_size=1.5),
    lambda: qdq.quantize_linear(f32(1), 1.0, output_dtype=3.5),
    lambda: qdq.quantize_linear(f32(1), 1.0, output_dtype=True),
    lambda: qdq.quantize_linear(f32(1), 1.0, saturate="yes"),
    lambda: qdq.dynamic_quantize_linear([["a"]]),
    lambda: qdq.set_num_threads(1.5),
    lambda: qdq.CodeArray([1.5], "int4"),
])
def test_wrong_python_types_are_type_errors(call):
    with pytest.raises(TypeError):
        call()


def test_unknown_type_names_are_value_errors():
    with pytest.raises(ValueError, match="unknown element type"):
        qdq.quantize_linear(f32(1), 1.0, output_dtype="float7")
    with pytest.raises(ValueError):
        qdq.quantize_linear(f32(1), 1.0, output_dtype=99)
    with pytest.raises(ValueError):
        qdq.set_num_threads(-1)


# --- CodeArray and sub-byte types -----------------------------------------------------------


def test_codearray_validation_and_behaviour():
    a = qdq.CodeArray([-8, 7, 0, -1], "int4")
    assert a.dtype == np.int8 and a.qdq_dtype == "int4"
    assert "int4" in repr(a)
    assert isinstance(a[1:], qdq.CodeArray) and a[1:].qdq_dtype == "int4"
    assert isinstance(a.reshape(2, 2), qdq.CodeArray)
    total = a + 1
    assert type(total) is np.ndarray
    assert type(a == 7) is np.ndarray
    assert type(a.max()) is not qdq.CodeArray
    b = pickle.loads(pickle.dumps(a))
    assert isinstance(b, qdq.CodeArray) and b.qdq_dtype == "int4" and b.tolist() == a.tolist()
    with pytest.raises(ValueError):
        qdq.CodeArray([8], "int4")
    with pytest.raises(ValueError):
        qdq.CodeArray(np.array([16], np.uint8), "uint4")
    with pytest.raises(ValueError):
        qdq.CodeArray([300], "float8e4m3fn")
    with pytest.raises(ValueError, match="NumPy dtype"):
        qdq.CodeArray([1], "int8")
    assert qdq.CodeArray(np.array([1, 2], np.uint16), "bfloat16").dtype == np.uint16
    codes8 = np.array([0x38, 0x40], np.uint8)
    assert np.shares_memory(qdq.CodeArray(codes8, "float8e4m3fn"), codes8)


def test_int4_input_signed_values_or_unsigned_codes():
    as_values = qdq.CodeArray(np.array([-8, -1, 0, 7, 3], np.int8), "int4")
    as_codes = qdq.CodeArray(np.array([8, 15, 0, 7, 3], np.uint8), "int4")
    for x in (as_values, as_codes):
        y = qdq.dequantize_linear(x, np.float32(2))
        assert y.tolist() == [-16, -2, 0, 14, 6]


def test_out_of_range_codes_rejected_in_cpp():
    raw = np.array([0, 16], np.uint8).view(qdq.CodeArray)  # bypasses the constructor's check
    raw.qdq_dtype = "uint4"
    with pytest.raises(ValueError, match="UINT4"):
        qdq.dequantize_linear(raw, np.float32(1))


@pytest.mark.parametrize("name,lo,hi", [("int4", -8, 7), ("uint4", 0, 15), ("int2", -2, 1), ("uint2", 0, 3)])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 33])
def test_sub_byte_round_trip_every_length(name, lo, hi, n):
    values = RNG.integers(lo, hi + 1, size=n)
    x = values.astype(np.float32)
    zp = qdq.CodeArray([0], name)
    y = qdq.quantize_linear(x, f32(1), zp)
    assert qdq.element_type(y) == name
    assert codes(y)[0].tolist() == values.tolist()
    assert qdq.dequantize_linear(y, f32(1), zp).tolist() == values.tolist()


@pytest.mark.parametrize("name,maximum", [
    ("float8e4m3fn", 448), ("float8e4m3fnuz", 240), ("float8e5m2", 57344), ("float8e5m2fnuz", 57344),
    ("float4e2m1", 6)])
def test_float_code_types_round_trip(name, maximum):
    x = RNG.uniform(-maximum, maximum, size=100).astype(np.float32)
    y = qdq.quantize_linear(x, np.float32(1), output_dtype=name)
    assert qdq.element_type(y) == name
    back = qdq.dequantize_linear(y, np.float32(1))
    assert back.dtype == np.float32
    rel = np.abs(back - x) / np.maximum(np.abs(x), 1)
    assert rel.max() < 0.26  # at most half an ulp of a 1-bit mantissa
    # Quantizing the dequantized values again is the identity on codes.
    assert_bit_exact(qdq.quantize_linear(back, np.float32(1), output_dtype=name), y)


def bf16(values):
    return qdq.CodeArray((np.asarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16), "bfloat16")


def test_bfloat16_inputs_and_outputs():
    x = bf16([1.0, 2.5, -3.0, 100.0])
    y = qdq.quantize_linear(x, bf16(0.5), np.int8(0))
    assert y.tolist() == [2, 5, -6, 127]
    d = qdq.dequantize_linear(y, bf16(0.5))
    assert qdq.element_type(d) == "bfloat16"
    assert (codes(d)[0].astype(np.uint32) << 16).view(np.float32).tolist() == [1.0, 2.5, -3.0, 63.5]


def test_float8e8m0_scale():
    s = qdq.CodeArray([127 + 2], "float8e8m0")  # 2^2
    y = qdq.dequantize_linear(np.array([1, -3], np.int8), s, output_dtype="float32", opset=24)
    with pytest.raises(ValueError, match="output_dtype"):
        qdq.dequantize_linear(np.array([1, -3], np.int8), s, opset=24)
    assert y.dtype == np.float32 and y.tolist() == [4, -12]


# --- memory and threads -----------------------------------------------------------------------


def test_contiguous_inputs_are_not_copied():
    x = RNG.standard_normal(1000).astype(np.float32)
    a, t = qdq._as_input(x, "x")
    assert a is x and t == 1
    q = np.zeros(10, np.int8)
    assert qdq._as_input(q, "x")[0] is q
    y = qdq.quantize_linear(x, np.float32(0.1))
    assert not np.shares_memory(y, x)


def test_non_contiguous_and_byte_swapped_inputs():
    x = RNG.standard_normal((8, 10)).astype(np.float32)
    expected = qdq.quantize_linear(np.ascontiguousarray(x[:, ::2]), np.float32(0.05), np.int8(0))
    assert np.array_equal(qdq.quantize_linear(x[:, ::2], np.float32(0.05), np.int8(0)), expected)
    assert np.array_equal(qdq.quantize_linear(x.T.copy().T, np.float32(0.05), np.int8(0)),
                          qdq.quantize_linear(x, np.float32(0.05), np.int8(0)))
    swapped = x.astype(">f4")
    assert np.array_equal(qdq.quantize_linear(swapped, np.float32(0.05), np.int8(0)),
                          qdq.quantize_linear(x, np.float32(0.05), np.int8(0)))


def test_thread_count_does_not_change_results():
    x = RNG.standard_normal(1 << 20).astype(np.float32)
    s = np.float32(0.01)
    before = qdq.get_num_threads()
    try:
        qdq.set_num_threads(1)
        assert qdq.get_num_threads() == 1
        one = qdq.quantize_linear(x, s, np.int8(3))
        qdq.set_num_threads(4)
        assert qdq.get_num_threads() == 4
        four = qdq.quantize_linear(x, s, np.int8(3))
    finally:
        qdq.set_num_threads(0)
    assert np.array_equal(one, four)
    assert qdq.get_num_threads() >= 1 and before >= 1


def test_concurrent_python_threads():
    x = RNG.standard_normal((64, 4096)).astype(np.float32)
    s = RNG.uniform(0.001, 0.1, 64).astype(np.float32)
    expected = qdq.quantize_linear(x, s, np.zeros(64, np.int8), axis=0)
    results = [None] * 6

    def work(i):
        results[i] = qdq.quantize_linear(x, s, np.zeros(64, np.int8), axis=0)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        assert np.array_equal(r, expected)


# --- files ------------------------------------------------------------------------------------


@needs_io
@pytest.mark.parametrize("array", [
    np.arange(6, dtype=np.float32).reshape(2, 3),
    np.float32(2.5),
    np.array([1, -2, 3], np.int8),
    np.array([65535, 0], np.uint16),
    np.array([1.5, -0.0], np.float16),
    qdq.CodeArray([-8, 7, 1, 0, -1], "int4"),
    qdq.CodeArray([3, 0, 1], "uint2"),
    qdq.CodeArray([0x38, 0x7F], "float8e4m3fn"),
    qdq.CodeArray([0x3F80, 0x4000], "bfloat16"),
    qdq.CodeArray(np.zeros((0, 3), np.uint8), "uint4"),
], ids=lambda a: qdq.element_type(a))
def test_save_load_round_trip(tmp_path, array):
    path = tmp_path / "t.pb"
    qdq.save_tensor(path, array, name="t")
    back = qdq.load_tensor(str(path))
    assert_bit_exact(back, array)


@needs_io
def test_load_errors(tmp_path):
    with pytest.raises(ValueError, match="missing.pb"):
        qdq.load_tensor(tmp_path / "missing.pb")
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\xff\xff\xff")
    with pytest.raises(ValueError, match="bad.pb"):
        qdq.load_tensor(bad)
    with pytest.raises(TypeError):
        qdq.save_tensor(tmp_path / "x.pb", np.zeros(2, np.float32), name=3)


@needs_io
def test_loaded_arrays_are_writable_and_owned():
    t = qdq.load_tensor(ONNX_NODE / "test_quantizelinear" / "test_data_set_0" / "input_0.pb")
    assert t.dtype == np.float32 and t.flags.writeable
    t[...] = 0


@needs_io
def test_read_model_node():
    node = qdq._read_model_node(ONNX_NODE / "test_quantizelinear_blocked_asymmetric" / "model.onnx")
    assert node["op_type"] == "QuantizeLinear" and node["opset"] >= 21
    assert node["attributes"].get("block_size", 0) > 0
    with pytest.raises(ValueError):
        qdq._read_model_node(ONNX_NODE / "test_quantizelinear" / "test_data_set_0" / "input_0.pb")


# --- ml_dtypes representation ------------------------------------------------------------------



@pytest.mark.skipif(not qdq.HAVE_ML_DTYPES, reason="ml_dtypes is not installed: only the CodeArray representation is tested")
def test_ml_dtypes_inputs_and_outputs():
    import ml_dtypes

    x = f32(-9, 0, 3, 7)
    y = qdq.quantize_linear(x, np.float32(1), output_dtype=ml_dtypes.int4)
    assert y.dtype == np.dtype(ml_dtypes.int4)
    assert y.astype(np.int32).tolist() == [-8, 0, 3, 7]
    assert qdq.dequantize_linear(y, np.float32(1)).tolist() == [-8, 0, 3, 7]
    f8 = f32(1, -2, 0.5).astype(ml_dtypes.float8_e4m3fn)
    assert qdq.dequantize_linear(f8, np.float32(2)).tolist() == [2, -4, 1]
    b = f32(1, 2.5).astype(ml_dtypes.bfloat16)
    assert qdq.quantize_linear(b, np.float32(0.5).astype(ml_dtypes.bfloat16), np.int8(0)).tolist() == [2, 5]


@pytest.mark.skipif(not qdq.HAVE_ML_DTYPES, reason="ml_dtypes is not installed: only the CodeArray representation is tested")
def test_ml_dtypes_rank0_sub_byte_zero_points():
    # Found by scripts/differential.py: a rank-0 ml_dtypes sub-byte zero point became a NumPy scalar.
    import ml_dtypes

    codes = np.array([[1, 14], [7, 0]], np.uint8).view(ml_dtypes.float4_e2m1fn)
    zp = np.array(1.0, ml_dtypes.float4_e2m1fn)
    y = qdq.dequantize_linear(codes, np.float32(2), zp)
    assert y.tolist() == [[-1.0, -10.0], [10.0, -2.0]]
    q = qdq.quantize_linear(f32(3, -3), np.float32(1), np.array(-2, ml_dtypes.int4))
    assert q.astype(np.int32).tolist() == [1, -5]
