// The opset converter works in two passes so that a refused model is never half converted: the plan
// pass runs every node's version steps on a copy of that node (adapters write helper nodes and new
// constants into the copy's Step, never into the model) and collects every refusal; only when there is
// none does the apply pass splice the planned copies into their node lists. Which step is compatible
// and which needs an adapter is decided per "Op:since-version" in step_rules(); the since-versions
// themselves come from op_versions.inc, generated from ONNX's schemas.
#include "version_converter.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "onnx_subset.pb.h"
#include "qdq/types.hpp"

namespace qdq::onnx {
namespace {

// ---------------------------------------------------------------------------------------------
// The operator table (generated from ONNX's schemas by scripts/gen_op_versions.py).

struct OpVersions {
  std::vector<int64_t> since;       // ascending
  std::vector<int64_t> deprecated;  // since-versions whose schema is deprecated
};

const std::unordered_map<std::string, OpVersions>& op_table() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string, OpVersions>();
#define QDQ_OP(name, ...) (*t)[#name].since = {__VA_ARGS__};
#define QDQ_OP_DEPRECATED(name, version) (*t)[#name].deprecated.push_back(version);
#include "op_versions.inc"
    return t;
  }();
  return *table;
}

int64_t max_known_opset() {
  int64_t max = 0;
#define QDQ_MAX_OPSET(opset) max = opset;
#include "op_versions.inc"
  return max;
}

int64_t ir_version_for(int64_t opset) {
  int64_t ir = 0;
#define QDQ_OPSET_IR(o, ir_version) \
  if (o == opset) ir = ir_version;
#include "op_versions.inc"
  return ir;
}

// The since-version of `versions` in effect at `opset`, or 0 if the op did not exist yet.
int64_t since_at(const OpVersions& versions, int64_t opset) {
  int64_t since = 0;
  for (int64_t v : versions.since) {
    if (v <= opset) since = v;
  }
  return since;
}

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// ---------------------------------------------------------------------------------------------
// What an adapter sees and produces.

// An adapter's reason for not converting a node exactly; turned into the qdq::Error the caller sees.
struct Refusal {
  std::string reason;
};

// Element types known for value names (graph inputs, value_info, initializers, Constants, and a
// forward pass through ops whose output type is their first input's), for the adapters that must
// create a constant of the type of a node's input (Clip's min/max, Pad's constant value).
using TypeMap = std::unordered_map<std::string, int32_t>;

class NameSource {
 public:
  void add(const std::string& name) {
    if (!name.empty()) used_.insert(name);
  }
  // `base` if no value, node or initializer of the model has that name yet, else base_2, base_3, ...
  std::string unique(const std::string& base) {
    std::string name = base;
    for (int k = 2; used_.count(name) != 0; ++k) name = base + "_" + std::to_string(k);
    used_.insert(name);
    return name;
  }

 private:
  std::unordered_set<std::string> used_;
};

struct Step {
  ::onnx::NodeProto node;                    // the node being converted (a copy until applied)
  std::vector<::onnx::NodeProto> before;     // helper nodes placed before it, in order
  std::vector<::onnx::NodeProto> after;      // helper nodes placed after it, in order
  std::vector<::onnx::TensorProto> tensors;  // new initializers of the node's graph
  std::vector<std::string> notes;            // what each non-trivial step did
  int64_t version = 0;                       // the since-version this step converts to
  int64_t target_opset = 0;
  const TypeMap* types = nullptr;
  const TypeMap* ranks = nullptr;  // ranks of the main graph's inputs
  NameSource* names = nullptr;
  std::string base;  // prefix for new names

  // The attribute `name`, or nullptr. One that refers to a function's attribute (ref_attr_name) has
  // no value an adapter could read: the node is refused.
  const ::onnx::AttributeProto* attr(std::string_view name) const {
    for (const auto& a : node.attribute()) {
      if (a.name() != name) continue;
      if (!a.ref_attr_name().empty()) {
        throw Refusal{"attribute '" + std::string(name) + "' refers to the function attribute '" + a.ref_attr_name() +
                      "'"};
      }
      return &a;
    }
    return nullptr;
  }
  bool has(std::string_view name) const { return attr(name) != nullptr; }
  void remove(std::string_view name) {
    auto* attrs = node.mutable_attribute();
    for (int k = attrs->size() - 1; k >= 0; --k) {
      if (attrs->Get(k).name() == name) attrs->DeleteSubrange(k, 1);
    }
  }
  // The attribute `name` if present, checked to be of `type` (an unset type field is accepted, as
  // ONNX's own readers do): a malformed model is refused rather than read as something else.
  const ::onnx::AttributeProto* typed(std::string_view name, int type, const char* type_name) const {
    const auto* a = attr(name);
    if (a != nullptr && a->type() != 0 && a->type() != type) {
      throw Refusal{"attribute '" + std::string(name) + "' has type " + std::to_string(a->type()) + ", not " +
                    type_name};
    }
    return a;
  }
  int64_t get_int(std::string_view name, int64_t fallback) const {
    const auto* a = typed(name, ::onnx::AttributeProto::INT, "INT");
    return a != nullptr ? a->i() : fallback;
  }
  float get_float(std::string_view name, float fallback) const {
    const auto* a = typed(name, ::onnx::AttributeProto::FLOAT, "FLOAT");
    return a != nullptr ? a->f() : fallback;
  }
  std::string get_string(std::string_view name, std::string fallback) const {
    const auto* a = typed(name, ::onnx::AttributeProto::STRING, "STRING");
    return a != nullptr ? a->s() : fallback;
  }
  std::vector<int64_t> get_ints(std::string_view name) const {
    const auto* a = typed(name, ::onnx::AttributeProto::INTS, "INTS");
    if (a == nullptr) return {};
    return {a->ints().begin(), a->ints().end()};
  }
  void set_int(const std::string& name, int64_t value) {
    remove(name);
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(value);
  }
  void set_string(const std::string& name, const std::string& value) {
    remove(name);
    auto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(value);
  }
  // An attribute given by reference (inside a function body) has no value to move into an input.
  void require_literal(std::string_view name) const { (void)attr(name); }
  std::string input(int k) const { return k < node.input_size() ? node.input(k) : std::string(); }
  // Sets input k, padding the inputs before it with "" (omitted optional inputs).
  void set_input(int k, const std::string& name) {
    while (node.input_size() <= k) node.add_input("");
    node.set_input(k, name);
  }

