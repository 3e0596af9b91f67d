"""out= (results written into the caller's arrays) and ONNX's packed bytes (qdq.PackedTensor)."""
import numpy as np
import pytest

import qdq
from conftest import assert_bit_exact, codes, num_threads

RNG = np.random.default_rng(99)
SUB_BYTE = ["int4", "uint4", "int2", "uint2", "float4e2m1"]


def weights(shape=(6, 64)):
    return (RNG.standard_normal(shape) * 3).astype(np.float32)


def test_out_receives_the_result_for_every_representation():
    x = weights()
    s = np.float32(0.25)
    for dtype in ["int8", "uint16", "int4", "uint2", "float8e4m3fn", "float4e2m1"]:
        want = qdq.quantize_linear(x, s, output_dtype=dtype)
        out = np.empty_like(want)  # ml_dtypes array, CodeArray or plain array, like the result
        if isinstance(want, qdq.CodeArray):
            out = qdq.CodeArray(np.zeros(want.shape, want.dtype), dtype)
        got = qdq.quantize_linear(x, s, output_dtype=dtype, out=out)
        assert got is out
        assert_bit_exact(got, want, dtype)
    y = qdq.dequantize_linear(qdq.quantize_linear(x, s, np.int8(0)), s, np.int8(0))
    out = np.empty_like(y)
    assert qdq.dequantize_linear(qdq.quantize_linear(x, s, np.int8(0)), s, np.int8(0), out=out) is out
    assert_bit_exact(out, y)
    out8 = np.empty(x.shape, np.uint8)
    y8, scale, zp = qdq.dynamic_quantize_linear(x, out=out8)
    assert y8 is out8 and np.array_equal(out8, qdq.dynamic_quantize_linear(x)[0])


def test_out_is_checked_before_anything_is_written():
    x = weights((4, 8))
    s = np.float32(0.5)
    bad = [
        (np.empty((4, 8), np.uint8), TypeError, "holds|items"),         # int8 result, uint8 out
        (np.empty((4, 9), np.int8), ValueError, "shape"),
        (np.empty((8, 8), np.int8)[::2], TypeError, "contiguous"),
        ([0] * 32, TypeError, "NumPy array"),
    ]
    for out, error, match in bad:
        with pytest.raises(error, match=match):
            qdq.quantize_linear(x, s, np.int8(0), out=out)
    ro = np.zeros((4, 8), np.int8)
    ro.flags.writeable = False
    with pytest.raises((TypeError, ValueError)):
        qdq.quantize_linear(x, s, np.int8(0), out=ro)
    assert not ro.any()
    with pytest.raises(TypeError, match="packed"):
        qdq.quantize_linear(x, s, np.int8(0), out=np.empty((4, 8), np.int8), packed=True)


