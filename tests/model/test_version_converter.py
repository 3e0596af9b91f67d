"""`qdq convert`: every opset adapter, checked with onnx's checker and bit for bit in ONNX Runtime.

Each case builds a small model with onnx.helper at an old opset, converts it with the qdq CLI, runs
onnx.checker (full_check) on the result and compares ONNX Runtime's outputs of both models on random
inputs byte for byte (graph optimizations off, so both run the kernels their opsets name).
"""

import json
import os
import pathlib

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
import modelcheck

REPO = pathlib.Path(__file__).resolve().parents[2]
# The real models: QDQ_MODELS_DIR, else the repository's copy, else the shared folder of the workplace.
MODEL_DIRS = [pathlib.Path(p) for p in (os.environ.get("QDQ_MODELS_DIR"),) if p] + [
    REPO / "tests" / "data" / "models", pathlib.Path("/work/shared/models")]
FLOAT = TensorProto.FLOAT


def make_model(nodes, inputs, outputs, opset, initializers=(), ir_version=None, extra_opsets=(), functions=()):
    """inputs/outputs: (name, elem_type, shape) tuples; shape None for outputs means unknown."""
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        initializer=list(initializers),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), *extra_opsets],
                              functions=list(functions))
    model.ir_version = ir_version or helper.find_min_ir_version_for([helper.make_opsetid("", opset)])
    # The checker wants the outputs' shapes: take them from shape inference, but keep no value_info,
    # so that the converter sees intermediate values without types, as in exported models.
    inferred = onnx.shape_inference.infer_shapes(model)
    del model.graph.output[:]
    model.graph.output.extend(inferred.graph.output)
    return model


def random_feeds(model, seed=0):
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        tensor = value.type.tensor_type
        shape = [d.dim_value for d in tensor.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        if np.issubdtype(dtype, np.floating):
            data = rng.standard_normal(shape) * 3
            data.flat[: min(4, data.size)] = [0.0, -0.0, 6.0, -6.0][: min(4, data.size)]  # edges of Clip etc.
            feeds[value.name] = data.astype(dtype)
        elif dtype == np.bool_:
            feeds[value.name] = rng.integers(0, 2, shape).astype(dtype)
        else:
            feeds[value.name] = rng.integers(0, 5, shape).astype(dtype)
    return feeds


def run_ort(model_bytes, feeds):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def assert_bit_identical(expected, actual):
    assert len(expected) == len(actual)
    for k, (e, a) in enumerate(zip(expected, actual)):
        assert e.dtype == a.dtype and e.shape == a.shape, f"output {k}: {e.dtype}{e.shape} vs {a.dtype}{a.shape}"
        assert e.tobytes() == a.tobytes(), f"output {k} differs: max |diff| {np.max(np.abs(e - a))}"


@pytest.fixture
def convert(run_qdq, tmp_path):
    """Writes `model`, converts it to `opset` with qdq, checks the result; returns (converted, report)."""
    counter = [0]

    def run(model, opset):
        counter[0] += 1
        src = tmp_path / f"in{counter[0]}.onnx"
        dst = tmp_path / f"out{counter[0]}.onnx"
        onnx.save(model, src)
        report = json.loads(run_qdq("convert", src, "-o", dst, "--opset", opset, "--json").stdout)
        converted = onnx.load(dst)
        onnx.checker.check_model(converted, full_check=True)
        assert report["to_opset"] == opset
        assert [o.version for o in converted.opset_import if o.domain in ("", "ai.onnx")] == [opset]
        assert converted.ir_version >= helper.find_min_ir_version_for([helper.make_opsetid("", opset)])
        return converted, report

    return run


@pytest.fixture
def check(convert):
    """Converts `model` to each opset and asserts ORT's outputs are bit-identical to the original's."""

    def run(model, opsets, feeds=None):
        feeds = feeds if feeds is not None else random_feeds(model)
        expected = run_ort(model.SerializeToString(), feeds)
        reports = []
        for opset in opsets:
            converted, report = convert(model, opset)
            assert_bit_identical(expected, run_ort(converted.SerializeToString(), feeds))
            reports.append(report)
        return reports

    return run


def node(op, inputs, outputs, **attrs):
    empty = [k for k, v in attrs.items() if isinstance(v, list) and not v]  # typed by hand: INTS
    made = helper.make_node(op, inputs, outputs, name=f"{op.lower()}_node",
                            **{k: v for k, v in attrs.items() if k not in empty})
    made.attribute.extend(helper.make_attribute(k, [], attr_type=onnx.AttributeProto.INTS) for k in empty)
    return made


def int64s(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


# ---- axes attribute -> input ---------------------------------------------------------------------


@pytest.mark.parametrize("axes", [[1], [-3], [1, 3], None])
def test_squeeze(check, axes):
    attrs = {} if axes is None else {"axes": axes}
    model = make_model([node("Squeeze", ["x"], ["y"], **attrs)], [("x", FLOAT, [2, 1, 3, 1])],
                       [("y", FLOAT, None)], 11)
    reports = check(model, [13, 24])
    assert any("axes attribute -> input" in c for c in reports[0]["changes"]) == bool(axes)


@pytest.mark.parametrize("axes", [[0], [-1], [1, 3]])
def test_unsqueeze(check, axes):
    opset = 11 if min(axes) < 0 else 9  # negative axes exist from 11
    model = make_model([node("Unsqueeze", ["x"], ["y"], axes=axes)], [("x", FLOAT, [2, 3])], [("y", FLOAT, None)],
                       opset)
    check(model, [13, 21, 24])


REDUCE_18 = ["ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
             "ReduceLogSumExp", "ReduceSumSquare"]


@pytest.mark.parametrize("op", ["ReduceSum"] + REDUCE_18)
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([-1, 0], 0), ([], 1), (None, 1), (None, 0)])
def test_reduce(check, op, axes, keepdims):
    attrs = {"keepdims": keepdims}
    if axes is not None:
        attrs["axes"] = axes
    model = make_model([node(op, ["x"], ["y"], **attrs)], [("x", FLOAT, [3, 4, 5])], [("y", FLOAT, None)], 11)
    feeds = {"x": np.abs(random_feeds(model)["x"]) + 0.5}  # positive, for the log reductions
    check(model, [13, 18, 24], feeds)


