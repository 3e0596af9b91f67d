"""qdq — bit-exact ONNX QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear for NumPy.

The functions take and return NumPy arrays and follow the ONNX operators of the opset you name
(10 to 25, default 25), with qdq's documented policy where the ONNX text and its reference
implementation disagree (see the C++ header qdq/qdq.hpp)::

    import numpy as np, qdq
    x = np.random.default_rng(0).standard_normal((4, 8), dtype=np.float32)
    y = qdq.quantize_linear(x, np.float32(0.02), np.int8(0))        # int8, per tensor
    w = qdq.dequantize_linear(y, np.float32(0.02), np.int8(0))      # float32
    s4 = np.abs(x).reshape(4, 2, 4).max(axis=2) / np.float32(7)      # one scale per 4 columns
    y4 = qdq.quantize_linear(x, s4, output_dtype="int4", block_size=4, axis=1)   # int4, blocked

Element types
-------------
Types NumPy has (float32, float16, float64, int8, uint8, int16, uint16, int32, ...) are plain arrays
of that dtype. Python floats and lists of floats are taken as float32 (ONNX's usual type).

The others — bfloat16, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, float8e8m0,
float4e2m1, int4, uint4, int2, uint2 — come in one of two representations:

1. ml_dtypes arrays, when the ``ml_dtypes`` package can be imported (``qdq.HAVE_ML_DTYPES``):
   inputs may be arrays of ``ml_dtypes.float8_e4m3fn``, ``float8_e4m3fnuz``, ``float8_e5m2``,
   ``float8_e5m2fnuz``, ``float8_e8m0fnu``, ``float4_e2m1fn``, ``int4``, ``uint4``, ``int2``, ``uint2``
   or ``bfloat16``, and outputs of these types are returned as such arrays.
   (Set the environment variable ``QDQ_NO_ML_DTYPES=1`` before importing qdq to get representation
   2 even where ml_dtypes is installed.)

2. ``qdq.CodeArray``, always accepted, and returned when ml_dtypes is not available: a NumPy array
   subclass holding one element code per item, with the type's name in ``.qdq_dtype``:

   =============================================  ==========  ===================================
   type                                           item dtype  values
   =============================================  ==========  ===================================
   float8e4m3fn, float8e4m3fnuz, float8e5m2,      uint8       the 8-bit code (e.g. 0x38 = 1.0 in
   float8e5m2fnuz, float8e8m0                                 float8e4m3fn)
   float4e2m1                                     uint8       the 4-bit code, 0..15
   uint4 / uint2                                  uint8       the value, 0..15 / 0..3
   int4 / int2                                    int8        the value, sign-extended: -8..7 /
                                                              -2..1 (as ml_dtypes stores them);
                                                              as an input also a uint8 array of
                                                              two's complement codes 0..15 / 0..3
   bfloat16                                       uint16      the 16-bit code (the upper half of
                                                              the float32 bit pattern)
   =============================================  ==========  ===================================

   Sub-byte types are unpacked, one element per byte; qdq packs them into ONNX's layout (two 4-bit or
   four 2-bit elements per byte, first in the low bits) and unpacks results, in C++. Make one with
   ``qdq.CodeArray(codes, "float8e4m3fn")``; a CodeArray returned by one function can be passed to
   another as it is. NumPy arithmetic on a CodeArray works on the codes and returns plain arrays.

Wherever a type is named (``output_dtype``, ``precision``, ``CodeArray``) it may be a qdq/ONNX name
("int4", "FLOAT8E4M3FN", "tensor(float16)"), an ml_dtypes name ("float8_e4m3fn"), an ONNX
TensorProto.DataType number (22 = INT4), a NumPy dtype (``np.int8``, ``"float16"``) or an ml_dtypes
dtype (``ml_dtypes.int4``).

Attributes
----------
An attribute is passed to the operator only when you give it: ``axis`` whenever it is given
explicitly (even ``axis=1``), ``block_size``, ``saturate``, ``output_dtype`` and ``precision`` only
when they differ from the ONNX default (0, True, None/0, None/0). So ``opset=10`` works with the
defaults, while an attribute the opset does not define (``axis`` at opset 10, ``precision`` below 23)
raises ValueError, as the operator would reject the node.

Errors and threads
------------------
Everything the library rejects (types, shapes, attributes, out-of-range codes) raises ValueError with
qdq's message; arguments of the wrong Python type raise TypeError. The computation runs without the
GIL, on qdq's thread pool: ``qdq.set_num_threads(n)`` sets its size (0 = default: QDQ_NUM_THREADS,
else the number of hardware threads). Contiguous inputs of the right dtype are read in place, not
copied (sub-byte inputs are packed into a temporary buffer, except int4/uint4/int2/uint2 values that
DequantizeLinear reads in place as the same int8/uint8 tensor).
"""