@pytest.mark.parametrize("dtype", SUB_BYTE + ["int8", "float8e5m2", "uint16"])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (0,)])
def test_packed_result_is_onnx_raw_data(dtype, shape):
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    s = np.float32(0.5)
    y = qdq.quantize_linear(x, s, output_dtype=dtype)
    p = qdq.quantize_linear(x, s, output_dtype=dtype, packed=True)
    assert isinstance(p, qdq.PackedTensor) and p.dtype == dtype and p.shape == shape
    c, _ = codes(y)
    bits = qdq._qdq.bit_width(qdq._type_number(dtype, "t"))
    flat = c.reshape(-1).astype(np.int64) & ((1 << bits) - 1) if bits < 8 else None
    if bits < 8:  # ONNX's layout, written out independently: element k at bit (k*bits) % 8 of byte k*bits//8
        want = np.zeros((flat.size * bits + 7) // 8, np.uint8)
        for k, v in enumerate(flat):
            want[k * bits // 8] |= np.uint8(v << (k * bits % 8))
        assert p.tobytes() == want.tobytes()
    else:
        assert p.tobytes() == np.ascontiguousarray(c).tobytes()
    assert_bit_exact(p.to_array(), y)
    assert qdq.pack(y).tobytes() == p.tobytes()
    assert_bit_exact(qdq.unpack(qdq.pack(y)), y)
    # Packed input: DequantizeLinear reads it without unpacking, and agrees with the unpacked input.
    assert_bit_exact(qdq.dequantize_linear(p, s), qdq.dequantize_linear(y, s))


def test_packed_tensor_checks_its_size():
    with pytest.raises(ValueError, match="take 2 bytes"):
        qdq.PackedTensor(np.zeros(3, np.uint8), "int4", (4,))
    p = qdq.PackedTensor(b"\x21\x03", "uint4", (3,))
    assert codes(p.to_array())[0].tolist() == [1, 2, 3]
    assert bytes(p) == b"\x21\x03"
    assert "uint4" in repr(p)
    with pytest.raises(TypeError):
        qdq.unpack(np.zeros(2, np.uint8))


@pytest.mark.skipif(not qdq.HAVE_ML_DTYPES, reason="ml_dtypes is not installed: only the CodeArray representation is tested")
def test_ml_dtypes_sub_byte_inputs_use_the_low_bits_only():
    import ml_dtypes

    x = np.array([-8, -1, 0, 7, 3], ml_dtypes.int4)
    raw = x.view(np.uint8).copy()
    dirty = (raw | np.uint8(0xF0)).view(ml_dtypes.int4)  # ml_dtypes leaves the upper bits unspecified
    assert qdq.dequantize_linear(dirty, np.float32(1)).tolist() == [-8, -1, 0, 7, 3]
    u = np.array([0, 3, 1, 2], np.uint8).view(ml_dtypes.uint2)
    dirty_u = (u.view(np.uint8) | np.uint8(0xFC)).view(ml_dtypes.uint2)
    assert qdq.dequantize_linear(dirty_u, np.float32(2)).tolist() == [0, 6, 2, 4]


@pytest.mark.skipif(not qdq.HAVE_ML_DTYPES, reason="ml_dtypes is not installed: only the CodeArray representation is tested")
@pytest.mark.parametrize("name", ["int4", "uint4", "int2", "uint2", "float4_e2m1fn"])
@pytest.mark.parametrize("shape,scale_shape,kw", [
    ((7,), (), {}),
    ((33, 131), (), {}),
    ((64, 1024), (64,), {"axis": 0}),
    ((64, 1024), (64, 32), {"axis": 1, "block_size": 32}),
    ((256, 300), (8, 300), {"axis": 0, "block_size": 32}),
    ((3, 5, 7), (3, 2, 7), {"axis": 1, "block_size": 3}),
    ((1024, 1024), (1024, 32), {"axis": -1, "block_size": 32}),  # 1 Mi elements: the library's threads
])
def test_ml_dtypes_sub_byte_x_is_read_in_place_as_packed(name, shape, scale_shape, kw):
    """DequantizeLinear of an ml_dtypes sub-byte array (read by the library one code per byte, high bits
    dirty) gives the bytes of the same codes given packed, with an ml_dtypes zero point, and into out=."""
    import ml_dtypes

    dtype = np.dtype(getattr(ml_dtypes, name))
    bits = 2 if name.endswith("2") else 4
    rng = np.random.default_rng(sum(shape) + bits)
    codes = rng.integers(0, 1 << bits, shape, dtype=np.uint8)
    dirty = (codes | (rng.integers(0, 256, shape, dtype=np.uint8) << bits)).view(dtype)
    given = qdq.PackedTensor(numpy_pack(codes, bits), name.replace("_e2m1fn", "e2m1"), shape)
    s = rng.uniform(0.5, 2, scale_shape).astype(np.float32)
    zp_args = [()]
    if not name.startswith("float"):
        zp_codes = rng.integers(0, 1 << bits, scale_shape, dtype=np.uint8)
        zp_args.append((zp_codes.view(dtype),))
    for zp in zp_args:
        expected = qdq.dequantize_linear(given, s, *zp, **kw)
        got = qdq.dequantize_linear(dirty, s, *zp, **kw)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert got.tobytes() == expected.tobytes(), (name, shape, kw, bool(zp))
        out = np.full(shape, np.nan, np.float32)
        assert qdq.dequantize_linear(dirty, s, *zp, out=out, **kw) is out
        assert out.tobytes() == expected.tobytes()


def test_out_of_range_codes_are_still_named():
    with pytest.raises(ValueError, match="element 2 is 16"):
        qdq.dequantize_linear(_uint4_with(16), np.float32(1))
    with pytest.raises(ValueError, match="element 1 is -9"):
        qdq.save_tensor("/nonexistent/x.pb", _int4_raw(np.array([1, -9], np.int8)))


def _uint4_with(value):
    c = qdq.CodeArray(np.array([1, 2, 3], np.uint8), "uint4")
    c.view(np.ndarray)[2] = value  # bypasses CodeArray's own check, as a buggy caller might
    return c


def _int4_raw(values):
    c = qdq.CodeArray(np.zeros(values.shape, np.int8), "int4")
    c.view(np.ndarray)[:] = values
    return c


def numpy_pack(codes, bits):
    """ONNX's packed layout computed by NumPy (first element in the low bits, last byte zero-padded)."""
    per_byte = 8 // bits
    c = (codes.view(np.uint8).reshape(-1) & ((1 << bits) - 1)).astype(np.uint8)
    c = np.concatenate([c, np.zeros(-c.size % per_byte, np.uint8)]).reshape(-1, per_byte)
    return np.bitwise_or.reduce(c << (np.arange(per_byte, dtype=np.uint8) * bits), axis=1).astype(np.uint8)


@pytest.mark.parametrize("dtype,bits,lo,hi", [("int4", 4, -8, 7), ("uint4", 4, 0, 15), ("int2", 2, -2, 1),
                                              ("uint2", 2, 0, 3)])
def test_large_inputs_pack_like_numpy_and_a_late_bad_item_is_found(dtype, bits, lo, hi):
    # Several of the binding's 16 Ki-item chunks, and a length that is not a multiple of 4.
    n = 3 * 16384 + 7
    values = RNG.integers(lo, hi + 1, n).astype(np.int8 if lo < 0 else np.uint8)
    packed = qdq.pack(qdq.CodeArray(values, dtype))
    assert np.array_equal(packed.data, numpy_pack(values, bits))
    assert_bit_exact(packed.to_array(), qdq.CodeArray(values, dtype))
    bad = values.copy()
    bad[2 * 16384 + 5] = hi + 1
    with pytest.raises(ValueError, match=f"element {2 * 16384 + 5} is {hi + 1}"):
        qdq.dequantize_linear(_code_array(bad, dtype), np.float32(1))


def _code_array(values, dtype):
    """A CodeArray holding `values` without CodeArray's own range check (to reach the binding's)."""
    a = values.view(qdq.CodeArray)
    a.qdq_dtype = dtype
    return a


# Large enough for the binding to split a call into chunks of rows (>= 2 x 256 Ki elements, each
# chunk a task on the library's threads; with several threads from 64 Ki elements, a chunk per
# thread), with shapes whose chunks need scale and zero-point slices, partial blocks and rows of an
# odd length; the packed path (never split) is the reference.
CHUNKED = [
    (((1 << 20) + 6,), {}, ()),                                # 1-D, per tensor
    ((1000, 1051), {"axis": 0}, (1000,)),                      # per axis along the split dimension
    ((700, 1537), {"axis": 1}, (1537,)),                       # per axis across it
    ((1000, 1051), {"axis": 0, "block_size": 32}, (32, 1051)),  # blocks of rows, the last one partial
    ((2000, 603), {"axis": 1, "block_size": 32}, (2000, 19)),  # blocks along rows (odd scale rows)
    ((350001, 3), {"axis": 1}, (3,)),                          # rows of 3 elements: chunks of even rows
    # Split on several threads only: 64 Ki to 512 Ki elements.
    (((1 << 16) + 6,), {}, ()),                                # 1-D, per tensor
    ((301, 333), {"axis": 0}, (301,)),                         # per axis along the split dimension
    ((250, 1051), {"axis": 0, "block_size": 32}, (8, 1051)),   # blocks of rows, the last one partial
    ((150, 1003), {"axis": 1, "block_size": 32}, (150, 32)),   # blocks along rows (odd rows)
    ((40001, 3), {"axis": 1}, (3,)),                           # rows of 3 elements
]


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["int4", "uint4", "int2", "float4e2m1"])
@pytest.mark.parametrize("shape,kw,scale_shape", CHUNKED)
def test_calls_split_into_chunks_give_the_whole_calls_result(threads, dtype, shape, kw, scale_shape):
    with num_threads(threads):
        rng = np.random.default_rng(len(shape) * 1000 + shape[-1])
        x = (rng.standard_normal(shape) * 4).astype(np.float32)
        s = np.asarray(rng.uniform(0.5, 2, scale_shape), np.float32)
        zp = None
        if dtype in ("int4", "uint4", "int2"):
            lo, hi = {"int4": (-3, 3), "uint4": (5, 9), "int2": (-1, 0)}[dtype]
            zp = qdq.CodeArray(rng.integers(lo, hi + 1, scale_shape).astype(np.int8 if lo < 0 else np.uint8), dtype)
        qkw = dict(kw) if zp is not None else dict(kw, output_dtype=dtype)
        whole = qdq.quantize_linear(x, s, zp, packed=True, **qkw)
        split = qdq.quantize_linear(x, s, zp, **qkw)
        assert_bit_exact(split, whole.to_array(), "QuantizeLinear")
        out = np.empty_like(split)
        assert_bit_exact(qdq.quantize_linear(x, s, zp, out=out, **qkw), whole.to_array(), "QuantizeLinear out=")
        assert_bit_exact(qdq.dequantize_linear(split, s, zp, **kw), qdq.dequantize_linear(whole, s, zp, **kw),
                         "DequantizeLinear")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [1 << 21, 1 << 17, 100])  # chunks of 256 Ki elements; on 2 threads, of 64 Ki