@pytest.mark.parametrize("split", [[2, 4], None])
@pytest.mark.parametrize("opset", [9, 11])
def test_split(check, split, opset):
    attrs = {"axis": 1} if split is None else {"axis": 1, "split": split}
    model = make_model([node("Split", ["x"], ["a", "b"], **attrs)], [("x", FLOAT, [2, 6, 3])],
                       [("a", FLOAT, None), ("b", FLOAT, None)], opset)
    reports = check(model, [13, 18, 24])
    if split is None:
        assert "num_outputs" in reports[1]["changes"][0]


def test_split_three_equal_negative_axis(check):
    model = make_model([node("Split", ["x"], ["a", "b", "c"], axis=-1)], [("x", FLOAT, [2, 9])],
                       [("a", FLOAT, None), ("b", FLOAT, None), ("c", FLOAT, None)], 11)
    check(model, [18, 24])


# ---- attributes -> inputs ------------------------------------------------------------------------


@pytest.mark.parametrize("attrs", [{"min": 0.0, "max": 6.0}, {"min": -1.5}, {"max": 0.25}, {}])
@pytest.mark.parametrize("opset", [6, 9])
def test_clip(check, attrs, opset):
    model = make_model([node("Clip", ["x"], ["y"], **attrs)], [("x", FLOAT, [4, 5])], [("y", FLOAT, None)], opset)
    check(model, [11, 13, 24])


def test_clip_of_an_untyped_intermediate_uses_the_propagated_type(check):
    # The Clip's input has no value_info: its type follows from x through Add.
    model = make_model([node("Add", ["x", "x"], ["s"]), node("Clip", ["s"], ["y"], min=0.0, max=6.0)],
                       [("x", FLOAT, [3, 4])], [("y", FLOAT, None)], 9)
    check(model, [13, 24])


def test_clip_float16_goes_through_castlike(check):
    model = make_model([node("Clip", ["x"], ["y"], min=-0.3, max=0.7)], [("x", TensorProto.FLOAT16, [8])],
                       [("y", TensorProto.FLOAT16, None)], 9)
    reports = check(model, [15, 24])
    assert "min/max attributes -> inputs" in reports[0]["changes"][0]


@pytest.mark.parametrize("mode,value", [("constant", None), ("constant", 1.5), ("constant", -0.0),
                                        ("reflect", None), ("edge", None)])
def test_pad(check, mode, value):
    attrs = {"mode": mode, "pads": [0, 1, 2, 0, 2, 1]}
    if value is not None:
        attrs["value"] = value
    model = make_model([node("Pad", ["x"], ["y"], **attrs)], [("x", FLOAT, [2, 3, 4])], [("y", FLOAT, None)], 9)
    check(model, [11, 13, 19, 24])