import json as _json
import os as _os
import numbers as _numbers

import numpy as _np

from . import _qdq

__version__ = _qdq.__version__

__all__ = [
    "quantize_linear",
    "dequantize_linear",
    "dynamic_quantize_linear",
    "load_tensor",
    "save_tensor",
    "quantize_model",
    "QUANTIZE_FORMATS",
    "CodeArray",
    "PackedTensor",
    "pack",
    "unpack",
    "element_type",
    "set_num_threads",
    "get_num_threads",
    "set_buffer_cache",
    "HAVE_ML_DTYPES",
    "__version__",
]

# --- optional ml_dtypes -------------------------------------------------------------------------

_ml_dtypes = None
if _os.environ.get("QDQ_NO_ML_DTYPES", "") in ("", "0"):
    try:
        import ml_dtypes as _ml_dtypes  # noqa: F401
    except ImportError:  # pragma: no cover - depends on the machine
        _ml_dtypes = None

# --- element types ------------------------------------------------------------------------------

# ONNX TensorProto.DataType numbers.
_FLOAT, _UINT8, _INT8, _UINT16, _INT16, _INT32, _INT64 = 1, 2, 3, 4, 5, 6, 7
_BOOL, _FLOAT16, _DOUBLE, _UINT32, _UINT64 = 9, 10, 11, 12, 13
_BFLOAT16, _F8E4M3FN, _F8E4M3FNUZ, _F8E5M2, _F8E5M2FNUZ = 16, 17, 18, 19, 20
_UINT4, _INT4, _FLOAT4E2M1, _F8E8M0, _UINT2, _INT2 = 21, 22, 23, 24, 25, 26

# Types NumPy represents natively.
_NATIVE = {
    _FLOAT: _np.dtype(_np.float32),
    _DOUBLE: _np.dtype(_np.float64),
    _FLOAT16: _np.dtype(_np.float16),
    _BOOL: _np.dtype(_np.bool_),
    _INT8: _np.dtype(_np.int8),
    _INT16: _np.dtype(_np.int16),
    _INT32: _np.dtype(_np.int32),
    _INT64: _np.dtype(_np.int64),
    _UINT8: _np.dtype(_np.uint8),
    _UINT16: _np.dtype(_np.uint16),
    _UINT32: _np.dtype(_np.uint32),
    _UINT64: _np.dtype(_np.uint64),
}
_NATIVE_BY_DTYPE = {dt: t for t, dt in _NATIVE.items()}
_NATIVE_BY_SCALAR_TYPE = {dt.type: t for t, dt in _NATIVE.items()}  # np.float32 -> FLOAT, ...

# Types NumPy lacks: their ml_dtypes names and the bits of one code.
_CODE_TYPES = {
    _BFLOAT16: ("bfloat16", 16),
    _F8E4M3FN: ("float8_e4m3fn", 8),
    _F8E4M3FNUZ: ("float8_e4m3fnuz", 8),
    _F8E5M2: ("float8_e5m2", 8),
    _F8E5M2FNUZ: ("float8_e5m2fnuz", 8),
    _F8E8M0: ("float8_e8m0fnu", 8),
    _FLOAT4E2M1: ("float4_e2m1fn", 4),
    _UINT4: ("uint4", 4),
    _INT4: ("int4", 4),
    _UINT2: ("uint2", 2),
    _INT2: ("int2", 2),
}
_ML_NAME_TO_TYPE = {name: t for t, (name, _) in _CODE_TYPES.items()}
_SIGNED_SUB_BYTE = (_INT4, _INT2)


def _ml_dtype(t):
    """The ml_dtypes dtype for type number t, or None (no ml_dtypes, or too old to have it)."""
    if _ml_dtypes is None or t not in _CODE_TYPES:
        return None
    scalar = getattr(_ml_dtypes, _CODE_TYPES[t][0], None)
    return None if scalar is None else _np.dtype(scalar)


HAVE_ML_DTYPES = _ml_dtypes is not None

# Resolved once at import, so a call looks a dtype up in a dict instead of asking NumPy for its
# name (dtype.name runs Python code in NumPy 2) or building an ml_dtypes dtype.
_ML_DTYPE_BY_TYPE = {t: dt for t, dt in ((t, _ml_dtype(t)) for t in _CODE_TYPES) if dt is not None}
_TYPE_BY_ML_DTYPE = {dt: t for t, dt in _ML_DTYPE_BY_TYPE.items()}
# Arrays of these dtypes go to the compiled layer as they are (_as_input's fast path): NumPy's own
# types, and with raw_sub_byte the ml_dtypes ones (it reads their items' codes, see module.cpp).
_RAW_TYPE_BY_DTYPE = {**_NATIVE_BY_DTYPE, **_TYPE_BY_ML_DTYPE}
_qdq.set_result_dtypes(_ML_DTYPE_BY_TYPE)


