"""`qdq quantize`'s command-line contract on small generated models: exit codes, the single stderr
line, no output after an error, the --json report, --check through a stand-in script
(QDQ_CHECK_SCRIPT), and every format's output passing onnx.checker and the reference evaluator."""

import json
import os
import pathlib
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
import modelcheck

FORMATS = ["int8", "uint8", "int4", "uint4", "float8e4m3fn", "mxfp8", "mxfp4"]


def make_model(path: pathlib.Path, opset: int = 24, ir_version: int = 12) -> None:
    rng = np.random.default_rng(7)
    w = rng.standard_normal((64, 48)).astype(np.float32)
    g = rng.standard_normal((40, 48)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Constant", [], ["g"], value=numpy_helper.from_array(g, "g"), name="const_g"),
        helper.make_node("Gemm", ["h", "g"], ["y"], transB=1, name="gemm"),
    ]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 40])], [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version)
    onnx.save(model, str(path))


def assert_failed_cleanly(result, folder: pathlib.Path, expected_files: set) -> None:
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("qdq: error: "), result.stderr
    assert {p.name for p in folder.iterdir()} == expected_files


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_checks_and_runs(run_qdq, tmp_path, fmt):
    make_model(tmp_path / "in.onnx")
    result = run_qdq("quantize", tmp_path / "in.onnx", "-o", tmp_path / "out.onnx", "--format", fmt,
                     "--min-elements", "100", "--json")
    report = json.loads(result.stdout)
    assert result.stderr == ""  # no progress bar when stderr is not a terminal
    assert report["format"] == fmt and report["totals"]["tensors_quantized"] == 2
    assert {t["name"] for t in report["tensors"]} == {"w", "g"}
    model = onnx.load(str(tmp_path / "out.onnx"))
    onnx.checker.check_model(model, full_check=True)
    x = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float32)
    ref = ReferenceEvaluator(str(tmp_path / "in.onnx")).run(None, {"x": x})[0]
    got = ReferenceEvaluator(str(tmp_path / "out.onnx")).run(None, {"x": x})[0]
    rel = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    assert rel < {"int8": 0.02, "uint8": 0.02, "float8e4m3fn": 0.06, "mxfp8": 0.08}.get(fmt, 0.3), rel


def test_json_contract_fields(run_qdq, tmp_path):
    make_model(tmp_path / "in.onnx")
    report = json.loads(run_qdq("quantize", tmp_path / "in.onnx", "-o", tmp_path / "out.onnx", "--format", "int4",
                                "--min-elements", "100", "--json").stdout)
    for key, kind in [("input", str), ("output", str), ("format", str), ("opset", dict), ("ir_version", dict),
                      ("conversions", list), ("tensors", list), ("skipped", list), ("totals", dict)]:
        assert isinstance(report[key], kind), key
    assert "check" not in report
    tensor = {t["name"]: t for t in report["tensors"]}["w"]
    assert tensor["shape"] == [64, 48] and tensor["consumers"] == ["MatMul 'mm'"]
    assert tensor["granularity"] == "blocked(axis=0,block=32)"
    assert tensor["bytes_before"] == 64 * 48 * 4
    assert tensor["sqnr_db"] > 10 and tensor["max_abs_error"] > 0
    assert {t["name"]: t for t in report["tensors"]}["g"]["granularity"] == "blocked(axis=1,block=32)"
    totals = report["totals"]
    for key in ["tensors_quantized", "weight_bytes_before", "weight_bytes_after", "model_bytes_before",
                "model_bytes_after"]:
        assert isinstance(totals[key], int)
    assert totals["model_bytes_after"] == (tmp_path / "out.onnx").stat().st_size
    assert isinstance(totals["seconds"], float)