@pytest.mark.parametrize("items,fill,bad,later_bad", [
    (np.int8, 0, 9, -100),   # int8 values, read in place
    (np.uint8, 15, 16, 200),  # uint8 two's complement codes (15 is -1), sign-extended for the 8-bit kernel
])
def test_a_bad_item_in_a_later_chunk_is_named(threads, n, items, fill, bad, later_bad):
    # Two bad items in different chunks (tasks that may run in either order): the first is named, and
    # nothing is written into out=.
    with num_threads(threads):
        values = np.full(n, fill, items)
        values[n // 2 + 3] = bad
        values[n - 2] = later_bad
        x = values.view(qdq.CodeArray)
        x.qdq_dtype = "int4"
        with pytest.raises(ValueError, match=f"element {n // 2 + 3} is {bad}"):
            qdq.dequantize_linear(x, np.float32(1))
        out = np.full(values.shape, 7, np.float32)
        with pytest.raises(ValueError, match=f"element {n // 2 + 3} is {bad}"):
            qdq.dequantize_linear(x, np.float32(1), out=out)
        assert (out == 7).all()  # nothing written into out= on error
        with pytest.raises(ValueError, match=f"element {n // 2 + 3} is {bad}"):
            qdq.pack(x)


# QuantizeLinear to a 2/4-bit integer type with the result one value per byte runs the int8/uint8
# kernel and saturates its codes to the narrow range: the packed result (the narrow type's own
# kernel) is the reference, on the values where the two could part: NaN, ±inf, ties, quotients far
# out of range, every zero point, every form a zero point comes in.
SPECIAL = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 7.5, -8.5,
                    8.5, 15.5, 16.5, -9.5, 3e38, -3e38, 1e-45, 1e30, -1e30, 127.5, -128.5, 255.5, 300.0],
                   np.float32)