  // A new initializer of the node's graph, named after the node and `what`; the caller fills it (no
  // dims = a scalar). The reference is valid until the next new_tensor.
  ::onnx::TensorProto& new_tensor(const std::string& what, int32_t data_type) {
    ::onnx::TensorProto& tensor = tensors.emplace_back();
    tensor.set_name(names->unique(base + "_" + what));
    tensor.set_data_type(data_type);
    return tensor;
  }

  std::string add_int64s(const std::string& what, const std::vector<int64_t>& values) {
    ::onnx::TensorProto& tensor = new_tensor(what, 7);  // INT64
    tensor.add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) tensor.add_int64_data(v);
    return tensor.name();
  }
  // A constant of `input`'s element type holding `value`: float32 directly, any other (or unknown)
  // type through CastLike (opset 15+), so the comparison happens in the input's own type as before.
  std::string add_like(const std::string& what, float value, const std::string& like) {
    const std::string name = [&] {
      ::onnx::TensorProto& tensor = new_tensor(what, 1);  // FLOAT
      tensor.add_float_data(value);
      return tensor.name();
    }();
    const auto it = types->find(like);
    if (it != types->end() && it->second == 1) return name;
    if (target_opset < 15) {
      throw Refusal{"the element type of input '" + like +
                    "' is unknown or not float32, and CastLike needs opset 15 or later"};
    }
    ::onnx::NodeProto cast;
    cast.set_op_type("CastLike");
    cast.set_name(names->unique(base + "_" + what + "_cast"));
    cast.add_input(name);
    cast.add_input(like);
    cast.add_output(names->unique(base + "_" + what + "_typed"));
    before.push_back(cast);
    return cast.output(0);
  }
  ::onnx::NodeProto& add_before(const std::string& op_type, const std::string& what) {
    before.emplace_back();
    before.back().set_op_type(op_type);
    before.back().set_name(names->unique(base + "_" + what));
    return before.back();
  }
  ::onnx::NodeProto& add_after(const std::string& op_type, const std::string& what) {
    after.emplace_back();
    after.back().set_op_type(op_type);
    after.back().set_name(names->unique(base + "_" + what));
    return after.back();
  }
  std::string new_value(const std::string& what) { return names->unique(base + "_" + what); }
};

using AdapterFn = void (*)(Step&);

// ---------------------------------------------------------------------------------------------
// The adapters. Each converts a node from the op's previous since-version to `step.version`
// exactly, or throws a Refusal.

void remove_consumed_inputs(Step& s) { s.remove("consumed_inputs"); }

// Add/Sub/Mul/Div/Pow and the logical/comparison ops at 7: the legacy `broadcast` flag with
// right-aligned B becomes NumPy broadcasting, which gives the same result. An explicit `axis` that
// aligns B elsewhere would need B reshaped to a rank this converter does not know: refused.
void legacy_broadcast_to_numpy(Step& s) {
  if (s.get_int("broadcast", 0) != 0 && s.has("axis")) {
    throw Refusal{"legacy broadcasting with an explicit axis attribute is not converted"};
  }
  s.remove("broadcast");
  s.remove("axis");
  s.remove("consumed_inputs");
}

// DFT-20 takes the axis as an optional input whose default (-2) differs from the attribute's (1):
// the axis is always given explicitly.
void dft_20(Step& s) {
  s.require_literal("axis");
  const int64_t axis = s.get_int("axis", 1);
  s.remove("axis");
  ::onnx::TensorProto& tensor = s.new_tensor("axis", 7);
  tensor.add_int64_data(axis);  // a scalar: no dims
  s.set_input(2, tensor.name());
  s.notes.push_back("axis attribute -> input");
}

void gemm_7(Step& s) { s.remove("broadcast"); }

void concat_4(Step& s) {
  if (!s.has("axis")) s.set_int("axis", 1);  // Concat-1's default
}

void cast_6(Step& s) {
  const auto* to = s.attr("to");
  if (to == nullptr || to->type() != ::onnx::AttributeProto::STRING) return;
  static const std::map<std::string, int64_t> kTypes = {
      {"FLOAT", 1},  {"UINT8", 2}, {"INT8", 3},     {"UINT16", 4},  {"INT16", 5},   {"INT32", 6},  {"INT64", 7},
      {"STRING", 8}, {"BOOL", 9},  {"FLOAT16", 10}, {"DOUBLE", 11}, {"UINT32", 12}, {"UINT64", 13}};
  const auto it = kTypes.find(to->s());
  if (it == kTypes.end()) throw Refusal{"Cast-1 'to' names an unknown type '" + to->s() + "'"};
  s.set_int("to", it->second);
}

void reshape_5(Step& s) {
  s.require_literal("shape");
  if (!s.has("shape")) throw Refusal{"Reshape-1 without a shape attribute"};
  const std::vector<int64_t> shape = s.get_ints("shape");
  s.remove("shape");
  s.remove("consumed_inputs");
  s.set_input(1, s.add_int64s("shape", shape));
  s.notes.push_back("shape attribute -> input");
}

// axes attribute -> optional (required for Unsqueeze) int64 input: Squeeze/Unsqueeze and ReduceSum at
// 13, the other Reduce* at 18. An absent axes attribute means "all axes" (Squeeze: all size-1 axes)
// both before and after, with noop_with_empty_axes left at its default 0.
void axes_to_input(Step& s) {
  s.require_literal("axes");
  if (!s.has("axes")) {
    if (s.node.op_type() == "Unsqueeze") throw Refusal{"Unsqueeze without an axes attribute"};
    return;
  }
  const std::vector<int64_t> axes = s.get_ints("axes");
  s.remove("axes");
  if (axes.empty() && s.node.op_type() == "Squeeze") {
    // ONNX's shape inference reads an empty list as "squeeze nothing", ONNX Runtime as "every size-1
    // axis": there is no one meaning to keep.
    throw Refusal{"an empty axes list means different things to ONNX and ONNX Runtime"};
  }
  if (axes.empty() && s.node.op_type() != "Unsqueeze") {
    return;  // Reduce*: an empty list reduced every axis before; no input does the same now
  }
  s.set_input(1, s.add_int64s("axes", axes));
  s.notes.push_back("axes attribute -> input");
}

void split_2(Step& s) {
  if (!s.input(1).empty()) throw Refusal{"Split-1 with a split input (only attributes are converted)"};
  s.node.mutable_input()->DeleteSubrange(1, s.node.input_size() - 1 > 0 ? s.node.input_size() - 1 : 0);
}

