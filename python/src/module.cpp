// _qdq — the compiled half of the qdq Python package (python/qdq/__init__.py is the public API).
//
// This layer speaks in (numpy array, ONNX DataType number) pairs; the Python layer maps numpy and
// ml_dtypes dtypes and qdq.CodeArray to and from them. Array conventions, one element per array item:
//   * types numpy has (float32, float16, int8, ...): the array's own dtype, passed without a copy when
//     C-contiguous;
//   * BFLOAT16: 16-bit codes; the 8-bit float types: 8-bit codes;
//   * UINT4, UINT2, FLOAT4E2M1: one code per byte (0..15 / 0..3), in an unsigned 8-bit array;
//   * INT4, INT2: one value per byte, either sign-extended in a signed 8-bit array (-8..7 / -2..1, as
//     ml_dtypes stores them) or as the two's complement code in an unsigned 8-bit array (0..15 / 0..3).
// Sub-byte inputs are packed into ONNX's layout with the library's pack_codes, sub-byte outputs
// unpacked with unpack_codes (INT4/INT2 then sign-extended into int8): src/types/packing.hpp is the one
// place that knows the layout. Outputs are new arrays in these conventions (sub-byte signed types as
// int8). qdq::Error becomes ValueError with the library's message. The GIL is released while the
// library computes.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "qdq/qdq.hpp"
#include "types/packing.hpp"

#ifdef QDQ_PYTHON_WITH_ONNX
#include "qdq_onnx.hpp"
#endif

namespace py = pybind11;

namespace {

using qdq::DataType;

// Bytes one array item occupies for `type`: 1 for the sub-byte types (one code per byte).
size_t item_bytes(DataType type) {
  const int bits = qdq::bit_width(type);
  if (bits == 0) throw qdq::Error("element type " + qdq::data_type_name(type) + " has no fixed storage size");
  return bits < 8 ? 1 : static_cast<size_t>(bits / 8);
}

bool is_sub_byte(DataType type) { return qdq::bit_width(type) > 0 && qdq::bit_width(type) < 8; }

bool is_signed_sub_byte(DataType type) { return type == DataType::kInt4 || type == DataType::kInt2; }

// The numpy dtype of the arrays this module returns for `type`.
py::dtype storage_dtype(DataType type) {
  switch (type) {
    case DataType::kFloat: return py::dtype("float32");
    case DataType::kDouble: return py::dtype("float64");
    case DataType::kFloat16: return py::dtype("float16");
    case DataType::kBool: return py::dtype("bool");
    case DataType::kInt8: case DataType::kInt4: case DataType::kInt2: return py::dtype("int8");
    case DataType::kInt16: return py::dtype("int16");
    case DataType::kInt32: return py::dtype("int32");
    case DataType::kInt64: return py::dtype("int64");
    case DataType::kUint16: case DataType::kBFloat16: return py::dtype("uint16");
    case DataType::kUint32: return py::dtype("uint32");
    case DataType::kUint64: return py::dtype("uint64");
    case DataType::kUint8: case DataType::kFloat8E4M3FN: case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2: case DataType::kFloat8E5M2FNUZ: case DataType::kFloat8E8M0:
    case DataType::kUint4: case DataType::kFloat4E2M1: case DataType::kUint2:
      return py::dtype("uint8");
    default:
      throw qdq::Error("element type " + qdq::data_type_name(type) + " is not supported by the Python module");
  }
}

DataType to_type(int64_t value) {
  if (!qdq::is_known_data_type(static_cast<int32_t>(value))) {
    throw qdq::Error("unknown ONNX element type number " + std::to_string(value));
  }
  return static_cast<DataType>(value);
}

std::vector<int64_t> shape_of(const py::array& a) {
  return std::vector<int64_t>(a.shape(), a.shape() + a.ndim());
}

// An input tensor: a borrowed view of a numpy array, or of a packed copy for sub-byte types.
// Built with the GIL held; the view stays valid while `array` (kept here) lives.
struct Input {
  py::array array;  // keeps the buffer alive
  std::vector<int64_t> shape;
  std::vector<uint8_t> packed;  // sub-byte types only
  qdq::TensorView view;

