#!/usr/bin/env python3
"""Runs an original ONNX model and its quantized form on the same inputs and reports how far they differ.

    check_model.py ORIGINAL QUANTIZED [--input NAME=FILE.pb]... [--dim NAME=N]...
                   [--evaluator auto|onnxruntime|reference] [--seed N] [--text]

`qdq quantize --check` runs this script with $QDQ_PYTHON and embeds what it prints (the JSON with
--json, else the --text table). It needs NumPy and `onnx` (for the reference evaluator and to read the
models), and `onnxruntime` for that evaluator; all three come from PyPI (`scripts/setup.sh` installs
them into build/venv).

Inputs. Every graph input that is not an initializer gets a value: from `--input NAME=FILE.pb` (a
serialized onnx.TensorProto, as onnx.numpy_helper.from_array(...).SerializeToString() writes), or else
a random one drawn with NumPy's PCG64 from `--seed` (default 0), of the declared element type and shape:
  - float types: standard normal;
  - integer types: uniform in [0, 255], i.e. byte values, which are valid indices for any table with at
    least 256 rows and the natural range of byte-like inputs; unsigned types narrower than 8 bits are
    clipped to their range. Inputs whose values must be specific (a sample rate, a length) need
    `--input`;
  - bool: uniform 0/1.
A symbolic or unknown dimension is `--dim NAME=N` when given for its name, else 1 on axis 0 (usually the
batch) and 128 on every other axis: small, so that the reference evaluator stays fast, yet long enough
for the usual windows and reflect paddings along sequence axes. A name takes the size it gets where it
first appears (inputs in graph order) in every input, so that inputs sharing a dimension agree.

Errors. For each output pair (matched by name), with q the quantized and o the original output, in
float64: max_abs_error = max |q - o| and relative_error = ||q - o||_2 / ||o||_2. When ||o||_2 = 0 the
relative error is defined as ||q - o||_2 itself (an absolute error against a unit reference), so that a
zero output that stays zero reports 0 and one that does not reports how far it moved. Elements where both
are NaN, or both the same infinity, count as equal; if the outputs differ in where they are not finite the
errors are reported as null (JSON has no NaN). Output: one JSON object on stdout,
    {"evaluator": "onnxruntime 1.32.0" | "onnx.reference 1.23.2", "inputs": {NAME: {"shape", "source"}},
     "outputs": [{"name", "shape", "relative_error", "max_abs_error"}], "max_relative_error"}
and exit status 0 (with --text, a short table of the same instead). Any failure is one line `check_model.py: error: ...` on stderr and exit status 1.

Evaluators. `onnxruntime` runs both models with ONNX Runtime's CPU provider; `reference` with
onnx.reference.ReferenceEvaluator; `auto` (the default) chooses ONNX Runtime, except when the quantized
model contains a DequantizeLinear whose input or scale is float4e2m1 or float8e8m0 (the MX formats),
which ONNX Runtime's CPU provider cannot run. Both models always run in the same evaluator. ONNX Runtime
runs with its default optimizations, except that the MatMulNBits it fuses from DequantizeLinear + MatMul
computes in float32 (session.qdq_matmulnbits_accuracy_level 1; ORT's default, 4, would also quantize the
activations to int8 and add that error to the weights'). The reference
evaluator gets a corrected GlobalMaxPool (onnx 1.23's reduces the wrong axes of rank-3 inputs) and
BatchNormalization (its opset-9 kernel uses batch statistics in an inference node), and below opset 19,
where it has no DequantizeLinear, opset 19's kernel (versions 10 and 13 are subsets of it).
"""

import argparse
import json
import os
import sys

REPO_HINT = ("`python3 -m pip install {}` into the Python that runs this script (qdq names it by $QDQ_PYTHON; "
             "in a qdq checkout, bash scripts/setup.sh makes build/venv)")


DEFAULT_LENGTH = 128  # a symbolic dimension not on axis 0


class CheckError(Exception):
    """A failure reported as one line on stderr."""


