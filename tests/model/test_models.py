"""`qdq quantize` on the real models of tests/data/models, in every format: valid, runs, accurate, exact, honest.

Each (model, format) is quantized once per session with `--json --check` (the check runs tools/qdq/check_model.py
from this tree, with this venv's Python, on the inputs of modelcheck.model_inputs). The tests then check the
file independently of qdq: onnx's full checker, the relative output error against a per-format bound
(docs/model-quantization.md, "Accuracy", explains the bounds), the stored codes against onnx.reference's
QuantizeLinear, and the report's sizes against the files.
"""

import json
import os
import re
import sys

import numpy as np
import onnx
import onnxruntime
import pytest

import modelcheck
from modelcheck import FORMATS, MODELS

# Upper bounds on the largest relative output error ||q - o|| / ||o|| of `--check`, per model and format.
# Measured values and why they are what they are: docs/model-quantization.md, "Accuracy". Each bound is the
# measured error with a margin of about 1.5-2x, so that a change of evaluator version or CPU (different
# summation order) passes, while a wrong scale, axis or rounding (errors of 2x to 100x) fails.
BOUNDS = {  # measured (docs/model-quantization.md): OCR, magika, silero
    "ch_PP-OCRv4_rec_infer": {"int8": 0.02, "uint8": 0.025, "int4": 0.45, "uint4": 0.6, "float8e4m3fn": 0.06,
                              "mxfp8": 0.12, "mxfp4": 0.2},
    "magika_standard_v3_3": {"int8": 0.03, "uint8": 0.03, "int4": 0.3, "uint4": 0.3, "float8e4m3fn": 0.01,
                             "mxfp8": 0.02, "mxfp4": 0.05},
    "silero_vad_op18_ifless": {"int8": 0.06, "uint8": 0.05, "int4": 0.8, "uint4": 0.6, "float8e4m3fn": 0.2,
                               "mxfp8": 0.3, "mxfp4": 0.6},
}

CASES = [(model, fmt) for model in MODELS for fmt in FORMATS]


@pytest.fixture(scope="session")
def quantized(tmp_path_factory, run_qdq):
    """quantized(model, fmt) -> (report dict, output path): `qdq quantize --json --check`, once per session."""
    folder = tmp_path_factory.mktemp("quantized")
    cache = {}
    env = dict(os.environ, QDQ_PYTHON=sys.executable, QDQ_CHECK_SCRIPT=str(modelcheck.CHECK_SCRIPT))

    def get(model, fmt):
        if (model, fmt) not in cache:
            inputs = modelcheck.write_inputs(model, folder / "inputs")
            output = folder / f"{model}.{fmt}.onnx"
            args = ["quantize", modelcheck.model_path(model), "-o", output, "--format", fmt, "--json", "--check"]
            for name, path in inputs.items():
                args += ["--check-input", f"{name}={path}"]
            result = run_qdq(*args, env=env)
            cache[(model, fmt)] = (json.loads(result.stdout), output)
        return cache[(model, fmt)]

    return get


@pytest.mark.parametrize("model", MODELS)
def test_models_are_the_ones_their_notices_name(model):
    assert modelcheck.file_sha256(modelcheck.model_path(model)) == modelcheck.notice_sha256(model)


@pytest.mark.parametrize("model, fmt", CASES)
def test_quantized_model_is_valid_and_accurate(quantized, model, fmt):
    report, output = quantized(model, fmt)
    original = onnx.load(str(modelcheck.model_path(model)))
    onnx.checker.check_model(str(output), full_check=True)
    result = onnx.load(str(output))

    assert report["format"] == fmt and report["output"] == str(output)
    assert report["opset"]["from"] == modelcheck.opset(original)
    assert report["opset"]["to"] == modelcheck.opset(result) >= max(modelcheck.MIN_OPSET[fmt], report["opset"]["from"])
    assert report["ir_version"] == {"from": original.ir_version, "to": result.ir_version}
    assert [o.name for o in result.graph.output] == [o.name for o in original.graph.output]
    assert report["tensors"], "nothing was quantized"
    assert all(t["format"] == fmt for t in report["tensors"])

    check = report["check"]
    evaluator = (f"onnx.reference {onnx.__version__}" if fmt in modelcheck.MX_FORMATS
                 else f"onnxruntime {onnxruntime.__version__}")
    assert check["evaluator"] == evaluator
    assert [o["name"] for o in check["outputs"]] == [o.name for o in original.graph.output]
    assert set(check["inputs"]) == set(modelcheck.model_inputs(model))
    assert all(source["source"].endswith(".pb") for source in check["inputs"].values())
    assert check["max_relative_error"] is not None
    assert 0 < check["max_relative_error"] <= BOUNDS[model][fmt], check

    if fmt not in modelcheck.MX_FORMATS:
        # It also runs in a default ONNX Runtime session (the check asks for float32 MatMulNBits).
        outputs = onnxruntime.InferenceSession(str(output), providers=["CPUExecutionProvider"]).run(
            None, modelcheck.model_inputs(model))
        assert all(np.all(np.isfinite(value)) for value in outputs)


