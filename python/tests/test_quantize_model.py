"""qdq.quantize_model: the Python face of `qdq quantize` (qdq::onnx::quantize_model_file).

The models are generated here: with onnx.helper where onnx is importable, else encoded by hand
(a few protobuf fields), so the tests also run with Debian's python, which has no onnx. The report
is compared with the CLI's --json for the same model when the qdq executable is found (QDQ_CLI, else
build/release/tools/qdq/qdq in the source tree).
"""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import qdq
from conftest import REPO, needs_io

pytestmark = needs_io

try:
    import onnx
    from onnx import helper, numpy_helper
except ImportError:  # Debian's python3; the hand encoder below is used instead
    onnx = None

FLOAT = 1


# ---- a MatMul -> Add model, by hand or with onnx.helper --------------------------------------------

def _varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int_field(number, value):
    return _varint(number << 3) + _varint(value)


def _bytes_field(number, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _tensor_proto(name, array, raw=None):
    dims = b"".join(_int_field(1, d) for d in array.shape)
    raw = array.astype("<f4").tobytes() if raw is None else raw
    return dims + _int_field(2, FLOAT) + _bytes_field(8, name) + _bytes_field(9, raw)


def _value_info(name, shape):
    dims = b"".join(_bytes_field(1, _int_field(1, d)) for d in shape)
    tensor_type = _int_field(1, FLOAT) + _bytes_field(2, dims)
    return _bytes_field(1, name) + _bytes_field(2, _bytes_field(1, tensor_type))


def _node(op_type, inputs, outputs, name):
    return (b"".join(_bytes_field(1, i) for i in inputs) + b"".join(_bytes_field(2, o) for o in outputs)
            + _bytes_field(3, name) + _bytes_field(4, op_type))


def _weights(seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    w2 = rng.standard_normal((32, 48)).astype(np.float32)
    bias = rng.standard_normal(48).astype(np.float32)
    return w, w2, bias


def model_bytes(opset=13, truncate_w2=False, use_onnx=None):
    """X[2,64] @ W[64,32] @ W2[32,48] + bias[48]; W2's raw_data is cut short if truncate_w2."""
    w, w2, bias = _weights()
    use_onnx = onnx is not None if use_onnx is None else use_onnx
    if use_onnx and not truncate_w2:
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["X", "W"], ["H"], name="mm1"),
             helper.make_node("MatMul", ["H", "W2"], ["Z"], name="mm2"),
             helper.make_node("Add", ["Z", "bias"], ["Y"], name="add")],
            "g",
            [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, [2, 64])],
            [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, [2, 48])],
            [numpy_helper.from_array(w, "W"), numpy_helper.from_array(w2, "W2"),
             numpy_helper.from_array(bias, "bias")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)
        return model.SerializeToString()
    w2_raw = w2.astype("<f4").tobytes()[:-4] if truncate_w2 else None
    graph = (_bytes_field(1, _node("MatMul", ["X", "W"], ["H"], "mm1"))
             + _bytes_field(1, _node("MatMul", ["H", "W2"], ["Z"], "mm2"))
             + _bytes_field(1, _node("Add", ["Z", "bias"], ["Y"], "add"))
             + _bytes_field(2, "g")
             + _bytes_field(5, _tensor_proto("W", w)) + _bytes_field(5, _tensor_proto("W2", w2, w2_raw))
             + _bytes_field(5, _tensor_proto("bias", bias))
             + _bytes_field(11, _value_info("X", [2, 64])) + _bytes_field(12, _value_info("Y", [2, 48])))
    return _int_field(1, 7) + _bytes_field(7, graph) + _bytes_field(8, _int_field(2, opset))


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "in" / "model.onnx"
    path.parent.mkdir()
    path.write_bytes(model_bytes())
    return path


def _cli():
    path = pathlib.Path(os.environ.get("QDQ_CLI", REPO / "build" / "release" / "tools" / "qdq" / "qdq"))
    return path if path.is_file() else None


def _comparable(report):
    """The report without what legitimately differs between two runs: time and output path."""
    report = dict(report)
    report.pop("output")
    report["totals"] = {k: v for k, v in report["totals"].items() if k != "seconds"}
    return report


def _files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


# ---- results --------------------------------------------------------------------------------------

CASES = [
    ("int8", {}, []),
    ("uint4", {"block_size": 16}, ["--block-size", "16"]),
    ("int4", {"symmetric": False, "min_elements": 2000}, ["--asymmetric", "--min-elements", "2000"]),
    ("mxfp4", {"external_data": True, "exclude": "W2"}, ["--external-data", "--exclude", "W2"]),
    ("float8e4m3fn", {"op_types": ["MatMul"], "include": ["W*"], "num_threads": 1},
     ["--op-types", "MatMul", "--include", "W*", "--threads", "1"]),
]


