#!/usr/bin/env python3
"""Seeded differential test of qdq against ONNX's reference evaluator and ONNX Runtime.

Random QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear cases — shapes, element types,
opsets 10-25, per-tensor / per-axis / blocked, attributes, zero points, special values — run through
qdq's Python package and through each oracle (one single-node model per case, inputs as
initializers, ONNX Runtime with graph optimisations off so that its kernel runs). Each output element
is either bit-identical (any NaN equals any NaN of the type) or explained by a rule: a predicate over
the case and the two results that names the docs/policy.md row (or the oracle's documented
arithmetic) it follows, and that checks qdq's value is the one that row prescribes. Anything else is
an unexplained difference, printed with the case, and the exit code is 1. Cases an oracle refuses
(it raises) are counted per reason.

Needs numpy, ml_dtypes, onnx, onnxruntime (build/venv) and the qdq package importable:
    build/venv/bin/python scripts/differential.py [--cases N] [--seed S] [--oracle reference|onnxruntime|both]
        [--table docs/onnxruntime-comparison.md]
--table writes the per-(op, opset, type, granularity) comparison with ONNX Runtime as Markdown.
"""
import argparse
import collections
import re
import ctypes
import sys
import time
import warnings

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto as TP, helper, numpy_helper

import qdq

# --- types ----------------------------------------------------------------------------------------

NP = {  # ONNX type number -> NumPy / ml_dtypes dtype
    TP.FLOAT: np.dtype(np.float32), TP.FLOAT16: np.dtype(np.float16), TP.BFLOAT16: np.dtype(ml_dtypes.bfloat16),
    TP.INT32: np.dtype(np.int32), TP.INT8: np.dtype(np.int8), TP.UINT8: np.dtype(np.uint8),
    TP.INT16: np.dtype(np.int16), TP.UINT16: np.dtype(np.uint16), TP.INT4: np.dtype(ml_dtypes.int4),
    TP.UINT4: np.dtype(ml_dtypes.uint4), TP.INT2: np.dtype(ml_dtypes.int2), TP.UINT2: np.dtype(ml_dtypes.uint2),
    TP.FLOAT8E4M3FN: np.dtype(ml_dtypes.float8_e4m3fn), TP.FLOAT8E4M3FNUZ: np.dtype(ml_dtypes.float8_e4m3fnuz),
    TP.FLOAT8E5M2: np.dtype(ml_dtypes.float8_e5m2), TP.FLOAT8E5M2FNUZ: np.dtype(ml_dtypes.float8_e5m2fnuz),
    TP.FLOAT4E2M1: np.dtype(ml_dtypes.float4_e2m1fn), TP.FLOAT8E8M0: np.dtype(ml_dtypes.float8_e8m0fnu),
}
NAME = {t: TP.DataType.Name(t).lower() for t in NP}
INT_RANGE = {TP.INT8: (-128, 127), TP.UINT8: (0, 255), TP.INT16: (-32768, 32767), TP.UINT16: (0, 65535),
             TP.INT4: (-8, 7), TP.UINT4: (0, 15), TP.INT2: (-2, 1), TP.UINT2: (0, 3), TP.INT32: (-2**31, 2**31 - 1)}
FLOAT8 = (TP.FLOAT8E4M3FN, TP.FLOAT8E4M3FNUZ, TP.FLOAT8E5M2, TP.FLOAT8E5M2FNUZ)
FNUZ = (TP.FLOAT8E4M3FNUZ, TP.FLOAT8E5M2FNUZ)
BITS = {TP.INT4: 4, TP.UINT4: 4, TP.FLOAT4E2M1: 4, TP.INT2: 2, TP.UINT2: 2}
OPSETS = (10, 13, 19, 21, 23, 24, 25)


def q_out_types(opset):
    t = [TP.UINT8, TP.INT8]
    if opset >= 19: t += list(FLOAT8)
    if opset >= 21: t += [TP.UINT16, TP.INT16, TP.UINT4, TP.INT4]
    if opset >= 23: t += [TP.FLOAT4E2M1]
    if opset >= 25: t += [TP.UINT2, TP.INT2]
    return t


def dq_in_types(opset):
    return q_out_types(opset) + [TP.INT32]


# --- case generation -------------------------------------------------------------------------------