@pytest.mark.parametrize("model, fmt", CASES)
def test_report_sqnr_and_error_are_the_files(quantized, model, fmt):
    """The report's SQNR and max |error| per tensor, recomputed from onnx.reference's DequantizeLinear."""
    report, output = quantized(model, fmt)
    original = onnx.load(str(modelcheck.model_path(model)))
    weights = modelcheck.constants(original)
    names = [t["name"] for t in report["tensors"]]
    rebuilt = modelcheck.dequantized_weights(original, onnx.load(str(output)), output.parent, names)
    for tensor in report["tensors"]:
        weight = modelcheck.to_array(weights[tensor["name"]], modelcheck.MODELS_DIR).astype(np.float64)
        error = rebuilt[tensor["name"]].astype(np.float64) - weight
        noise = float(np.sum(error * error))
        sqnr = min(300.0, 10 * np.log10(float(np.sum(weight * weight)) / noise)) if noise > 0 else 300.0
        assert tensor["sqnr_db"] == pytest.approx(sqnr, abs=0.01), tensor["name"]
        assert tensor["max_abs_error"] == pytest.approx(float(np.max(np.abs(error))), rel=1e-5, abs=1e-12)


def _granularity(text):
    """(kind, axis, block) from the report's granularity string."""
    if text == "per-tensor":
        return "per-tensor", None, 0
    match = re.fullmatch(r"per-channel\(axis=(\d+)\)", text)
    if match:
        return "per-channel", int(match.group(1)), 0
    match = re.fullmatch(r"blocked\(axis=(\d+),block=(\d+)\)", text)
    assert match, text
    return "blocked", int(match.group(1)), int(match.group(2))