void split_13(Step& s) {
  s.require_literal("split");
  if (!s.has("split")) return;
  const std::vector<int64_t> split = s.get_ints("split");
  s.remove("split");
  s.set_input(1, s.add_int64s("split", split));
  s.notes.push_back("split attribute -> input");
}

// Split-18 without a split input needs num_outputs: the number of outputs, which split equally.
void split_18(Step& s) {
  if (!s.input(1).empty()) return;
  s.set_int("num_outputs", s.node.output_size());
  s.notes.push_back("num_outputs attribute added");
}

void slice_10(Step& s) {
  for (const char* name : {"starts", "ends", "axes"}) s.require_literal(name);
  if (!s.has("starts") || !s.has("ends")) throw Refusal{"Slice-1 without starts/ends attributes"};
  const auto starts = s.get_ints("starts"), ends = s.get_ints("ends");
  const bool has_axes = s.has("axes");
  const auto axes = s.get_ints("axes");
  s.remove("starts");
  s.remove("ends");
  s.remove("axes");
  s.set_input(1, s.add_int64s("starts", starts));
  s.set_input(2, s.add_int64s("ends", ends));
  if (has_axes) s.set_input(3, s.add_int64s("axes", axes));
  s.notes.push_back("starts/ends/axes attributes -> inputs");
}

void topk_10(Step& s) {
  s.require_literal("k");
  if (!s.has("k")) throw Refusal{"TopK-1 without a k attribute"};
  const int64_t k = s.get_int("k", 0);
  s.remove("k");
  s.set_input(1, s.add_int64s("k", {k}));
  s.notes.push_back("k attribute -> input");
}

void clip_11(Step& s) {
  s.require_literal("min");
  s.require_literal("max");
  const bool has_min = s.has("min"), has_max = s.has("max");
  const float min = s.get_float("min", 0), max = s.get_float("max", 0);
  s.remove("min");
  s.remove("max");
  const std::string x = s.input(0);
  if (has_min) s.set_input(1, s.add_like("min", min, x));
  if (has_max) s.set_input(2, s.add_like("max", max, x));
  if (has_min || has_max) s.notes.push_back("min/max attributes -> inputs");
}

void pad_2(Step& s) {
  const auto* paddings = s.attr("paddings");
  if (paddings == nullptr) return;
  ::onnx::AttributeProto renamed = *paddings;
  renamed.set_name("pads");
  s.remove("paddings");
  *s.node.add_attribute() = renamed;
}

void pad_11(Step& s) {
  s.require_literal("pads");
  s.require_literal("value");
  if (!s.has("pads")) throw Refusal{"Pad-2 without a pads attribute"};
  const auto pads = s.get_ints("pads");
  const float value = s.get_float("value", 0.0f);
  s.remove("pads");
  s.remove("value");
  s.set_input(1, s.add_int64s("pads", pads));
  // Only the constant mode reads the value; 0 is also the input's default.
  const std::string mode = s.get_string("mode", "constant");
  if (mode == "constant" && (value != 0.0f || std::signbit(value))) {
    s.set_input(2, s.add_like("value", value, s.input(0)));
  }
  s.notes.push_back("pads/value attributes -> inputs");
}

void dropout_7(Step& s) {
  s.remove("is_test");
  s.remove("consumed_inputs");
}

void dropout_10(Step& s) {
  if (s.node.output_size() > 1 && !s.node.output(1).empty()) {
    throw Refusal{"the mask output changes type from T to bool"};
  }
}

void dropout_12(Step& s) {
  s.require_literal("ratio");
  if (!s.has("ratio")) return;
  const float ratio = s.get_float("ratio", 0.5f);
  s.remove("ratio");
  ::onnx::TensorProto& tensor = s.new_tensor("ratio", 1);
  tensor.add_float_data(ratio);  // a scalar: no dims
  s.set_input(1, tensor.name());
  s.notes.push_back("ratio attribute -> input");
}

// The optional outputs beyond Y were training statistics before 14 and running statistics (with
// training_mode) from 14 on: only the inference form converts.
void no_training_outputs(Step& s) {
  for (int k = 1; k < s.node.output_size(); ++k) {
    if (!s.node.output(k).empty()) throw Refusal{"the optional training outputs change meaning"};
  }
}

void batchnorm_7(Step& s) {
  no_training_outputs(s);
  s.remove("is_test");
}

void batchnorm_9(Step& s) {
  if (s.get_int("spatial", 1) != 1) throw Refusal{"spatial=0 (per-element statistics) has no equivalent"};
  s.remove("spatial");
}

void rnn_7(Step& s) { s.remove("output_sequence"); }

void selu_6(Step& s) {
  remove_consumed_inputs(s);
  if (!s.has("alpha") || !s.has("gamma")) {
    throw Refusal{"Selu-1's default alpha/gamma differ from Selu-6's; only explicit values are converted"};
  }
}

void lppool_2(Step& s) {
  const auto* p = s.typed("p", ::onnx::AttributeProto::FLOAT, "FLOAT");
  if (p == nullptr) return;  // both default to 2
  const float value = p->f();
  if (value != static_cast<float>(static_cast<int64_t>(value))) throw Refusal{"p is not an integer"};
  s.set_int("p", static_cast<int64_t>(value));
}

void roialign_16(Step& s) {
  if (!s.has("coordinate_transformation_mode")) {
    s.set_string("coordinate_transformation_mode", "output_half_pixel");
  }
}

void gridsample_20(Step& s) {
  const std::string mode = s.get_string("mode", "bilinear");
  if (mode == "bilinear") s.set_string("mode", "linear");
  if (mode == "bicubic") s.set_string("mode", "cubic");
}

void scatter_11(Step& s) {
  s.node.set_op_type("ScatterElements");
  s.notes.push_back("Scatter -> ScatterElements");
}