@pytest.mark.parametrize("attrs", [
    {"starts": [1], "ends": [3], "axes": [1]},
    {"starts": [0, -3], "ends": [2, 2**62], "axes": [0, 2]},
    {"starts": [1, 0], "ends": [-1, 100]},  # no axes: the first len(starts) axes
])
def test_slice(check, attrs):
    model = make_model([node("Slice", ["x"], ["y"], **attrs)], [("x", FLOAT, [3, 4, 5])], [("y", FLOAT, None)], 9)
    check(model, [10, 13, 24])


def test_topk(check):
    model = make_model([node("TopK", ["x"], ["v", "i"], k=2, axis=1)], [("x", FLOAT, [3, 5])],
                       [("v", FLOAT, None), ("i", TensorProto.INT64, None)], 9)
    check(model, [10, 11, 24])


@pytest.mark.parametrize("opset", [7, 10])
@pytest.mark.parametrize("ratio", [None, 0.3])
def test_dropout(check, opset, ratio):
    attrs = {} if ratio is None else {"ratio": ratio}
    model = make_model([node("Dropout", ["x"], ["y"], **attrs)], [("x", FLOAT, [3, 4])], [("y", FLOAT, None)], opset)
    check(model, [12, 13, 24])


@pytest.mark.parametrize("attrs", [{}, {"axis": 2, "onesided": 1}, {"axis": 1, "inverse": 1}])
def test_dft(check, attrs):
    model = make_model([node("DFT", ["x"], ["y"], **attrs)], [("x", FLOAT, [2, 8, 6, 1])], [("y", FLOAT, None)], 17)
    check(model, [20, 24])


# ---- Softmax family: coerce-to-2-D before 13 -----------------------------------------------------


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", [None, 0, 2, 3, -1, -2])
def test_softmax_family(check, op, axis):
    attrs = {} if axis is None else {"axis": axis}
    opset = 11 if axis is not None and axis < 0 else 9  # negative axes exist from 11
    model = make_model([node(op, ["x"], ["y"], **attrs)], [("x", FLOAT, [2, 3, 4, 5])], [("y", FLOAT, None)], opset)
    feeds = random_feeds(model)
    if op == "Hardmax":  # ties make argmax order-dependent; keep the values distinct
        feeds["x"] = np.random.default_rng(1).permutation(120).reshape(2, 3, 4, 5).astype(np.float32)
    reports = check(model, [13, 24], feeds)
    # x's rank is declared: only an axis other than the last needs the Flatten/Reshape rewrite.
    last = axis is not None and axis in (3, -1)
    assert (reports[0]["changes"] == []) == last


def test_softmax_on_an_intermediate_of_unknown_rank_is_rewritten(check):
    model = make_model([node("Relu", ["x"], ["r"]), node("Softmax", ["r"], ["y"], axis=2)],
                       [("x", FLOAT, [2, 3, 4])], [("y", FLOAT, None)], 9)
    reports = check(model, [13])
    assert "Flatten/Softmax/Reshape" in reports[0]["changes"][0]


def test_softmax_with_a_zero_sized_dimension(check):
    model = make_model([node("Softmax", ["x"], ["y"], axis=1)], [("x", FLOAT, [2, 0, 3])], [("y", FLOAT, None)], 9)
    check(model, [13, 14])


# ---- Upsample / Resize ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_7_scales_attribute(check, mode):
    model = make_model([node("Upsample", ["x"], ["y"], mode=mode, scales=[1.0, 1.0, 2.0, 3.0])],
                       [("x", FLOAT, [1, 2, 3, 4])], [("y", FLOAT, None)], 7)
    check(model, [9, 10, 11, 13, 24])


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("opset", [9, 10])
def test_upsample_9_and_resize_10(check, mode, opset):
    op = "Upsample" if opset == 9 else "Resize"
    scales = numpy_helper.from_array(np.array([1.0, 1.0, 1.5, 2.0], dtype=np.float32), "scales")
    model = make_model([node(op, ["x", "scales"], ["y"], mode=mode)], [("x", FLOAT, [1, 2, 4, 3])],
                       [("y", FLOAT, None)], opset, [scales])
    check(model, [10, 11, 13, 19, 24] if opset == 9 else [11, 13, 24])


# ---- BatchNormalization and other attribute changes ----------------------------------------------