def _type_name(t):
    """qdq's lower-case name of type number t ("int4", "float8e4m3fn")."""
    return _qdq.data_type_name(t).lower()


def _type_from_dtype(dt):
    """The type number of a NumPy or ml_dtypes dtype (either byte order), or None."""
    if not dt.isnative:
        dt = dt.newbyteorder("=")
    t = _NATIVE_BY_DTYPE.get(dt)
    if t is not None:
        return t
    return _TYPE_BY_ML_DTYPE.get(dt)


# Type names already resolved (output_dtype="int4" on every call resolves once): name -> number.
_TYPE_BY_NAME = {}


def _type_number(spec, what):
    """Resolves a type given by name, ONNX number, NumPy dtype or ml_dtypes dtype."""
    if type(spec) is str:
        t = _TYPE_BY_NAME.get(spec)
        if t is None:
            t = _type_number_uncached(spec, what)
            if len(_TYPE_BY_NAME) < 256:  # bounded: names are few, but callers could make any
                _TYPE_BY_NAME[spec] = t
        return t
    return _type_number_uncached(spec, what)


def _type_number_uncached(spec, what):
    if isinstance(spec, bool) or spec is None:
        raise TypeError(f"{what}: expected a type name, an ONNX DataType number or a dtype, got {spec!r}")
    if isinstance(spec, _numbers.Integral):
        value = int(spec)
        if not 1 <= value <= 26 or value in (8, 14, 15):
            raise ValueError(f"{what}: {value} is not an ONNX element type number qdq supports")
        return value
    if isinstance(spec, str):
        t = _qdq.parse_data_type(spec)
        if t is None:
            t = _ML_NAME_TO_TYPE.get(spec.lower())
        if t is None:
            try:
                t = _type_from_dtype(_np.dtype(spec))
            except TypeError:
                t = None
        if t is None or t in (8, 14, 15):
            raise ValueError(f"{what}: unknown element type name {spec!r}")
        return t
    try:
        dt = _np.dtype(spec)
    except TypeError:
        raise TypeError(f"{what}: expected a type name, an ONNX DataType number or a dtype, "
                        f"got {type(spec).__name__}") from None
    t = _type_from_dtype(dt)
    if t is None:
        raise ValueError(f"{what}: dtype {dt} is not an ONNX element type qdq supports")
    return t



# --- CodeArray ----------------------------------------------------------------------------------


class CodeArray(_np.ndarray):
    """Element codes of a type NumPy lacks (float8, float4, int4, int2, bfloat16, ...).

    ``CodeArray(codes, dtype)`` wraps ``codes`` (any array-like of integers; no copy when it already
    has the item dtype below) and records the type in ``.qdq_dtype``:

    - float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, float8e8m0: uint8 codes;
    - float4e2m1, uint4, uint2: uint8, one code per item (0..15 / 0..3);
    - int4, int2: int8 values -8..7 / -2..1 (sign-extended), or uint8 two's complement codes;
    - bfloat16: uint16 codes.

    Slicing, reshaping and transposing keep the type; arithmetic and comparisons act on the codes
    and return plain NumPy arrays.
    """

    def __new__(cls, codes, dtype):
        t = _type_number(dtype, "CodeArray dtype")
        if t not in _CODE_TYPES:
            raise ValueError(f"CodeArray: {_type_name(t)} has a NumPy dtype ({_NATIVE[t]}); use a plain array")
        bits = _CODE_TYPES[t][1]
        if isinstance(codes, _np.ndarray):
            a = codes.view(_np.ndarray)
        else:
            a = _np.asarray(codes)
        ml = _ml_dtype(t)
        if ml is not None and a.dtype == ml:
            a = _codes_from_ml(a, t)
        allowed = [_np.dtype(_np.uint16)] if bits == 16 else [_np.dtype(_np.uint8)]
        if t in _SIGNED_SUB_BYTE:
            allowed.insert(0, _np.dtype(_np.int8))
        if a.dtype not in allowed:
            if a.dtype.kind not in "iu":
                raise TypeError(f"CodeArray: {_type_name(t)} codes must be integers, got dtype {a.dtype}")
            target = allowed[0]
            info = _np.iinfo(target)
            if a.size and (a.min() < info.min or a.max() > info.max):
                raise ValueError(f"CodeArray: values outside {info.min}..{info.max} cannot be {_type_name(t)} codes")
            a = a.astype(target)
        if bits < 8 and a.size:
            lo, hi = ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if a.dtype.kind == "i" else (0, (1 << bits) - 1))
            if a.min() < lo or a.max() > hi:
                raise ValueError(f"CodeArray: {_type_name(t)} {'values' if lo else 'codes'} must lie in {lo}..{hi}")
        obj = a.view(cls)
        obj.qdq_dtype = _type_name(t)
        return obj

    def __array_finalize__(self, obj):
        self.qdq_dtype = getattr(obj, "qdq_dtype", None)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # Arithmetic on codes is arithmetic on integers: plain arrays in, plain arrays out.
        inputs = tuple(i.view(_np.ndarray) if isinstance(i, CodeArray) else i for i in inputs)
        out = kwargs.get("out")
        if out:
            kwargs["out"] = tuple(o.view(_np.ndarray) if isinstance(o, CodeArray) else o for o in out)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __repr__(self):
        body = _np.array2string(self.view(_np.ndarray), separator=", ", prefix="CodeArray(")
        return f"CodeArray({body}, qdq_dtype={self.qdq_dtype!r})"

    def __reduce__(self):
        return (CodeArray, (self.view(_np.ndarray).copy(), self.qdq_dtype))