def _import_numpy_onnx():
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
    except ImportError as exc:
        raise CheckError(f"{exc.name or exc} is not importable with {sys.executable}: install numpy and onnx with "
                         + REPO_HINT.format("numpy onnx")) from None


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message):
        # One line like every other failure (argparse would print the usage too, and exit 2).
        raise CheckError(message)


def parse_args(argv):
    parser = _ArgumentParser(prog="check_model.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("original", help="the float model")
    parser.add_argument("quantized", help="the quantized model")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.pb",
                        help="value of graph input NAME: a serialized onnx.TensorProto")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=N",
                        help="value of the symbolic dimension NAME in random inputs")
    parser.add_argument("--evaluator", choices=("auto", "onnxruntime", "reference"), default="auto")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--text", action="store_true",
                        help="print a short table (evaluator, inputs, per output its errors) instead of JSON")
    return parser.parse_args(argv)


def _name_value_pairs(items, option):
    pairs = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise CheckError(f"{option} {item!r}: expected NAME=VALUE")
        if name in pairs:
            raise CheckError(f"{option} {name}: given twice")
        pairs[name] = value
    return pairs


def load_model(path, with_data):
    """Loads a model; with_data: also its external data (resolved next to the file), else only the graph."""
    import onnx

    if not os.path.isfile(path):
        raise CheckError(f"{path}: no such file")
    try:
        return onnx.load(path, load_external_data=with_data)
    except Exception as exc:  # onnx raises DecodeError, OSError, ValidationError ...
        raise CheckError(f"{path}: cannot load the model: {_one_line(exc)}") from None


def _one_line(exc):
    text = " ".join(str(exc).split())
    return text[:400] + (" ..." if len(text) > 400 else "") if text else type(exc).__name__


def _graphs(graph):
    """The graph and every subgraph inside it (If/Loop/Scan bodies), depth first."""
    import onnx

    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    yield from _graphs(sub)


def _ai_onnx_opset(model):
    return next((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), 1)


def has_mx_dequantize(model):
    """True when a DequantizeLinear reads float4e2m1 or float8e8m0 data or scales (ORT's CPU cannot run it)."""
    import onnx

    mx_types = {onnx.TensorProto.FLOAT4E2M1, onnx.TensorProto.FLOAT8E8M0}
    graphs = list(_graphs(model.graph))
    # Names are unique per model in practice; a map over all scopes is enough to find the DQ inputs' types.
    elem_type = {}
    for graph in graphs:
        for tensor in graph.initializer:
            elem_type[tensor.name] = tensor.data_type
        for info in list(graph.input) + list(graph.value_info) + list(graph.output):
            if info.type.HasField("tensor_type"):
                elem_type.setdefault(info.name, info.type.tensor_type.elem_type)
        for node in graph.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                for attr in node.attribute:
                    if attr.name == "value" and attr.type == onnx.AttributeProto.TENSOR:
                        elem_type[node.output[0]] = attr.t.data_type
    nodes = [node for graph in graphs for node in graph.node]
    nodes += [node for function in model.functions for node in function.node]
    for node in nodes:
        if node.op_type == "DequantizeLinear" and node.domain in ("", "ai.onnx"):
            if any(elem_type.get(name) in mx_types for name in node.input[:2]):
                return True
    # A float4e2m1/e8m0 tensor anywhere we could not trace is treated the same: ORT would reject it too.
    return any(elem_type.get(name) in mx_types for name in elem_type)


def _numpy_dtype(elem_type):
    import onnx

    try:
        return onnx.helper.tensor_dtype_to_np_dtype(elem_type)
    except Exception:
        raise CheckError(f"graph input of element type {onnx.TensorProto.DataType.Name(elem_type)}: "
                         "no random values for it; give it with --input") from None