def batchnorm_inputs(channels=3):
    rng = np.random.default_rng(3)
    values = [rng.standard_normal(channels), rng.standard_normal(channels), rng.standard_normal(channels),
              rng.random(channels) + 0.5]
    return [numpy_helper.from_array(v.astype(np.float32), n) for v, n in zip(values, ["s", "b", "m", "v"])]


@pytest.mark.parametrize("opset,attrs", [(7, {"spatial": 1}), (7, {}), (9, {}), (9, {"momentum": 0.8})])
def test_batchnorm(check, opset, attrs):
    model = make_model([node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3, **attrs)],
                       [("x", FLOAT, [2, 3, 4, 5])], [("y", FLOAT, None)], opset, batchnorm_inputs())
    check(model, [9, 14, 15, 24] if opset == 7 else [14, 15, 24])


def test_lstm_gru_rnn(check):
    rng = np.random.default_rng(4)
    hidden, size = 4, 3
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n) for n, s in [
        ("Wl", [1, 4 * hidden, size]), ("Rl", [1, 4 * hidden, hidden]), ("Wg", [1, 3 * hidden, size]),
        ("Rg", [1, 3 * hidden, hidden]), ("Wr", [1, hidden, size]), ("Rr", [1, hidden, hidden])]]
    nodes = [helper.make_node("LSTM", ["x", "Wl", "Rl"], ["yl"], hidden_size=hidden, name="lstm"),
             helper.make_node("GRU", ["x", "Wg", "Rg"], ["yg"], hidden_size=hidden, name="gru"),
             helper.make_node("RNN", ["x", "Wr", "Rr"], ["yr"], hidden_size=hidden, name="rnn")]
    model = make_model(nodes, [("x", FLOAT, [5, 2, size])], [(n, FLOAT, None) for n in ["yl", "yg", "yr"]], 7, inits)
    check(model, [14, 22, 24])


def test_common_ops_chain(check):
    """Ops whose steps only added types: the model must come through unchanged but for the opset."""
    rng = np.random.default_rng(5)
    w = numpy_helper.from_array(rng.standard_normal([4, 2, 3, 3]).astype(np.float32), "w")
    m = numpy_helper.from_array(rng.standard_normal([6, 5]).astype(np.float32), "m")
    c = numpy_helper.from_array(rng.standard_normal([5]).astype(np.float32), "c")
    shape = int64s("shape", [2, -1])
    idx = int64s("idx", [0, 2, 1])
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c1"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c1"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
        helper.make_node("Sigmoid", ["p"], ["s"], name="sigmoid"),
        helper.make_node("Tanh", ["p"], ["t"], name="tanh"),
        helper.make_node("Mul", ["s", "t"], ["st"], name="mul"),
        helper.make_node("Sub", ["st", "s"], ["d"], name="sub"),
        helper.make_node("Div", ["d", "t"], ["q"], name="div"),
        helper.make_node("Transpose", ["q"], ["tq"], perm=[0, 2, 3, 1], name="transpose"),
        helper.make_node("Reshape", ["tq", "shape"], ["flat"], name="reshape"),
        helper.make_node("Shape", ["flat"], ["sh"], name="shape_of"),
        helper.make_node("Cast", ["sh"], ["shf"], to=FLOAT, name="cast"),
        helper.make_node("Gather", ["flat", "idx"], ["g"], axis=1, name="gather"),
        helper.make_node("Concat", ["g", "g"], ["cc"], axis=1, name="concat"),
        helper.make_node("MatMul", ["cc", "m"], ["mm"], name="matmul"),
        helper.make_node("Add", ["mm", "c"], ["gm"], name="add"),
        helper.make_node("Flatten", ["gm"], ["f"], axis=1, name="flatten"),
        helper.make_node("Identity", ["f"], ["y"], name="identity"),
    ]
    model = make_model(nodes, [("x", FLOAT, [2, 2, 6, 6])], [("y", FLOAT, None), ("shf", FLOAT, None)], 9,
                       [w, m, c, shape, idx])
    reports = check(model, [13, 21, 24])
    assert all(r["changes"] == [] for r in reports)