// Softmax/LogSoftmax/Hardmax before 13 coerce the input to 2-D at `axis` (default 1) and normalize
// each row; from 13 they normalize along the one axis. The last axis (-1, or rank - 1 of a main-graph
// input) is the same in both; any other axis is rewritten as Flatten(axis) ->
// op(axis=1) -> Reshape(to Shape(x)), which is exactly the old meaning.
void softmax_13(Step& s) {
  const int64_t axis = s.get_int("axis", 1);
  if (axis == -1) return;
  const auto rank = s.ranks->find(s.input(0));
  if (rank != s.ranks->end() && axis == rank->second - 1) return;
  const std::string x = s.input(0);
  const std::string y = s.node.output(0);
  // Names first: add_before may move the nodes added before it.
  const std::string shape_value = s.new_value("shape"), flat_value = s.new_value("2d");
  {
    auto& shape = s.add_before("Shape", "shape");
    shape.add_input(x);
    shape.add_output(shape_value);
  }
  {
    auto& flatten = s.add_before("Flatten", "flatten");
    flatten.add_input(x);
    flatten.add_output(flat_value);
    auto* a = flatten.add_attribute();
    a->set_name("axis");
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(axis);
  }
  s.node.set_input(0, flat_value);
  s.set_int("axis", 1);
  const std::string y2d = s.new_value("2d_out");
  s.node.set_output(0, y2d);
  auto& reshape = s.add_after("Reshape", "reshape");
  reshape.add_input(y2d);
  reshape.add_input(shape_value);
  reshape.add_output(y);
  if (s.target_opset >= 14) {
    auto* allowzero = reshape.add_attribute();  // a 0 in Shape(x) is a real 0-sized dimension
    allowzero->set_name("allowzero");
    allowzero->set_type(::onnx::AttributeProto::INT);
    allowzero->set_i(1);
  }
  s.notes.push_back("axis " + std::to_string(axis) + " of the 2-D coercion -> Flatten/" + s.node.op_type() +
                    "/Reshape");
}

// Upsample-1's height_scale/width_scale (4-D NCHW) -> scales; 'bilinear' is called 'linear' at 7.
void upsample_7(Step& s) {
  const float h = s.get_float("height_scale", 1.0f), w = s.get_float("width_scale", 1.0f);
  s.remove("height_scale");
  s.remove("width_scale");
  auto* scales = s.node.add_attribute();
  scales->set_name("scales");
  scales->set_type(::onnx::AttributeProto::FLOATS);
  for (float v : {1.0f, 1.0f, h, w}) scales->add_floats(v);
  const std::string mode = s.get_string("mode", "nearest");
  if (mode == "bilinear") s.set_string("mode", "linear");
}

void upsample_9(Step& s) {
  s.require_literal("scales");
  const auto* attr = s.typed("scales", ::onnx::AttributeProto::FLOATS, "FLOATS");
  if (attr == nullptr) throw Refusal{"Upsample-7 without a scales attribute"};
  ::onnx::TensorProto& tensor = s.new_tensor("scales", 1);
  tensor.add_dims(attr->floats_size());
  for (float v : attr->floats()) tensor.add_float_data(v);
  s.remove("scales");
  s.set_input(1, tensor.name());
  s.notes.push_back("scales attribute -> input");
}

// Upsample is deprecated at 10: Resize-10 has the same inputs, attributes and meaning.
void upsample_to_resize_10(Step& s) {
  s.node.set_op_type("Resize");
  s.notes.push_back("Upsample -> Resize");
}

// Resize-10 is 'asymmetric' coordinates with nearest = floor; from 11 these are attributes (whose
// defaults differ) and roi is an input before scales.
void resize_11(Step& s) {
  const std::string mode = s.get_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear") throw Refusal{"Resize-10 mode '" + mode + "'"};
  s.set_string("coordinate_transformation_mode", "asymmetric");
  if (mode == "nearest") s.set_string("nearest_mode", "floor");
  const std::string scales = s.input(1);
  std::string roi;
  if (s.target_opset < 13) {  // roi is a required input at 11 and 12: an empty float tensor
    ::onnx::TensorProto& tensor = s.new_tensor("roi", 1);
    tensor.add_dims(0);
    roi = tensor.name();
  }
  s.set_input(1, roi);
  s.set_input(2, scales);
  s.notes.push_back("roi input and asymmetric coordinate attributes added");
}

struct StepRule {
  AdapterFn adapter = nullptr;  // nullptr: the step only added types, attributes with the old
                                // behaviour as default, or clarified the text
};