def random_input(info, dims, rng):
    """A random value for graph input `info` (a ValueInfoProto), as the module docstring describes."""
    import numpy as np
    import onnx

    if not info.type.HasField("tensor_type"):
        raise CheckError(f"graph input {info.name} is not a tensor: give it with --input")
    tensor_type = info.type.tensor_type
    shape = []
    if tensor_type.HasField("shape"):
        for axis, dim in enumerate(tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value >= 0:
                shape.append(dim.dim_value)
            elif dim.dim_param and dim.dim_param in dims:
                shape.append(dims[dim.dim_param])
            else:
                shape.append(1 if axis == 0 else DEFAULT_LENGTH)
                if dim.dim_param:
                    dims[dim.dim_param] = shape[-1]  # the same name is the same size in every input
    dtype = _numpy_dtype(tensor_type.elem_type)
    elem = tensor_type.elem_type
    if elem == onnx.TensorProto.BOOL:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if elem in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.INT16, onnx.TensorProto.UINT16,
                onnx.TensorProto.INT32, onnx.TensorProto.UINT32, onnx.TensorProto.INT64, onnx.TensorProto.UINT64):
        low, high = 0, 255
        if elem == onnx.TensorProto.INT8:
            high = 127  # int8 cannot hold 255; keep the non-negative half
        return rng.integers(low, high, size=shape, endpoint=True).astype(dtype)
    if elem in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
                onnx.TensorProto.BFLOAT16):
        return rng.standard_normal(size=shape).astype(np.float32).astype(dtype)
    raise CheckError(f"graph input {info.name} has element type {onnx.TensorProto.DataType.Name(elem)}: "
                     "no random values for it; give it with --input")


def read_tensor_file(name, path):
    import onnx
    from onnx import numpy_helper

    try:
        with open(path, "rb") as f:
            data = f.read()
        tensor = onnx.TensorProto()
        tensor.ParseFromString(data)
        return numpy_helper.to_array(tensor)
    except OSError as exc:
        raise CheckError(f"--input {name}={path}: {exc.strerror or exc}") from None
    except Exception as exc:
        raise CheckError(f"--input {name}={path}: not a serialized onnx.TensorProto ({_one_line(exc)})") from None


def model_inputs(model, given, dims, seed):
    """The feed dict for `model`'s graph inputs (initializer-backed inputs excluded) and where each came from."""
    import numpy as np

    rng = np.random.Generator(np.random.PCG64(seed))
    initializers = {tensor.name for tensor in model.graph.initializer}
    names = [info.name for info in model.graph.input if info.name not in initializers]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise CheckError(f"--input {unknown[0]}: the model has no such input (inputs: {', '.join(names)})")
    feeds, sources = {}, {}
    for info in model.graph.input:
        if info.name in initializers:
            continue
        if info.name in given:
            feeds[info.name] = read_tensor_file(info.name, given[info.name])
            sources[info.name] = given[info.name]
        else:
            feeds[info.name] = random_input(info, dims, rng)
            sources[info.name] = f"random (seed {seed})"
    return feeds, sources


class OrtEvaluator:
    def __init__(self):
        try:
            import onnxruntime
        except ImportError as exc:
            raise CheckError(f"onnxruntime is not importable with {sys.executable} ({_one_line(exc)}): install it "
                             "with " + REPO_HINT.format("onnxruntime") + ", or use --evaluator reference") from None
        self.ort = onnxruntime
        onnxruntime.set_default_logger_severity(4)  # fatal only: a failure is reported in our one line
        self.name = f"onnxruntime {onnxruntime.__version__}"

    def run(self, path, model, feeds):
        options = self.ort.SessionOptions()
        options.log_severity_level = 4
        # ORT fuses DequantizeLinear + MatMul into MatMulNBits, by default at accuracy level 4, which also quantizes
        # the activations to int8: an error of ORT's choosing on top of the file's. Level 1 computes in float32,
        # so the check measures what the quantized weights do.
        options.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", "1")
        try:
            # From the path, so that ORT resolves external data and models over 2 GB itself.
            session = self.ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            names = [output.name for output in session.get_outputs()]
            return dict(zip(names, session.run(names, feeds)))
        except Exception as exc:
            raise CheckError(f"{path}: ONNX Runtime cannot run it: {_one_line(exc)}") from None