def _codes_from_ml(a, t):
    """An ml_dtypes array as codes: int4/int2 sign-extended int8, others unsigned (copies 4/2-bit)."""
    bits = _CODE_TYPES[t][1]
    if bits == 16:
        return a.view(_np.uint16)
    if bits == 8:
        return a.view(_np.uint8)
    # ml_dtypes keeps a sub-byte value in the low bits and leaves the upper bits unspecified.
    # asarray: on a rank-0 array NumPy's operators return scalars, which the compiled layer rejects.
    codes = _np.asarray(a.view(_np.uint8) & _np.uint8((1 << bits) - 1))
    if t in _SIGNED_SUB_BYTE:
        shift = 8 - bits
        codes = _np.asarray((codes << _np.uint8(shift)).view(_np.int8) >> _np.int8(shift)).astype(_np.int8, copy=False)
    return codes


# --- conversions between user arrays and the compiled layer --------------------------------------


def _as_input(value, what, raw_sub_byte=False):
    """(C-contiguous array in the compiled layer's convention, type number) for an input.

    raw_sub_byte: pass ml_dtypes sub-byte arrays as they are (the compiled layer reads the low bits of
    each byte, with no NumPy pass); a PackedTensor becomes the (bytes, shape) pair the compiled layer
    takes as packed input."""
    kind = type(value)
    if kind is _np.ndarray:
        # The common cases first, at a fraction of the general path's cost (it matters for small
        # tensors): a plain, native, aligned, C-contiguous array of a type NumPy has, or (raw_sub_byte)
        # of an ml_dtypes type.
        t = (_RAW_TYPE_BY_DTYPE if raw_sub_byte else _NATIVE_BY_DTYPE).get(value.dtype)
        if t is not None:
            flags = value.flags
            if flags.c_contiguous and flags.aligned:
                return value, t
    elif kind is CodeArray:
        # Passed as it is: the compiled layer reads any ndarray subclass's items.
        t = _TYPE_BY_NAME.get(value.qdq_dtype)
        if t is not None:
            flags = value.flags
            if flags.c_contiguous and flags.aligned and value.dtype.isnative:
                return value, t
    else:
        t = _NATIVE_BY_SCALAR_TYPE.get(type(value))  # a NumPy scalar such as np.float32(0.02)
        if t is not None:
            return _np.asarray(value), t
    if isinstance(value, PackedTensor):
        if not raw_sub_byte:
            return _as_input(value.to_array(), what)
        return (value.data, list(value.shape)), _type_number(value.dtype, what)
    if isinstance(value, CodeArray):
        t = _type_number(value.qdq_dtype, what)
        a = value.view(_np.ndarray)
    elif isinstance(value, (_np.ndarray, _np.generic)):
        a = _np.asarray(value)
        t = _type_from_dtype(a.dtype)
        if t is None:
            raise TypeError(f"{what}: arrays of dtype {a.dtype} are not supported (see help(qdq) for the types)")
        if t in _CODE_TYPES and not (raw_sub_byte and _CODE_TYPES[t][1] < 8):
            a = _codes_from_ml(a, t)
    elif isinstance(value, (_numbers.Number, list, tuple)):
        a = _np.asarray(value)
        if a.dtype == _np.float64:
            a = a.astype(_np.float32)  # Python floats are taken as float32
        t = _type_from_dtype(a.dtype)
        if t is None:
            raise TypeError(f"{what}: cannot convert {type(value).__name__} to a supported array (dtype {a.dtype})")
    else:
        raise TypeError(f"{what}: expected a NumPy array, qdq.CodeArray or number, got {type(value).__name__}")
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if not (a.flags.c_contiguous and a.flags.aligned):
        a = a.copy(order="C")
    return a, t