def test_errors_are_one_line_and_write_nothing(run_qdq, tmp_path):
    make_model(tmp_path / "in.onnx")
    cases = [
        ["--format", "int3"],
        [],  # no --format
        ["--format", "mxfp4", "--block-size", "64"],
        ["--format", "int4", "--block-size", "8"],
        ["--format", "float8e4m3fn", "--asymmetric"],
        ["--format", "int8", "--no-such-option"],
        ["--format", "int8", "--symmetric", "--asymmetric"],
    ]
    for extra in cases:
        result = run_qdq("quantize", tmp_path / "in.onnx", "-o", tmp_path / "out.onnx", *extra, check=False)
        assert_failed_cleanly(result, tmp_path, {"in.onnx"})
    result = run_qdq("quantize", tmp_path / "missing.onnx", "-o", tmp_path / "out.onnx", "--format", "int8",
                     check=False)
    assert_failed_cleanly(result, tmp_path, {"in.onnx"})
    # An opset the format needs but the model lacks: converted, or one clean error and no output.
    make_model(tmp_path / "old.onnx", opset=13, ir_version=7)
    result = run_qdq("quantize", tmp_path / "old.onnx", "-o", tmp_path / "out.onnx", "--format", "mxfp4",
                     "--min-elements", "100", check=False)
    if result.returncode != 0:
        assert "needs opset 24" in result.stderr
        assert_failed_cleanly(result, tmp_path, {"in.onnx", "old.onnx"})


FAKE_CHECK = """
import json, sys
args = sys.argv[1:]
if "--fail" in open(args[1], "rb").read().decode("latin1", "replace") or "FAIL_CHECK" in __import__("os").environ:
    print("Traceback (most recent call last):", file=sys.stderr)
    print("RuntimeError: the evaluator cannot run this model", file=sys.stderr)
    sys.exit(3)
if "--text" in args:
    print("fake table, argv " + " ".join(args[2:]))
    sys.exit(0)
print(json.dumps({"evaluator": "fake", "argv": args,
                  "outputs": [{"name": "y", "relative_error": 0.01, "max_abs_error": 0.1}],
                  "max_relative_error": 0.01}))
"""


def test_check_runs_the_script_and_embeds_its_json(run_qdq, tmp_path):
    make_model(tmp_path / "in.onnx")
    script = tmp_path / "fake_check.py"
    script.write_text(FAKE_CHECK)
    env = dict(os.environ, QDQ_CHECK_SCRIPT=str(script), QDQ_PYTHON=sys.executable)
    env.pop("FAIL_CHECK", None)
    result = run_qdq("quantize", tmp_path / "in.onnx", "-o", tmp_path / "out.onnx", "--format", "int8",
                     "--min-elements", "100", "--json", "--check", "--check-input", "x=input.pb",
                     "--check-evaluator", "reference", env=env)
    report = json.loads(result.stdout)
    check = report["check"]
    assert check["evaluator"] == "fake" and check["max_relative_error"] == 0.01
    argv = check["argv"]
    assert argv[0] == str(tmp_path / "in.onnx")
    assert argv[2:] == ["--input", "x=input.pb", "--evaluator", "reference"]
    # The check ran on the staged output, which is now in place.
    assert (tmp_path / "out.onnx").is_file()
    text = run_qdq("quantize", tmp_path / "in.onnx", "-o", tmp_path / "out2.onnx", "--format", "int8",
                   "--min-elements", "100", "--check", env=env).stdout
    # Text mode asks the script for its --text table and prints it after the report, not JSON.
    lines = text.splitlines()
    assert lines[-1] == "fake table, argv --evaluator auto --text" and lines[-2].startswith("weights ")
    assert "{" not in text
    # A failing check: one line naming the script's message, and no output file.
    env["FAIL_CHECK"] = "1"
    result = run_qdq("quantize", tmp_path / "in.onnx", "-o", tmp_path / "out3.onnx", "--format", "int8",
                     "--check", env=env, check=False)
    assert "the evaluator cannot run this model" in result.stderr
    assert_failed_cleanly(result, tmp_path, {"in.onnx", "out.onnx", "out2.onnx", "fake_check.py"})
    # A missing script is an error too.
    env = dict(os.environ, QDQ_CHECK_SCRIPT=str(tmp_path / "nope.py"), QDQ_PYTHON=sys.executable)
    result = run_qdq("quantize", tmp_path / "in.onnx", "-o", tmp_path / "out4.onnx", "--format", "int8",
                     "--check", env=env, check=False)
    assert_failed_cleanly(result, tmp_path, {"in.onnx", "out.onnx", "out2.onnx", "fake_check.py"})


