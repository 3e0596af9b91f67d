"""tools/qdq/check_model.py, the script behind `qdq quantize --check`, on small generated models and the real ones."""

import json
import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import modelcheck

sys.path.insert(0, str(modelcheck.CHECK_SCRIPT.parent))
import check_model  # noqa: E402


def run_check(*args, env=None):
    return subprocess.run([sys.executable, str(modelcheck.CHECK_SCRIPT), *map(str, args)], capture_output=True,
                          text=True, env=env)


def save(model, path):
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path


def matmul_model(weight_node, weight_inits, opset=21, ir=10):
    """y = x @ W with x [N, 64] float; W made by `weight_node` (a DequantizeLinear or Identity) from inits."""
    graph = helper.make_graph(
        [weight_node, helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 32])], weight_inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)


@pytest.fixture(scope="module")
def weight():
    return np.random.default_rng(5).standard_normal((64, 32)).astype(np.float32)


@pytest.fixture(scope="module")
def float_model(tmp_path_factory, weight):
    path = tmp_path_factory.mktemp("float") / "float.onnx"
    return save(matmul_model(helper.make_node("Identity", ["w0"], ["w"]), [numpy_helper.from_array(weight, "w0")]),
                path)


def test_identical_models_have_zero_error(float_model):
    result = run_check(float_model, float_model)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["evaluator"] == f"onnxruntime {onnxruntime.__version__}"
    assert report["outputs"] == [{"name": "y", "shape": [1, 32], "relative_error": 0.0, "max_abs_error": 0.0}]
    assert report["max_relative_error"] == 0.0
    assert report["inputs"] == {"x": {"shape": [1, 64], "source": "random (seed 0)"}}


def test_text_table_has_evaluator_inputs_and_each_outputs_errors(tmp_path, float_model, weight):
    scale = (np.abs(weight).max(axis=0) / 127).astype(np.float32)
    codes = np.clip(np.round(weight / scale), -127, 127).astype(np.int8)
    dq = helper.make_node("DequantizeLinear", ["codes", "scale"], ["w"], axis=1)
    quantized = save(matmul_model(dq, [numpy_helper.from_array(codes, "codes"), numpy_helper.from_array(scale, "scale")]),
                     tmp_path / "int8.onnx")
    report = json.loads(run_check(float_model, quantized).stdout)
    result = run_check(float_model, quantized, "--text")
    assert result.returncode == 0, result.stderr
    (output,) = report["outputs"]
    relative, max_abs = f"{output['relative_error']:.3g}", f"{output['max_abs_error']:.3g}"
    assert result.stdout.splitlines() == [
        f"check against the original (onnxruntime {onnxruntime.__version__})",
        "  inputs: x [1, 64] random (seed 0)",
        "  output  relative error  max |error|",
        f"  y       {relative.ljust(14)}  {max_abs}",
        f"  max relative error {relative}",
    ]
    assert check_model.format_text({"evaluator": "e", "inputs": {}, "max_relative_error": None, "outputs": [
        {"name": "long_output_name", "relative_error": None, "max_abs_error": None}]}).splitlines() == [
        "check against the original (e)",
        "  output            relative error                     max |error|",
        "  long_output_name  n/a (NaN/inf in different places)  n/a (NaN/inf in different places)",
        "  max relative error n/a (NaN/inf in different places)",
    ]


