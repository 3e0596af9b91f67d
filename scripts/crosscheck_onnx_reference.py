#!/usr/bin/env python3
"""Differential check of qdq against the ONNX reference evaluator (onnx.reference) on random data.

Needs the `onnx` and `ml_dtypes` packages (not in Debian 12; run it where pip can install them) and a
built qdq Python module on PYTHONPATH. Only finite inputs whose quotients stay in range are used:
there qdq's policy (docs/policy.md) and the reference agree, so every output must be bit-identical.
Usage: PYTHONPATH=build/python python3 scripts/crosscheck_onnx_reference.py [cases-per-config]
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import qdq

OUT_TYPES = {
    "uint8": TensorProto.UINT8, "int8": TensorProto.INT8, "uint16": TensorProto.UINT16,
    "int16": TensorProto.INT16, "uint4": TensorProto.UINT4, "int4": TensorProto.INT4,
    "uint2": TensorProto.UINT2, "int2": TensorProto.INT2,
    "float8e4m3fn": TensorProto.FLOAT8E4M3FN, "float8e4m3fnuz": TensorProto.FLOAT8E4M3FNUZ,
    "float8e5m2": TensorProto.FLOAT8E5M2, "float8e5m2fnuz": TensorProto.FLOAT8E5M2FNUZ,
    "float4e2m1": TensorProto.FLOAT4E2M1,
}


def run_reference(op, inputs, attrs, out_type):
    names = [f"i{k}" for k in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in zip(names, inputs)],
        [helper.make_tensor_value_info("y", out_type, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    return ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))[0]


def same(a, b):
    """Same dtype (ml_dtypes for the narrow types) and the same bytes: -0 and +0 differ."""
    a, b = np.asarray(a), np.asarray(b)
    # Every value of these types is exact in float32; compare the float32 bit patterns (the padding
    # bits of ml_dtypes' one-byte int4/int2 storage are not part of the value).
    return (a.dtype == b.dtype and a.shape == b.shape and
            np.array_equal(a.astype(np.float32).view(np.uint32), b.astype(np.float32).view(np.uint32)))


def main():
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rng = np.random.default_rng(7)
    checked = 0
    for name, out_type in OUT_TYPES.items():
        for layout in ("tensor", "axis", "blocked"):
            for _ in range(cases):
                shape = (int(rng.integers(1, 5)), int(rng.integers(1, 9)))
                x = (rng.standard_normal(shape) * rng.choice([1, 10, 300])).astype(np.float32)
                x.flat[::3] = np.round(x.flat[::3] * 2) / 2  # exact .5 ties
                attrs = {"output_dtype": out_type}
                if layout == "tensor":
                    s = np.array(rng.uniform(0.05, 4), np.float32)
                elif layout == "axis":
                    s = rng.uniform(0.05, 4, shape[1]).astype(np.float32)
                    attrs["axis"] = 1
                else:
                    b = int(rng.integers(1, shape[1] + 1))
                    s = rng.uniform(0.05, 4, (shape[0], -(-shape[1] // b))).astype(np.float32)
                    attrs.update(axis=1, block_size=b)
                kw = {k: v for k, v in attrs.items() if k != "output_dtype"}
                got = qdq.quantize_linear(x, s, output_dtype=name, **kw)
                want = run_reference("QuantizeLinear", [x, s], attrs, out_type)
                assert same(got, want), (name, layout, x, s, got, want)
                # And back: DequantizeLinear of the reference's codes.
                dq_attrs = {k: v for k, v in attrs.items() if k != "output_dtype"}
                got_dq = qdq.dequantize_linear(want, s, **dq_attrs)
                want_dq = run_reference("DequantizeLinear", [want, s], dq_attrs, TensorProto.FLOAT)
                assert same(got_dq, want_dq), (name, layout, got_dq, want_dq)
                checked += 2
    print(f"crosscheck: {checked} QuantizeLinear/DequantizeLinear calls bit-identical to onnx.reference {onnx.__version__}")


if __name__ == "__main__":
    main()