// Rules per "Op:since-version". A step not listed here is refused.
const std::unordered_map<std::string, StepRule>& step_rules() {
  static const auto* rules = [] {
    auto* r = new std::unordered_map<std::string, StepRule>();
    auto compatible = [&](const char* op, std::initializer_list<int> versions) {
      for (int v : versions) (*r)[std::string(op) + ":" + std::to_string(v)] = StepRule{};
    };
    auto adapt = [&](const char* op, int version, AdapterFn fn) {
      (*r)[std::string(op) + ":" + std::to_string(version)] = StepRule{fn};
    };
    // consumed_inputs (a memory-reuse hint without meaning) went away at 6.
    for (const char* op : {"Abs",         "Ceil",
                           "Exp",         "Floor",
                           "Log",         "Neg",
                           "Reciprocal",  "Relu",
                           "Sigmoid",     "Sqrt",
                           "Tanh",        "Elu",
                           "HardSigmoid", "LeakyRelu",
                           "PRelu",       "InstanceNormalization",
                           "Clip",        "Max",
                           "Min",         "Mean",
                           "Sum",         "BatchNormalization",
                           "Dropout"}) {
      adapt(op, 6, remove_consumed_inputs);
    }
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      adapt(op, 6, remove_consumed_inputs);
      adapt(op, 7, legacy_broadcast_to_numpy);
      compatible(op, {13, 14});
    }
    for (const char* op : {"Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"}) {
      adapt(op, 7, legacy_broadcast_to_numpy);
    }
    compatible("Pow", {12, 13, 15});
    compatible("Equal", {11, 13, 19});
    compatible("Greater", {9, 13});
    compatible("Less", {9, 13});
    compatible("GreaterOrEqual", {16});
    compatible("LessOrEqual", {16});
    for (const char* op : {"Abs", "Ceil", "Exp", "Floor", "Log", "Neg", "Reciprocal", "Sigmoid", "Sqrt", "Tanh"}) {
      compatible(op, {13});
    }
    compatible("Relu", {13, 14});
    for (const char* op : {"Acos",
                           "Acosh",
                           "Asin",
                           "Asinh",
                           "Atan",
                           "Atanh",
                           "Cos",
                           "Cosh",
                           "Sin",
                           "Sinh",
                           "Tan",
                           "Elu",
                           "HardSigmoid",
                           "Selu",
                           "Softplus",
                           "Softsign",
                           "ThresholdedRelu",
                           "HardSwish",
                           "Mish",
                           "Round",
                           "Det",
                           "EyeLike",
                           "Bernoulli",
                           "Multinomial",
                           "RandomNormal",
                           "RandomNormalLike",
                           "RandomUniform",
                           "RandomUniformLike",
                           "GlobalAveragePool",
                           "GlobalMaxPool",
                           "GlobalLpPool",
                           "LpNormalization",
                           "MaxRoiPool",
                           "MaxUnpool",
                           "InstanceNormalization",
                           "Conv",
                           "ConvTranspose",
                           "DeformConv",
                           "LpPool",
                           "AveragePool",
                           "MaxPool",
                           "GRU",
                           "LSTM",
                           "RNN",
                           "GridSample",
                           "RoiAlign",
                           "Dropout",
                           "NegativeLogLikelihoodLoss"}) {
      compatible(op, {22});  // bfloat16 added
    }
    adapt("Selu", 6, selu_6);
    compatible("LeakyRelu", {16});
    compatible("PRelu", {7, 9, 16});  // 7: slope broadcasts unidirectionally, a superset of before
    for (const char* op : {"Max", "Min", "Mean", "Sum"}) compatible(op, {8, 13});  // 8: broadcasting
    compatible("Max", {12});
    compatible("Min", {12});
    compatible("ArgMax", {11, 12, 13});
    compatible("ArgMin", {11, 12, 13});
    compatible("AveragePool", {7, 10, 11, 19});
    compatible("MaxPool", {8, 10, 11, 12});
    adapt("LpPool", 2, lppool_2);
    compatible("LpPool", {11, 18});
    adapt("GlobalLpPool", 2, lppool_2);
    adapt("BatchNormalization", 7, batchnorm_7);
    adapt("BatchNormalization", 9, batchnorm_9);
    adapt("BatchNormalization", 14, no_training_outputs);
    compatible("BatchNormalization", {15});
    adapt("Cast", 6, cast_6);
    compatible("Cast", {9, 13, 19, 21, 23, 24, 25, 28});
    compatible("CastLike", {19, 21, 23, 24, 25});
    compatible("Clip", {12, 13});
    adapt("Clip", 11, clip_11);
    adapt("Concat", 4, concat_4);
    compatible("Concat", {11, 13});
    compatible("Constant", {9, 11, 12, 13, 19, 21, 23, 24, 25});
    compatible("ConstantOfShape", {20, 21, 23, 24, 25});
    compatible("Conv", {11});
    compatible("ConvTranspose", {11});
    compatible("CumSum", {14});
    compatible("DepthToSpace", {11, 13, 28});
    compatible("SpaceToDepth", {13, 28});
    compatible("QuantizeLinear", {13, 19, 21, 23, 24, 25, 28});
    compatible("DequantizeLinear", {13, 19, 21, 23, 24, 25, 28});
    compatible("QLinearMatMul", {21});
    adapt("Dropout", 7, dropout_7);
    adapt("Dropout", 10, dropout_10);
    adapt("Dropout", 12, dropout_12);
    compatible("Dropout", {13});
    compatible("Erf", {13});
    compatible("Expand", {13});
    compatible("Flatten", {9, 11, 13, 21, 23, 24, 25});
    compatible("Gather", {11, 13});
    compatible("GatherElements", {13});
    compatible("GatherND", {12, 13});
    adapt("Gemm", 7, gemm_7);
    compatible("Gemm", {6, 9, 11, 13});
    compatible("GRU", {3, 14});  // 3: linear_before_reset defaults to the old behaviour
    adapt("GRU", 7, rnn_7);
    adapt("LSTM", 7, rnn_7);
    adapt("RNN", 7, rnn_7);
    compatible("LSTM", {14});
    compatible("RNN", {14});
    for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
      compatible(op, {11});  // negative axes allowed
      adapt(op, 13, softmax_13);
    }
    for (const char* op : {"Identity", "If", "Loop"}) compatible(op, {11, 13, 14, 16, 19, 21, 23, 24, 25});
    compatible("Scan", {11, 16, 19, 21, 23, 24, 25});
    compatible("IsInf", {20});
    compatible("IsNaN", {13, 20});
    compatible("LRN", {13});
    compatible("MatMul", {9, 13});
    compatible("MeanVarianceNormalization", {13});
    compatible("MaxUnpool", {11});
    compatible("NegativeLogLikelihoodLoss", {13});
    adapt("DFT", 20, dft_20);
    compatible("Mod", {13, 28});
    compatible("NonMaxSuppression", {11});
    compatible("NonZero", {13});
    compatible("OneHot", {11, 28});
    compatible("Compress", {11, 28});
    compatible("ReverseSequence", {28});
    compatible("Unique", {28});
    compatible("Einsum", {28});
    compatible("Celu", {28});
    compatible("BitShift", {28});
    compatible("Optional", {28});
    compatible("OptionalGetElement", {18, 28});
    compatible("OptionalHasElement", {18, 28});
    compatible("Range", {27});
    adapt("Pad", 2, pad_2);
    adapt("Pad", 11, pad_11);
    compatible("Pad", {13, 18, 19, 21, 23, 24, 25});
    for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                           "ReduceMin", "ReduceProd", "ReduceSumSquare"}) {
      compatible(op, {11, 13});  // 11: negative axes
      adapt(op, 18, axes_to_input);
    }
    compatible("ReduceMax", {12, 20});
    compatible("ReduceMin", {12, 20});
    compatible("ReduceLogSum", {28});  // 28 dropped integer types: such a model fails to load
    compatible("ReduceLogSumExp", {28});
    compatible("ReduceSum", {11});
    adapt("ReduceSum", 13, axes_to_input);
    adapt("Reshape", 5, reshape_5);
    compatible("Reshape", {13, 14, 19, 21, 23, 24, 25});
    adapt("Resize", 11, resize_11);
    compatible("Resize", {13, 18, 19});
    adapt("RoiAlign", 16, roialign_16);
    adapt("GridSample", 20, gridsample_20);
    adapt("Scatter", 11, scatter_11);
    compatible("ScatterElements", {13, 16, 18});
    compatible("ScatterND", {13, 16, 18});
    compatible("Shape", {13, 15, 19, 21, 23, 24, 25});
    compatible("Size", {13, 19, 21, 23, 24, 25});
    compatible("Sign", {13});
    adapt("Slice", 10, slice_10);
    compatible("Slice", {11, 13});
    compatible("SoftmaxCrossEntropyLoss", {13});
    adapt("Split", 2, split_2);
    compatible("Split", {11});
    adapt("Split", 13, split_13);
    adapt("Split", 18, split_18);
    compatible("SplitToSequence", {24});
    for (const char* op : {"Squeeze", "Unsqueeze"}) {
      compatible(op, {11, 21, 23, 24, 25});
      adapt(op, 13, axes_to_input);
    }
    compatible("Tile", {13});
    adapt("TopK", 10, topk_10);
    compatible("TopK", {11, 24});
    compatible("Transpose", {13, 21, 23, 24, 25});
    adapt("Upsample", 7, upsample_7);
    adapt("Upsample", 9, upsample_9);
    adapt("Upsample", 10, upsample_to_resize_10);
    compatible("Where", {16});
    return r;
  }();
  return *rules;
}

