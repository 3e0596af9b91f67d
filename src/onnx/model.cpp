// ONNX models of QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear nodes: parsing and evaluation.
#include <climits>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "internal.hpp"
#include "onnx_subset.pb.h"
#include "qdq_onnx.hpp"

namespace qdq::onnx {
namespace {

constexpr int32_t kAttributeInt = 2;

enum class Op { kQuantize, kDequantize, kDynamicQuantize };

struct OpInfo {
  Op op;
  std::string_view name;
  size_t min_inputs;
  size_t max_inputs;
  size_t outputs;
  std::vector<std::string_view> attributes;
  int64_t first_opset;
};

const std::vector<OpInfo>& operators() {
  static const std::vector<OpInfo> kOps = {
      {Op::kQuantize, "QuantizeLinear", 2, 3, 1, {"axis", "saturate", "block_size", "output_dtype", "precision"}, 10},
      {Op::kDequantize, "DequantizeLinear", 2, 3, 1, {"axis", "block_size", "output_dtype"}, 10},
      {Op::kDynamicQuantize, "DynamicQuantizeLinear", 1, 1, 3, {}, 11},
  };
  return kOps;
}

const char* attribute_type_name(int32_t type) {
  static const char* const kNames[] = {
      "UNDEFINED", "FLOAT",   "INT",    "STRING",        "TENSOR",         "GRAPH",      "FLOATS",     "INTS",
      "STRINGS",   "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
  return type >= 0 && type <= 14 ? kNames[type] : "unknown";
}

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

std::string describe(const Node& node, size_t index) {
  std::string out = "node " + std::to_string(index) + " (" + node.op_type;
  if (!node.name.empty()) out += " '" + node.name + "'";
  return out + ")";
}

[[noreturn]] void fail(const std::string& what, const std::string& problem) { throw Error(what + ": " + problem); }

ValueInfo value_info_from_proto(const ::onnx::ValueInfoProto& proto) {
  ValueInfo info;
  info.name = proto.name();
  if (proto.has_type() && proto.type().has_tensor_type()) {
    const auto& tensor_type = proto.type().tensor_type();
    info.type = static_cast<DataType>(tensor_type.elem_type());
    if (tensor_type.has_shape()) {
      std::vector<int64_t> shape;
      for (const auto& dim : tensor_type.shape().dim()) {
        shape.push_back(dim.has_dim_value() && dim.dim_value() >= 0 ? dim.dim_value() : -1);
      }
      info.shape = std::move(shape);
    }
  }
  return info;
}

const OpInfo* find_operator(const Node& node) {
  for (const OpInfo& info : operators()) {
    if (node.op_type == info.name) return &info;
  }
  return nullptr;
}

// Everything about a node that can be checked without its input tensors.
const OpInfo& check_node(const Model& model, const Node& node, size_t index) {
  const std::string where = model.path + ": " + describe(node, index);
  if (!is_default_domain(node.domain)) {
    fail(where, "operator '" + node.op_type + "' of domain '" + node.domain +
                    "' is not supported (qdq runs only the default ONNX domain)");
  }
  const OpInfo* info = find_operator(node);
  if (info == nullptr) {
    fail(where, "operator '" + node.op_type +
                    "' is not supported (qdq runs QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear)");
  }
  if (model.opset < info->first_opset) {
    fail(where, std::string(info->name) + " needs opset " + std::to_string(info->first_opset) +
                    " or later, the model imports opset " + std::to_string(model.opset));
  }
  if (node.inputs.size() < info->min_inputs || node.inputs.size() > info->max_inputs) {
    fail(where, "has " + std::to_string(node.inputs.size()) + " inputs, " + std::string(info->name) + " takes " +
                    std::to_string(info->min_inputs) +
                    (info->max_inputs != info->min_inputs ? " to " + std::to_string(info->max_inputs) : ""));
  }
  for (size_t k = 0; k < info->min_inputs; ++k) {
    if (node.inputs[k].empty()) fail(where, "required input " + std::to_string(k) + " is empty");
  }
  if (node.outputs.size() != info->outputs) {
    fail(where, "has " + std::to_string(node.outputs.size()) + " outputs, " + std::string(info->name) + " has " +
                    std::to_string(info->outputs));
  }
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    if (node.outputs[k].empty()) fail(where, "output " + std::to_string(k) + " has an empty name");
  }
  for (size_t a = 0; a < node.attributes.size(); ++a) {
    const Attribute& attribute = node.attributes[a];
    bool known = false;
    for (std::string_view name : info->attributes) known = known || attribute.name == name;
    if (!known) fail(where, "unknown attribute '" + attribute.name + "' for " + std::string(info->name));
    if (attribute.type != kAttributeInt) {
      fail(where, "attribute '" + attribute.name + "' has type " + attribute_type_name(attribute.type) + " (" +
                      std::to_string(attribute.type) + "), expected INT");
    }
    for (size_t b = 0; b < a; ++b) {
      if (node.attributes[b].name == attribute.name) fail(where, "attribute '" + attribute.name + "' is given twice");
    }
  }
  return *info;
}

std::optional<int64_t> attribute(const Node& node, std::string_view name) {
  for (const Attribute& a : node.attributes) {
    if (a.name == name) return a.i;
  }
  return std::nullopt;
}

// The declared type and fixed dimensions of a graph input or output, where the model gives them.
void check_declared(const ValueInfo& info, const Tensor& tensor, const std::string& where) {
  const std::string got = data_type_name(tensor.type) + " " + shape_to_string(tensor.shape);
  if (info.type != DataType::kUndefined && info.type != tensor.type) {
    fail(where, "is " + got + ", but the model declares element type " + data_type_name(info.type));
  }
  if (!info.shape) return;
  bool match = info.shape->size() == tensor.shape.size();
  for (size_t k = 0; match && k < tensor.shape.size(); ++k) {
    match = (*info.shape)[k] < 0 || (*info.shape)[k] == tensor.shape[k];
  }
  if (!match) {
    std::string declared = "[";
    for (size_t k = 0; k < info.shape->size(); ++k) {
      if (k != 0) declared += ",";
      declared += (*info.shape)[k] < 0 ? "?" : std::to_string((*info.shape)[k]);
    }
    fail(where, "is " + got + ", but the model declares shape " + declared + "]");
  }
}

}  // namespace

Model parse_model(std::string_view bytes, const std::string& what) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) fail(what, "file is larger than protobuf's 2 GiB limit");
  ::onnx::ModelProto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    fail(what, "not a valid ONNX model (corrupt or truncated protobuf)");
  }
  Model model;
  model.path = what;
  bool have_opset = false;
  for (const auto& entry : proto.opset_import()) {
    if (!is_default_domain(entry.domain())) continue;
    if (have_opset && entry.version() != model.opset) {
      fail(what, "imports the default ONNX domain twice, at opsets " + std::to_string(model.opset) + " and " +
                     std::to_string(entry.version()));
    }
    model.opset = entry.version();
    have_opset = true;
  }
  if (!have_opset) fail(what, "has no opset_import for the default ONNX domain (\"\" or \"ai.onnx\")");
  if (!proto.has_graph()) fail(what, "has no graph");
  const auto& graph = proto.graph();
  model.graph_name = graph.name();
  for (const auto& input : graph.input()) model.inputs.push_back(value_info_from_proto(input));
  for (const auto& output : graph.output()) model.outputs.push_back(value_info_from_proto(output));
  for (int k = 0; k < graph.initializer_size(); ++k) {
    const auto& init = graph.initializer(k);
    model.initializers.push_back(
        tensor_from_proto(init, what + ": initializer " + std::to_string(k) + " '" + init.name() + "'"));
  }
  for (const auto& node_proto : graph.node()) {
    Node node;
    node.name = node_proto.name();
    node.op_type = node_proto.op_type();
    node.domain = node_proto.domain();
    node.inputs.assign(node_proto.input().begin(), node_proto.input().end());
    node.outputs.assign(node_proto.output().begin(), node_proto.output().end());
    for (const auto& a : node_proto.attribute()) node.attributes.push_back({a.name(), a.type(), a.i()});
    model.nodes.push_back(std::move(node));
  }
  for (size_t k = 0; k < model.nodes.size(); ++k) check_node(model, model.nodes[k], k);
  return model;
}

