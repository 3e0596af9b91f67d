"""What the binding does to keep a Python call close to the library's own call (docs/python.md,
"Sub-byte types at kernel speed"): sub-byte integers given one value per byte are dequantized as the
same int8/uint8 tensor, results of ml_dtypes types are made with their dtype, and the library's call
can be timed in-process. Every route must give the packed route's result bit for bit."""
import numpy as np
import pytest

import qdq
from conftest import assert_bit_exact, num_threads

RNG = np.random.default_rng(1414)
INTEGER_SUB_BYTE = {"int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1), "uint2": (0, 3)}
try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None


def granularities(shape):
    """(scale shape, keyword arguments) for per tensor, per axis 0 and 1, blocked along axis 0 and 1."""
    rows, cols = shape
    return [
        ((), {}),
        ((rows,), {"axis": 0}),
        ((cols,), {"axis": 1}),
        ((rows // 4, cols), {"axis": 0, "block_size": 4}),
        ((rows, cols // 8), {"axis": 1, "block_size": 8}),
    ]


def representations(values, dtype):
    """The one-value-per-byte forms of the same tensor that qdq accepts."""
    signed = dtype.startswith("int")
    forms = {"CodeArray": qdq.CodeArray(values.astype(np.int8 if signed else np.uint8), dtype)}
    if signed:  # two's complement codes in uint8 items
        bits = 4 if "4" in dtype else 2
        forms["CodeArray of codes"] = qdq.CodeArray((values.astype(np.int16) & ((1 << bits) - 1)).astype(np.uint8), dtype)
    if ml_dtypes is not None:
        ml = np.dtype(getattr(ml_dtypes, dtype))
        forms["ml_dtypes (own layout)"] = values.astype(ml)  # ml_dtypes keeps only the low bits
        forms["ml_dtypes (qdq's layout)"] = values.astype(np.int8 if signed else np.uint8).view(ml)
    return forms


@pytest.mark.parametrize("dtype", sorted(INTEGER_SUB_BYTE))
@pytest.mark.parametrize("with_zero_point", [False, True])
def test_one_value_per_byte_dequantizes_like_the_packed_tensor(dtype, with_zero_point):
    lo, hi = INTEGER_SUB_BYTE[dtype]
    shape = (8, 48)
    values = RNG.integers(lo, hi + 1, shape)
    for scale_shape, kw in granularities(shape):
        s = RNG.uniform(0.01, 2, scale_shape).astype(np.float32)
        zp = None
        if with_zero_point:
            zp = qdq.CodeArray(RNG.integers(lo, hi + 1, scale_shape).astype(np.int8 if lo < 0 else np.uint8), dtype)
        forms = representations(values, dtype)
        want = qdq.dequantize_linear(qdq.pack(forms["CodeArray"]), s, zp if zp is None else qdq.pack(zp), **kw)
        for name, x in forms.items():
            label = f"{dtype} {name} {kw} zp={with_zero_point}"
            assert_bit_exact(qdq.dequantize_linear(x, s, zp, **kw), want, label)
            out = np.empty(shape, np.float32)
            assert qdq.dequantize_linear(x, s, zp, out=out, **kw) is out
            assert_bit_exact(out, want, label + " out=")
            if zp is not None:  # the zero point in another form than x
                assert_bit_exact(qdq.dequantize_linear(x, s, qdq.pack(zp), **kw), want, label + " packed zp")


@pytest.mark.parametrize("dtype", sorted(INTEGER_SUB_BYTE))
def test_other_output_types_and_opsets(dtype):
    lo, hi = INTEGER_SUB_BYTE[dtype]
    x = qdq.CodeArray(RNG.integers(lo, hi + 1, (4, 32)).astype(np.int8 if lo < 0 else np.uint8), dtype)
    packed = qdq.pack(x)
    s16 = RNG.uniform(0.01, 2, (4, 4)).astype(np.float16)
    for kw in [{"axis": 1, "block_size": 8}, {"axis": 1, "block_size": 8, "output_dtype": "float32"},
               {"axis": 1, "block_size": 8, "output_dtype": "bfloat16", "opset": 23 if dtype.endswith("4") else 25}]:
        assert_bit_exact(qdq.dequantize_linear(x, s16, **kw), qdq.dequantize_linear(packed, s16, **kw), str(kw))
    # The operator version's type rules apply to the type given, not to the int8/uint8 read in its place.
    first = 21 if dtype.endswith("4") else 25
    with pytest.raises(ValueError, match="element type"):
        qdq.dequantize_linear(x, np.float32(1), opset=first - 2 if first == 21 else 24)
    qdq.dequantize_linear(x, np.float32(1), opset=first)


def with_items(dtype, items, item_dtype):
    """A CodeArray holding `items` as they are (bypassing CodeArray's own check, as a buggy caller might)."""
    c = qdq.CodeArray(np.zeros(len(items), item_dtype), dtype)
    c.view(np.ndarray)[:] = items
    return c


def test_bad_values_are_still_named_and_leave_out_untouched():
    bad = with_items("uint4", [0, 1, 16, 2], np.uint8)
    with pytest.raises(ValueError, match="element 2 is 16"):
        qdq.dequantize_linear(bad, np.float32(1))
    out = np.full(4, 5, np.float32)
    with pytest.raises(ValueError, match="element 2 is 16"):
        qdq.dequantize_linear(bad, np.float32(1), out=out)
    assert (out == 5).all()
    bad_zp = with_items("uint4", [20], np.uint8).reshape(())
    with pytest.raises(ValueError, match="zero_point: element 0 is 20"):
        qdq.dequantize_linear(qdq.CodeArray(np.array([0, 1, 7], np.uint8), "uint4"), np.float32(1), bad_zp)
    with pytest.raises(ValueError, match="element 1 is -9"):
        qdq.dequantize_linear(with_items("int4", [1, -9], np.int8), np.float32(1))
    with pytest.raises(ValueError, match="element 0 is 5"):
        qdq.dequantize_linear(with_items("int2", [5, 1], np.uint8), np.float32(1))


def test_results_come_in_the_representation_of_their_type():
    x = RNG.standard_normal((3, 16)).astype(np.float32)
    for dtype in ["int4", "uint2", "float8e4m3fn", "float4e2m1", "bfloat16", "int8"]:
        y = qdq.quantize_linear(x, np.float32(0.5), output_dtype=dtype) if dtype != "bfloat16" else None
        if y is None:
            continue
        assert qdq.element_type(y) == dtype
        if dtype == "int8":
            assert type(y) is np.ndarray and y.dtype == np.int8
        elif qdq.HAVE_ML_DTYPES:
            assert type(y) is np.ndarray and y.dtype == np.dtype(getattr(ml_dtypes, qdq._CODE_TYPES[
                qdq._type_number(dtype, "t")][0]))
        else:
            assert isinstance(y, qdq.CodeArray) and y.qdq_dtype == dtype
    # Other results than the operators' keep their own representation too.
    p = qdq.quantize_linear(x, np.float32(0.5), output_dtype="int4", packed=True)
    assert qdq.element_type(p.to_array()) == "int4"


def test_the_library_call_can_be_timed_in_process():
    x = RNG.standard_normal(1024).astype(np.float32)
    s = np.asarray(np.float32(0.1))
    t = qdq._qdq._time_library_call(True, x, 1, s, 1, None, 0, {"output_dtype": 22}, 25, 3, 3)
    assert isinstance(t, float) and t > 0
    y = qdq.quantize_linear(x, s, output_dtype="int4")
    a, at = qdq._as_input(y, "x", raw_sub_byte=True)
    assert qdq._qdq._time_library_call(False, a, at, s, 1, None, 0, {}, 25, 2) > 0
    with pytest.raises(ValueError, match="element type"):
        qdq._qdq._time_library_call(False, x, 1, s, 1, None, 0, {}, 25, 1)


@pytest.mark.parametrize("dtype", sorted(INTEGER_SUB_BYTE))
@pytest.mark.parametrize("shape,kw,scale_shape", [((1024, 1024), {"axis": 0, "block_size": 32}, (32, 1024)),
                                                  ((2048, 512), {"axis": 1, "block_size": 32}, (2048, 16)),
                                                  ((1 << 20,), {}, ()),
                                                  # split on several threads only (64 Ki to 512 Ki elements)
                                                  ((256, 512), {"axis": 0, "block_size": 32}, (8, 512)),
                                                  ((3 << 16,), {}, ())])
@pytest.mark.parametrize("threads", [1, 2])
def test_large_calls_read_chunks_in_place_or_packed_like_the_packed_tensor(threads, dtype, shape, kw, scale_shape):
    # Large enough to be split into chunks (python/src/module.cpp, ChunkPlan), run as tasks.
    with num_threads(threads):
        lo, hi = INTEGER_SUB_BYTE[dtype]
        signed = lo < 0
        values = RNG.integers(lo, hi + 1, shape)
        s = RNG.uniform(0.01, 2, scale_shape).astype(np.float32)
        zp = qdq.CodeArray(RNG.integers(lo, hi + 1, scale_shape).astype(np.int8 if signed else np.uint8), dtype)
        forms = representations(values, dtype)
        want = qdq.dequantize_linear(qdq.pack(forms["CodeArray"]), s, qdq.pack(zp), **kw)
        if ml_dtypes is not None:
            # qdq's layout except for one negative value in ml_dtypes' own (low bits only) in a late
            # chunk: that chunk is packed, the others are read in place.
            mixed = np.array(forms["ml_dtypes (qdq's layout)"])
            flat = mixed.reshape(-1).view(np.uint8)
            k = flat.size * 3 // 4
            flat[k] = np.uint8(lo + 16 if signed else hi) & ((1 << (4 if "4" in dtype else 2)) - 1)
            values.reshape(-1)[k] = lo if signed else hi
            forms["ml_dtypes (mixed layouts)"] = mixed
            want_mixed = qdq.dequantize_linear(qdq.pack(qdq.CodeArray(values.astype(
                np.int8 if signed else np.uint8), dtype)), s, qdq.pack(zp), **kw)
        for name, x in forms.items():
            expected = want_mixed if name == "ml_dtypes (mixed layouts)" else want
            assert_bit_exact(qdq.dequantize_linear(x, s, zp, **kw), expected, f"{dtype} {name} {kw}")
            assert_bit_exact(qdq.dequantize_linear(x, s, qdq.pack(zp), **kw), expected, f"{dtype} {name} packed zp")


@pytest.mark.parametrize("dtype", ["int2", "int4"])
@pytest.mark.parametrize("shape,kw,scale_shape", [((8, 48), {"axis": 1}, (48,)),
                                                  ((8, 48), {"axis": 1, "block_size": 16}, (8, 3)),
                                                  ((256, 512), {"axis": 0, "block_size": 32}, (8, 512)),
                                                  ((1 << 20,), {}, ())])
@pytest.mark.parametrize("threads", [1, 2])
def test_twos_complement_codes_dequantize_like_the_packed_tensor_with_every_zero_point_form(threads, dtype, shape,
                                                                                          kw, scale_shape):
    # x and its zero point as two's complement codes (ml_dtypes' own int4/int2 layout, or a CodeArray of
    # uint8 codes) are sign-extended for the 8-bit kernel, whole or chunk by chunk; each zero point form
    # gives the packed tensor's result.
    with num_threads(threads):
        lo, hi = INTEGER_SUB_BYTE[dtype]
        values = RNG.integers(lo, hi + 1, shape)
        s = RNG.uniform(0.01, 2, scale_shape).astype(np.float32)
        zp_values = RNG.integers(lo, hi + 1, scale_shape)
        x_forms = representations(values, dtype)
        zp_forms = representations(zp_values, dtype)
        want = qdq.dequantize_linear(qdq.pack(x_forms["CodeArray"]), s, qdq.pack(zp_forms["CodeArray"]), **kw)
        for x_name, x in x_forms.items():
            for zp_name, zp in zp_forms.items():
                label = f"{dtype} x {x_name}, zero point {zp_name}, {kw}"
                assert_bit_exact(qdq.dequantize_linear(x, s, zp, **kw), want, label)
                out = np.empty(shape, np.float32)
                qdq.dequantize_linear(x, s, zp, out=out, **kw)
                assert_bit_exact(out, want, label + " out=")


def numpy_packed(values, bits):
    """ONNX's packed bytes of `values` computed by NumPy (first element in the low bits, zero padding)."""
    per_byte = 8 // bits
    c = (values.astype(np.int16) & ((1 << bits) - 1)).astype(np.uint8).reshape(-1)
    c = np.concatenate([c, np.zeros(-c.size % per_byte, np.uint8)]).reshape(-1, per_byte)
    return np.bitwise_or.reduce(c << (np.arange(per_byte, dtype=np.uint8) * bits), axis=1).astype(np.uint8)


@pytest.mark.parametrize("dtype", sorted(INTEGER_SUB_BYTE) + ["float4e2m1"])
def test_unpacking_word_by_word_gives_every_code(dtype):
    lo, hi = INTEGER_SUB_BYTE.get(dtype, (0, 15))
    bits = 2 if "2" in dtype and dtype != "float4e2m1" else 4
    for n in list(range(0, 70)) + [100003, 1 << 20]:
        values = RNG.integers(lo, hi + 1, n)
        got = qdq.unpack(qdq.PackedTensor(numpy_packed(values, bits), dtype, (n,)))
        assert qdq.element_type(got) == dtype
        items = qdq._as_input(got, "x")[0].view(np.ndarray)
        assert np.array_equal(items.astype(np.int64), values), f"{dtype} n={n}"
        # The operators' results unpack the same way (a packed result, unpacked by the binding).
        if n and dtype != "float4e2m1":
            x = values.astype(np.float32)
            q = qdq.quantize_linear(x, np.float32(1), output_dtype=dtype) if lo < 0 else \
                qdq.quantize_linear(x, np.float32(1), qdq.CodeArray(np.array(0, np.uint8), dtype))
            assert np.array_equal(qdq._as_input(q, "q")[0].view(np.ndarray).astype(np.int64), values), f"{dtype} n={n}"
