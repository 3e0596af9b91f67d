"""Helpers of the model-level tests: the real models and their inputs, and independent checks of a quantized file.

Independent means: nothing here uses qdq. The quantized weights are found by walking the output model with
onnx, their codes recomputed with onnx.reference's QuantizeLinear, their sizes read from the files.
"""

import hashlib
import os
import pathlib
import re
import signal
import subprocess
import time

import numpy as np
import pytest
import onnx
from onnx import helper, numpy_helper

REPO = pathlib.Path(__file__).resolve().parents[2]
MODELS_DIR = REPO / "tests" / "data" / "models"
CHECK_SCRIPT = REPO / "tools" / "qdq" / "check_model.py"

FORMATS = ("int8", "uint8", "int4", "uint4", "float8e4m3fn", "mxfp8", "mxfp4")
MX_FORMATS = ("mxfp8", "mxfp4")
# The code type each format writes (DequantizeLinear's x).
CODE_TYPE = {
    "int8": onnx.TensorProto.INT8, "uint8": onnx.TensorProto.UINT8, "int4": onnx.TensorProto.INT4,
    "uint4": onnx.TensorProto.UINT4, "float8e4m3fn": onnx.TensorProto.FLOAT8E4M3FN,
    "mxfp8": onnx.TensorProto.FLOAT8E4M3FN, "mxfp4": onnx.TensorProto.FLOAT4E2M1,
}
# The least ai.onnx opset each format needs (per-axis 13, float8 19, blocked int4 21, e8m0 scales 24).
MIN_OPSET = {"int8": 13, "uint8": 13, "float8e4m3fn": 19, "int4": 21, "uint4": 21, "mxfp8": 24, "mxfp4": 24}

MODELS = ("ch_PP-OCRv4_rec_infer", "magika_standard_v3_3", "silero_vad_op18_ifless")


def model_path(model):
    return MODELS_DIR / f"{model}.onnx"


def notice_sha256(model):
    """The sha256 that the model's NOTICE file records."""
    text = (MODELS_DIR / f"{model}.NOTICE.txt").read_text()
    return re.search(r"^sha256:\s*([0-9a-f]{64})\s*$", text, re.M).group(1)


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def model_inputs(model):
    """Sensible inputs for each real model: what the model is fed in use, kept small for onnx.reference."""
    rng = np.random.Generator(np.random.PCG64(11))
    if model == "ch_PP-OCRv4_rec_infer":
        # A normalized [-1, 1] text-line image, 48 high (fixed by the model) and 64 wide: 8 CTC time steps.
        # Smooth horizontal stripes with noise look more like text than white noise does.
        rows = np.sin(np.linspace(0, 6 * np.pi, 48))[None, None, :, None]
        cols = np.cos(np.linspace(0, 20 * np.pi, 64))[None, None, None, :]
        image = 0.6 * rows * cols + 0.3 * rng.standard_normal((1, 3, 48, 64))
        return {"x": np.clip(image, -1, 1).astype(np.float32)}
    if model == "magika_standard_v3_3":
        # Magika's features: the first and the last 1024 bytes of a file, 256 padding a short one. A real text
        # file (the project's licence) in front, padding behind, as for a file shorter than 2 KiB.
        head = np.frombuffer((REPO / "LICENSE").read_bytes()[:1024], dtype=np.uint8).astype(np.int32)
        data = np.full((1, 2048), 256, dtype=np.int32)
        data[0, :head.size] = head
        return {"bytes": data}
    if model == "silero_vad_op18_ifless":
        # One chunk as silero's own wrapper feeds it at 16 kHz: 64 samples of context + 512 new ones. A voiced,
        # speech-like signal (150 Hz harmonics, amplitude-modulated, a little noise) so that the speech
        # probability is ~0.8, where a relative error means something; near 0 it would
        # measure the sigmoid's tail. The recurrent state of a fresh stream is zeros; sr is 16000 or 8000.
        t = np.arange(576) / 16000.0
        voice = sum(np.sin(2 * np.pi * 150 * k * t) / k for k in (1, 2, 3))
        audio = 0.4 * voice * (1 + np.sin(2 * np.pi * 160 * t)) + 0.01 * rng.standard_normal(576)
        return {"input": audio[None, :].astype(np.float32), "sr": np.array(16000, dtype=np.int64),
                "state": np.zeros((2, 1, 128), dtype=np.float32)}
    raise KeyError(model)


def write_inputs(model, folder):
    """Writes model_inputs(model) as TensorProto files into `folder`; returns {name: path}."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, value in model_inputs(model).items():
        path = folder / f"{model}.{name}.pb"
        path.write_bytes(numpy_helper.from_array(value, name).SerializeToString())
        paths[name] = path
    return paths


def graphs(graph):
    """The graph and every subgraph inside it, depth first."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    yield from graphs(sub)