# ONNX Runtime has no kernels for opset-6 Add or Gemm: the legacy-broadcast cases are checked against
# NumPy broadcasting instead.
def test_gemm_legacy_broadcast(convert):
    rng = np.random.default_rng(6)
    b, c = rng.standard_normal([4, 3]).astype(np.float32), rng.standard_normal([3]).astype(np.float32)
    model = make_model([node("Gemm", ["a", "b", "c"], ["y"], broadcast=1, transB=0)],
                       [("a", FLOAT, [2, 4]), ("b", FLOAT, [4, 3]), ("c", FLOAT, [3])], [("y", FLOAT, [2, 3])], 6,
                       [numpy_helper.from_array(b, "b"), numpy_helper.from_array(c, "c")])
    converted, report = convert(model, 7)
    assert report["changes"] and not any(a.name == "broadcast" for a in converted.graph.node[0].attribute)
    a = rng.standard_normal([2, 4]).astype(np.float32)
    np.testing.assert_allclose(run_ort(converted.SerializeToString(), {"a": a})[0], a @ b + c,
                               rtol=1e-5)


def test_add_legacy_broadcast_suffix(convert):
    b = np.arange(4, dtype=np.float32)
    model = make_model([node("Add", ["a", "b"], ["y"], broadcast=1)], [("a", FLOAT, [3, 4]), ("b", FLOAT, [4])],
                       [("y", FLOAT, [3, 4])], 6, [numpy_helper.from_array(b, "b")])
    converted, _ = convert(model, 7)
    a = np.random.default_rng(8).standard_normal([3, 4]).astype(np.float32)
    assert_bit_identical([a + b], run_ort(converted.SerializeToString(), {"a": a}))


# ---- subgraphs -----------------------------------------------------------------------------------


def test_if_subgraph_nodes_are_converted(check):
    def branch(name, op, axis):
        return helper.make_graph(
            [helper.make_node("Squeeze", ["x"], [f"{name}_sq"], axes=[1], name=f"{name}_squeeze"),
             helper.make_node(op, [f"{name}_sq"], [f"{name}_out"], axis=axis, name=f"{name}_softmax")],
            name, [], [helper.make_tensor_value_info(f"{name}_out", FLOAT, None)])

    nodes = [helper.make_node("If", ["cond"], ["y"], name="if", then_branch=branch("then", "Softmax", 1),
                              else_branch=branch("else", "LogSoftmax", 0))]
    model = make_model(nodes, [("cond", TensorProto.BOOL, []), ("x", FLOAT, [2, 1, 3, 4])], [("y", FLOAT, None)], 11)
    x = random_feeds(model)["x"]
    for cond in (True, False):
        reports = check(model, [13, 24], {"cond": np.array(cond), "x": x})
    assert any("then_squeeze" in c for c in reports[0]["changes"])
    assert any("else_softmax" in c for c in reports[0]["changes"])


def test_loop_body_is_converted(check):
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
         helper.make_node("Unsqueeze", ["acc_in"], ["u"], axes=[0], name="body_unsqueeze"),
         helper.make_node("ReduceSum", ["u"], ["acc_out"], axes=[0], keepdims=0, name="body_reduce")],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", FLOAT, None)])
    trip = int64s("trip", 3)
    model = make_model([helper.make_node("Loop", ["trip", "", "x"], ["y"], body=body, name="loop")],
                       [("x", FLOAT, [2, 3])], [("y", FLOAT, [2, 3])], 11, [trip])
    check(model, [13, 24])


def test_model_local_function_body_is_converted(check):
    body = [helper.make_node("Unsqueeze", ["a"], ["u"], axes=[0], name="f_unsqueeze"),
            helper.make_node("ReduceSum", ["u"], ["b"], axes=[0], keepdims=0, name="f_reduce"),
            helper.make_node("Softmax", ["b"], ["c"], axis=0, name="f_softmax")]
    function = helper.make_function("local", "F", ["a"], ["c"], body, [helper.make_opsetid("", 11)])
    model = make_model([helper.make_node("F", ["x"], ["y"], domain="local", name="call")],
                       [("x", FLOAT, [3, 4])], [("y", FLOAT, [3, 4])], 11, ir_version=8,
                       extra_opsets=[helper.make_opsetid("local", 1)], functions=[function])
    reports = check(model, [13, 24])
    assert len(reports[0]["changes"]) == 3


# ---- refusals ------------------------------------------------------------------------------------


def refused(run_qdq, tmp_path, model, opset):
    src, dst = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(model, src)
    result = run_qdq("convert", src, "-o", dst, "--opset", opset, check=False)
    assert result.returncode == 1
    assert not dst.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.onnx"]  # no temporary left behind
    return result.stderr