def test_int8_model_error_is_the_numpy_one(tmp_path, float_model, weight):
    scale = (np.abs(weight).max(axis=0) / 127).astype(np.float32)
    codes = np.clip(np.round(weight / scale), -127, 127).astype(np.int8)
    dq = helper.make_node("DequantizeLinear", ["codes", "scale"], ["w"], axis=1)
    quantized = save(matmul_model(dq, [numpy_helper.from_array(codes, "codes"), numpy_helper.from_array(scale, "scale")]),
                     tmp_path / "int8.onnx")
    x = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float32)
    (tmp_path / "x.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    result = run_check(float_model, quantized, "--input", f"x={tmp_path / 'x.pb'}")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    o = x.astype(np.float64) @ weight.astype(np.float64)
    q = x.astype(np.float64) @ (codes.astype(np.float64) * scale)
    expected = np.linalg.norm(q - o) / np.linalg.norm(o)
    (output,) = report["outputs"]
    assert output["shape"] == [3, 32]
    assert output["relative_error"] == pytest.approx(expected, rel=1e-3)
    assert output["max_abs_error"] == pytest.approx(np.abs(q - o).max(), rel=1e-2)
    assert 0 < report["max_relative_error"] < 0.02
    assert report["inputs"]["x"]["source"] == str(tmp_path / "x.pb")


@pytest.fixture(scope="module")
def mxfp4_model(tmp_path_factory, weight):
    """W as MXFP4: float4e2m1 codes, one float8e8m0 scale per 32 values along K (axis 0)."""
    blocks = weight.reshape(2, 32, 32)
    exponent = np.floor(np.log2(np.abs(blocks).max(axis=1))) - 2
    scale = np.exp2(exponent).astype(np.float32)
    codes = (blocks / scale[:, None, :]).reshape(64, 32).astype(ml_dtypes.float4_e2m1fn)
    inits = [helper.make_tensor("codes", TensorProto.FLOAT4E2M1, [64, 32], codes.astype(np.float32).ravel().tolist()),
             helper.make_tensor("scale", TensorProto.FLOAT8E8M0, [2, 32],
                                scale.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8).tobytes(), raw=True)]
    dq = helper.make_node("DequantizeLinear", ["codes", "scale"], ["w"], axis=0, block_size=32,
                          output_dtype=TensorProto.FLOAT)
    return save(matmul_model(dq, inits, opset=24, ir=11), tmp_path_factory.mktemp("mx") / "mxfp4.onnx")


def test_auto_runs_mx_models_in_the_reference_evaluator(float_model, mxfp4_model):
    result = run_check(float_model, mxfp4_model, "--seed", "3")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["evaluator"] == f"onnx.reference {onnx.__version__}"
    assert report["inputs"]["x"]["source"] == "random (seed 3)"
    assert 0.01 < report["max_relative_error"] < 0.3  # MXFP4 keeps ~1.5 significant bits
    assert check_model.has_mx_dequantize(onnx.load(str(mxfp4_model)))
    assert not check_model.has_mx_dequantize(onnx.load(str(float_model)))


def test_onnxruntime_refusing_a_model_is_one_line(float_model, mxfp4_model):
    result = run_check(float_model, mxfp4_model, "--evaluator", "onnxruntime")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("check_model.py: error: ") and "ONNX Runtime cannot run it" in result.stderr