// ---------------------------------------------------------------------------------------------
// The model walk.

std::string node_label(const ::onnx::NodeProto& node, int index, const std::string& graph_name) {
  std::string label = node.name().empty() ? "#" + std::to_string(index) : "'" + node.name() + "'";
  if (node.name().empty() && node.output_size() > 0) label += " (output '" + node.output(0) + "')";
  if (!graph_name.empty()) label += " in graph '" + graph_name + "'";
  return label;
}

// Ops whose outputs have the element type of their first input, for the type pass below.
bool keeps_input_type(const std::string& op) {
  static const std::unordered_set<std::string> kOps = {"Abs",
                                                       "Add",
                                                       "Sub",
                                                       "Mul",
                                                       "Div",
                                                       "Pow",
                                                       "Neg",
                                                       "Relu",
                                                       "LeakyRelu",
                                                       "PRelu",
                                                       "Elu",
                                                       "Selu",
                                                       "Sigmoid",
                                                       "HardSigmoid",
                                                       "HardSwish",
                                                       "Tanh",
                                                       "Exp",
                                                       "Log",
                                                       "Sqrt",
                                                       "Reciprocal",
                                                       "Floor",
                                                       "Ceil",
                                                       "Round",
                                                       "Erf",
                                                       "Sin",
                                                       "Cos",
                                                       "Clip",
                                                       "Max",
                                                       "Min",
                                                       "Mean",
                                                       "Sum",
                                                       "Conv",
                                                       "ConvTranspose",
                                                       "MatMul",
                                                       "Gemm",
                                                       "BatchNormalization",
                                                       "InstanceNormalization",
                                                       "LayerNormalization",
                                                       "AveragePool",
                                                       "MaxPool",
                                                       "GlobalAveragePool",
                                                       "GlobalMaxPool",
                                                       "Softmax",
                                                       "LogSoftmax",
                                                       "Hardmax",
                                                       "Reshape",
                                                       "Transpose",
                                                       "Squeeze",
                                                       "Unsqueeze",
                                                       "Flatten",
                                                       "Concat",
                                                       "Slice",
                                                       "Split",
                                                       "Gather",
                                                       "Expand",
                                                       "Tile",
                                                       "Pad",
                                                       "Identity",
                                                       "Dropout",
                                                       "Resize",
                                                       "Upsample",
                                                       "ReduceMean",
                                                       "ReduceSum",
                                                       "ReduceMax",
                                                       "ReduceMin",
                                                       "ReduceProd",
                                                       "ReduceL2",
                                                       "ReduceL1",
                                                       "ReduceSumSquare",
                                                       "ReduceLogSumExp",
                                                       "DepthToSpace",
                                                       "SpaceToDepth",
                                                       "Softplus",
                                                       "Softsign",
                                                       "Mish",
                                                       "Gelu",
                                                       "LRN",
                                                       "MeanVarianceNormalization"};
  return kOps.count(op) != 0;
}

// Ranks of the main graph's inputs only: runtimes reject a feed of another rank there, whereas a wrong
// rank in value_info or an output is at most a warning, and trusting it could change the meaning.
void collect_ranks(const ::onnx::GraphProto& graph, TypeMap& ranks) {
  for (const auto& info : graph.input()) {
    if (info.type().has_tensor_type() && info.type().tensor_type().has_shape()) {
      ranks[info.name()] = info.type().tensor_type().shape().dim_size();
    }
  }
}

void collect_types(const ::onnx::GraphProto& graph, TypeMap& types) {
  auto add_info = [&](const ::onnx::ValueInfoProto& info) {
    if (info.type().has_tensor_type() && info.type().tensor_type().elem_type() != 0) {
      types[info.name()] = info.type().tensor_type().elem_type();
    }
  };
  for (const auto& info : graph.input()) add_info(info);
  for (const auto& info : graph.value_info()) add_info(info);
  for (const auto& info : graph.output()) add_info(info);
  for (const auto& tensor : graph.initializer()) types[tensor.name()] = tensor.data_type();
  for (const auto& node : graph.node()) {
    if (node.output_size() == 0) continue;
    if (is_default_domain(node.domain())) {
      if (node.op_type() == "Constant") {
        for (const auto& a : node.attribute()) {
          if (a.name() == "value" && a.has_t()) types.emplace(node.output(0), a.t().data_type());
          if (a.name() == "value_float" || a.name() == "value_floats") types.emplace(node.output(0), 1);
          if (a.name() == "value_int" || a.name() == "value_ints") types.emplace(node.output(0), 7);
        }
      } else if (node.op_type() == "Shape" || node.op_type() == "Size") {
        types.emplace(node.output(0), 7);
      } else if (node.op_type() == "Cast") {
        for (const auto& a : node.attribute()) {
          if (a.name() == "to" && a.type() == ::onnx::AttributeProto::INT) {
            types.emplace(node.output(0), static_cast<int32_t>(a.i()));
          }
        }
      } else if (keeps_input_type(node.op_type()) && node.input_size() > 0) {
        const auto it = types.find(node.input(0));
        if (it != types.end()) {
          const int32_t type = it->second;
          const int outputs = node.op_type() == "Split" ? node.output_size() : 1;
          for (int k = 0; k < outputs; ++k) types.emplace(node.output(k), type);
        }
      }
    }
    for (const auto& a : node.attribute()) {
      if (a.has_g()) collect_types(a.g(), types);
      for (const auto& g : a.graphs()) collect_types(g, types);
    }
  }
}