def test_refused_step_names_op_node_and_versions(run_qdq, tmp_path):
    scale = numpy_helper.from_array(np.ones(2, np.float32), "scale")
    bias = numpy_helper.from_array(np.zeros(2, np.float32), "bias")
    model = make_model(
        [node("Relu", ["x"], ["r"]), node("Squeeze", ["r"], ["s"], axes=[0]),
         helper.make_node("GroupNormalization", ["s", "scale", "bias"], ["y"], num_groups=2, name="gn")],
        [("x", FLOAT, [1, 4, 3])], [("y", FLOAT, None)], 18, [scale, bias])
    message = refused(run_qdq, tmp_path, model, 21)
    assert "GroupNormalization" in message and "'gn'" in message
    assert "opset 18" in message and "21" in message and "GroupNormalization-18 -> GroupNormalization-21" in message


def test_refused_squeeze_with_an_empty_axes_list(run_qdq, tmp_path):
    # ONNX's shape inference squeezes nothing, ONNX Runtime every size-1 axis.
    model = make_model([node("Squeeze", ["x"], ["y"], axes=[])], [("x", FLOAT, [2, 1, 3])], [("y", FLOAT, None)], 11)
    assert "empty axes list" in refused(run_qdq, tmp_path, model, 13)


def test_refused_legacy_broadcast_with_axis(run_qdq, tmp_path):
    b = numpy_helper.from_array(np.arange(3, dtype=np.float32), "b")
    model = make_model([node("Add", ["a", "b"], ["y"], broadcast=1, axis=0)], [("a", FLOAT, [3, 4])],
                       [("y", FLOAT, None)], 6, [b])
    message = refused(run_qdq, tmp_path, model, 7)
    assert "Add node 'add_node'" in message and "axis" in message


def test_refused_dropout_mask_and_batchnorm_training_outputs(run_qdq, tmp_path):
    model = make_model([node("Dropout", ["x"], ["y", "mask"])], [("x", FLOAT, [3])],
                       [("y", FLOAT, None), ("mask", FLOAT, None)], 7)
    assert "mask" in refused(run_qdq, tmp_path, model, 12)


def test_refused_unknown_op_and_lowering(run_qdq, tmp_path):
    model = make_model([node("Relu", ["x"], ["y"])], [("x", FLOAT, [3])], [("y", FLOAT, None)], 13)
    assert "lowering" in refused(run_qdq, tmp_path, model, 11)
    assert "newer" in refused(run_qdq, tmp_path, model, 999)


def _external_model(tmp_path):
    """An opset-11 MatMul + Unsqueeze model whose weights live in in/m.data; returns (model, path)."""
    weights = numpy_helper.from_array(np.random.default_rng(1).standard_normal([64, 64]).astype(np.float32), "w")
    model = make_model([node("MatMul", ["x", "w"], ["m"]), node("Unsqueeze", ["m"], ["y"], axes=[0])],
                       [("x", FLOAT, [2, 64])], [("y", FLOAT, None)], 11, [weights])
    (tmp_path / "in").mkdir()
    path = tmp_path / "in" / "m.onnx"
    onnx.save(model, path, save_as_external_data=True, location="m.data", size_threshold=0)
    return model, path


def test_external_data_is_read_and_written_through_model_io(run_qdq, tmp_path):
    # The converted model may go to any folder: its tensors go to OUT.onnx.data next to it, as
    # `qdq quantize` writes them.
    model, src = _external_model(tmp_path)
    (tmp_path / "out").mkdir()
    dst = tmp_path / "out" / "m13.onnx"
    report = json.loads(run_qdq("convert", src, "-o", dst, "--opset", 13, "--json").stdout)
    assert report["changes"]
    assert sorted(p.name for p in dst.parent.iterdir()) == ["m13.onnx", "m13.onnx.data"]
    converted = onnx.load(dst, load_external_data=False)
    w = next(t for t in converted.graph.initializer if t.name == "w")
    assert w.data_location == onnx.TensorProto.EXTERNAL
    assert {e.key: e.value for e in w.external_data}["location"] == "m13.onnx.data"
    onnx.checker.check_model(str(dst), full_check=True)
    feeds = random_feeds(model)
    assert_bit_identical(run_ort(str(src), feeds), run_ort(str(dst), feeds))
    assert sorted(p.name for p in src.parent.iterdir()) == ["m.data", "m.onnx"]


@pytest.mark.parametrize("location,message", [("../m.data", "'..'"), ("/etc/passwd", "absolute"),
                                              ("link.data", "outside the model's folder")])