def constants(model):
    """{name: TensorProto} of every initializer and Constant-node value in every graph of `model`."""
    found = {}
    for graph in graphs(model.graph):
        for tensor in graph.initializer:
            found[tensor.name] = tensor
        for node in graph.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                for attr in node.attribute:
                    if attr.name == "value" and attr.type == onnx.AttributeProto.TENSOR:
                        found[node.output[0]] = attr.t
    return found


def opset(model, domain=""):
    for entry in model.opset_import:
        if entry.domain in ((domain,) if domain else ("", "ai.onnx")):
            return entry.version
    return None


def _attribute(node, name, default=None):
    for attr in node.attribute:
        if attr.name == name:
            return helper.get_attribute_value(attr)
    return default


def to_array(tensor, base_dir):
    return numpy_helper.to_array(tensor, base_dir=str(base_dir))


def dequantize_nodes(model):
    """[(graph, node)] of every DequantizeLinear in every graph."""
    return [(graph, node) for graph in graphs(model.graph) for node in graph.node
            if node.op_type == "DequantizeLinear" and node.domain in ("", "ai.onnx")]


def find_weight_dequantizers(original, quantized, name):
    """The DequantizeLinear nodes of `quantized` that now produce the original weight `name`.

    A DequantizeLinear stands in for a weight either under the weight's own name, or feeding the input slot
    of a consumer (same node name, same input index) that read the weight in the original model.
    """
    producers = {}
    for _, node in dequantize_nodes(quantized):
        for output in node.output:
            producers[output] = node
    found = []
    if name in producers:
        found.append(producers[name])
    slots = [(node.name, index) for graph in graphs(original.graph) for node in graph.node
             for index, value in enumerate(node.input) if value == name and node.name]
    by_name = {node.name: node for graph in graphs(quantized.graph) for node in graph.node if node.name}
    for node_name, index in slots:
        node = by_name.get(node_name)
        if node is not None and index < len(node.input) and node.input[index] in producers:
            dq = producers[node.input[index]]
            if all(dq is not other for other in found):
                found.append(dq)
    return found


def recompute_codes(original, original_dir, quantized, quantized_dir, names):
    """For each weight name: (stored codes, codes onnx.reference's QuantizeLinear computes) as uint8 bit patterns.

    QuantizeLinear runs at the quantized model's ai.onnx opset, from the original weight and the scale and
    zero point stored next to the codes, with the DequantizeLinear's axis and block_size.
    """
    from onnx.reference import ReferenceEvaluator

    originals = constants(original)
    stored = constants(quantized)
    nodes, inits, outputs, expected_names = [], [], [], []
    stored_codes = {}
    for name in names:
        dqs = find_weight_dequantizers(original, quantized, name)
        assert dqs, f"no DequantizeLinear produces the quantized weight {name}"
        for k, dq in enumerate(dqs):
            codes_tensor = stored[dq.input[0]]
            tag = f"t{len(outputs)}"
            inits.append(_copy_tensor(originals[name], f"{tag}_w", original_dir))
            inputs = [f"{tag}_w"]
            for slot in (1, 2):
                if slot < len(dq.input) and dq.input[slot]:
                    inits.append(_copy_tensor(stored[dq.input[slot]], f"{tag}_{slot}", quantized_dir))
                    inputs.append(f"{tag}_{slot}")
            attributes = {"axis": _attribute(dq, "axis", 1)}
            block = _attribute(dq, "block_size", 0)
            if block:
                attributes["block_size"] = block
            if len(inputs) < 3 and opset(quantized) >= 21:
                attributes["output_dtype"] = codes_tensor.data_type
            elif len(inputs) < 3:
                # Before opset 21 only a zero point selects a float8 output type: an all-zero one of the codes' type.
                scale_dims = list(stored[dq.input[1]].dims)
                zero = np.zeros(scale_dims, dtype=helper.tensor_dtype_to_np_dtype(codes_tensor.data_type))
                inits.append(helper.make_tensor(f"{tag}_2", codes_tensor.data_type, scale_dims,
                                                zero.view(np.uint8).tobytes(), raw=True))
                inputs.append(f"{tag}_2")
            nodes.append(helper.make_node("QuantizeLinear", inputs, [f"{tag}_q"], **attributes))
            outputs.append(helper.make_tensor_value_info(f"{tag}_q", codes_tensor.data_type, None))
            expected_names.append((name, k))
            stored_codes[(name, k)] = to_array(codes_tensor, quantized_dir)
    graph = helper.make_graph(nodes, "recompute", [], outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset(quantized))],
                              ir_version=quantized.ir_version)
    results = ReferenceEvaluator(model).run(None, {})
    pairs = {}
    for key, value in zip(expected_names, results):
        pairs[key] = (_bits(stored_codes[key]), _bits(np.asarray(value)))
    return pairs