def test_zero_reference_output_reports_the_absolute_error(tmp_path):
    def scaled(factor, name):
        graph = helper.make_graph(
            [helper.make_node("Mul", ["x", "k"], ["y"])], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
            [numpy_helper.from_array(np.array([factor], np.float32), "k")])
        return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / name)

    x = np.array([1, -2, 2, 4], np.float32)
    (tmp_path / "x.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    zero, small = scaled(0.0, "zero.onnx"), scaled(0.25, "small.onnx")
    report = json.loads(run_check(zero, small, "--input", f"x={tmp_path / 'x.pb'}").stdout)
    assert report["outputs"][0]["relative_error"] == pytest.approx(np.linalg.norm(0.25 * x))
    assert report["outputs"][0]["max_abs_error"] == 1.0
    report = json.loads(run_check(zero, zero, "--input", f"x={tmp_path / 'x.pb'}").stdout)
    assert report["max_relative_error"] == 0.0


def test_random_inputs_follow_the_declared_types(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Cast", ["ids"], ["y"], to=TensorProto.FLOAT)], "g",
        [helper.make_tensor_value_info("ids", TensorProto.INT32, ["batch", "length"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "length"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    rng = np.random.Generator(np.random.PCG64(0))
    value = check_model.random_input(model.graph.input[0], {}, rng)
    assert value.dtype == np.int32 and value.shape == (1, check_model.DEFAULT_LENGTH)
    assert value.min() >= 0 and value.max() <= 255 and len(np.unique(value)) > 32
    value = check_model.random_input(model.graph.input[0], {"length": 7, "batch": 2}, rng)
    assert value.shape == (2, 7)
    path = save(model, tmp_path / "cast.onnx")
    report = json.loads(run_check(path, path, "--dim", "length=5").stdout)
    assert report["inputs"]["ids"]["shape"] == [1, 5]


@pytest.mark.parametrize("args, message", [
    (["--input", "nosuch=x.pb"], "--input nosuch: the model has no such input"),
    (["--input", "x"], "expected NAME=VALUE"),
    (["--input", "x=/nonexistent/x.pb"], "--input x=/nonexistent/x.pb:"),
    (["--dim", "N=zero"], "expected a positive integer"),
    (["--evaluator", "tvm"], "invalid choice: 'tvm'"),
    (["--no-such-option"], "unrecognized arguments: --no-such-option"),
])
def test_bad_arguments_are_one_line(float_model, args, message):
    result = run_check(float_model, float_model, *args)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_missing_model_and_garbage_model(tmp_path, float_model):
    result = run_check(float_model, tmp_path / "missing.onnx")
    assert result.returncode == 1 and "missing.onnx: no such file" in result.stderr
    (tmp_path / "garbage.onnx").write_bytes(b"\xff" * 100)
    result = run_check(float_model, tmp_path / "garbage.onnx")
    assert result.returncode == 1 and "cannot load the model" in result.stderr
    assert result.stderr.count("\n") == 1


def test_models_with_different_outputs_are_refused(tmp_path, float_model, weight):
    other = matmul_model(helper.make_node("Identity", ["w0"], ["w"]), [numpy_helper.from_array(weight, "w0")])
    other.graph.output[0].name = "z"
    other.graph.node[1].output[0] = "z"
    result = run_check(float_model, save(other, tmp_path / "other.onnx"))
    assert result.returncode == 1 and "the models' outputs differ" in result.stderr


def test_missing_onnxruntime_says_how_to_install_it(tmp_path, float_model):
    shadow = tmp_path / "shadow" / "onnxruntime"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named onnxruntime', name='onnxruntime')\n")
    env = {"PYTHONPATH": str(shadow.parent), "PATH": "/usr/bin:/bin"}
    result = run_check(float_model, float_model, env=env)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "onnxruntime is not importable" in result.stderr and "pip install onnxruntime" in result.stderr
    # The reference evaluator does not need it.
    result = run_check(float_model, float_model, "--evaluator", "reference", env=env)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("model", modelcheck.MODELS)
def test_reference_evaluator_agrees_with_onnxruntime_on_the_real_models(model):
    """The corrected GlobalMaxPool (magika) and BatchNormalization (opset-9 OCR) make onnx.reference usable."""
    path = str(modelcheck.model_path(model))
    feeds = modelcheck.model_inputs(model)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4
    expected = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"]).run(None, feeds)
    evaluator = check_model.ReferenceEvaluator()
    got = evaluator.run(path, onnx.load(path), feeds)
    for want, (name, value) in zip(expected, got.items()):
        assert check_model.compare(want, value)[0] < 1e-4, name


@pytest.mark.parametrize("evaluator", ["onnxruntime", "reference"])
def test_models_with_external_data(tmp_path, weight, evaluator):
    """The weights stay in their files for ONNX Runtime; the reference evaluator loads them."""
    model = matmul_model(helper.make_node("Identity", ["w0"], ["w"]), [numpy_helper.from_array(weight, "w0")])
    onnx.save(model, str(tmp_path / "a.onnx"), save_as_external_data=True, location="a.data", size_threshold=0)
    scaled = matmul_model(helper.make_node("Identity", ["w0"], ["w"]),
                          [numpy_helper.from_array(weight * np.float32(1.01), "w0")])
    onnx.save(scaled, str(tmp_path / "b.onnx"), save_as_external_data=True, location="b.data", size_threshold=0)
    assert (tmp_path / "a.data").stat().st_size == weight.nbytes
    result = run_check(tmp_path / "a.onnx", tmp_path / "b.onnx", "--evaluator", evaluator)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["max_relative_error"] == pytest.approx(0.01, rel=1e-4)


def test_reference_evaluator_runs_dequantize_linear_below_opset_19(tmp_path, float_model, weight):
    scale = (np.abs(weight).max(axis=0) / 127).astype(np.float32)
    codes = np.clip(np.round(weight / scale), -127, 127).astype(np.int8)
    dq = helper.make_node("DequantizeLinear", ["codes", "scale"], ["w"], axis=1)
    quantized = save(matmul_model(dq, [numpy_helper.from_array(codes, "codes"), numpy_helper.from_array(scale, "scale")],
                                  opset=13, ir=7), tmp_path / "int8_13.onnx")
    by_ort = json.loads(run_check(float_model, quantized).stdout)
    result = run_check(float_model, quantized, "--evaluator", "reference")
    assert result.returncode == 0, result.stderr
    by_reference = json.loads(result.stdout)
    assert by_reference["evaluator"].startswith("onnx.reference")
    assert by_reference["max_relative_error"] == pytest.approx(by_ort["max_relative_error"], rel=1e-4)