def test_external_data_path_attacks_are_refused(run_qdq, tmp_path, location, message):
    _, src = _external_model(tmp_path)
    (tmp_path / "m.data").write_bytes((src.parent / "m.data").read_bytes())
    (src.parent / "link.data").symlink_to(tmp_path / "m.data")
    model = onnx.load(src, load_external_data=False)
    for t in model.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = location
    src.write_bytes(model.SerializeToString())
    dst = tmp_path / "out.onnx"
    result = run_qdq("convert", src, "-o", dst, "--opset", 13, check=False)
    assert result.returncode == 1 and message in result.stderr and result.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "m.data"]


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_signal_while_writing_leaves_nothing_behind(qdq_cli, tmp_path, signal_name):
    # 128 MiB of external data: copying it into the staged OUT.onnx.data takes long enough to be hit.
    inits = [numpy_helper.from_array(np.full((2048, 2048), k, np.float32), f"w{k}") for k in range(8)]
    nodes = [node("MatMul", [f"x{k}", f"w{k}"], [f"x{k + 1}"]) for k in range(8)]
    model = make_model(nodes, [("x0", FLOAT, [1, 2048])], [("x8", FLOAT, None)], 11, inits)
    (tmp_path / "in").mkdir()
    onnx.save(model, tmp_path / "in" / "m.onnx", save_as_external_data=True, location="m.data")
    modelcheck.interrupt_while_staged([qdq_cli, "convert", tmp_path / "in" / "m.onnx", "-o", tmp_path / "out.onnx", "--opset", "13"],
                           tmp_path, signal_name, {"in"})


def test_output_over_the_input_is_refused(run_qdq, tmp_path):
    _, src = _external_model(tmp_path)
    before = src.read_bytes()
    result = run_qdq("convert", src, "-o", src, "--opset", 13, check=False)
    assert result.returncode == 1 and "would replace the input" in result.stderr
    assert src.read_bytes() == before


def test_bad_files_are_one_error_line(run_qdq, tmp_path):
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"\xff\xff\xff not a model")
    result = run_qdq("convert", corrupt, "-o", tmp_path / "o.onnx", "--opset", 13, check=False)
    assert result.returncode == 1 and "not an ONNX model" in result.stderr
    model = make_model([node("Relu", ["x"], ["y"])], [("x", FLOAT, [3])], [("y", FLOAT, None)], 11)
    onnx.save(model, tmp_path / "m.onnx")
    result = run_qdq("convert", tmp_path / "m.onnx", "-o", tmp_path / "missing" / "o.onnx", "--opset", 13,
                     check=False)
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "cannot create" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corrupt.onnx", "m.onnx"]


def test_same_opset_copies_and_reports_nothing(convert):
    model = make_model([node("Relu", ["x"], ["y"])], [("x", FLOAT, [3])], [("y", FLOAT, None)], 13)
    converted, report = convert(model, 13)
    assert report["changes"] == [] and converted.graph == model.graph


def test_other_domains_and_metadata_are_kept(convert):
    model = make_model([node("Unsqueeze", ["x"], ["y"], axes=[0])], [("x", FLOAT, [3])], [("y", FLOAT, None)], 11)
    model.opset_import.append(helper.make_opsetid("ai.onnx.ml", 2))
    helper.set_model_props(model, {"author": "test"})
    model.graph.node[0].doc_string = "kept"
    converted, _ = convert(model, 13)
    assert {(o.domain, o.version) for o in converted.opset_import} == {("", 13), ("ai.onnx.ml", 2)}
    assert converted.metadata_props[0].key == "author"
    assert converted.graph.node[0].doc_string == "kept"


# ---- AveragePool: exact per ONNX, but ORT runs another kernel from opset 19 -----------------------


def test_average_pool_19_matches_a_model_written_at_19(convert):
    """ORT computes AveragePool-19 with a different kernel (a running sum divided by the count) than
    AveragePool-11 (MLAS), so the last bit can differ between the two opsets even for hand-written
    models. The conversion itself is the identity: the converted model is exactly the model one would
    write at opset 19, and that one's outputs are compared bit for bit."""
    attrs = dict(kernel_shape=[3, 2], strides=[3, 2], count_include_pad=0)
    old = make_model([node("AveragePool", ["x"], ["y"], **attrs)], [("x", FLOAT, [1, 8, 3, 8])],
                     [("y", FLOAT, None)], 11)
    converted, report = convert(old, 19)
    assert report["changes"] == []
    written = make_model([node("AveragePool", ["x"], ["y"], **attrs)], [("x", FLOAT, [1, 8, 3, 8])],
                         [("y", FLOAT, None)], 19)
    feeds = random_feeds(old)
    assert_bit_identical(run_ort(written.SerializeToString(), feeds), run_ort(converted.SerializeToString(), feeds))
    expected = run_ort(old.SerializeToString(), feeds)[0]
    np.testing.assert_allclose(run_ort(converted.SerializeToString(), feeds)[0], expected, rtol=1e-6, atol=1e-7)