def _copy_tensor(tensor, name, base_dir):
    copy = numpy_helper.from_array(to_array(tensor, base_dir), name) if tensor.data_type in (
        onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.INT8, onnx.TensorProto.UINT8,
        onnx.TensorProto.INT32, onnx.TensorProto.DOUBLE) else None
    if copy is None:
        # Types numpy_helper cannot round-trip exactly (4-bit, float8, e8m0, bfloat16): copy the proto itself.
        copy = onnx.TensorProto()
        copy.CopyFrom(tensor)
        if copy.data_location == onnx.TensorProto.EXTERNAL:
            onnx.external_data_helper.load_external_data_for_tensor(copy, str(base_dir))
            copy.data_location = onnx.TensorProto.DEFAULT
            del copy.external_data[:]
        copy.name = name
    return copy


def _bits(array):
    """The element codes as uint8/uint16 bit patterns (4-bit types one code per byte, sign bits kept)."""
    array = np.asarray(array)
    if array.dtype.itemsize == 1:
        bits = array.view(np.uint8)
        if array.dtype.name in ("int4", "uint4", "float4_e2m1fn"):
            bits = bits & 0x0F
        return bits
    return array.view(np.dtype(f"u{array.dtype.itemsize}"))


def stored_bytes(tensor, base_dir):
    """Bytes the tensor's values take in the file: raw data, external data length, or the packed typed field."""
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        info = {entry.key: entry.value for entry in tensor.external_data}
        if "length" in info:
            return int(info["length"])
        return os.path.getsize(os.path.join(base_dir, info["location"])) - int(info.get("offset", 0))
    if tensor.raw_data:
        return len(tensor.raw_data)
    elements = int(np.prod(tensor.dims)) if len(tensor.dims) else 1
    bits = {onnx.TensorProto.INT4: 4, onnx.TensorProto.UINT4: 4, onnx.TensorProto.FLOAT4E2M1: 4}.get(
        tensor.data_type)
    if bits:
        return (elements + 1) // 2
    return elements * helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize


def model_bytes(path):
    """The model file's size plus the sizes of the external data files it names."""
    path = pathlib.Path(path)
    total = path.stat().st_size
    model = onnx.load(str(path), load_external_data=False)
    locations = set()
    for tensor in constants(model).values():
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            locations.add({entry.key: entry.value for entry in tensor.external_data}["location"])
    return total + sum((path.parent / location).stat().st_size for location in locations)


def dequantized_weights(original, quantized, quantized_dir, names):
    """{name: the weight as onnx.reference's DequantizeLinear rebuilds it from the stored codes} (first DQ each)."""
    from onnx.reference import ReferenceEvaluator

    stored = constants(quantized)
    nodes, inits, outputs, keys = [], [], [], []
    for name in names:
        dq = find_weight_dequantizers(original, quantized, name)[0]
        tag = f"t{len(keys)}"
        inputs = []
        for slot, value in enumerate(dq.input):
            if value:
                inits.append(_copy_tensor(stored[value], f"{tag}_{slot}", quantized_dir))
                inputs.append(f"{tag}_{slot}")
        node = helper.make_node("DequantizeLinear", inputs, [f"{tag}_w"])
        node.attribute.extend(dq.attribute)
        nodes.append(node)
        outputs.append(helper.make_empty_tensor_value_info(f"{tag}_w"))
        keys.append(name)
    graph = helper.make_graph(nodes, "dequantize", [], outputs, inits)
    # onnx.reference has no DequantizeLinear-13; 19 only added types (float8 codes, float16/bfloat16 scales),
    # so for the 8-bit integer codes of an opset-13 model it computes the same.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", max(19, opset(quantized)))],
                              ir_version=max(9, quantized.ir_version))
    return dict(zip(keys, ReferenceEvaluator(model).run(None, {})))


def interrupt_while_staged(args, folder, signal_name, expected_names):
    """Starts `args` (a qdq command writing into `folder`), sends `signal_name` once its staged output
    (`.out.onnx.qdq-tmp*`) appears, and asserts that the signal ended it and only `expected_names` remain
    in `folder`. Skips if the command finished before the signal could arrive."""
    folder = pathlib.Path(folder)
    number = getattr(signal, signal_name)
    process = subprocess.Popen([str(a) for a in args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def staged():
        return any(p.name.startswith(".out.onnx.qdq-tmp") for p in folder.iterdir())

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not staged() and process.poll() is None:
        time.sleep(0.002)
    was_staged = staged()
    process.send_signal(number)
    code = process.wait(timeout=30)
    if code == 0:
        pytest.skip("qdq finished before the signal arrived")
    assert was_staged
    assert code == -number
    assert {p.name for p in folder.iterdir()} == set(expected_names)