@pytest.mark.parametrize("model, fmt", CASES)
def test_codes_are_what_quantize_linear_computes(quantized, model, fmt):
    """Bit-identical codes: onnx.reference's QuantizeLinear of the original weight with the stored scale and zero
    point. No documented divergence (docs/policy.md) applies: weights are finite, scales float32 or e8m0."""
    report, output = quantized(model, fmt)
    original = onnx.load(str(modelcheck.model_path(model)))
    result = onnx.load(str(output))
    names = [t["name"] for t in report["tensors"]]
    pairs = modelcheck.recompute_codes(original, modelcheck.MODELS_DIR, result, output.parent, names)
    assert {name for name, _ in pairs} == set(names)
    for (name, _), (stored, expected) in pairs.items():
        assert stored.shape == expected.shape, name
        mismatches = np.flatnonzero(stored != expected)
        assert mismatches.size == 0, (f"{name}: {mismatches.size} codes differ from QuantizeLinear's, first at "
                                      f"{mismatches[0]}: stored {stored.ravel()[mismatches[0]]:#x}, "
                                      f"QuantizeLinear {expected.ravel()[mismatches[0]]:#x}")
    # The DequantizeLinear's attributes are the granularity the report states.
    stored = modelcheck.constants(result)
    for tensor in report["tensors"]:
        kind, axis, block = _granularity(tensor["granularity"])
        for dq in modelcheck.find_weight_dequantizers(original, result, tensor["name"]):
            scale = stored[dq.input[1]]
            attributes = {a.name: onnx.helper.get_attribute_value(a) for a in dq.attribute}
            assert list(stored[dq.input[0]].dims) == tensor["shape"]
            assert stored[dq.input[0]].data_type == modelcheck.CODE_TYPE[fmt]
            if kind == "per-tensor":
                assert int(np.prod(scale.dims)) == 1
            else:
                assert attributes.get("axis", 1) == axis
                assert attributes.get("block_size", 0) == block
                expected = list(tensor["shape"])
                expected[axis] = -(-expected[axis] // block) if block else expected[axis]
                assert list(scale.dims) == (expected if block else [expected[axis]]), tensor["name"]
            if fmt in modelcheck.MX_FORMATS:
                assert scale.data_type == onnx.TensorProto.FLOAT8E8M0 and block == 32
                assert attributes["output_dtype"] == onnx.TensorProto.FLOAT


@pytest.mark.parametrize("model, fmt", CASES)
def test_report_sizes_are_the_files(quantized, model, fmt):
    report, output = quantized(model, fmt)
    original = onnx.load(str(modelcheck.model_path(model)))
    result = onnx.load(str(output), load_external_data=False)
    before = modelcheck.constants(original)
    after = modelcheck.constants(result)
    for tensor in report["tensors"]:
        weight = before[tensor["name"]]
        assert list(weight.dims) == tensor["shape"]
        assert tensor["bytes_before"] == modelcheck.stored_bytes(weight, modelcheck.MODELS_DIR), tensor["name"]
        (dq, *_) = modelcheck.find_weight_dequantizers(original, result, tensor["name"])
        stored = sum(modelcheck.stored_bytes(after[name], output.parent) for name in dq.input if name)
        assert tensor["bytes_after"] == stored, tensor["name"]
        assert tensor["sqnr_db"] > 0 and tensor["max_abs_error"] >= 0
    totals = report["totals"]
    assert totals["tensors_quantized"] == len(report["tensors"])
    assert totals["weight_bytes_before"] == sum(t["bytes_before"] for t in report["tensors"])
    assert totals["weight_bytes_after"] == sum(t["bytes_after"] for t in report["tensors"])
    assert totals["model_bytes_before"] == modelcheck.model_bytes(modelcheck.model_path(model))
    assert totals["model_bytes_after"] == modelcheck.model_bytes(output)
    assert totals["seconds"] >= 0
    # The model shrinks by what the weights did, give or take the new nodes and names.
    saved = totals["weight_bytes_before"] - totals["weight_bytes_after"]
    shrink = totals["model_bytes_before"] - totals["model_bytes_after"]
    assert abs(shrink - saved) < 200 * (totals["tensors_quantized"] + len(result.graph.node)) + 65536
    # Every name the report skips exists (in the original, or made by the opset conversion), with a reason.
    for skipped in report["skipped"]:
        assert skipped["name"] in before or skipped["name"] in after, skipped
        assert skipped["reason"]


# Blocked int4 on a Conv whose axis 1 has length 1 (depthwise convolutions of the OCR model, silero's STFT
# basis [258, 1, 256]) would make one-element blocks, a float32 scale per 4-bit code; the quantizer blocks
# along the longest kernel axis instead, so no tensor grows in any format.
@pytest.mark.parametrize("model, fmt", CASES)
def test_quantization_never_grows_a_tensor(quantized, model, fmt):
    report, _ = quantized(model, fmt)
    grown = [t["name"] for t in report["tensors"] if t["bytes_after"] >= t["bytes_before"]]
    assert not grown, f"{len(grown)} tensors grew, e.g. {grown[0]}"


def test_check_failures_are_one_error_and_no_file(tmp_path, run_qdq):
    model = modelcheck.model_path("magika_standard_v3_3")
    output = tmp_path / "out.onnx"
    shadow = tmp_path / "shadow" / "onnxruntime"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named onnxruntime', name='onnxruntime')\n")
    env = dict(os.environ, QDQ_PYTHON=sys.executable, QDQ_CHECK_SCRIPT=str(modelcheck.CHECK_SCRIPT),
               PYTHONPATH=str(shadow.parent))
    result = run_qdq("quantize", model, "-o", output, "--format", "int8", "--check", env=env, check=False)
    assert result.returncode == 1 and not output.exists()
    assert result.stderr.startswith("qdq: error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "onnxruntime is not importable" in result.stderr and "pip install onnxruntime" in result.stderr
    env.pop("PYTHONPATH")
    result = run_qdq("quantize", model, "-o", output, "--format", "int8", "--check", "--check-input",
                     f"nosuch={tmp_path / 'x.pb'}", env=env, check=False)
    assert result.returncode == 1 and not output.exists()
    assert "nosuch: the model has no such input" in result.stderr and result.stderr.count("\n") == 1


def test_check_evaluator_can_be_chosen(tmp_path, run_qdq):
    model = "magika_standard_v3_3"
    inputs = modelcheck.write_inputs(model, tmp_path)
    env = dict(os.environ, QDQ_PYTHON=sys.executable, QDQ_CHECK_SCRIPT=str(modelcheck.CHECK_SCRIPT))
    result = run_qdq("quantize", modelcheck.model_path(model), "-o", tmp_path / "out.onnx", "--format", "int8",
                     "--json", "--check", "--check-evaluator", "reference",
                     "--check-input", f"bytes={inputs['bytes']}", env=env)
    check = json.loads(result.stdout)["check"]
    assert check["evaluator"] == f"onnx.reference {onnx.__version__}"
    # The same file, the same inputs: the two evaluators agree on the error to a few digits.
    assert check["max_relative_error"] == pytest.approx(0.0144, abs=0.0005)