  Input(py::array a, DataType type, const char* what) : array(std::move(a)), shape(shape_of(array)) {
    if (!(array.flags() & py::array::c_style)) {
      throw py::type_error(std::string(what) + ": the array must be C-contiguous");
    }
    const size_t itemsize = static_cast<size_t>(array.itemsize());
    if (itemsize != item_bytes(type)) {
      throw py::type_error(std::string(what) + ": an array of " + std::to_string(itemsize) +
                           "-byte items cannot hold " + qdq::data_type_name(type) + " elements (" +
                           std::to_string(item_bytes(type)) + " byte(s) each)");
    }
    const uint64_t count = qdq::element_count(shape);
    view.type = type;
    view.shape = shape;
    if (!is_sub_byte(type)) {
      view.data = array.data();
      view.size_bytes = count * itemsize;
      return;
    }
    // One code per byte -> ONNX's packed layout, checking every value is representable.
    const int bits = qdq::bit_width(type);
    const bool signed_items = array.dtype().kind() == 'i';
    if (signed_items && !is_signed_sub_byte(type)) {
      throw py::type_error(std::string(what) + ": " + qdq::data_type_name(type) +
                           " codes must be given in an unsigned 8-bit array");
    }
    const auto* items = static_cast<const uint8_t*>(array.data());
    const int lo = signed_items ? -(1 << (bits - 1)) : 0;
    const int hi = signed_items ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
    for (uint64_t i = 0; i < count; ++i) {
      const int v = signed_items ? static_cast<int>(static_cast<int8_t>(items[i])) : static_cast<int>(items[i]);
      if (v < lo || v > hi) {
        throw py::value_error(std::string(what) + ": element " + std::to_string(i) + " is " + std::to_string(v) +
                              ", not a " + qdq::data_type_name(type) + (signed_items ? " value (" : " code (") +
                              std::to_string(lo) + ".." + std::to_string(hi) + ")");
      }
    }
    packed.assign(qdq::storage_bytes(type, count) + 1, 0);  // +1: never a zero-size buffer
    {
      py::gil_scoped_release release;
      qdq::detail::pack_codes(items, bits, 0, static_cast<int64_t>(count), packed.data(), true);
    }
    view.data = packed.data();
    view.size_bytes = qdq::storage_bytes(type, count);
  }
};

// An output tensor: a new numpy array in this module's conventions, written directly for types of 8
// bits or more, through a packed buffer for sub-byte types.
struct Output {
  DataType type;
  std::vector<int64_t> shape;
  py::array array;
  uint8_t* items = nullptr;  // array's buffer, taken while the GIL is held
  std::vector<uint8_t> packed;
  qdq::MutableTensorView view;

  explicit Output(const qdq::TensorSpec& spec) : type(spec.type), shape(spec.shape) {
    std::vector<py::ssize_t> dims(shape.begin(), shape.end());
    array = py::array(storage_dtype(type), dims);
    items = static_cast<uint8_t*>(array.mutable_data());
    view.type = type;
    view.shape = shape;
    view.size_bytes = spec.size_bytes;
    if (is_sub_byte(type)) {
      packed.assign(spec.size_bytes + 1, 0);
      view.data = packed.data();
    } else {
      view.data = items;
    }
  }

  // Call without the GIL, after the library has written `view`.
  void finish() {
    if (!is_sub_byte(type)) return;
    const uint64_t count = qdq::element_count(shape);
    finish_unpack(packed.data(), type, count, items);
  }