# ---- the real models -----------------------------------------------------------------------------


def real_model_feeds(path):
    rng = np.random.default_rng(7)
    name = path.name
    if name.startswith("ch_PP-OCRv4"):
        return {"x": rng.standard_normal((1, 3, 48, 160)).astype(np.float32)}
    if name.startswith("magika"):
        return {"bytes": rng.integers(0, 257, (2, 2048)).astype(np.int32)}
    return {"input": rng.standard_normal((1, 512)).astype(np.float32), "sr": np.array(16000, np.int64),
            "state": rng.standard_normal((2, 1, 128)).astype(np.float32)}


def with_outputs_before(model, op_type):
    """A copy of `model` whose outputs also list every value computed before the first `op_type` node."""
    extended = onnx.ModelProto()
    extended.CopyFrom(model)
    for n in extended.graph.node:
        if n.op_type == op_type:
            extended.graph.output.append(onnx.ValueInfoProto(name=n.output[0]))
            break
        if n.op_type != "Constant":
            extended.graph.output.extend(onnx.ValueInfoProto(name=o) for o in n.output)
    return extended


def with_op_pinned(model, op_type):
    """A copy of `model` whose `op_type` nodes are Identity nodes of new graph inputs, named after the
    node's output: the rest of the model then runs on values given from outside."""
    pinned = onnx.ModelProto()
    pinned.CopyFrom(model)
    for k, n in enumerate(pinned.graph.node):
        if n.op_type == op_type:
            pinned.graph.input.append(helper.make_tensor_value_info("pinned_" + n.output[0], FLOAT, None))
            pinned.graph.node[k].CopyFrom(helper.make_node("Identity", ["pinned_" + n.output[0]], [n.output[0]]))
    return pinned


REAL = [("ch_PP-OCRv4_rec_infer.onnx", [13, 18, 21, 23, 24]), ("magika_standard_v3_3.onnx", [21, 24]),
        ("silero_vad_op18_ifless.onnx", [21, 24])]


@pytest.mark.parametrize("name,opsets", REAL, ids=[r[0].split("_")[0] for r in REAL])
def test_real_model(convert, name, opsets):
    path = next((d / name for d in MODEL_DIRS if (d / name).exists()), None)
    if path is None:
        pytest.skip(f"{name} is in none of {', '.join(map(str, MODEL_DIRS))}")
    original = onnx.load(path)
    feeds = real_model_feeds(path)
    has_pool = any(n.op_type == "AveragePool" for n in original.graph.node)
    expected = run_ort(original.SerializeToString(), feeds)
    for opset in opsets:
        converted, _ = convert(original, opset)
        actual = run_ort(converted.SerializeToString(), feeds)
        if opset < 19 or not has_pool:
            assert_bit_identical(expected, actual)
            continue
        # ORT's AveragePool kernel changes at 19 (test_average_pool_19_matches_a_model_written_at_19).
        # Everything before the pool is compared bit for bit, and everything after it too, with the
        # pool's output given to both models from the original's run.
        before = with_outputs_before(original, "AveragePool")
        count = len(before.graph.output) - len(original.graph.output)
        names = [o.name for o in before.graph.output][len(original.graph.output):]
        conv_before = onnx.ModelProto()
        conv_before.CopyFrom(converted)
        conv_before.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names)
        values = run_ort(before.SerializeToString(), feeds)[-count:]
        # (the last one is the pool's own output)
        assert_bit_identical(values[:-1], run_ort(conv_before.SerializeToString(), feeds)[-count:-1])
        pinned_feeds = dict(feeds, **{"pinned_" + names[-1]: values[-1]})
        assert_bit_identical(run_ort(with_op_pinned(original, "AveragePool").SerializeToString(), pinned_feeds),
                             run_ort(with_op_pinned(converted, "AveragePool").SerializeToString(), pinned_feeds))