void collect_names(const ::onnx::GraphProto& graph, NameSource& names) {
  for (const auto& info : graph.input()) names.add(info.name());
  for (const auto& info : graph.output()) names.add(info.name());
  for (const auto& info : graph.value_info()) names.add(info.name());
  for (const auto& tensor : graph.initializer()) names.add(tensor.name());
  for (const auto& node : graph.node()) {
    names.add(node.name());
    for (const auto& v : node.input()) names.add(v);
    for (const auto& v : node.output()) names.add(v);
    for (const auto& a : node.attribute()) {
      if (a.has_g()) collect_names(a.g(), names);
      for (const auto& g : a.graphs()) collect_names(g, names);
    }
  }
}

bool has_subgraphs(const ::onnx::NodeProto& node) {
  for (const auto& a : node.attribute()) {
    if (a.has_g() || a.graphs_size() > 0) return true;
  }
  return false;
}

using NodeList = google::protobuf::RepeatedPtrField<::onnx::NodeProto>;

struct PlannedNode {
  NodeList* nodes = nullptr;            // the list holding the node
  ::onnx::GraphProto* graph = nullptr;  // the graph holding `nodes`; nullptr in a function body
  int depth = 0;                        // 0: the main graph
  int index = 0;
  Step step;
};

struct Planner {
  int64_t from_opset = 0;
  int64_t to_opset = 0;
  bool legacy_ir = false;  // the converted model's IR version is below 4
  TypeMap types;
  TypeMap ranks;
  TypeMap no_types;  // for function bodies, whose value names are a scope of their own
  bool in_function = false;
  NameSource names;
  std::vector<PlannedNode> planned;  // in the order graphs are finished: subgraphs before their parents
  std::vector<std::string> errors;
  std::vector<std::string> changes;

  int depth = 0;

  void plan_graph(::onnx::GraphProto& graph, const std::string& graph_label) {
    plan_nodes(*graph.mutable_node(), &graph, graph_label);
  }

  void plan_nodes(NodeList& nodes, ::onnx::GraphProto* graph, const std::string& graph_label) {
    for (int k = 0; k < nodes.size(); ++k) {
      ::onnx::NodeProto& node = *nodes.Mutable(k);
      for (auto& a : *node.mutable_attribute()) {
        const std::string inner = node.op_type() + " " + node_label(node, k, graph_label) + " attribute " + a.name();
        ++depth;
        if (a.has_g()) plan_graph(*a.mutable_g(), a.g().name().empty() ? inner : a.g().name());
        for (auto& g : *a.mutable_graphs()) plan_graph(g, g.name().empty() ? inner : g.name());
        --depth;
      }
      if (is_default_domain(node.domain())) plan_node(nodes, graph, k, graph_label);
    }
  }

  void plan_node(NodeList& nodes, ::onnx::GraphProto* graph, int index, const std::string& graph_label) {
    const ::onnx::NodeProto& node = nodes.Get(index);
    const std::string label = node_label(node, index, graph_label);
    const auto& table = op_table();
    const auto found = table.find(node.op_type());
    auto fail = [&](const std::string& what) {
      errors.push_back(node.op_type() + " node " + label + " from opset " + std::to_string(from_opset) + " to " +
                       std::to_string(to_opset) + ": " + what);
    };
    if (found == table.end()) {
      fail("'" + node.op_type() + "' is not an ai.onnx operator this converter knows");
      return;
    }
    const int64_t from_since = since_at(found->second, from_opset);
    if (from_since == 0) {
      fail("the operator does not exist at opset " + std::to_string(from_opset));
      return;
    }
    Step step;
    step.node = node;
    step.target_opset = to_opset;
    step.types = in_function ? &no_types : &types;
    step.ranks = in_function ? &no_types : &ranks;
    step.names = &names;
    step.base = !node.name().empty() ? node.name() : (node.output_size() > 0 ? node.output(0) : node.op_type());
    std::string op = node.op_type();
    int64_t current = from_since;
    bool rewritten = false;
    const std::string from_text = op + "-" + std::to_string(from_since);
    while (true) {
      const auto& versions = table.at(op);
      int64_t next = 0;
      for (int64_t v : versions.since) {
        if (v > current && v <= to_opset) {
          next = v;
          break;
        }
      }
      if (next == 0) break;
      const std::string step_name = op + "-" + std::to_string(current) + " -> " + op + "-" + std::to_string(next);
      const auto rule = step_rules().find(op + ":" + std::to_string(next));
      if (rule == step_rules().end()) {
        fail("no exact conversion for the step " + step_name + " (" + from_text + " at opset " +
             std::to_string(from_opset) + ")");
        return;
      }
      if (rule->second.adapter != nullptr) {
        if (has_subgraphs(node)) {
          fail("the step " + step_name + " would rewrite a node that holds subgraphs");
          return;
        }
        step.version = next;
        try {
          rule->second.adapter(step);
        } catch (const Refusal& refusal) {
          fail("step " + step_name + ": " + refusal.reason);
          return;
        }
        rewritten = true;
        if (step.node.op_type() != op) {
          op = step.node.op_type();
          if (table.count(op) == 0) {
            fail("internal: " + op + " is not in the operator table");
            return;
          }
        }
      }
      current = next;
    }
    const auto& final_versions = table.at(op);
    if (std::find(final_versions.deprecated.begin(), final_versions.deprecated.end(), current) !=
        final_versions.deprecated.end()) {
      fail(op + "-" + std::to_string(current) + " is deprecated and has no replacement here");
      return;
    }
    // Steps that only check (BatchNormalization's outputs, Dropout's mask) leave the node as it was.
    if (rewritten && step.before.empty() && step.after.empty() && step.tensors.empty()) {
      rewritten = step.node.SerializeAsString() != node.SerializeAsString();
    }
    if (!rewritten) return;
    if (legacy_ir && !step.tensors.empty() && graph != nullptr && depth > 0) {
      fail("IR version " + std::to_string(ir_version_for(to_opset)) +
           " needs initializers to be graph inputs, which a subgraph cannot add");
      return;
    }
    if (graph == nullptr) {  // a function body has no initializers: new constants are Constant nodes
      std::vector<::onnx::NodeProto> constants;
      for (auto& tensor : step.tensors) {
        ::onnx::NodeProto constant;
        constant.set_op_type("Constant");
        constant.set_name(names.unique(tensor.name() + "_constant"));
        constant.add_output(tensor.name());
        auto* value = constant.add_attribute();
        value->set_name("value");
        value->set_type(::onnx::AttributeProto::TENSOR);
        *value->mutable_t() = std::move(tensor);
        constants.push_back(std::move(constant));
      }
      step.tensors.clear();
      step.before.insert(step.before.begin(), constants.begin(), constants.end());
    }
    if (step.notes.empty()) step.notes.push_back("attributes updated");
    std::string change = node.op_type() + " " + label + ": " + from_text + " -> " + op + "-" + std::to_string(current);
    for (size_t k = 0; k < step.notes.size(); ++k) change += (k == 0 ? ": " : "; ") + step.notes[k];
    changes.push_back(change);
    planned.push_back(PlannedNode{&nodes, graph, depth, index, std::move(step)});
  }
};