@pytest.mark.parametrize("fmt,kwargs,cli_args", CASES, ids=[c[0] for c in CASES])
def test_report_matches_cli_json(model, tmp_path, fmt, kwargs, cli_args):
    out = tmp_path / "py" / "out.onnx"
    out.parent.mkdir()
    report = qdq.quantize_model(model, out, fmt, **kwargs)
    assert report["input"] == str(model) and report["output"] == str(out)
    assert report["format"] == fmt
    assert report["tensors"], report
    assert all(t["format"] == fmt for t in report["tensors"])
    assert any(s["name"] == "bias" for s in report["skipped"])
    if kwargs.get("external_data"):
        assert report["external_data"] and (out.parent / "out.onnx.data").is_file()
    assert _files(out.parent) == (["out.onnx", "out.onnx.data"] if report["external_data"] else ["out.onnx"])
    if onnx is not None:
        onnx.checker.check_model(str(out), full_check=True)

    cli = _cli()
    if cli is None:
        pytest.skip("the qdq executable is not built (set QDQ_CLI): the CLI comparison needs it")
    cli_out = tmp_path / "cli" / "out.onnx"
    cli_out.parent.mkdir()
    global_args = []
    if "--threads" in cli_args:  # a global option: before the subcommand
        k = cli_args.index("--threads")
        global_args, cli_args = cli_args[k:k + 2], cli_args[:k] + cli_args[k + 2:]
    result = subprocess.run([str(cli), *global_args, "quantize", str(model), "-o", str(cli_out), "--format", fmt,
                             "--json", *cli_args], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert _comparable(report) == _comparable(json.loads(result.stdout))
    # Same options, same bytes: the CLI and the binding are one code path.
    assert out.read_bytes() == cli_out.read_bytes()
    if report["external_data"]:
        assert (out.parent / "out.onnx.data").read_bytes() == (cli_out.parent / "out.onnx.data").read_bytes()


def test_conversion_is_reported(model, tmp_path):
    report = qdq.quantize_model(model, tmp_path / "o.onnx", "int4")  # blocked int4 needs opset 21
    assert report["opset"] == {"from": 13, "to": 21}
    assert {t["name"] for t in report["tensors"]} == {"W", "W2"}
    assert all(t["granularity"] == "blocked(axis=0,block=32)" for t in report["tensors"])


@pytest.mark.skipif(onnx is None, reason="onnx is not importable: the hand encoder is checked against onnx.helper")
def test_hand_encoded_model_is_the_onnx_helper_model(tmp_path):
    a = tmp_path / "a.onnx"
    b = tmp_path / "b.onnx"
    a.write_bytes(model_bytes(use_onnx=True))
    b.write_bytes(model_bytes(use_onnx=False))
    onnx.checker.check_model(str(b), full_check=True)
    ra = qdq.quantize_model(a, tmp_path / "qa.onnx", "int8")
    rb = qdq.quantize_model(b, tmp_path / "qb.onnx", "int8")
    for r in (ra, rb):
        del r["input"], r["output"], r["totals"]["seconds"]
        del r["totals"]["model_bytes_before"], r["totals"]["model_bytes_after"]  # helper's model has a producer
    assert ra == rb


def test_path_like_and_str_and_bytes(model, tmp_path):
    for k, out in enumerate([tmp_path / "a.onnx", str(tmp_path / "b.onnx"), os.fsencode(tmp_path / "c.onnx")]):
        inp = [model, str(model), os.fsencode(model)][k]
        report = qdq.quantize_model(inp, out, "int8")
        assert report["input"] == str(model)
        assert pathlib.Path(os.fsdecode(out)).is_file()


# ---- errors: ValueError with the one-line message, nothing written ----------------------------------

def _assert_nothing_written(folder, before):
    assert _files(folder) == before, "a partial or temporary file was left behind"


def test_missing_input(tmp_path):
    with pytest.raises(ValueError, match="missing.onnx") as e:
        qdq.quantize_model(tmp_path / "missing.onnx", tmp_path / "out.onnx", "int8")
    assert "\n" not in str(e.value)
    _assert_nothing_written(tmp_path, [])


@pytest.mark.parametrize("kwargs,message", [
    ({"format": "int3"}, "unknown format 'int3'"),
    ({"format": "int8", "block_size": 64}, "--block-size applies to the blocked formats"),
    ({"format": "int4", "block_size": 8}, "outside 16..256"),
    ({"format": "mxfp4", "symmetric": False}, "symmetric only"),
    ({"format": "int8", "min_elements": -1}, "must not be negative"),
    ({"format": "int8", "num_threads": -2}, "num_threads must be >= 0"),
    ({"format": "int8", "op_types": []}, "op_types names no op"),
])
def test_bad_options(model, tmp_path, kwargs, message):
    fmt = kwargs.pop("format")
    before = _files(tmp_path)
    with pytest.raises(ValueError, match=message):
        qdq.quantize_model(model, tmp_path / "out.onnx", fmt, **kwargs)
    _assert_nothing_written(tmp_path, before)


@pytest.mark.parametrize("kwargs", [
    {"format": 8}, {"format": "int8", "block_size": 32.0}, {"format": "int8", "symmetric": 1},
    {"format": "int8", "include": [1]}, {"format": "int8", "op_types": 5},
])
def test_wrong_argument_types(model, tmp_path, kwargs):
    fmt = kwargs.pop("format")
    with pytest.raises(TypeError):
        qdq.quantize_model(model, tmp_path / "out.onnx", fmt, **kwargs)
    with pytest.raises(TypeError):
        qdq.quantize_model(42, tmp_path / "out.onnx", "int8")


def test_not_a_model(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\xff\xff\xff not protobuf")
    with pytest.raises(ValueError, match="bad.onnx"):
        qdq.quantize_model(bad, tmp_path / "out.onnx", "int8")
    _assert_nothing_written(tmp_path, ["bad.onnx"])


def test_output_over_input_is_refused(model):
    before = model.read_bytes()
    with pytest.raises(ValueError, match="would replace the input"):
        qdq.quantize_model(model, model, "int8")
    assert model.read_bytes() == before


@pytest.mark.parametrize("external_data", [False, True])
def test_failure_midway_leaves_nothing(tmp_path, external_data):
    # W is quantized (and, with external data, staged) before W2's truncated bytes are read.
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(model_bytes(truncate_w2=True))
    out = folder / "out.onnx"
    (folder / "out.onnx").write_bytes(b"previous")
    with pytest.raises(ValueError, match="W2"):
        qdq.quantize_model(folder / "model.onnx", out, "int8", external_data=external_data)
    _assert_nothing_written(folder, ["model.onnx", "out.onnx"])
    assert out.read_bytes() == b"previous"