def _reference_fixes():
    """Replacements for onnx.reference kernels that compute something else than the operator's definition."""
    import numpy as np
    from onnx.reference.op_run import OpRun

    class GlobalMaxPool(OpRun):
        # onnx 1.23's kernel reduces axes (rank-2, rank-1), i.e. the channel axis of a rank-3 input; the operator
        # reduces every spatial axis (2 .. rank-1) and keeps them as 1.
        op_domain = ""

        def _run(self, x):
            return (np.max(x, axis=tuple(range(2, x.ndim)), keepdims=True),)

    class BatchNormalization(OpRun):
        # onnx 1.23's opset-9 kernel normalizes with the batch's own statistics whenever `momentum` is set, but a
        # node with one output is inference at every version: it must use the stored mean and variance.
        op_domain = ""

        def _run(self, x, scale, bias, mean, var, epsilon=1e-5, momentum=0.9, **attributes):
            from onnx.reference.ops.op_batch_normalization import (_batchnorm_test_mode,
                                                                   _batchnorm_training_mode)

            if epsilon is None:
                epsilon = 1e-5
            if len(self.onnx_node.output) == 1 and not attributes.get("training_mode"):
                return (_batchnorm_test_mode(x, scale, bias, mean, var, epsilon=epsilon),)
            y, _, _, running_mean, running_var = _batchnorm_training_mode(
                x, scale, bias, mean, var, momentum=0.9 if momentum is None else momentum, epsilon=epsilon)
            return (y, running_mean, running_var)[:len(self.onnx_node.output)]

    return [GlobalMaxPool, BatchNormalization]


def _reference_dequantize_before_19():
    """DequantizeLinear for models below opset 19, which onnx.reference has no kernel for.

    Versions 10 and 13 are subsets of 19 (which only added float8 codes and float16/bfloat16 scales): the same
    formula on int8/uint8/int32 codes with float32 scales, per tensor or (13) along `axis`.
    """
    from onnx.reference.ops.op_dequantize_linear import DequantizeLinear_19

    class DequantizeLinear(DequantizeLinear_19):
        op_domain = ""

        def _run(self, x, x_scale, x_zero_point=None, axis=1, **later_attributes):
            # An unversioned class gets the newest schema's attributes (block_size, output_dtype): at their
            # defaults they are version 19's behaviour.
            return DequantizeLinear_19._run(self, x, x_scale, x_zero_point, axis=1 if axis is None else axis)

    return DequantizeLinear


class ReferenceEvaluator:
    def __init__(self):
        import onnx
        import onnx.reference

        self.reference = onnx.reference
        self.name = f"onnx.reference {onnx.__version__}"
        self.new_ops = _reference_fixes()

    def run(self, path, model, feeds):
        new_ops = list(self.new_ops)
        if _ai_onnx_opset(model) < 19:
            new_ops.append(_reference_dequantize_before_19())
        try:
            evaluator = self.reference.ReferenceEvaluator(model, new_ops=new_ops)
            names = list(evaluator.output_names)
            return dict(zip(names, evaluator.run(None, feeds)))
        except Exception as exc:
            raise CheckError(f"{path}: onnx.reference cannot run it: {type(exc).__name__}: {_one_line(exc)}") from None


def compare(original, quantized):
    """relative_error and max_abs_error of one output pair, as the module docstring defines them."""
    import numpy as np

    o = np.asarray(original)
    q = np.asarray(quantized)
    if o.shape != q.shape:
        raise CheckError(f"output shapes differ: original {list(o.shape)}, quantized {list(q.shape)}")
    o = o.astype(np.float64)
    q = q.astype(np.float64)
    finite_o, finite_q = np.isfinite(o), np.isfinite(q)
    if not np.array_equal(finite_o, finite_q):
        return None, None
    same_special = ~finite_o & ((o == q) | (np.isnan(o) & np.isnan(q)))
    if not np.all(finite_o | same_special):
        return None, None
    diff = np.where(finite_o, q - o, 0.0)
    o_finite = np.where(finite_o, o, 0.0)
    diff_norm = float(np.linalg.norm(diff.ravel()))
    ref_norm = float(np.linalg.norm(o_finite.ravel()))
    max_abs = float(np.max(np.abs(diff))) if diff.size else 0.0
    if not (np.isfinite(diff_norm) and np.isfinite(ref_norm)):
        return None, None
    return (diff_norm / ref_norm if ref_norm > 0 else diff_norm), max_abs


