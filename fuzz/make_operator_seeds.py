#!/usr/bin/env python3
"""Writes the handcrafted seed inputs of fuzz_operators into fuzz/corpus/operators/.

The byte layout is the order in which fuzz/operator_harness.cpp reads its input; these helpers
spell it out so the seeds stay readable. Run from anywhere: python3 fuzz/make_operator_seeds.py
"""
import os
import struct

OPSETS = [10, 13, 19, 21, 23, 24, 25, 25, 25, 25, 11, 18, 20, 22, 26, 9, 0, -1]
ABSENT = 0  # an attribute byte < 96


def opset(v):
    return bytes([OPSETS.index(v)])


def attr(plausible, v):
    """An attribute byte choosing `v` from the harness's plausible list (None = absent)."""
    if v is None:
        return bytes([ABSENT])
    i = plausible.index(v)
    b = 96 + i
    while (b % len(plausible)) != i:
        b += 1
    return bytes([b])


def ptype(plausible, t):
    return bytes([plausible.index(t)])


def shape(dims):
    out = bytes([len(dims)])
    for d in dims:
        assert 0 <= d < 6, 'seeds use dims 0..5 (one byte each); see big_dim for large ones'
        out += bytes([d])
    return out


def big_dim(k):
    """pick_dim byte for 32768*(1+b%3) + (b%5)*3 - 5 with b in [236, 240)."""
    assert 236 <= k < 240
    return bytes([k])


def buf(style=0, seed=1, mode=0):
    return bytes([mode, style]) + struct.pack('<Q', seed)


FLOAT, UINT8, INT8, UINT16, INT16, INT32 = 1, 2, 3, 4, 5, 6
FLOAT16, BFLOAT16, E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, UINT4, INT4, F4E2M1, E8M0, UINT2, INT2 = (
    10, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26)

Q_AXIS = [0, 1, -1, 2, -2, 3, 4, -5]
Q_SAT = [1, 0, 2]
Q_BLOCK = [1, 2, 3, 4, 16, 32, 0, -2]
Q_ODT = [3, 2, 5, 4, 17, 18, 19, 20, 21, 22, 23, 25, 26, 0, 1, 24]
Q_PREC = [1, 10, 16, 0, 11, 6]
Q_X = [FLOAT, FLOAT, FLOAT16, BFLOAT16, INT32]
Q_ZP = [UINT8, INT8, UINT16, INT16, INT4, UINT4, INT2, UINT2, E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, F4E2M1]
D_ODT = [1, 10, 16, 0, 2, 24, 11]
D_X = [UINT8, INT8, UINT16, INT16, INT32, INT4, UINT4, INT2, UINT2, E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, F4E2M1]
D_S = [FLOAT, FLOAT, FLOAT16, BFLOAT16, E8M0]
# parameter-shape modes: 0 rank 0, 1 [1], 2 per-axis, 4 blocked, 5 blocked off by one, 7 x's shape
SCALAR, ONE, PER_AXIS, BLOCKED = 0, 1, 2, 4


def quantize(op_v, x_shape, scale_mode, zp=None, axis=None, block=None, odt=None, prec=None, sat=None,
             x_type=FLOAT, same_scale=True, x_style=2, out_mode=0):
    b = bytes([0]) + opset(op_v) + attr(Q_AXIS, axis) + attr(Q_SAT, sat) + attr(Q_BLOCK, block)
    b += attr(Q_ODT, odt) + attr(Q_PREC, prec) + ptype(Q_X, x_type) + bytes([0 if same_scale else 200])
    b += shape(x_shape) + bytes([scale_mode])
    if scale_mode == BLOCKED + 1:
        b += bytes([2])  # the axis length one too long
    if zp is None:
        b += bytes([200])
    else:
        b += bytes([1]) + ptype(Q_ZP, zp)  # zp_mode 1: own type byte, scale's shape
    b += buf(style=x_style, seed=7) + buf(style=2, seed=3)
    if zp is not None:
        b += buf(style=0, seed=5)
    return b + bytes([out_mode])