def _zero_point_forms(values, dtype):
    """The zero point `values` (int8 values or uint8 codes) as each form a caller may pass."""
    forms = {"CodeArray": qdq.CodeArray(values, dtype), "packed": qdq.pack(qdq.CodeArray(values, dtype))}
    if dtype in ("int4", "int2"):  # two's complement codes in a uint8 array
        forms["codes"] = qdq.CodeArray((values.astype(np.int16) & ((1 << int(dtype[-1])) - 1)).astype(np.uint8), dtype)
    if qdq.HAVE_ML_DTYPES:
        import ml_dtypes

        ml = values.astype(getattr(ml_dtypes, dtype))
        forms["ml_dtypes"] = ml
        mask = np.uint8(0xF0 if dtype.endswith("4") else 0xFC)
        forms["ml_dtypes, dirty upper bits"] = (ml.view(np.uint8) | mask).view(getattr(ml_dtypes, dtype))
    return forms


NARROW = [("int4", -8, 7, opset) for opset in (21, 23, 25)] + [("uint4", 0, 15, opset) for opset in (21, 23, 25)] + [
    ("int2", -2, 1, 25), ("uint2", 0, 3, 25)]  # 2-bit types since QuantizeLinear-25


@pytest.mark.parametrize("dtype,lo,hi,opset", NARROW)
def test_narrow_integer_results_equal_the_packed_kernels(dtype, lo, hi, opset):
    rng = np.random.default_rng(hi * 100 + opset)
    for trial in range(6):
        x = np.concatenate([SPECIAL, (rng.standard_normal(101) * 10 ** rng.uniform(-1, 3)).astype(np.float32)])
        x = rng.permutation(np.tile(x, 3)).reshape(6, -1)
        for scale_shape, kw in [((), {}), ((6,), {"axis": 0}), ((6, -(-x.shape[1] // 16)), {"axis": -1, "block_size": 16})]:
            s = rng.choice(np.array([1, 0.5, 0.25, 3, 0.1, 1e-3, 7e3, 2 ** -20], np.float32), scale_shape)
            s = np.asarray(s, np.float32)
            zp_values = rng.integers(lo, hi + 1, scale_shape).astype(np.int8 if lo < 0 else np.uint8)
            if trial == 0:
                zp_values[...] = lo
            elif trial == 1:
                zp_values[...] = hi
            want = qdq.quantize_linear(x, s, output_dtype=dtype, opset=opset, packed=True, **kw).to_array()
            assert_bit_exact(qdq.quantize_linear(x, s, output_dtype=dtype, opset=opset, **kw), want, "no zero point")
            for form, zp in _zero_point_forms(zp_values, dtype).items():
                want = qdq.quantize_linear(x, s, zp, opset=opset, packed=True, **kw).to_array()
                got = qdq.quantize_linear(x, s, zp, opset=opset, **kw)
                assert_bit_exact(got, want, f"{dtype} {scale_shape} zero point as {form}")
                out = np.empty_like(got) if not isinstance(got, qdq.CodeArray) else qdq.CodeArray(
                    np.zeros(got.shape, got.view(np.ndarray).dtype), dtype)
                assert qdq.quantize_linear(x, s, zp, opset=opset, out=out, **kw) is out
                assert_bit_exact(out, want, f"{dtype} {scale_shape} out=, zero point as {form}")
                if opset >= 23:  # the division in float16 and bfloat16
                    for precision in ("float16", "bfloat16"):
                        want = qdq.quantize_linear(x, s, zp, opset=opset, precision=precision, packed=True,
                                                   **kw).to_array()
                        got = qdq.quantize_linear(x, s, zp, opset=opset, precision=precision, **kw)
                        assert_bit_exact(got, want, f"{dtype} precision {precision}, zero point as {form}")


def test_narrow_integer_zero_points_out_of_range_are_still_named():
    bad = np.array([0, 9, 0], np.int8).view(qdq.CodeArray)
    bad.qdq_dtype = "int4"
    with pytest.raises(ValueError, match="element 1 is 9"):
        qdq.quantize_linear(np.ones((2, 3), np.float32), np.ones(3, np.float32), bad, axis=1)