def _as_output(array, t):
    """A result of the compiled layer in the user's representation."""
    if t not in _CODE_TYPES:
        return array
    ml = _ML_DTYPE_BY_TYPE.get(t)
    if ml is not None:
        return array.view(ml)
    out = array.view(CodeArray)
    out.qdq_dtype = _type_name(t)
    return out


def _as_out(out):
    """The (storage view, type number) pair the compiled layer writes a result into, or None."""
    if out is None:
        return None
    if not isinstance(out, _np.ndarray):
        raise TypeError(f"out must be a NumPy array, qdq.CodeArray or ml_dtypes array, got {type(out).__name__}")
    if isinstance(out, CodeArray):
        return out.view(_np.ndarray), _type_number(out.qdq_dtype, "out")
    t = _type_from_dtype(out.dtype)
    if t is None or not out.dtype.isnative:
        raise TypeError(f"out: arrays of dtype {out.dtype} cannot receive a result")
    return (out.view(_qdq.storage_dtype(t)) if t in _CODE_TYPES else out), t


class PackedTensor:
    """A tensor as ONNX stores it: ``data`` holds the bytes of a TensorProto's ``raw_data`` (a 1-D
    uint8 array; 4-bit and 2-bit types packed two or four to a byte, first element in the low bits,
    little-endian for wider types), ``dtype`` qdq's type name, ``shape`` a tuple.

    ``qdq.quantize_linear(..., packed=True)`` returns one straight from the kernel (no unpacking);
    every function accepts one wherever it takes an array (sub-byte ones are read without unpacking).
    ``bytes(p)`` / ``p.tobytes()`` give the raw_data, ``p.to_array()`` the usual array.
    """

    __slots__ = ("data", "dtype", "shape")

    def __init__(self, data, dtype, shape):
        t = _type_number(dtype, "PackedTensor dtype")
        self.data = _np.frombuffer(data, _np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) \
            else _np.ascontiguousarray(data).view(_np.uint8).reshape(-1)
        self.dtype = "float32" if t == _FLOAT else ("float64" if t == _DOUBLE else _type_name(t))
        self.shape = tuple(_int_arg(d, "PackedTensor shape") for d in shape)
        bits = _qdq.bit_width(t)
        count = 1
        for d in self.shape:
            count *= d
        if self.data.size != (count * bits + 7) // 8:
            raise ValueError(f"PackedTensor: {count} {self.dtype} elements take {(count * bits + 7) // 8} bytes, "
                             f"got {self.data.size}")

    def tobytes(self):
        return self.data.tobytes()

    def __bytes__(self):
        return self.tobytes()

    def to_array(self):
        """The tensor in the usual representation (see help(qdq)); unpacks sub-byte types."""
        t = _type_number(self.dtype, "PackedTensor dtype")
        return _as_output(_qdq.unpack(self.data, t, list(self.shape)), t)

    def __repr__(self):
        return f"PackedTensor({self.data.size} bytes, dtype={self.dtype!r}, shape={self.shape})"


def pack(array):
    """The tensor ``array`` (any array qdq accepts) as a PackedTensor: ONNX's raw_data bytes."""
    if isinstance(array, PackedTensor):
        return array
    a, t = _as_input(array, "array", raw_sub_byte=True)
    return PackedTensor(_qdq.pack(a, t), t, a.shape)


def unpack(packed):
    """The array a PackedTensor stands for (same as ``packed.to_array()``)."""
    if not isinstance(packed, PackedTensor):
        raise TypeError(f"unpack: expected a qdq.PackedTensor, got {type(packed).__name__}")
    return packed.to_array()


def element_type(array):
    """qdq's name of the element type an array stands for ("float32", "int4", "float8e4m3fn")."""
    _, t = _as_input(array, "element_type")
    return "float32" if t == _FLOAT else ("float64" if t == _DOUBLE else _type_name(t))


# --- operators ------------------------------------------------------------------------------------