Model read_model_file(const std::string& path) { return parse_model(read_file_bytes(path), path); }

std::vector<Tensor> run_model(const Model& model, const std::vector<Tensor>& inputs, const ExecutionOptions& options) {
  std::unordered_map<std::string, const Tensor*> values;
  for (const Tensor& init : model.initializers) values[init.name] = &init;

  std::vector<size_t> bound;  // graph inputs that take a caller's tensor
  for (size_t k = 0; k < model.inputs.size(); ++k) {
    if (!values.contains(model.inputs[k].name)) bound.push_back(k);
  }
  if (inputs.size() != bound.size()) {
    fail(model.path, "the model takes " + std::to_string(bound.size()) + " input" + (bound.size() == 1 ? "" : "s") +
                         ", " + std::to_string(inputs.size()) + " given");
  }
  for (size_t k = 0; k < bound.size(); ++k) {
    const ValueInfo& info = model.inputs[bound[k]];
    check_declared(info, inputs[k], model.path + ": input " + std::to_string(k) + " ('" + info.name + "')");
    values[info.name] = &inputs[k];
  }

  std::deque<Tensor> produced;  // a deque: values[] keeps pointers into it
  std::unordered_map<std::string, size_t> produced_index;
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    const Node& node = model.nodes[n];
    const OpInfo& info = check_node(model, node, n);
    const std::string where = model.path + ": " + describe(node, n);
    std::vector<const Tensor*> args(node.inputs.size(), nullptr);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (node.inputs[k].empty()) continue;
      const auto it = values.find(node.inputs[k]);
      if (it == values.end()) {
        fail(where, "input '" + node.inputs[k] + "' is not a graph input, an initializer or an earlier node's output");
      }
      args[k] = it->second;
    }
    std::vector<Tensor> results;
    try {
      switch (info.op) {
        case Op::kQuantize: {
          QuantizeLinearAttributes attrs;
          attrs.opset = model.opset;
          attrs.axis = attribute(node, "axis");
          attrs.saturate = attribute(node, "saturate");
          attrs.block_size = attribute(node, "block_size");
          attrs.output_dtype = attribute(node, "output_dtype");
          attrs.precision = attribute(node, "precision");
          const TensorView x = args[0]->view();
          const TensorView scale = args[1]->view();
          TensorView zero_point;
          if (args.size() > 2 && args[2] != nullptr) zero_point = args[2]->view();
          const TensorView* zp = args.size() > 2 && args[2] != nullptr ? &zero_point : nullptr;
          const TensorSpec spec = quantize_linear_output(attrs, x, scale, zp);
          results.push_back(make_tensor(spec.type, spec.shape));
          quantize_linear(attrs, x, scale, zp, results[0].mutable_view(), options);
          break;
        }
        case Op::kDequantize: {
          DequantizeLinearAttributes attrs;
          attrs.opset = model.opset;
          attrs.axis = attribute(node, "axis");
          attrs.block_size = attribute(node, "block_size");
          attrs.output_dtype = attribute(node, "output_dtype");
          const TensorView x = args[0]->view();
          const TensorView scale = args[1]->view();
          TensorView zero_point;
          if (args.size() > 2 && args[2] != nullptr) zero_point = args[2]->view();
          const TensorView* zp = args.size() > 2 && args[2] != nullptr ? &zero_point : nullptr;
          const TensorSpec spec = dequantize_linear_output(attrs, x, scale, zp);
          results.push_back(make_tensor(spec.type, spec.shape));
          dequantize_linear(attrs, x, scale, zp, results[0].mutable_view(), options);
          break;
        }
        case Op::kDynamicQuantize: {
          const Tensor& x = *args[0];
          if (x.type != DataType::kFloat) {
            throw Error("DynamicQuantizeLinear: input x is " + data_type_name(x.type) + ", it must be FLOAT");
          }
          results.push_back(make_tensor(DataType::kUint8, x.shape));
          const DynamicQuantizationParameters params =
              dynamic_quantize_linear(x.view(), results[0].mutable_view(), options, model.opset);
          Tensor scale = make_tensor(DataType::kFloat, {});
          std::memcpy(scale.data.data(), &params.y_scale, sizeof(float));
          Tensor zero_point = make_tensor(DataType::kUint8, {});
          zero_point.data[0] = params.y_zero_point;
          results.push_back(std::move(scale));
          results.push_back(std::move(zero_point));
          break;
        }
      }
    } catch (const Error& e) {
      fail(where, e.what());
    }
    for (size_t k = 0; k < results.size(); ++k) {
      const std::string& name = node.outputs[k];
      if (values.contains(name))
        fail(where, "output '" + name + "' is already defined (ONNX graphs assign each name once)");
      results[k].name = name;
      produced_index[name] = produced.size();
      produced.push_back(std::move(results[k]));
      values[name] = &produced.back();
    }
  }

  std::vector<Tensor> outputs;
  outputs.reserve(model.outputs.size());
  std::unordered_map<std::string, size_t> moved;  // produced value -> the output that took it
  for (size_t k = 0; k < model.outputs.size(); ++k) {
    const ValueInfo& info = model.outputs[k];
    const auto it = values.find(info.name);
    if (it == values.end()) {
      fail(model.path, "graph output " + std::to_string(k) + " '" + info.name + "' is never produced");
    }
    // Move each produced value out once instead of copying; repeated outputs copy the first.
    const auto p = produced_index.find(info.name);
    const auto m = moved.find(info.name);
    if (m != moved.end()) {
      outputs.push_back(outputs[m->second]);
    } else if (p != produced_index.end()) {
      outputs.push_back(std::move(produced[p->second]));
      moved[info.name] = k;
    } else {
      outputs.push_back(*it->second);
    }
    outputs.back().name = info.name;
    check_declared(info, outputs.back(), model.path + ": graph output " + std::to_string(k) + " ('" + info.name + "')");
  }
  return outputs;
}

}  // namespace qdq::onnx