def check(argv):
    args = parse_args(argv)
    _import_numpy_onnx()
    given = _name_value_pairs(args.input, "--input")
    dims = {}
    for name, value in _name_value_pairs(args.dim, "--dim").items():
        if not value.isdigit() or int(value) < 1:
            raise CheckError(f"--dim {name}={value}: expected a positive integer")
        dims[name] = int(value)

    # The graphs first, without external data: ONNX Runtime reads the weights from the files itself, so a
    # large model is not held in this process twice.
    original = load_model(args.original, with_data=False)
    quantized = load_model(args.quantized, with_data=False)

    evaluator_name = args.evaluator
    if evaluator_name == "auto":
        evaluator_name = "reference" if has_mx_dequantize(quantized) else "onnxruntime"
    evaluator = OrtEvaluator() if evaluator_name == "onnxruntime" else ReferenceEvaluator()

    feeds, sources = model_inputs(original, given, dims, args.seed)
    quantized_inputs = {info.name for info in quantized.graph.input} - {t.name for t in quantized.graph.initializer}
    if quantized_inputs != set(feeds):
        raise CheckError(f"the models' inputs differ: original {sorted(feeds)}, quantized {sorted(quantized_inputs)}")

    want = [output.name for output in original.graph.output]
    got_names = [output.name for output in quantized.graph.output]
    if want != got_names:
        raise CheckError(f"the models' outputs differ: original {want}, quantized {got_names}")

    if evaluator_name == "onnxruntime":
        original = quantized = None
    else:
        original = load_model(args.original, with_data=True)
        quantized = load_model(args.quantized, with_data=True)
    reference_outputs = evaluator.run(args.original, original, feeds)
    quantized_outputs = evaluator.run(args.quantized, quantized, feeds)

    outputs = []
    for name in want:
        relative, max_abs = compare(reference_outputs[name], quantized_outputs[name])
        outputs.append({"name": name, "shape": list(reference_outputs[name].shape),
                        "relative_error": relative, "max_abs_error": max_abs})
    relatives = [output["relative_error"] for output in outputs]
    max_relative = None if any(r is None for r in relatives) else max(relatives, default=0.0)
    report = {
        "evaluator": evaluator.name,
        "inputs": {name: {"shape": list(value.shape), "source": sources[name]} for name, value in feeds.items()},
        "outputs": outputs,
        "max_relative_error": max_relative,
    }
    return report


def _number(value):
    return "n/a (NaN/inf in different places)" if value is None else f"{value:.3g}"


def format_text(report):
    """The report as a few lines of text (--text; what `qdq quantize --check` prints without --json)."""
    inputs = ", ".join(f"{name} {value['shape']} {value['source']}" for name, value in report["inputs"].items())
    lines = [f"check against the original ({report['evaluator']})"] + ([f"  inputs: {inputs}"] if inputs else [])
    rows = [(output["name"], _number(output["relative_error"]), _number(output["max_abs_error"]))
            for output in report["outputs"]]
    widths = [max([len(header)] + [len(row[k]) for row in rows]) for k, header in
              enumerate(("output", "relative error", "max |error|"))]
    for row in [("output", "relative error", "max |error|")] + rows:
        lines.append("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    lines.append(f"  max relative error {_number(report['max_relative_error'])}")
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        report = check(argv)
    except CheckError as exc:
        print(f"check_model.py: error: {exc}", file=sys.stderr)
        return 1
    except MemoryError:
        print("check_model.py: error: out of memory running the models", file=sys.stderr)
        return 1
    if parse_args(argv).text:
        sys.stdout.write(format_text(report) + "\n")
    else:
        json.dump(report, sys.stdout, allow_nan=False)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