def dequantize(op_v, x_type, x_shape, scale_mode, zp=False, axis=None, block=None, odt=None, scale=FLOAT, out_mode=0,
               zp_style=0):
    b = bytes([1]) + opset(op_v) + attr(Q_AXIS, axis) + attr(Q_BLOCK, block) + attr(D_ODT, odt)
    b += ptype(D_X, x_type) + ptype(D_S, scale) + shape(x_shape) + bytes([scale_mode])
    b += bytes([1 if zp else 200])  # zp_mode 1 (< 128): x's type, scale's shape
    b += buf(style=0, seed=11) + buf(style=2, seed=13)
    if zp:
        b += buf(style=zp_style, seed=17)
    return b + bytes([out_mode])


def dynamic(x_shape, style=2, seed=19):
    return bytes([2]) + opset(25) + bytes([0]) + shape(x_shape) + buf(style=style, seed=seed) + bytes([0])


SEEDS = {
    'q_per_tensor_uint8': quantize(10, [2, 3], SCALAR, zp=UINT8),
    'q_per_axis_int8': quantize(13, [3, 4], PER_AXIS, zp=INT8, axis=1),
    'q_blocked_int4': quantize(21, [2, 5, 3], BLOCKED, zp=INT4, axis=1, block=2),
    'q_e4m3fn_sat0': quantize(19, [4, 4], SCALAR, zp=E4M3FN, sat=0),
    'q_float16_prec': quantize(23, [3, 5], SCALAR, x_type=FLOAT16, odt=23, prec=1, x_style=1),
    'q_int2_output_dtype': quantize(25, [3, 3], SCALAR, odt=26),
    'q_int32_scale': quantize(25, [2, 2], SCALAR, x_type=INT32, zp=UINT16),
    'q_bad_block': quantize(21, [4, 5], BLOCKED + 1, zp=UINT8, axis=-1, block=4),
    'q_wrong_output_size': quantize(25, [3, 3], SCALAR, out_mode=242),
    'dq_int8_scalar': dequantize(10, INT8, [2, 3], SCALAR, zp=True),
    'dq_uint4_per_axis': dequantize(21, UINT4, [5, 3], PER_AXIS, zp=True, axis=0),
    'dq_int2_blocked_fp16': dequantize(25, INT2, [3, 5], BLOCKED, zp=True, axis=1, block=3, odt=10),
    'dq_e5m2_zero_zp': dequantize(19, E5M2, [5], ONE, zp=True, zp_style=3),
    'dq_f4_bf16': dequantize(23, F4E2M1, [2, 4], SCALAR, scale=BFLOAT16, zp=True),
    'dq_e8m0_no_odt': dequantize(24, INT8, [4], SCALAR, scale=E8M0),
    'dq_int32': dequantize(13, INT32, [3, 2], PER_AXIS, axis=-1, zp=True),
    'dyn_small': dynamic([2, 3]),
    'dyn_all_zero': dynamic([5], style=3),
    'dyn_empty': dynamic([0, 3]),
}
# multi-task tensors (several 32768-element tasks): a big dimension byte in [224, 240)
SEEDS['q_multitask_int4'] = (bytes([0]) + opset(25) + attr(Q_AXIS, 0) + bytes([0] * 2) + attr(Q_ODT, 22) + bytes([0]) +
                             ptype(Q_X, FLOAT) + bytes([0]) + bytes([2, 3]) + big_dim(237) + bytes([PER_AXIS, 200]) +
                             buf(style=2, seed=23) + buf(style=2, seed=29) + bytes([0]))
SEEDS['dq_multitask_uint8'] = (bytes([1]) + opset(21) + attr(Q_AXIS, -1) + bytes([0] * 2) + ptype(D_X, UINT8) +
                               ptype(D_S, FLOAT) + bytes([2]) + big_dim(238) + bytes([2, PER_AXIS, 1]) +
                               buf(seed=31) + buf(style=2, seed=37) + buf(seed=41) + bytes([0]))
SEEDS['dyn_multitask'] = bytes([2]) + opset(25) + bytes([0, 1]) + big_dim(236) + buf(style=2, seed=43) + bytes([0])

if __name__ == '__main__':
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus', 'operators')
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
    print(f'wrote {len(SEEDS)} seeds to {out}')