class _Default:
    """An argument's default that means "not given" (its repr is the ONNX default it stands for)."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return repr(self.value)


_AXIS_DEFAULT = _Default(1)


def _int_arg(value, what):
    if type(value) is int:
        return value
    if isinstance(value, bool) or not isinstance(value, _numbers.Integral):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    return int(value)


def _common_attributes(attrs, axis, block_size, output_dtype):
    # (type(...) is int first: each function call costs about as much as a small tensor's kernel.)
    if axis is not _AXIS_DEFAULT:
        attrs["axis"] = axis if type(axis) is int else _int_arg(axis, "axis")
    if type(block_size) is not int:
        block_size = _int_arg(block_size, "block_size")
    if block_size != 0:
        attrs["block_size"] = block_size
    # (A str first: the ABC check isinstance(..., Integral) costs more than the rest of a small call.)
    if output_dtype is not None and not (type(output_dtype) is not str
                                         and isinstance(output_dtype, _numbers.Integral)
                                         and not isinstance(output_dtype, bool) and int(output_dtype) == 0):
        attrs["output_dtype"] = _type_number(output_dtype, "output_dtype")


def _zero_point_input(zero_point):
    if zero_point is None:
        return None, 0
    return _as_input(zero_point, "zero_point", raw_sub_byte=True)


def _result(y, yt, out):
    if out is not None:
        return out
    # Results of ml_dtypes types come with their dtype already (_qdq.set_result_dtypes).
    return _as_output(y, yt) if yt in _CODE_TYPES and yt not in _ML_DTYPE_BY_TYPE else y


# PackedTensor's dtype names by type number, for _packed_result.
_PACKED_NAME = {t: "float32" if t == _FLOAT else ("float64" if t == _DOUBLE else _type_name(t))
                for t in (*_NATIVE, *_CODE_TYPES)}


def _packed_result(data, t, shape):
    """The PackedTensor of a packed=True result: the compiled layer's 1-D uint8 array of exactly
    storage_bytes(t, shape) bytes and x's shape (a tuple of ints), so PackedTensor's checks would hold."""
    p = object.__new__(PackedTensor)
    p.data = data
    p.dtype = _PACKED_NAME[t]
    p.shape = shape
    return p


# The compiled layer's fast path takes the common forms of the three operators' arguments as they are
# and hands the rest to the general functions below (module.cpp, EntryPoint). It reads
# these tables (and the names _type_number has resolved so far) to do exactly what _as_input, _as_out
# and _result do for those forms.
_qdq._set_fast_path(_RAW_TYPE_BY_DTYPE, _NATIVE_BY_DTYPE, _NATIVE_BY_SCALAR_TYPE, list(_CODE_TYPES), _TYPE_BY_NAME,
                    _AXIS_DEFAULT, CodeArray, PackedTensor, _as_output, _packed_result, _np.float32, _np.uint8)


def _quantize_linear(x, scale, zero_point=None, *, axis=_AXIS_DEFAULT, block_size=0, saturate=True,
                     output_dtype=None, precision=None, opset=25, out=None, packed=False):
    """ONNX QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point).

    x: float32, float16, bfloat16 or int32 (the types the opset allows). scale: one element
    (per tensor), a 1-D array along ``axis`` (per axis), or x's shape with ``axis`` divided by
    ``block_size`` (blocked). zero_point: optional, the scale's shape; its type selects the output
    type (uint8 without one), unless ``output_dtype`` names it. ``saturate`` only matters for float8
    outputs; ``precision`` (opset >= 23) names the division's type (float32, float16, bfloat16).
    Returns the quantized array (a CodeArray or ml_dtypes array for types NumPy lacks); with
    ``out=`` (an array of the result's type and shape, C-contiguous) writes into it and returns it;
    with ``packed=True`` returns a PackedTensor (ONNX's raw_data, sub-byte types never unpacked).
    """
    attrs = {}
    _common_attributes(attrs, axis, block_size, output_dtype)
    if saturate is True:
        pass
    elif isinstance(saturate, bool):
        attrs["saturate"] = 0
    else:
        saturate = _int_arg(saturate, "saturate")
        if saturate != 1:
            attrs["saturate"] = saturate
    if precision is not None and not (isinstance(precision, _numbers.Integral)
                                      and not isinstance(precision, bool) and int(precision) == 0):
        attrs["precision"] = _type_number(precision, "precision")
    if type(opset) is not int:
        opset = _int_arg(opset, "opset")
    xa, xt = _as_input(x, "x", True)
    sa, st = _as_input(scale, "scale", True)
    za, zt = (None, 0) if zero_point is None else _as_input(zero_point, "zero_point", True)
    if not isinstance(packed, bool):
        raise TypeError(f"packed must be a bool, got {type(packed).__name__}")
    y, yt = _qdq.quantize_linear(xa, xt, sa, st, za, zt, attrs, opset, None if out is None else _as_out(out), packed)
    if packed:
        return PackedTensor(y, yt, _np.shape(xa) if not isinstance(xa, tuple) else xa[1])
    return _result(y, yt, out)


def _dequantize_linear(x, scale, zero_point=None, *, axis=_AXIS_DEFAULT, block_size=0, output_dtype=None,
                       opset=25, out=None):
    """ONNX DequantizeLinear: y = (x - zero_point) * scale, computed exactly as qdq's policy says.

    x: any quantized type (int8, uint8, int16, uint16, int32, int4, uint4, int2, uint2, float8,
    float4e2m1). scale: float32, float16, bfloat16 (or float8e8m0 from opset 24), per tensor,
    per axis or blocked as in quantize_linear. zero_point: optional, x's type. ``output_dtype``
    (opset >= 23): the result's type, by default the scale's. x may be a PackedTensor (e.g. a
    model's raw_data), read without unpacking. ``out=``: write into this array and return it.
    """
    attrs = {}
    _common_attributes(attrs, axis, block_size, output_dtype)
    if type(opset) is not int:
        opset = _int_arg(opset, "opset")
    xa, xt = _as_input(x, "x", True)
    sa, st = _as_input(scale, "scale", True)
    za, zt = (None, 0) if zero_point is None else _as_input(zero_point, "zero_point", True)
    y, yt = _qdq.dequantize_linear(xa, xt, sa, st, za, zt, attrs, opset, None if out is None else _as_out(out))
    return _result(y, yt, out)


def _dynamic_quantize_linear(x, *, opset=11, out=None):
    """ONNX DynamicQuantizeLinear (opset >= 11) on a float32 array.

    Returns (y, y_scale, y_zero_point): y uint8 of x's shape, y_scale a numpy.float32 and
    y_zero_point a numpy.uint8 (ONNX's rank-0 tensors). ``out=``: a uint8 array of x's shape that
    receives y (and is returned as y).
    """
    opset = _int_arg(opset, "opset")
    xa, xt = _as_input(x, "x")
    y, scale, zero_point = _qdq.dynamic_quantize_linear(xa, xt, opset, _as_out(out))
    return (y if out is None else out), _np.float32(scale), _np.uint8(zero_point)


def _entry_points(*general):
    import inspect
    for f in general:
        f.__qualname__ = f.__name__[1:]  # the name the general path's argument errors give
    docs = tuple(f"{f.__qualname__}{inspect.signature(f)}\n--\n\n{inspect.getdoc(f)}" for f in general)
    return _qdq._entry_points(general, docs)


# The public functions are compiled: each takes the common forms of its arguments straight to the fast
# path, and calls the function above of its name (with the same arguments) for everything else.
quantize_linear, dequantize_linear, dynamic_quantize_linear = _entry_points(
    _quantize_linear, _dequantize_linear, _dynamic_quantize_linear)


# --- files ----------------------------------------------------------------------------------------


def _need_io():
    if not _qdq.HAVE_ONNX_IO:
        raise RuntimeError("qdq was built without ONNX file support (QDQ_BUILD_TOOLS=OFF or no protobuf)")


def load_tensor(path):
    """Reads a serialized ONNX TensorProto (e.g. a backend test's input_0.pb) into an array.

    Every storage ONNX uses is accepted (raw_data, int32_data, float_data, ...); sub-byte types are
    unpacked. Types NumPy lacks come back as ml_dtypes arrays or CodeArray (see help(qdq)).
    """
    _need_io()
    array, t, _name = _qdq.load_tensor(_os.fspath(path))
    return _as_output(array, t)


def save_tensor(path, array, *, name=""):
    """Writes an array as a serialized ONNX TensorProto (raw_data, sub-byte types packed).

    The file is replaced atomically. ``array`` may be any array load_tensor returns, including
    CodeArray and ml_dtypes arrays; Python floats are taken as float32.
    """
    _need_io()
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    a, t = _as_input(array, "array", raw_sub_byte=True)
    _qdq.save_tensor(_os.fspath(path), a, t, name)


def _read_model_node(path):
    """The single node of an ONNX model file (for tests): a dict with opset, op_type, domain,
    attributes (name -> int), inputs, outputs, graph_inputs (non-initializer graph inputs) and
    graph_outputs. Uses qdq's model reader; raises ValueError if the model is not one node."""
    _need_io()
    return _qdq.read_model_node(_os.fspath(path))


# --- models ---------------------------------------------------------------------------------------

QUANTIZE_FORMATS = ("int8", "uint8", "int4", "uint4", "float8e4m3fn", "mxfp8", "mxfp4")


def _path_arg(path, what):
    if not isinstance(path, (str, bytes, _os.PathLike)):
        raise TypeError(f"{what} must be a str or os.PathLike, got {type(path).__name__}")
    return _os.fsdecode(_os.fspath(path))


def _names_arg(value, what):
    if isinstance(value, str):
        return [value]
    try:
        names = list(value)
    except TypeError:
        raise TypeError(f"{what} must be a str or an iterable of str, got {type(value).__name__}") from None
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{what} must hold str, got {type(name).__name__}")
    return names


def quantize_model(input, output, format, *, block_size=None, symmetric=None, min_elements=1024, include=(),
                   exclude=(), op_types=None, external_data=False, num_threads=0):
    """Quantizes a model's float weights into a weight-only QDQ model, as ``qdq quantize`` does.

    Reads the ONNX model ``input`` (external data relative to its folder), replaces the selected
    float32/float16/bfloat16 weights (initializers and Constant nodes, subgraphs included, read by
    MatMul, Gemm, Conv, ConvTranspose, LSTM/GRU/RNN or Gather) by quantized tensors feeding
    DequantizeLinear nodes, raises the opset when the format needs it, and writes ``output``
    atomically: after an error (or Ctrl-C) nothing is written. Scale rules and weight selection:
    docs/model-quantization.md.

    ``format``: one of ``qdq.QUANTIZE_FORMATS`` (int8, uint8, int4, uint4, float8e4m3fn, mxfp8,
    mxfp4). The keywords are the command's options: ``block_size`` (int4/uint4: 16..256, default
    32), ``symmetric`` (None = the format's default; True/False = --symmetric/--asymmetric),
    ``min_elements``, ``include``/``exclude`` (glob patterns on tensor names: a str or an iterable
    of str), ``op_types`` (consumer ops, e.g. ``["MatMul", "Gemm"]`` or ``"MatMul,Gemm"``; None =
    every supported one), ``external_data`` (always write OUT.onnx.data; otherwise only when the
    input has external data or the output would exceed 2 GiB) and ``num_threads`` (0 = qdq's
    default). Paths are str or os.PathLike.

    Returns the report as a dict: the object ``qdq quantize --json`` prints (input, output, format,
    opset, ir_version, conversions, external_data, tensors, skipped, totals). Raises ValueError with
    qdq's one-line message for a bad model, path or option, TypeError for arguments of the wrong
    type. Runs without the GIL, on qdq's thread pool; a KeyboardInterrupt (Ctrl-C) is raised between
    two tensors, and then nothing is written either.
    """
    _need_io()
    input = _path_arg(input, "input")
    output = _path_arg(output, "output")
    if not isinstance(format, str):
        raise TypeError(f"format must be a str, got {type(format).__name__}")
    if block_size is not None:
        block_size = _int_arg(block_size, "block_size")
    if symmetric is not None and not isinstance(symmetric, (bool, _np.bool_)):
        raise TypeError(f"symmetric must be None or a bool, got {type(symmetric).__name__}")
    if op_types is None:
        op_types = []
    else:
        if isinstance(op_types, str):
            op_types = [t.strip() for t in op_types.split(",")]
        op_types = _names_arg(op_types, "op_types")
        if not op_types or any(not t for t in op_types):
            raise ValueError("op_types names no op (pass None to quantize for every supported op)")
    report = _qdq.quantize_model(
        input, output, format,
        block_size=block_size,
        symmetric=None if symmetric is None else bool(symmetric),
        min_elements=_int_arg(min_elements, "min_elements"),
        include=_names_arg(include, "include"),
        exclude=_names_arg(exclude, "exclude"),
        op_types=op_types,
        external_data=bool(external_data),
        num_threads=_int_arg(num_threads, "num_threads"))
    return _json.loads(report)


# --- threads --------------------------------------------------------------------------------------


def set_num_threads(n):
    """Sets the number of threads qdq's operators use (0 = default: QDQ_NUM_THREADS, else the number
    of hardware threads). Process-wide; results never depend on it."""
    _qdq.set_num_threads(_int_arg(n, "n"))


def get_num_threads():
    """The number of threads qdq's operators use now."""
    return _qdq.get_num_threads()


def set_buffer_cache(max_bytes):
    """Sets how many bytes of freed result and scratch memory qdq keeps for reuse (default 256 MiB,
    at most 8 blocks; 0 keeps none and frees what is kept) and returns the previous limit.

    Results of 1 MiB or more live in blocks that go back to this cache when the array and all its
    views are gone; the next call of about that size takes one instead of page-faulting in fresh
    memory, which costs about as much as the operator itself at tens of MiB. Process-wide, thread-safe."""
    return _qdq.set_buffer_cache(_int_arg(max_bytes, "max_bytes"))
