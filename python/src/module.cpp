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
// Sub-byte inputs are packed into ONNX's layout with the library's pack_all_codes, sub-byte outputs
// unpacked with unpack_all_codes (INT4/INT2 sign-extended into int8 in the same pass): vectorised
// passes at memory speed; src/types/packing.hpp is the one place that knows the layout. ml_dtypes
// sub-byte arrays are read as they are (the low bits of each byte). A tensor may also be given as a
// (uint8 array of ONNX's packed bytes, shape) tuple and QuantizeLinear's result returned packed.
// Outputs are new arrays in these conventions (sub-byte signed types as
// int8). qdq::Error becomes ValueError with the library's message. The GIL is released while the
// library computes.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "qdq/qdq.hpp"
#include "types/packing.hpp"
#include "types/packing_bulk.hpp"
#include "types/type_traits.hpp"

#ifdef QDQ_PYTHON_WITH_ONNX
#include "qdq_onnx.hpp"

void register_quantize_model(pybind11::module_& m);  // quantize_model.cpp
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
/// The NumPy dtype that holds one element (or, for packed and narrow float types, one code) of
/// `type`, from the type list: floats with a NumPy type as themselves, integers as the integer of
/// their width (packed ones one per int8/uint8), other narrow codes as the unsigned integer of theirs.
py::dtype storage_dtype(DataType type) {
  using qdq::detail::TypeKind;
  const qdq::detail::TypeInfo& info = qdq::detail::type_info(type);
  const int bits = info.bits < 8 ? 8 : info.bits;
  switch (info.kind) {
    case TypeKind::kFloat:
      return py::dtype(bits == 32 ? "float32" : "float64");
    case TypeKind::kMiniFloat:
      if (type == DataType::kFloat16) return py::dtype("float16");  // the one narrow float NumPy has
      return py::dtype("uint" + std::to_string(bits));
    case TypeKind::kExponent:
      return py::dtype("uint" + std::to_string(bits));
    case TypeKind::kInteger:
      return py::dtype((info.is_signed ? "int" : "uint") + std::to_string(bits));
    case TypeKind::kOther:
      if (type == DataType::kBool) return py::dtype("bool");
      break;
  }
  throw qdq::Error("element type " + qdq::data_type_name(type) + " is not supported by the Python module");
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

// Throws ValueError naming the first item of `items` that is not a `bits`-bit value/code, if any.
// The scan is an OR over all items without early exit, which compilers vectorise (memory speed); only
// a bad array pays for locating its first bad item.
void check_sub_byte_items(const uint8_t* items, uint64_t count, int bits, bool signed_items, DataType type,
                          const char* what) {
  const uint8_t offset = signed_items ? static_cast<uint8_t>(1u << (bits - 1)) : 0;
  uint8_t bad = 0;
  for (uint64_t i = 0; i < count; ++i) bad |= static_cast<uint8_t>(static_cast<uint8_t>(items[i] + offset) >> bits);
  if (bad == 0) return;
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
}

// Bytes of uninitialised memory: the packing passes write every byte, so no zero-fill (and no page
// touched twice) before they do.
struct Buffer {
  std::unique_ptr<uint8_t[]> bytes;
  explicit Buffer(size_t n = 0) : bytes(n ? new uint8_t[n] : nullptr) {}
};

// An input tensor: a borrowed view of a numpy array, or of a packed copy for sub-byte types.
// Built with the GIL held; the view stays valid while `array` (kept here) lives.
//   `source` is a numpy array in the module's conventions (module comment), an ml_dtypes sub-byte
//   array (numpy kind 'V': the low bits of each byte are the code, as ml_dtypes stores it), or a
//   tuple (uint8 array of ONNX's packed bytes, shape) for a tensor given as its raw_data.
struct Input {
  py::array array;  // keeps the buffer alive
  std::vector<int64_t> shape;
  Buffer packed;  // sub-byte types given unpacked only
  qdq::TensorView view;

  Input(const py::object& source, DataType type, const char* what) {
    if (py::isinstance<py::tuple>(source)) {
      init_packed(py::cast<py::tuple>(source), type, what);
      return;
    }
    array = py::reinterpret_borrow<py::array>(source);
    if (!py::isinstance<py::array>(source)) throw py::type_error(std::string(what) + ": expected a NumPy array");
    shape = shape_of(array);
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
    const char kind = array.dtype().kind();
    const bool signed_items = kind == 'i';
    if (signed_items && !is_signed_sub_byte(type)) {
      throw py::type_error(std::string(what) + ": " + qdq::data_type_name(type) +
                           " codes must be given in an unsigned 8-bit array");
    }
    const auto* items = static_cast<const uint8_t*>(array.data());
    packed = Buffer(qdq::storage_bytes(type, count) + 1);  // +1: never a zero-size buffer
    {
      py::gil_scoped_release release;
      if (kind != 'V') check_sub_byte_items(items, count, bits, signed_items, type, what);
      qdq::detail::pack_all_codes(items, bits, static_cast<int64_t>(count), packed.bytes.get());
    }
    view.data = packed.bytes.get();
    view.size_bytes = qdq::storage_bytes(type, count);
  }

 private:
  void init_packed(const py::tuple& t, DataType type, const char* what) {
    if (t.size() != 2) throw py::type_error(std::string(what) + ": a packed tensor is (bytes, shape)");
    array = py::array::ensure(t[0]);
    if (!array || array.itemsize() != 1 || !(array.flags() & py::array::c_style)) {
      throw py::type_error(std::string(what) + ": packed bytes must be a C-contiguous 8-bit array");
    }
    shape = py::cast<std::vector<int64_t>>(t[1]);
    for (int64_t d : shape) {
      if (d < 0) throw py::value_error(std::string(what) + ": negative dimension " + std::to_string(d));
    }
    const uint64_t count = qdq::element_count(shape);
    const uint64_t bytes = qdq::storage_bytes(type, count);
    if (static_cast<uint64_t>(array.size()) != bytes) {
      throw py::value_error(std::string(what) + ": " + std::to_string(count) + " " + qdq::data_type_name(type) +
                            " elements take " + std::to_string(bytes) + " packed bytes, got " +
                            std::to_string(array.size()));
    }
    view.type = type;
    view.shape = shape;
    view.data = array.data();
    view.size_bytes = bytes;
  }
};

// An output tensor: a numpy array in this module's conventions (new, or the caller's `out`), written
// directly for types of 8 bits or more, through a packed buffer for sub-byte types; or, with
// `packed_result`, a new 1-D uint8 array of ONNX's packed bytes (raw_data) written by the library.
struct Output {
  DataType type;
  std::vector<int64_t> shape;
  py::array array;
  uint8_t* items = nullptr;  // array's buffer, taken while the GIL is held
  Buffer packed;
  bool unpack = false;
  qdq::MutableTensorView view;

  // out: None, or (array in this module's conventions, the type number the caller means it to hold).
  Output(const qdq::TensorSpec& spec, const py::object& out, bool packed_result)
      : type(spec.type), shape(spec.shape) {
    view.type = type;
    view.shape = shape;
    view.size_bytes = spec.size_bytes;
    if (packed_result) {
      if (!out.is_none()) throw py::type_error("out= and packed=True cannot be combined");
      array = py::array(py::dtype("uint8"), std::vector<py::ssize_t>{static_cast<py::ssize_t>(spec.size_bytes)});
      view.data = array.mutable_data();
      return;
    }
    if (!out.is_none()) {
      const auto given = py::cast<py::tuple>(out);
      const auto out_type = static_cast<DataType>(py::cast<int64_t>(given[1]));
      if (out_type != type) {
        throw py::type_error("out: the result is " + qdq::data_type_name(type) + ", out holds " +
                             qdq::data_type_name(out_type));
      }
      if (!py::isinstance<py::array>(given[0])) throw py::type_error("out: expected a NumPy array");
      array = py::reinterpret_borrow<py::array>(given[0]);
      check_out(array);
    } else {
      std::vector<py::ssize_t> dims(shape.begin(), shape.end());
      array = py::array(storage_dtype(type), dims);
    }
    items = static_cast<uint8_t*>(array.mutable_data());
    if (is_sub_byte(type)) {
      packed = Buffer(spec.size_bytes + 1);
      view.data = packed.bytes.get();
      unpack = true;
    } else {
      view.data = items;
    }
  }

  // Call without the GIL, after the library has written `view`.
  void finish() {
    if (!unpack) return;
    finish_unpack(packed.bytes.get(), type, qdq::element_count(shape), items);
  }

  static void finish_unpack(const uint8_t* packed_data, DataType type, uint64_t count, uint8_t* items) {
    qdq::detail::unpack_all_codes(packed_data, qdq::bit_width(type), static_cast<int64_t>(count),
                                  is_signed_sub_byte(type), items);
  }

 private:
  void check_out(const py::array& a) const {
    const py::dtype want = storage_dtype(type);
    if (!a.dtype().is(want) && !(a.dtype().kind() == want.kind() && a.itemsize() == want.itemsize())) {
      throw py::type_error("out: expected an array of " + py::cast<std::string>(want.attr("name")) + " items for " +
                           qdq::data_type_name(type) + ", got " + py::cast<std::string>(a.dtype().attr("name")));
    }
    if (shape_of(a) != shape) {
      std::string want_shape, got_shape;
      for (int64_t d : shape) want_shape += (want_shape.empty() ? "" : ", ") + std::to_string(d);
      for (int64_t d : shape_of(a)) got_shape += (got_shape.empty() ? "" : ", ") + std::to_string(d);
      throw py::value_error("out: the result has shape [" + want_shape + "], out has [" + got_shape + "]");
    }
    if (!(a.flags() & py::array::c_style) || !a.writeable()) {
      throw py::type_error("out: the array must be C-contiguous and writeable");
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

py::tuple quantize_linear(const py::object& x, int64_t x_type, const py::object& scale, int64_t scale_type,
                          const py::object& zero_point, int64_t zero_point_type, const py::dict& attributes,
                          int64_t opset, const py::object& out, bool packed) {
  const auto attrs = make_attributes<qdq::QuantizeLinearAttributes>(attributes, opset, "QuantizeLinear");
  Input xi(x, to_type(x_type), "x");
  Input si(scale, to_type(scale_type), "scale");
  std::optional<Input> zi;
  if (!zero_point.is_none()) zi.emplace(zero_point, to_type(zero_point_type), "zero_point");
  const qdq::TensorView* zv = zi ? &zi->view : nullptr;
  Output y(qdq::quantize_linear_output(attrs, xi.view, si.view, zv), out, packed);
  {
    py::gil_scoped_release release;
    qdq::quantize_linear(attrs, xi.view, si.view, zv, y.view, execution_options());
    y.finish();
  }
  return py::make_tuple(y.array, static_cast<int>(y.type));
}

py::tuple dequantize_linear(const py::object& x, int64_t x_type, const py::object& scale, int64_t scale_type,
                            const py::object& zero_point, int64_t zero_point_type, const py::dict& attributes,
                            int64_t opset, const py::object& out) {
  const auto attrs = make_attributes<qdq::DequantizeLinearAttributes>(attributes, opset, "DequantizeLinear");
  Input xi(x, to_type(x_type), "x");
  Input si(scale, to_type(scale_type), "scale");
  std::optional<Input> zi;
  if (!zero_point.is_none()) zi.emplace(zero_point, to_type(zero_point_type), "zero_point");
  const qdq::TensorView* zv = zi ? &zi->view : nullptr;
  Output y(qdq::dequantize_linear_output(attrs, xi.view, si.view, zv), out, false);
  {
    py::gil_scoped_release release;
    qdq::dequantize_linear(attrs, xi.view, si.view, zv, y.view, execution_options());
    y.finish();
  }
  return py::make_tuple(y.array, static_cast<int>(y.type));
}

py::tuple dynamic_quantize_linear(const py::object& x, int64_t x_type, int64_t opset, const py::object& out) {
  Input xi(x, to_type(x_type), "x");
  qdq::TensorSpec spec;
  spec.type = DataType::kUint8;
  spec.shape = xi.shape;
  spec.size_bytes = qdq::element_count(xi.shape);
  Output y(spec, out, false);
  qdq::DynamicQuantizationParameters params;
  {
    py::gil_scoped_release release;
    params = qdq::dynamic_quantize_linear(xi.view, y.view, execution_options(), opset);
  }
  return py::make_tuple(y.array, params.y_scale, params.y_zero_point);
}

// The ONNX raw_data bytes of a tensor (module conventions or ml_dtypes sub-byte array in, 1-D uint8 out).
py::array pack(const py::object& array, int64_t type) {
  Input in(array, to_type(type), "array");
  py::array bytes(py::dtype("uint8"), std::vector<py::ssize_t>{static_cast<py::ssize_t>(in.view.size_bytes)});
  const auto* src = static_cast<const uint8_t*>(in.view.data);
  std::copy(src, src + in.view.size_bytes, static_cast<uint8_t*>(bytes.mutable_data()));
  return bytes;
}

// A tensor of `shape` from its ONNX raw_data bytes, in the module's conventions.
py::array unpack(const py::object& bytes, int64_t type, const std::vector<int64_t>& shape) {
  const DataType t = to_type(type);
  Input in(py::make_tuple(bytes, shape), t, "bytes");
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::array result(storage_dtype(t), dims);
  const uint64_t count = qdq::element_count(shape);
  auto* items = static_cast<uint8_t*>(result.mutable_data());
  py::gil_scoped_release release;
  if (is_sub_byte(t)) {
    Output::finish_unpack(static_cast<const uint8_t*>(in.view.data), t, count, items);
  } else if (in.view.size_bytes) {
    const auto* src = static_cast<const uint8_t*>(in.view.data);
    std::copy(src, src + in.view.size_bytes, items);
  }
  return result;
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

void save_tensor(const std::string& path, const py::object& array, int64_t type, const std::string& name) {
  Input in(array, to_type(type), "array");
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
        py::arg("attributes"), py::arg("opset"), py::arg("out") = py::none(), py::arg("packed") = false);
  m.def("dequantize_linear", &dequantize_linear, py::arg("x"), py::arg("x_type"), py::arg("scale"),
        py::arg("scale_type"), py::arg("zero_point").none(true), py::arg("zero_point_type"),
        py::arg("attributes"), py::arg("opset"), py::arg("out") = py::none());
  m.def("dynamic_quantize_linear", &dynamic_quantize_linear, py::arg("x"), py::arg("x_type"),
        py::arg("opset") = 11, py::arg("out") = py::none());
  m.def("pack", &pack, py::arg("array"), py::arg("type"));
  m.def("unpack", &unpack, py::arg("bytes"), py::arg("type"), py::arg("shape"));
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
  register_quantize_model(m);
#endif
}