// Replaces the planned nodes of one node list (all entries share it), keeping the node order.
void apply_to_nodes(NodeList& nodes, std::vector<PlannedNode*>& entries, bool legacy_ir) {
  std::sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->index < b->index; });
  NodeList old;
  old.Swap(&nodes);
  size_t e = 0;
  for (int k = 0; k < old.size(); ++k) {
    if (e < entries.size() && entries[e]->index == k) {
      Step& step = entries[e]->step;
      ::onnx::GraphProto* graph = entries[e]->graph;
      for (auto& n : step.before) *nodes.Add() = std::move(n);
      *nodes.Add() = std::move(step.node);
      for (auto& n : step.after) *nodes.Add() = std::move(n);
      for (auto& t : step.tensors) {
        if (legacy_ir) {  // before IR 4 every initializer is also a graph input
          auto* input = graph->add_input();
          input->set_name(t.name());
          auto* type = input->mutable_type()->mutable_tensor_type();
          type->set_elem_type(t.data_type());
          for (int64_t d : t.dims()) type->mutable_shape()->add_dim()->set_dim_value(d);
          if (t.dims_size() == 0) type->mutable_shape();
        }
        *graph->add_initializer() = std::move(t);
      }
      ++e;
    } else {
      *nodes.Add() = std::move(*old.Mutable(k));
    }
  }
}

}  // namespace

int64_t max_supported_opset() { return max_known_opset(); }

int64_t min_ir_version_for_opset(int64_t opset) { return ir_version_for(opset); }

OpsetConversion convert_opset(::onnx::ModelProto& model, int64_t target_opset) {
  OpsetConversion result;
  bool has_import = false;
  for (const auto& opset : model.opset_import()) {
    if (is_default_domain(opset.domain())) {
      if (has_import && opset.version() != result.from_opset) {
        throw Error("convert_opset: the model imports ai.onnx twice, at opsets " + std::to_string(result.from_opset) +
                    " and " + std::to_string(opset.version()));
      }
      result.from_opset = opset.version();
      has_import = true;
    }
  }
  result.to_opset = result.from_opset;
  result.from_ir_version = result.to_ir_version = model.ir_version();
  if (!has_import || target_opset <= result.from_opset) return result;
  if (target_opset > max_known_opset()) {
    throw Error("convert_opset: opset " + std::to_string(target_opset) + " is newer than the newest this qdq knows (" +
                std::to_string(max_known_opset()) + ")");
  }
  if (result.from_opset < 1) {
    throw Error("convert_opset: the model's ai.onnx opset " + std::to_string(result.from_opset) + " is not valid");
  }
  // Model-local functions run under their own opset imports; the checker wants them to agree with the
  // model's, so the bodies of those that import ai.onnx below the target are converted too.
  for (const auto& function : model.functions()) {
    for (const auto& opset : function.opset_import()) {
      if (is_default_domain(opset.domain()) && opset.version() > target_opset) {
        throw Error("convert_opset: model-local function '" + function.name() + "' imports ai.onnx opset " +
                    std::to_string(opset.version()) + ", newer than the target " + std::to_string(target_opset));
      }
    }
  }

  Planner planner;
  planner.from_opset = result.from_opset;
  planner.to_opset = target_opset;
  planner.legacy_ir = std::max(model.ir_version(), ir_version_for(target_opset)) < 4;
  collect_types(model.graph(), planner.types);
  collect_ranks(model.graph(), planner.ranks);
  collect_names(model.graph(), planner.names);
  for (const auto& function : model.functions()) {
    for (const auto& node : function.node()) {
      planner.names.add(node.name());
      for (const auto& v : node.input()) planner.names.add(v);
      for (const auto& v : node.output()) planner.names.add(v);
    }
  }
  planner.plan_graph(*model.mutable_graph(), "");
  std::vector<::onnx::OperatorSetIdProto*> function_imports;
  for (auto& function : *model.mutable_functions()) {
    for (auto& opset : *function.mutable_opset_import()) {
      if (!is_default_domain(opset.domain()) || opset.version() >= target_opset) continue;
      planner.from_opset = opset.version();
      planner.in_function = true;
      planner.depth = 1;
      planner.plan_nodes(*function.mutable_node(), nullptr, "function '" + function.name() + "'");
      planner.depth = 0;
      planner.in_function = false;
      function_imports.push_back(&opset);
    }
  }
  if (!planner.errors.empty()) {
    std::string message = "convert_opset: cannot convert " + planner.errors.front();
    if (planner.errors.size() > 1) {
      message += " (and " + std::to_string(planner.errors.size() - 1) + " more node" +
                 (planner.errors.size() > 2 ? "s" : "") + ")";
    }
    throw Error(message);
  }

  // Nothing has changed so far. The innermost graphs are rebuilt first, and a node holding subgraphs
  // is never replaced, so the pointers to subgraphs stay valid while their parents are rebuilt.
  std::vector<std::pair<int, NodeList*>> order;
  std::unordered_map<NodeList*, std::vector<PlannedNode*>> by_list;
  for (auto& p : planner.planned) {
    if (by_list.count(p.nodes) == 0) order.emplace_back(p.depth, p.nodes);
    by_list[p.nodes].push_back(&p);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [depth, nodes] : order) apply_to_nodes(*nodes, by_list[nodes], planner.legacy_ir);
  for (auto* opset : function_imports) opset->set_version(target_opset);

  for (auto& opset : *model.mutable_opset_import()) {
    if (is_default_domain(opset.domain())) opset.set_version(target_opset);
  }
  const int64_t needed_ir = ir_version_for(target_opset);
  if (model.ir_version() < needed_ir) model.set_ir_version(needed_ir);
  result.to_opset = target_opset;
  result.to_ir_version = model.ir_version();
  result.changes = std::move(planner.changes);
  return result;
}

}  // namespace qdq::onnx
