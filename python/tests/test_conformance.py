"""Every official ONNX backend node test (tests/data/onnx-node) through the Python API.

Inputs and expected outputs are read with qdq.load_tensor, the node's opset and attributes with
qdq._read_model_node (qdq's C++ model reader), and each case runs through qdq.quantize_linear,
qdq.dequantize_linear or qdq.dynamic_quantize_linear — the functions users call.
"""
import pytest

import qdq
from conftest import ONNX_NODE, assert_bit_exact, needs_io

CASES = sorted(p.name for p in ONNX_NODE.iterdir() if (p / "model.onnx").is_file()) if ONNX_NODE.is_dir() else []

pytestmark = needs_io


def test_all_cases_present():
    # 14 DequantizeLinear, 13 QuantizeLinear and 3 DynamicQuantizeLinear tests.
    assert len(CASES) == 30, f"expected 30 backend tests in {ONNX_NODE}, found {len(CASES)}"


def _run(node, tensors):
    attrs = dict(node["attributes"])
    op = node["op_type"]
    opset = node["opset"]
    args = [tensors.get(name) if name else None for name in node["inputs"]]
    if op == "DynamicQuantizeLinear":
        assert not attrs
        return list(qdq.dynamic_quantize_linear(args[0], opset=opset))
    while len(args) < 3:
        args.append(None)
    kwargs = {"opset": opset}
    for name in ("axis", "block_size", "output_dtype", "precision"):
        if name in attrs:
            kwargs[name] = attrs.pop(name)
    if "saturate" in attrs:
        kwargs["saturate"] = bool(attrs.pop("saturate"))
    assert not attrs, f"unexpected attributes {attrs}"
    if op == "QuantizeLinear":
        return [qdq.quantize_linear(*args, **kwargs)]
    assert op == "DequantizeLinear", op
    return [qdq.dequantize_linear(*args, **kwargs)]


@pytest.mark.parametrize("case", CASES)
def test_backend_node(case):
    folder = ONNX_NODE / case
    node = qdq._read_model_node(folder / "model.onnx")
    data = folder / "test_data_set_0"
    tensors = {name: qdq.load_tensor(data / f"input_{k}.pb") for k, name in enumerate(node["graph_inputs"])}
    results = dict(zip(node["outputs"], _run(node, tensors)))
    assert len(node["graph_outputs"]) >= 1
    for k, name in enumerate(node["graph_outputs"]):
        expected = qdq.load_tensor(data / f"output_{k}.pb")
        assert_bit_exact(results[name], expected, f"{case} output_{k} ({name})")