def test_external_data_flag(run_qdq, tmp_path):
    make_model(tmp_path / "in.onnx")
    report = json.loads(run_qdq("quantize", tmp_path / "in.onnx", "-o", tmp_path / "out.onnx", "--format", "int8",
                                "--min-elements", "100", "--external-data", "--json").stdout)
    assert (tmp_path / "out.onnx.data").is_file()
    assert report["totals"]["model_bytes_after"] == sum(
        (tmp_path / n).stat().st_size for n in ["out.onnx", "out.onnx.data"])
    model = onnx.load(str(tmp_path / "out.onnx"))
    onnx.checker.check_model(model, full_check=True)
    x = np.ones((3, 64), np.float32)
    ReferenceEvaluator(model).run(None, {"x": x})


@pytest.mark.parametrize("fmt", FORMATS)
def test_external_data_codes_are_the_inline_codes_for_any_thread_count(run_qdq, tmp_path, fmt):
    # Codes bound for external data are streamed to the file a wave of pieces (16 MiB of float32) at a
    # time from a reused buffer; inline codes are gathered in memory. A [4097, 1025] weight spans two
    # waves and has an odd element count (a 4-bit padding nibble at the very end); the Gemm weight
    # (transB) is blocked along its last axis, the other layout.
    rng = np.random.default_rng(11)
    w = (rng.standard_normal((4097, 1025)) * 0.05).astype(np.float32)
    w[5, 7], w[4096, 1024], w[100, :] = np.nan, np.inf, 0.0
    g = rng.standard_normal((40, 1025)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Gemm", ["h", "g"], ["y"], transB=1, name="gemm")]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4097])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 40])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(g, "g")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)], ir_version=12),
              str(tmp_path / "in.onnx"))

    def quantize(name, *options):
        report = json.loads(run_qdq("quantize", tmp_path / "in.onnx", "-o", tmp_path / name, "--format", fmt,
                                    "--json", *options).stdout)
        model = onnx.load(str(tmp_path / name))  # external data read back into raw_data
        tensors = {t.name: (t.data_type, list(t.dims), t.raw_data) for t in model.graph.initializer}
        return tensors, [(t["name"], t["sqnr_db"], t["max_abs_error"], t["non_finite"]) for t in report["tensors"]]

    inline = quantize("inline.onnx")
    assert len(inline[1]) == 2
    for threads in ("1", "2", "3"):
        external = quantize(f"external{threads}.onnx", "--external-data", "--threads", threads)
        assert (tmp_path / f"external{threads}.onnx.data").is_file()
        assert external == inline, threads


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_signal_leaves_nothing_behind(qdq_cli, tmp_path, signal_name):
    rng = np.random.default_rng(3)
    inits, nodes = [], []
    for k in range(4):
        inits.append(numpy_helper.from_array(rng.standard_normal((2048, 2048), dtype=np.float32), f"w{k}"))
        nodes.append(helper.make_node("MatMul", [f"x{k}", f"w{k}"], [f"x{k + 1}"]))
    graph = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1, 2048])],
                              [helper.make_tensor_value_info("x4", TensorProto.FLOAT, [1, 2048])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10),
              str(tmp_path / "in.onnx"))
    modelcheck.interrupt_while_staged([qdq_cli, "quantize", tmp_path / "in.onnx", "-o", tmp_path / "out.onnx", "--format", "int4",
                            "--external-data", "--threads", "1"], tmp_path, signal_name, {"in.onnx"})