Case = collections.namedtuple("Case", "op opset gran shape inputs attrs out_type")


def random_values(rng, shape, special):
    x = rng.standard_normal(shape) * rng.choice([0.5, 4, 60, 3000])
    flat = x.reshape(-1)
    flat[::3] = np.round(flat[::3] * 2) / 2  # exact .5 ties
    if special and flat.size:
        k = rng.integers(0, flat.size, max(1, flat.size // 4))
        flat[k] = rng.choice([np.nan, np.inf, -np.inf, 1e30, -1e30, 0.0, -0.0, 65504 * 4], k.size)
    return x


def random_codes(rng, t, shape):
    if t in INT_RANGE:
        lo, hi = INT_RANGE[t]
        if t == TP.INT32:
            lo, hi = (-2**31, 2**31 - 1) if rng.random() < 0.3 else (-1000, 1000)
        return rng.integers(lo, hi, shape, endpoint=True).astype(NP[t])
    bits = 4 if t == TP.FLOAT4E2M1 else 8
    return rng.integers(0, 1 << bits, shape).astype(np.uint8).view(NP[t])


def scale_shape(rng, gran, shape, axis, block):
    if gran == "tensor":
        return () if rng.random() < 0.7 else (1,)
    if gran == "axis":
        return (shape[axis],)
    s = list(shape)
    s[axis] = -(-shape[axis] // block)
    return tuple(s)


def random_case(rng):
    op = rng.choice(["QuantizeLinear"] * 5 + ["DequantizeLinear"] * 4 + ["DynamicQuantizeLinear"])
    opset = int(rng.choice([o for o in OPSETS if o >= (11 if op == "DynamicQuantizeLinear" else 10)]))
    special = rng.random() < 0.25
    if op == "DynamicQuantizeLinear":
        shape = tuple(int(d) for d in rng.integers(1, 7, rng.integers(1, 4)))
        x = random_values(rng, shape, special).astype(np.float32)
        if rng.random() < 0.05:
            x[...] = 0
        return Case(op, opset, "tensor", shape, [x], {}, TP.UINT8)
    rank = int(rng.integers(1, 4))
    shape = tuple(int(d) for d in rng.integers(1, 9, rank))
    grans = ["tensor"] + (["axis"] if opset >= 13 else []) + (["blocked"] if opset >= 21 else [])
    gran = str(rng.choice(grans))
    axis = int(rng.integers(-rank, rank)) if gran != "tensor" else 1
    block = int(rng.integers(1, shape[axis] + 1)) if gran == "blocked" else 0
    sshape = scale_shape(rng, gran, shape, axis, block)
    attrs = {}
    if gran != "tensor" or (opset >= 13 and rng.random() < 0.3):
        attrs["axis"] = axis
    if block:
        attrs["block_size"] = block
    if op == "QuantizeLinear":
        out = int(rng.choice(q_out_types(opset)))
        xt = int(rng.choice([TP.FLOAT, TP.INT32] + ([TP.FLOAT16, TP.BFLOAT16] if opset >= 19 else [])))
        if opset >= 23:
            st = int(rng.choice([TP.FLOAT, TP.FLOAT16, TP.BFLOAT16, TP.INT32] + ([TP.FLOAT8E8M0] if opset >= 24 else [])))
        elif opset >= 19:
            st = xt
        else:
            st = TP.FLOAT
        if xt == TP.INT32:
            x = rng.integers(-300000, 300000, shape).astype(np.int32)
        else:
            x = random_values(rng, shape, special).astype(NP[xt])
        if st == TP.INT32:
            s = rng.integers(1, 50, sshape).astype(np.int32)
        elif st == TP.FLOAT8E8M0:
            s = rng.integers(120, 135, sshape).astype(np.uint8).view(NP[st])
        else:
            s = np.exp2(rng.uniform(-6, 5, sshape)).astype(np.float32)
            if special and s.size and rng.random() < 0.3:
                s.reshape(-1)[0] = rng.choice([0.0, -1.5, np.inf, 1e-30])
            s = s.astype(NP[st])
        inputs = [x, s]
        zp_needed = out not in (TP.UINT8,) and not (opset >= 21 and rng.random() < 0.3)
        if zp_needed or rng.random() < 0.5:
            if out in INT_RANGE:
                lo, hi = INT_RANGE[out]
                z = rng.integers(lo, hi, sshape, endpoint=True) if rng.random() < 0.7 else np.zeros(sshape, np.int64)
                inputs.append(z.astype(NP[out]))
            elif out == TP.FLOAT4E2M1:
                inputs.append(random_codes(rng, out, sshape) if rng.random() < 0.5 else np.zeros(sshape, NP[out]))
            else:
                inputs.append(np.zeros(sshape, NP[out]))
        elif out != TP.UINT8:
            attrs["output_dtype"] = out
        if out in FLOAT8 and rng.random() < 0.5:
            attrs["saturate"] = int(rng.integers(0, 2))
        if opset >= 23 and rng.random() < 0.15:
            attrs["precision"] = int(rng.choice([TP.FLOAT, TP.FLOAT16, TP.BFLOAT16]))
        return Case(op, opset, gran, shape, inputs, attrs, out)
    xt = int(rng.choice(dq_in_types(opset)))
    x = random_codes(rng, xt, shape)
    if opset >= 24 and rng.random() < 0.15:
        st = TP.FLOAT8E8M0
    else:
        st = int(rng.choice([TP.FLOAT] + ([TP.FLOAT16, TP.BFLOAT16] if opset >= 19 else [])))
    if st == TP.FLOAT8E8M0:
        s = rng.integers(110, 140, sshape).astype(np.uint8).view(NP[st])
    else:
        s = np.exp2(rng.uniform(-8, 6, sshape)).astype(NP[st])
    inputs = [x, s]
    out = st
    if opset >= 23 and (st == TP.FLOAT8E8M0 or rng.random() < 0.3):
        out = int(rng.choice([TP.FLOAT, TP.FLOAT16, TP.BFLOAT16]))
        attrs["output_dtype"] = out
    if xt not in FLOAT8 and rng.random() < 0.6:
        inputs.append(random_codes(rng, xt, sshape) if xt != TP.INT32 or rng.random() < 0.5
                      else rng.integers(-5, 5, sshape).astype(np.int32))
    elif xt in FLOAT8 and rng.random() < 0.3:
        inputs.append(np.zeros(sshape, NP[xt]))
    return Case(op, opset, gran, shape, inputs, attrs, out)


# --- running -----------------------------------------------------------------------------------------


def onnx_type(a):
    for t, dt in NP.items():
        if a.dtype == dt:
            return t
    raise TypeError(a.dtype)


def model_of(case):
    names = [f"i{k}" for k in range(len(case.inputs))]
    inits = [numpy_helper.from_array(np.asarray(a), n) for a, n in zip(case.inputs, names)]
    outs = ["y"] if case.op != "DynamicQuantizeLinear" else ["y", "y_scale", "y_zero_point"]
    node = helper.make_node(case.op, names, outs, **case.attrs)
    out_infos = [helper.make_tensor_value_info("y", case.out_type, None)]
    if case.op == "DynamicQuantizeLinear":
        out_infos += [helper.make_tensor_value_info("y_scale", TP.FLOAT, None),
                      helper.make_tensor_value_info("y_zero_point", TP.UINT8, None)]
    graph = helper.make_graph([node], "g", [], out_infos, initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)], ir_version=10)


def run_qdq(case):
    kw = {k: v for k, v in case.attrs.items() if k in ("axis", "block_size", "saturate", "output_dtype", "precision")}
    if case.op == "QuantizeLinear":
        return [np.asarray(qdq.quantize_linear(*case.inputs, opset=case.opset, **kw))]
    if case.op == "DequantizeLinear":
        return [np.asarray(qdq.dequantize_linear(*case.inputs, opset=case.opset, **kw))]
    y, s, z = qdq.dynamic_quantize_linear(case.inputs[0], opset=case.opset)
    return [y, np.asarray(s), np.asarray(z)]


def run_reference(case, model):
    from onnx.reference import ReferenceEvaluator
    return [np.asarray(r) for r in ReferenceEvaluator(model).run(None, {})]


_ORT_OPTIONS = None


def run_onnxruntime(case, model):
    import onnxruntime as ort
    global _ORT_OPTIONS
    if _ORT_OPTIONS is None:
        _ORT_OPTIONS = ort.SessionOptions()
        _ORT_OPTIONS.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        _ORT_OPTIONS.log_severity_level = 4
    session = ort.InferenceSession(model.SerializeToString(), _ORT_OPTIONS, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    results = []
    for name, value in zip(names, session.run_with_ort_values(names, {})):
        t = case.out_type if name == "y" else (TP.FLOAT if name == "y_scale" else TP.UINT8)
        shape = tuple(value.shape())
        n = int(np.prod(shape, dtype=np.int64))
        if t in BITS:  # ONNX Runtime's Python binding has no NumPy type for packed sub-byte tensors
            raw = np.frombuffer(ctypes.string_at(value.data_ptr(), (n * BITS[t] + 7) // 8), np.uint8)
            results.append(unpack(raw, t, n).reshape(shape))
        elif t in FLOAT8 or t == TP.BFLOAT16:  # nor for some float8 types: read the bytes
            raw = ctypes.string_at(value.data_ptr(), n * NP[t].itemsize) if n else b""
            results.append(np.frombuffer(raw, NP[t]).reshape(shape))
        else:
            results.append(np.asarray(value.numpy()).view(NP[t]).reshape(shape))
    return results


def unpack(raw, t, n):
    bits = BITS[t]
    per = 8 // bits
    codes = ((raw[:, None] >> (np.arange(per, dtype=np.uint8) * bits)) & ((1 << bits) - 1)).reshape(-1)[:n]
    if t in (TP.INT4, TP.INT2):
        codes = ((codes << (8 - bits)).astype(np.uint8).view(np.int8) >> (8 - bits)).astype(np.int8)
    return codes.astype(np.uint8 if t not in (TP.INT4, TP.INT2) else np.int8).view(NP[t])


# --- comparison and rules ------------------------------------------------------------------------------


def codes_of(a, t):
    a = np.asarray(a)
    if t in INT_RANGE:
        return a.astype(np.int64)  # values, sign-extended for int4/int2
    if t in BITS:
        c = a.view(np.uint8) & np.uint8((1 << BITS[t]) - 1)
        return c.astype(np.int64)
    if a.dtype.itemsize == 1 and t not in INT_RANGE:
        return a.view(np.uint8).astype(np.int64)
    if t in (TP.BFLOAT16, TP.FLOAT16):
        return a.view(np.uint16).astype(np.int64)
    if t == TP.FLOAT:
        return a.view(np.uint32).astype(np.int64)
    return a.astype(np.int64)


def is_nan(a, t):
    return np.isnan(np.asarray(a).astype(np.float32)) if t not in INT_RANGE else np.zeros(np.shape(a), bool)


def expand(param, shape, gran, axis, block):
    """The scale or zero point broadcast to x's shape."""
    p = np.asarray(param)
    if gran == "tensor" or p.size == 1:
        return np.broadcast_to(p.reshape(()), shape)
    axis %= len(shape)
    if gran == "axis":
        view = [1] * len(shape)
        view[axis] = shape[axis]
        return np.broadcast_to(p.reshape(view), shape)
    return np.take(np.repeat(p, block, axis=axis), np.arange(shape[axis]), axis=axis)


def division_type(case):
    """qdq's division type P (docs/policy.md): precision, else the scale's type; e8m0 -> float32, int32 -> float64."""
    st = onnx_type(case.inputs[1])
    p = case.attrs.get("precision", 0) or st
    return {TP.FLOAT8E8M0: TP.FLOAT, TP.INT32: np.float64}.get(p, p)


def quotient(case):
    """x / scale as qdq computes it, in qdq's division type, as float64."""
    p = division_type(case)
    pdt = np.dtype(np.float64) if p is np.float64 else NP[p]
    x = case.inputs[0]
    s = expand(case.inputs[1], case.shape, case.gran, case.attrs.get("axis", 1), case.attrs.get("block_size", 0))
    with np.errstate(all="ignore"):
        xs = x.astype(np.float64).astype(pdt) if x.dtype == np.int32 else x.astype(pdt)
        q = (xs.astype(np.float64) / s.astype(pdt).astype(np.float64)).astype(pdt) if pdt.itemsize < 8 else \
            xs.astype(np.float64) / s.astype(np.float64)
    return q.astype(np.float64)


def quotient_in_float32(case):
    """x / scale divided in float32, as ONNX Runtime's CPU kernels divide."""
    x = case.inputs[0].astype(np.float32)
    s = expand(case.inputs[1], case.shape, case.gran, case.attrs.get("axis", 1), case.attrs.get("block_size", 0))
    with np.errstate(all="ignore"):
        return x / s.astype(np.float32)


def adjacent(g, o, t):
    """Neighbouring values of the type: integer codes differing by one, or float codes of one sign
    whose magnitudes differ by one step."""
    if t in INT_RANGE:
        return np.abs(g - o) == 1
    sign = {TP.FLOAT: 1 << 31, TP.FLOAT16: 1 << 15, TP.BFLOAT16: 1 << 15}.get(t, 8 if t == TP.FLOAT4E2M1 else 0x80)
    same_sign = (g & sign) == (o & sign)
    zeros = ((g & ~sign) == 0) | ((o & ~sign) == 0)
    return (same_sign | zeros) & (np.abs((g & ~sign) - (o & ~sign)) <= 1)


def oracle_division_type(case, oracle):
    """The division type each oracle is known to use: NumPy 2's promotion of (x, scale) in the
    reference (float64 for int32), float32 in ONNX Runtime's CPU kernels."""
    x, s = case.inputs[0], case.inputs[1]
    if oracle == "onnxruntime":
        return TP.FLOAT
    if x.dtype == np.int32 or s.dtype == np.int32:
        return np.float64
    if x.dtype == s.dtype:
        return onnx_type(x)
    return TP.FLOAT


# ONNX Runtime's non-saturating float32 -> float8 conversions just past the largest finite value, per
# type: (|x/s| from, up to, qdq's magnitude code, ONNX Runtime's, the rule). e4m3fn: 480 <= |q| < 496
# gives +-448 (0x7E / 0xFE), where every other |q| >= 464 gives NaN, as the spec does. e5m2: from the
# tie 61440 (between the largest finite 57344 and 2^16) up to 2^16 it gives NaN (0x7F / 0xFF), where
# the spec rounds to +-inf.
ORT_FLOAT8_BANDS = {
    TP.FLOAT8E4M3FN: (480, 496, 0x7F, 0x7E,
                      "float8e4m3fn, saturate=0: onnxruntime gives +-448 for 480 <= |x/s| < 496, qdq NaN (spec)"),
    TP.FLOAT8E5M2: (61440, 65536, 0x7C, 0x7F,
                    "float8e5m2, saturate=0: onnxruntime gives NaN for 61440 <= |x/s| < 65536, qdq +-inf (spec)"),
}


def explain(case, oracle, g, o, gv, ov, t):
    """Per differing element (arrays of qdq / oracle codes g, o and values gv, ov): the rule that
    explains it, or None. Each rule checks that qdq's element is what docs/policy.md prescribes."""
    n = g.size
    reasons = np.full(n, None, dtype=object)
    if case.op == "QuantizeLinear":
        q = quotient(case).reshape(-1)
        zp = expand(case.inputs[2], case.shape, case.gran, case.attrs.get("axis", 1),
                    case.attrs.get("block_size", 0)).reshape(-1) if len(case.inputs) > 2 else np.zeros(n)
        if t in INT_RANGE:
            lo, hi = INT_RANGE[t]
            zpi = zp.astype(np.float64)
            with np.errstate(all="ignore"):
                r = np.rint(q) + zpi
            nan = np.isnan(q)
            reasons[nan & (g == lo)] = "integer output, NaN quotient -> the type's minimum (policy)"
            over = ~nan & ((r > hi) | (r < lo) | np.isinf(q) | (np.abs(np.rint(q)) >= 2**31))
            want = np.where(r > hi, hi, lo)
            ok = over & (g == want) & (reasons == None)  # noqa: E711
            reasons[ok] = "integer output, quotient beyond the range or +-inf -> saturate (policy)"
        else:
            sat = case.attrs.get("saturate", 1)
            if t in FNUZ and sat:
                reasons[np.isinf(q) & (g == 0x80) & (reasons == None)] = \
                    "float8 fnuz, saturate=1, +-inf quotient -> NaN 0x80 (policy, technical note)"  # noqa: E711
            if t in ORT_FLOAT8_BANDS and not sat and oracle == "onnxruntime":
                lo_q, hi_q, qdq_code, ort_code, rule = ORT_FLOAT8_BANDS[t]
                with np.errstate(all="ignore"):
                    q32 = np.abs(quotient_in_float32(case).reshape(-1))
                ort_band = (q32 >= lo_q) & (q32 < hi_q) & ((g & 0x7F) == qdq_code) & ((o & 0x7F) == ort_code)
                reasons[ort_band & ((g & 0x80) == (o & 0x80)) & (reasons == None)] = rule  # noqa: E711
            if t == TP.FLOAT4E2M1:
                reasons[(np.isnan(q) | np.isnan(q + zp.astype(np.float64))) & (g == 7) & (reasons == None)] = \
                    "float4e2m1, NaN -> +6 (policy, technical note)"  # noqa: E711
            if division_type(case) is np.float64:
                reasons[adjacent(g, o, t) & (reasons == None)] = \
                    "float64 quotient (int32 scale) rounded once to the float type (policy)"  # noqa: E711
        if division_type(case) != oracle_division_type(case, oracle):
            if t in INT_RANGE:  # qdq's value must be the policy's clamp(rint(q) + zp) with q in P
                lo, hi = INT_RANGE[t]
                with np.errstate(all="ignore"):
                    want = np.clip(np.rint(q) + zp.astype(np.float64), lo, hi)
                close = ~np.isnan(q) & (g == want)
            else:
                close = adjacent(g, o, t)
                if t in FLOAT8:
                    # Not neighbours, and still the policy's: the division type's quotient is NaN where x
                    # rounds to +-inf in it and the scale is +-inf (the oracle's wider type divides a
                    # finite x), so qdq's code is a NaN; or, saturate=0, the division type rounds the
                    # quotient up across the largest finite value (a tie in bfloat16, say), so qdq's code
                    # is that quotient's own overflow code where the oracle's is the largest finite.
                    gv_nan = is_nan(gv, t)
                    close |= np.isnan(q) & gv_nan
                    if not case.attrs.get("saturate", 1):
                        with np.errstate(all="ignore"):
                            q_in_t = q.astype(NP[t])
                        close |= ~np.isnan(q) & ((g == codes_of(q_in_t, t)) | (gv_nan & is_nan(q_in_t, t)))
            reasons[close & (reasons == None)] = \
                f"division in {NAME.get(division_type(case), 'float64')} (scale's type/precision, policy), " \
                f"{oracle} divides in {NAME.get(oracle_division_type(case, oracle), 'float64')}"  # noqa: E711
            # A 16-bit division type can overflow to +-inf where the oracle's float32 does not:
            if t in INT_RANGE or t in FLOAT8:
                big = np.isinf(q) & (reasons == None)  # noqa: E711
                reasons[big] = "division type overflows to +-inf (policy: the quotient in the scale's type)"
    elif case.op == "DequantizeLinear":
        xt = onnx_type(case.inputs[0])
        has_zp = len(case.inputs) > 2
        if has_zp:
            zp = expand(case.inputs[2], case.shape, case.gran, case.attrs.get("axis", 1),
                        case.attrs.get("block_size", 0)).reshape(-1)
            if xt == TP.FLOAT4E2M1:
                sc = expand(case.inputs[1], case.shape, case.gran, case.attrs.get("axis", 1),
                            case.attrs.get("block_size", 0)).reshape(-1)
                want = ((case.inputs[0].reshape(-1).astype(np.float32) - zp.astype(np.float32))
                        * sc.astype(np.float32)).astype(NP[t])
                reasons[g == codes_of(want, t)] = \
                    "float4e2m1 zero point subtracted in float32 (policy; the reference ignores it)"
            if xt == TP.INT32:
                x = case.inputs[0].reshape(-1).astype(np.int64)
                inexact = (np.abs(x) > 2**24) | (np.abs(x - zp.astype(np.int64)) > 2**24)
                reasons[inexact & (reasons == None)] = \
                    "int32 x - zero_point exact, then one rounding to float32 (policy)"  # noqa: E711
    return reasons


def dynamic_rule(case, got):
    """The rule for a DynamicQuantizeLinear case whose x holds NaN/inf or is all zero, when qdq's three
    outputs are what docs/policy.md prescribes for it; else None."""
    x = case.inputs[0]
    y, scale, zp = (np.asarray(a) for a in got)
    finite = np.isfinite(x)
    if np.isnan(x).any():
        ok = np.isnan(scale) and zp == 255 and (y == 0).all()
        return "DynamicQuantizeLinear, NaN in x -> y_scale NaN, zero point 255, y 0 (policy)" if ok else None
    if np.isposinf(x).any() and not np.isneginf(x).any():
        ok = np.isposinf(scale) and zp == 0 and (y == 0).all()
        return "DynamicQuantizeLinear, +inf in x -> y_scale +inf, zero point 0, y 0 (policy)" if ok else None
    if np.isneginf(x).any():
        ok = np.isposinf(scale) and zp == 255 and (y[finite] == 255).all() and (y[~finite] == 0).all()
        return "DynamicQuantizeLinear, -inf in x -> y_scale +inf, zero point 255 (policy)" if ok else None
    if (x == 0).all():
        return "DynamicQuantizeLinear, all-zero x: y_scale and zero point as the reference (policy)"
    return None


def compare(case, oracle, got, want):
    """(identical?, Counter of rules, list of unexplained element descriptions)."""
    rules = collections.Counter()
    bad = []
    types = [case.out_type] + ([TP.FLOAT, TP.UINT8] if case.op == "DynamicQuantizeLinear" else [])
    dynamic = dynamic_rule(case, got) if case.op == "DynamicQuantizeLinear" else None
    for k, (gv, ov, t) in enumerate(zip(got, want, types)):
        gv, ov = np.asarray(gv), np.asarray(ov)
        if gv.shape != ov.shape:
            bad.append(f"output {k}: shape {gv.shape} vs {ov.shape}")
            continue
        g, o = codes_of(gv, t).reshape(-1), codes_of(ov, t).reshape(-1)
        diff = (g != o) & ~(is_nan(gv, t).reshape(-1) & is_nan(ov, t).reshape(-1))
        if not diff.any():
            continue
        reasons = explain(case, oracle, g, o, gv.reshape(-1), ov.reshape(-1), t) if k == 0 else \
            np.full(g.size, None, dtype=object)
        if dynamic:
            reasons[:] = dynamic
        for i in np.flatnonzero(diff):
            if reasons[i] is None:
                bad.append(f"output {k} element {i}: qdq {gv.reshape(-1)[i]!r} (code {g[i]:#x}), "
                           f"{oracle} {ov.reshape(-1)[i]!r} (code {o[i]:#x})")
            else:
                rules[reasons[i]] += 1
    return not rules and not bad, rules, bad


def describe(case):
    ins = ", ".join(f"{NAME[onnx_type(a)]}{list(a.shape)}" for a in case.inputs)
    return f"{case.op}-{case.opset} {case.gran} ({ins}) -> {NAME[case.out_type]} attrs={case.attrs}"


def group_key(case):
    scale = NAME[onnx_type(case.inputs[1])] if len(case.inputs) > 1 else "-"
    types = f"{NAME[onnx_type(case.inputs[0])]} → {NAME[case.out_type]}"
    return (case.op, case.opset, types, case.gran)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=20250601)
    ap.add_argument("--oracle", choices=["reference", "onnxruntime", "both"], default="both")
    ap.add_argument("--table", help="write the ONNX Runtime comparison table (Markdown) here")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # the oracles' (and NumPy's) overflow warnings on special values
    np.seterr(all="ignore")
    oracles = ["reference", "onnxruntime"] if args.oracle == "both" else [args.oracle]
    runners = {"reference": run_reference, "onnxruntime": run_onnxruntime}
    import onnxruntime
    versions = {"reference": f"onnx {onnx.__version__}", "onnxruntime": f"onnxruntime {onnxruntime.__version__}"}
    rng = np.random.default_rng(args.seed)
    stats = {o: collections.Counter() for o in oracles}
    rules = {o: collections.Counter() for o in oracles}
    refusals = {o: collections.Counter() for o in oracles}
    groups = {o: collections.defaultdict(collections.Counter) for o in oracles}
    group_notes = {o: collections.defaultdict(collections.Counter) for o in oracles}
    unexplained = []
    start = time.monotonic()
    for n in range(args.cases):
        case = random_case(rng)
        try:
            got = run_qdq(case)
            qdq_error = None
        except ValueError as e:
            got, qdq_error = None, str(e)
        model = model_of(case)
        for oracle in oracles:
            key = group_key(case)
            try:
                want = runners[oracle](case, model)
            except Exception as e:  # noqa: BLE001 - any refusal of the oracle is recorded
                reason = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
                reason = re.sub(r" node with name.*| domain '' and", "", reason.split(" : ")[-1])
                refusals[oracle][reason] += 1
                stats[oracle]["refused"] += 1
                groups[oracle][key]["refused"] += 1
                group_notes[oracle][key]["refused: " + reason[:70]] += 1
                continue
            if qdq_error is not None:
                stats[oracle]["unexplained"] += 1
                unexplained.append(f"{oracle}: case {n} {describe(case)}: qdq raised {qdq_error}")
                continue
            same, case_rules, bad = compare(case, oracle, got, want)
            if bad:
                stats[oracle]["unexplained"] += 1
                groups[oracle][key]["unexplained"] += 1
                unexplained.append(f"{oracle}: case {n} {describe(case)}: {len(bad)} unexplained: " + "; ".join(bad[:3]))
            elif same:
                stats[oracle]["identical"] += 1
                groups[oracle][key]["identical"] += 1
            else:
                stats[oracle]["explained"] += 1
                groups[oracle][key]["explained"] += 1
            for r, c in case_rules.items():
                rules[oracle][r] += c
                group_notes[oracle][key][r] += c
    elapsed = time.monotonic() - start
    for oracle in oracles:
        s = stats[oracle]
        print(f"differential vs {versions[oracle]} (seed {args.seed}, {args.cases} cases, {elapsed:.0f} s in all): "
              f"{s['identical']} bit-identical, {s['explained']} differ only by documented rules, "
              f"{s['refused']} refused by {oracle}, {s['unexplained']} unexplained")
        for r, c in rules[oracle].most_common():
            print(f"    {c:6d} elements: {r}")
        for r, c in refusals[oracle].most_common(8 if not args.verbose else None):
            print(f"    {c:6d} cases refused: {r}")
    for line in unexplained[:20]:
        print("UNEXPLAINED", line)
    if args.table and "onnxruntime" in oracles:
        write_table(args.table, args, versions["onnxruntime"], groups["onnxruntime"], group_notes["onnxruntime"],
                    stats["onnxruntime"], {"rules": rules["onnxruntime"], "refusals": refusals["onnxruntime"]})
    return 1 if unexplained else 0


def write_table(path, args, version, groups, notes, stats, totals):
    lines = [
        "# qdq beside ONNX Runtime, measured",
        "",
        f"Generated by `build/venv/bin/python scripts/differential.py --oracle onnxruntime --cases {args.cases} "
        f"--seed {args.seed} --table {path}` against {version} (CPU execution provider, graph optimisations "
        "off, inputs as initializers), qdq " + qdq.__version__ + ". Do not edit by hand.",
        "",
        f"In all: {stats['identical']} cases bit-identical, {stats['explained']} differing only by the rules "
        f"named, {stats['refused']} refused by ONNX Runtime, {stats['unexplained']} unexplained. One row per "
        "(operator, opset, x type → y type, granularity); "
        "'differs' counts the cases, the notes count elements per rule and cases per refusal.",
        "",
        "Why they differ (elements, all cases):",
        "",
    ] + [f"- {r}: {c}" for r, c in totals["rules"].most_common()] + [
        "",
        "What ONNX Runtime refuses (cases; see the rows for the types):",
        "",
    ] + [f"- {r}: {c}" for r, c in totals["refusals"].most_common()] + [
        "",
        "| operator | opset | type | granularity | cases | identical | differs | refused | unexplained | notes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], k[3])):
        c = groups[key]
        total = sum(c.values())
        note = "; ".join(f"{r} ({n})" for r, n in notes[key].most_common())
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {total} | {c['identical']} | {c['explained']} | "
                     f"{c['refused']} | {c['unexplained']} | {note} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