  static void finish_unpack(const uint8_t* packed_data, DataType type, uint64_t count, uint8_t* items) {
    const int bits = qdq::bit_width(type);
    qdq::detail::unpack_codes(packed_data, bits, 0, static_cast<int64_t>(count), items);
    if (is_signed_sub_byte(type)) {
      for (uint64_t i = 0; i < count; ++i) {
        items[i] = static_cast<uint8_t>(static_cast<int8_t>(qdq::detail::sign_extend(items[i], bits)));
      }
    }
  }
};

qdq::ExecutionOptions execution_options() { return {}; }

// attributes: a dict name -> int of the attributes to set; others stay absent.
template <typename Attributes>
void set_attribute(Attributes& attrs, const std::string& name, int64_t value, const char* op);

template <>
void set_attribute(qdq::QuantizeLinearAttributes& attrs, const std::string& name, int64_t value, const char* op) {
  if (name == "axis") attrs.axis = value;
  else if (name == "saturate") attrs.saturate = value;
  else if (name == "block_size") attrs.block_size = value;
  else if (name == "output_dtype") attrs.output_dtype = value;
  else if (name == "precision") attrs.precision = value;
  else throw py::type_error(std::string(op) + " has no attribute '" + name + "'");
}

template <>
void set_attribute(qdq::DequantizeLinearAttributes& attrs, const std::string& name, int64_t value, const char* op) {
  if (name == "axis") attrs.axis = value;
  else if (name == "block_size") attrs.block_size = value;
  else if (name == "output_dtype") attrs.output_dtype = value;
  else throw py::type_error(std::string(op) + " has no attribute '" + name + "'");
}

template <typename Attributes>
Attributes make_attributes(const py::dict& attributes, int64_t opset, const char* op) {
  Attributes attrs;
  attrs.opset = opset;
  for (const auto& item : attributes) {
    set_attribute(attrs, py::cast<std::string>(item.first), py::cast<int64_t>(item.second), op);
  }
  return attrs;
}

py::tuple quantize_linear(py::array x, int64_t x_type, py::array scale, int64_t scale_type,
                          std::optional<py::array> zero_point, int64_t zero_point_type,
                          const py::dict& attributes, int64_t opset) {
  const auto attrs = make_attributes<qdq::QuantizeLinearAttributes>(attributes, opset, "QuantizeLinear");
  Input xi(std::move(x), to_type(x_type), "x");
  Input si(std::move(scale), to_type(scale_type), "scale");
  std::optional<Input> zi;
  if (zero_point) zi.emplace(std::move(*zero_point), to_type(zero_point_type), "zero_point");
  const qdq::TensorView* zv = zi ? &zi->view : nullptr;
  Output out(qdq::quantize_linear_output(attrs, xi.view, si.view, zv));
  {
    py::gil_scoped_release release;
    qdq::quantize_linear(attrs, xi.view, si.view, zv, out.view, execution_options());
    out.finish();
  }
  return py::make_tuple(out.array, static_cast<int>(out.type));
}

py::tuple dequantize_linear(py::array x, int64_t x_type, py::array scale, int64_t scale_type,
                            std::optional<py::array> zero_point, int64_t zero_point_type,
                            const py::dict& attributes, int64_t opset) {
  const auto attrs = make_attributes<qdq::DequantizeLinearAttributes>(attributes, opset, "DequantizeLinear");
  Input xi(std::move(x), to_type(x_type), "x");
  Input si(std::move(scale), to_type(scale_type), "scale");
  std::optional<Input> zi;
  if (zero_point) zi.emplace(std::move(*zero_point), to_type(zero_point_type), "zero_point");
  const qdq::TensorView* zv = zi ? &zi->view : nullptr;
  Output out(qdq::dequantize_linear_output(attrs, xi.view, si.view, zv));
  {
    py::gil_scoped_release release;
    qdq::dequantize_linear(attrs, xi.view, si.view, zv, out.view, execution_options());
    out.finish();
  }
  return py::make_tuple(out.array, static_cast<int>(out.type));
}

py::tuple dynamic_quantize_linear(py::array x, int64_t x_type, int64_t opset) {
  Input xi(std::move(x), to_type(x_type), "x");
  qdq::TensorSpec spec;
  spec.type = DataType::kUint8;
  spec.shape = xi.shape;
  spec.size_bytes = qdq::element_count(xi.shape);
  Output out(spec);
  qdq::DynamicQuantizationParameters params;
  {
    py::gil_scoped_release release;
    params = qdq::dynamic_quantize_linear(xi.view, out.view, execution_options(), opset);
  }
  return py::make_tuple(out.array, params.y_scale, params.y_zero_point);
}

#ifdef QDQ_PYTHON_WITH_ONNX

// Moves a tensor's bytes into a numpy array without copying (types of 8 bits or more) or unpacks
// them (sub-byte types).
py::tuple tensor_to_python(qdq::onnx::Tensor&& t) {
  std::vector<py::ssize_t> dims(t.shape.begin(), t.shape.end());
  const uint64_t count = qdq::element_count(t.shape);
  py::array array;
  if (is_sub_byte(t.type)) {
    array = py::array(storage_dtype(t.type), dims);
    Output::finish_unpack(t.data.data(), t.type, count, static_cast<uint8_t*>(array.mutable_data()));
  } else {
    py::dtype dtype = storage_dtype(t.type);
    auto* owner = new std::vector<uint8_t>(std::move(t.data));
    if (owner->empty()) owner->resize(1);  // a valid pointer for empty tensors
    py::capsule base(owner, [](void* p) { delete static_cast<std::vector<uint8_t>*>(p); });
    array = py::array(dtype, dims, {}, owner->data(), base);
  }
  return py::make_tuple(array, static_cast<int>(t.type), t.name);
}

py::tuple load_tensor(const std::string& path) {
  qdq::onnx::Tensor t;
  {
    py::gil_scoped_release release;
    t = qdq::onnx::read_tensor_file(path);
  }
  const DataType type = t.type;
  storage_dtype(type);  // rejects types this module cannot represent, before any work
  return tensor_to_python(std::move(t));
}

void save_tensor(const std::string& path, py::array array, int64_t type, const std::string& name) {
  Input in(std::move(array), to_type(type), "array");
  qdq::onnx::Tensor t;
  t.type = in.view.type;
  t.shape = in.shape;
  t.name = name;
  const auto* bytes = static_cast<const uint8_t*>(in.view.data);
  t.data.assign(bytes, bytes + in.view.size_bytes);
  py::gil_scoped_release release;
  qdq::onnx::write_tensor_file(path, t);
}

py::dict read_model_node(const std::string& path) {
  const qdq::onnx::Model model = qdq::onnx::read_model_file(path);
  if (model.nodes.size() != 1) {
    throw qdq::Error(path + ": has " + std::to_string(model.nodes.size()) + " nodes, expected exactly one");
  }
  const qdq::onnx::Node& node = model.nodes[0];
  py::dict attributes;
  for (const auto& a : node.attributes) attributes[py::str(a.name)] = a.i;
  std::vector<std::string> graph_inputs;
  for (const auto& vi : model.inputs) {
    bool initializer = false;
    for (const auto& init : model.initializers) initializer = initializer || init.name == vi.name;
    if (!initializer) graph_inputs.push_back(vi.name);
  }
  std::vector<std::string> graph_outputs;
  for (const auto& vi : model.outputs) graph_outputs.push_back(vi.name);
  py::dict d;
  d["opset"] = model.opset;
  d["op_type"] = node.op_type;
  d["domain"] = node.domain;
  d["attributes"] = attributes;
  d["inputs"] = node.inputs;
  d["outputs"] = node.outputs;
  d["graph_inputs"] = graph_inputs;
  d["graph_outputs"] = graph_outputs;
  return d;
}

#endif  // QDQ_PYTHON_WITH_ONNX

}  // namespace

PYBIND11_MODULE(_qdq, m) {
  m.doc() = "qdq's compiled core; use the qdq package, not this module.";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const qdq::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  m.attr("__version__") = std::string(qdq::version());
  m.attr("HAVE_ONNX_IO") =
#ifdef QDQ_PYTHON_WITH_ONNX
      true;
#else
      false;
#endif

  m.def("quantize_linear", &quantize_linear, py::arg("x"), py::arg("x_type"), py::arg("scale"),
        py::arg("scale_type"), py::arg("zero_point").none(true), py::arg("zero_point_type"),
        py::arg("attributes"), py::arg("opset"));
  m.def("dequantize_linear", &dequantize_linear, py::arg("x"), py::arg("x_type"), py::arg("scale"),
        py::arg("scale_type"), py::arg("zero_point").none(true), py::arg("zero_point_type"),
        py::arg("attributes"), py::arg("opset"));
  m.def("dynamic_quantize_linear", &dynamic_quantize_linear, py::arg("x"), py::arg("x_type"),
        py::arg("opset") = 11);
  m.def("parse_data_type", [](const std::string& name) -> std::optional<int> {
    const auto t = qdq::parse_data_type(name);
    if (!t) return std::nullopt;
    return static_cast<int>(*t);
  });
  m.def("data_type_name", [](int64_t type) { return qdq::data_type_name(static_cast<DataType>(type)); });
  m.def("bit_width", [](int64_t type) { return qdq::bit_width(to_type(type)); });
  m.def("storage_dtype", [](int64_t type) { return storage_dtype(to_type(type)); });
  m.def("set_num_threads", [](int n) {
    if (n < 0) throw py::value_error("set_num_threads: the thread count must be >= 0, got " + std::to_string(n));
    qdq::set_default_num_threads(n);
  });
  m.def("get_num_threads", &qdq::default_num_threads);
  m.def("operator_version", &qdq::quantize_linear_version);
#ifdef QDQ_PYTHON_WITH_ONNX
  m.def("load_tensor", &load_tensor, py::arg("path"));
  m.def("save_tensor", &save_tensor, py::arg("path"), py::arg("array"), py::arg("type"), py::arg("name") = "");
  m.def("read_model_node", &read_model_node, py::arg("path"));
#endif
}
