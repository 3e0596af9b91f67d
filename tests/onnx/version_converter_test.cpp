// convert_opset: the rules around the adapters (the adapters' numerics are checked against ONNX
// Runtime in tests/model/test_version_converter.py).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onnx_subset.pb.h"
#include "qdq/types.hpp"
#include "version_converter.hpp"

namespace {

using qdq::onnx::convert_opset;

class Builder {
 public:
  explicit Builder(int64_t opset, int64_t ir_version = 7) {
    model.set_ir_version(ir_version);
    auto* o = model.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model.mutable_graph()->set_name("g");
  }
  static onnx::NodeProto& node(onnx::GraphProto& graph, const std::string& op, const std::string& name,
                               std::vector<std::string> inputs, std::vector<std::string> outputs) {
    auto* n = graph.add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : inputs) n->add_input(i);
    for (auto& o : outputs) n->add_output(o);
    return *n;
  }
  onnx::NodeProto& node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                        std::vector<std::string> outputs) {
    return node(*model.mutable_graph(), op, name, std::move(inputs), std::move(outputs));
  }
  static void ints(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> values) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }
  static void i(onnx::NodeProto& n, const std::string& name, int64_t value) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }
  onnx::ModelProto model;
};

std::string error_of(onnx::ModelProto& model, int64_t opset) {
  try {
    convert_opset(model, opset);
  } catch (const qdq::Error& e) {
    return e.what();
  }
  return "(no error)";
}

int64_t opset_of(const onnx::ModelProto& model, const std::string& domain = "") {
  for (const auto& o : model.opset_import()) {
    if (o.domain() == domain) return o.version();
  }
  return -1;
}

TEST(VersionConverter, RefusesBeforeChangingAnything) {
  Builder b(8);
  Builder::ints(b.node("Squeeze", "sq", {"x"}, {"s"}), "axes", {0});  // convertible, and first
  b.node("Scan", "scan", {"", "s"}, {"y"});                           // Scan-8 -> Scan-9 is not
  const std::string before = b.model.SerializeAsString();
  const std::string message = error_of(b.model, 13);
  EXPECT_EQ(b.model.SerializeAsString(), before);
  EXPECT_NE(message.find("Scan node 'scan' from opset 8 to 13"), std::string::npos) << message;
  EXPECT_NE(message.find("Scan-8 -> Scan-9"), std::string::npos) << message;
}

TEST(VersionConverter, ErrorNamesTheOpTheNodeAndBothVersions) {
  Builder b(18);
  b.node("GroupNormalization", "gn", {"a", "scale", "bias"}, {"y"});
  const std::string message = error_of(b.model, 21);
  EXPECT_NE(message.find("GroupNormalization node 'gn'"), std::string::npos) << message;
  EXPECT_NE(message.find("from opset 18 to 21"), std::string::npos) << message;
  EXPECT_NE(message.find("GroupNormalization-18 -> GroupNormalization-21"), std::string::npos) << message;
}

TEST(VersionConverter, AnAdapterRefusalNamesItsReason) {
  Builder b(6);
  Builder::ints(b.node("Squeeze", "sq", {"x"}, {"s"}), "axes", {0});
  auto& add = b.node("Add", "legacy", {"s", "w"}, {"y"});
  Builder::i(add, "broadcast", 1);
  Builder::i(add, "axis", 0);
  const std::string before = b.model.SerializeAsString();
  const std::string message = error_of(b.model, 13);
  EXPECT_EQ(b.model.SerializeAsString(), before);
  EXPECT_NE(message.find("Add node 'legacy'"), std::string::npos) << message;
  EXPECT_NE(message.find("step Add-6 -> Add-7: legacy broadcasting with an explicit axis"), std::string::npos)
      << message;
}

TEST(VersionConverter, CountsTheOtherRefusedNodes) {
  Builder b(8);
  b.node("Scan", "scan1", {"", "x"}, {"y"});
  b.node("Scan", "scan2", {"", "x"}, {"z"});
  b.node("Tile", "", {"x", "t", "a"}, {"w"});
  const std::string message = error_of(b.model, 13);
  EXPECT_NE(message.find("Scan node 'scan1'"), std::string::npos) << message;
  EXPECT_NE(message.find("(and 1 more node)"), std::string::npos) << message;  // Tile is at 6 already
}

TEST(VersionConverter, UnknownOperatorAndMissingVersion) {
  Builder b(9);
  b.node("NotAnOp", "n", {"x"}, {"y"});
  EXPECT_NE(error_of(b.model, 13).find("'NotAnOp' is not an ai.onnx operator"), std::string::npos);
  Builder c(9);
  c.node("Gelu", "g", {"x"}, {"y"});  // exists from 20 on
  EXPECT_NE(error_of(c.model, 21).find("does not exist at opset 9"), std::string::npos);
}

TEST(VersionConverter, NodeWithoutANameIsNamedByItsOutput) {
  Builder b(8);
  b.node("Scan", "", {"", "x"}, {"scan_out"});
  const std::string message = error_of(b.model, 13);
  EXPECT_NE(message.find("Scan node #0 (output 'scan_out')"), std::string::npos) << message;
}

TEST(VersionConverter, AxesAttributeBecomesAnInitializerWithAUniqueName) {
  Builder b(11);
  Builder::ints(b.node("Squeeze", "sq", {"x"}, {"y"}), "axes", {0, -1});
  b.model.mutable_graph()->add_initializer()->set_name("sq_axes");  // the name the converter would pick
  const auto result = convert_opset(b.model, 13);
  const auto& graph = b.model.graph();
  ASSERT_EQ(graph.node_size(), 1);
  ASSERT_EQ(graph.node(0).input_size(), 2);
  EXPECT_EQ(graph.node(0).input(1), "sq_axes_2");
  EXPECT_EQ(graph.node(0).attribute_size(), 0);
  ASSERT_EQ(graph.initializer_size(), 2);
  const auto& axes = graph.initializer(1);
  EXPECT_EQ(axes.name(), "sq_axes_2");
  EXPECT_EQ(axes.data_type(), 7);
  ASSERT_EQ(axes.int64_data_size(), 2);
  EXPECT_EQ(axes.int64_data(1), -1);
  EXPECT_EQ(result.from_opset, 11);
  EXPECT_EQ(result.to_opset, 13);
  ASSERT_EQ(result.changes.size(), 1u);
  EXPECT_NE(result.changes[0].find("Squeeze 'sq': Squeeze-11 -> Squeeze-13: axes attribute -> input"),
            std::string::npos)
      << result.changes[0];
  EXPECT_EQ(opset_of(b.model), 13);
}

TEST(VersionConverter, RaisesTheIrVersionAndKeepsOtherDomains) {
  Builder b(9, 4);
  auto* ml = b.model.add_opset_import();
  ml->set_domain("ai.onnx.ml");
  ml->set_version(1);
  b.node("Relu", "r", {"x"}, {"y"});
  const auto result = convert_opset(b.model, 21);
  EXPECT_EQ(result.from_ir_version, 4);
  EXPECT_EQ(result.to_ir_version, 10);
  EXPECT_EQ(b.model.ir_version(), 10);
  EXPECT_EQ(opset_of(b.model, "ai.onnx.ml"), 1);
  EXPECT_TRUE(result.changes.empty());
  EXPECT_EQ(qdq::onnx::min_ir_version_for_opset(24), 12);
  // A higher IR version stays.
  Builder c(9, 11);
  convert_opset(c.model, 13);
  EXPECT_EQ(c.model.ir_version(), 11);
}

TEST(VersionConverter, TargetAtOrBelowTheModelChangesNothingAndTooNewIsAnError) {
  Builder b(13);
  Builder::ints(b.node("Squeeze", "sq", {"x"}, {"y"}), "axes", {0});  // invalid at 13, but not looked at
  const std::string before = b.model.SerializeAsString();
  convert_opset(b.model, 13);
  convert_opset(b.model, 11);
  EXPECT_EQ(b.model.SerializeAsString(), before);
  EXPECT_NE(error_of(b.model, qdq::onnx::max_supported_opset() + 1).find("newer"), std::string::npos);
}

TEST(VersionConverter, SubgraphsAreConvertedWithTheirOwnInitializers) {
  Builder b(11);
  auto& if_node = b.node("If", "if", {"cond"}, {"y"});
  auto* then_attr = if_node.add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(onnx::AttributeProto::GRAPH);
  auto* then_graph = then_attr->mutable_g();
  then_graph->set_name("then");
  // A Loop inside the then branch, whose body holds the Unsqueeze: two levels down.
  auto& loop = Builder::node(*then_graph, "Loop", "loop", {"n", "", "x"}, {"t"});
  auto* body_attr = loop.add_attribute();
  body_attr->set_name("body");
  body_attr->set_type(onnx::AttributeProto::GRAPH);
  Builder::ints(Builder::node(*body_attr->mutable_g(), "Unsqueeze", "deep", {"x"}, {"u"}), "axes", {0});
  Builder::ints(Builder::node(*then_graph, "Squeeze", "then_sq", {"t"}, {"y_then"}), "axes", {1});
  b.node("Relu", "after", {"y"}, {"z"});

  const auto result = convert_opset(b.model, 13);
  EXPECT_EQ(result.changes.size(), 2u);
  const auto& main = b.model.graph();
  EXPECT_EQ(main.initializer_size(), 0);
  ASSERT_EQ(main.node_size(), 2);
  const auto& then_after = main.node(0).attribute(0).g();
  ASSERT_EQ(then_after.initializer_size(), 1);
  EXPECT_EQ(then_after.node(1).input(1), then_after.initializer(0).name());
  const auto& body = then_after.node(0).attribute(0).g();
  ASSERT_EQ(body.initializer_size(), 1);
  EXPECT_EQ(body.node(0).input(1), "deep_axes");
  bool named = false;
  for (const auto& change : result.changes) named |= change.find("'deep' in graph") != std::string::npos;
  EXPECT_TRUE(named);
}

// A NodeProto with a field this schema does not have (number 99, varint 42), as a newer ONNX writes it.
onnx::NodeProto node_with_unknown_field(onnx::NodeProto node) {
  std::string bytes = node.SerializeAsString();
  bytes += std::string("\x98\x06\x2a", 3);
  onnx::NodeProto parsed;
  EXPECT_TRUE(parsed.ParseFromString(bytes));
  return parsed;
}

TEST(VersionConverter, RewrittenNodesKeepTheirUnknownFields) {
  Builder b(11);
  onnx::NodeProto squeeze;
  squeeze.set_op_type("Squeeze");
  squeeze.set_name("sq");
  squeeze.add_input(std::string("x"));
  squeeze.add_output(std::string("y"));
  squeeze.set_doc_string("kept");
  Builder::ints(squeeze, "axes", {0});
  auto* kept_attr = squeeze.add_attribute();  // an attribute the adapter does not touch
  kept_attr->set_name("future");
  kept_attr->set_type(onnx::AttributeProto::INT);
  *b.model.mutable_graph()->add_node() = node_with_unknown_field(squeeze);
  onnx::NodeProto softmax;
  softmax.set_op_type("Softmax");
  softmax.set_name("sm");
  softmax.add_input(std::string("y"));
  softmax.add_output(std::string("z"));
  *b.model.mutable_graph()->add_node() = node_with_unknown_field(softmax);
  ASSERT_NE(b.model.graph().node(0).SerializeAsString().find(std::string("\x98\x06\x2a", 3)), std::string::npos);

  convert_opset(b.model, 13);
  const auto& graph = b.model.graph();
  ASSERT_EQ(graph.node_size(), 5);  // Squeeze, Shape, Flatten, Softmax, Reshape
  EXPECT_NE(graph.node(0).SerializeAsString().find(std::string("\x98\x06\x2a", 3)), std::string::npos);
  EXPECT_EQ(graph.node(0).doc_string(), "kept");
  ASSERT_EQ(graph.node(0).attribute_size(), 1);
  EXPECT_EQ(graph.node(0).attribute(0).name(), "future");
  EXPECT_EQ(graph.node(3).op_type(), "Softmax");
  EXPECT_NE(graph.node(3).SerializeAsString().find(std::string("\x98\x06\x2a", 3)), std::string::npos);
}

TEST(VersionConverter, SoftmaxOnANonLastAxisBecomesFlattenSoftmaxReshape) {
  Builder b(9);
  b.node("Softmax", "sm", {"x"}, {"y"});  // default axis 1
  b.node("Relu", "r", {"y"}, {"z"});
  convert_opset(b.model, 14);
  const auto& g = b.model.graph();
  ASSERT_EQ(g.node_size(), 5);
  EXPECT_EQ(g.node(0).op_type(), "Shape");
  EXPECT_EQ(g.node(1).op_type(), "Flatten");
  EXPECT_EQ(g.node(1).attribute(0).i(), 1);
  EXPECT_EQ(g.node(2).op_type(), "Softmax");
  EXPECT_EQ(g.node(2).input(0), g.node(1).output(0));
  EXPECT_EQ(g.node(3).op_type(), "Reshape");
  EXPECT_EQ(g.node(3).input(0), g.node(2).output(0));
  EXPECT_EQ(g.node(3).input(1), g.node(0).output(0));
  EXPECT_EQ(g.node(3).output(0), "y");
  EXPECT_EQ(g.node(4).input(0), "y");

  Builder last(11);
  Builder::i(last.node("Softmax", "sm", {"x"}, {"y"}), "axis", -1);  // the same at both versions
  const auto result = convert_opset(last.model, 13);
  EXPECT_EQ(last.model.graph().node_size(), 1);
  EXPECT_TRUE(result.changes.empty());
}

TEST(VersionConverter, ClipOfAnUnknownTypeNeedsCastLike) {
  Builder b(9);
  auto& clip = b.node("Clip", "c", {"x"}, {"y"});
  auto* a = clip.add_attribute();
  a->set_name("max");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(6);
  onnx::ModelProto copy = b.model;
  EXPECT_NE(error_of(copy, 13).find("CastLike needs opset 15"), std::string::npos);
  convert_opset(b.model, 15);
  ASSERT_EQ(b.model.graph().node_size(), 2);
  EXPECT_EQ(b.model.graph().node(0).op_type(), "CastLike");
  EXPECT_EQ(b.model.graph().node(1).input(1), "");  // min omitted
  EXPECT_EQ(b.model.graph().node(1).input(2), b.model.graph().node(0).output(0));
}

TEST(VersionConverter, FunctionBodiesAreConvertedWithConstantNodes) {
  Builder b(11);
  b.node("Relu", "r", {"x"}, {"y"});
  auto* function = b.model.add_functions();
  function->set_name("f");
  function->set_domain("local");
  auto* import = function->add_opset_import();
  import->set_domain("");
  import->set_version(11);
  auto* other = function->add_opset_import();
  other->set_domain("local");
  other->set_version(1);
  auto* squeeze = function->add_node();
  squeeze->set_op_type("Squeeze");
  squeeze->set_name("fsq");
  squeeze->add_input(std::string("a"));
  squeeze->add_output(std::string("b"));
  Builder::ints(*squeeze, "axes", {0});
  const auto result = convert_opset(b.model, 13);
  const auto& f = b.model.functions(0);
  EXPECT_EQ(f.opset_import(0).version(), 13);
  EXPECT_EQ(f.opset_import(1).version(), 1);
  ASSERT_EQ(f.node_size(), 2);
  EXPECT_EQ(f.node(0).op_type(), "Constant");
  EXPECT_EQ(f.node(0).output(0), "fsq_axes");
  EXPECT_EQ(f.node(0).attribute(0).t().int64_data(0), 0);
  EXPECT_EQ(f.node(1).input(1), "fsq_axes");
  ASSERT_EQ(result.changes.size(), 1u);
  EXPECT_NE(result.changes[0].find("in graph 'function 'f''"), std::string::npos) << result.changes[0];
}

TEST(VersionConverter, AnAttributeReferenceInAFunctionIsRefusedWhereAnAdapterReadsIt) {
  Builder b(11);
  auto* function = b.model.add_functions();
  function->set_name("f");
  auto* import = function->add_opset_import();
  import->set_domain("");
  import->set_version(11);
  auto* softmax = function->add_node();
  softmax->set_op_type("Softmax");
  softmax->set_name("fsm");
  softmax->add_input(std::string("a"));
  softmax->add_output(std::string("b"));
  auto* axis = softmax->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_ref_attr_name("softmax_axis");
  const std::string message = error_of(b.model, 13);
  EXPECT_NE(message.find("Softmax node 'fsm' in graph 'function 'f''"), std::string::npos) << message;
  EXPECT_NE(message.find("refers to the function attribute 'softmax_axis'"), std::string::npos) << message;
}

TEST(VersionConverter, AFunctionImportingANewerAiOnnxIsRefused) {
  Builder b(11);
  auto* function = b.model.add_functions();
  function->set_name("f");
  auto* import = function->add_opset_import();
  import->set_domain("ai.onnx");
  import->set_version(14);
  const std::string before = b.model.SerializeAsString();
  EXPECT_NE(error_of(b.model, 13).find("function 'f' imports ai.onnx opset 14, newer than the target 13"),
            std::string::npos);
  EXPECT_EQ(b.model.SerializeAsString(), before);
}

TEST(VersionConverter, BeforeIrVersion4NewInitializersAreAlsoGraphInputs) {
  Builder b(4, 3);
  Builder::ints(b.node("Reshape", "r", {"x"}, {"y"}), "shape", {2, -1});
  convert_opset(b.model, 5);
  EXPECT_EQ(b.model.ir_version(), 3);
  ASSERT_EQ(b.model.graph().input_size(), 1);
  EXPECT_EQ(b.model.graph().input(0).name(), "r_shape");
  EXPECT_EQ(b.model.graph().input(0).type().tensor_type().elem_type(), 7);
}

TEST(VersionConverter, UpsampleBecomesResizeWithTheOldCoordinates) {
  Builder b(9);
  b.node("Upsample", "up", {"x", "scales"}, {"y"});
  const auto result = convert_opset(b.model, 13);
  const auto& n = b.model.graph().node(0);
  EXPECT_EQ(n.op_type(), "Resize");
  ASSERT_EQ(n.input_size(), 3);
  EXPECT_EQ(n.input(1), "");
  EXPECT_EQ(n.input(2), "scales");
  ASSERT_EQ(result.changes.size(), 1u);
  EXPECT_NE(result.changes[0].find("Upsample-9 -> Resize-13"), std::string::npos) << result.changes[0];
}

TEST(VersionConverter, AnAttributeOfTheWrongTypeIsRefused) {
  Builder b(11);
  auto& squeeze = b.node("Squeeze", "sq", {"x"}, {"y"});
  auto* axes = squeeze.add_attribute();
  axes->set_name("axes");
  axes->set_type(onnx::AttributeProto::FLOATS);
  axes->add_floats(0.0f);
  EXPECT_NE(error_of(b.model, 13).find("attribute 'axes' has type 6, not INTS"), std::string::npos);
}

// Adapters for opsets ONNX Runtime has no kernels for (tests/model checks the others numerically).
TEST(VersionConverter, LegacyAttributeAdapters) {
  Builder b(1, 3);
  b.node("Concat", "concat", {"x", "x"}, {"c"});
  auto& cast = b.node("Cast", "cast", {"c"}, {"d"});
  auto* to = cast.add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::STRING);
  to->set_s("FLOAT16");
  auto& pad = b.node("Pad", "pad", {"d"}, {"e"});
  Builder::ints(pad, "paddings", {1, 1});
  auto& lp = b.node("LpPool", "lp", {"e"}, {"f"});
  auto* p = lp.add_attribute();
  p->set_name("p");
  p->set_type(onnx::AttributeProto::FLOAT);
  p->set_f(3.0f);
  Builder::i(b.node("Relu", "relu", {"f"}, {"g"}), "consumed_inputs", 0);
  const auto result = convert_opset(b.model, 6);
  const auto& g = b.model.graph();
  EXPECT_EQ(g.node(0).attribute(0).name(), "axis");
  EXPECT_EQ(g.node(0).attribute(0).i(), 1);
  EXPECT_EQ(g.node(1).attribute(0).type(), onnx::AttributeProto::INT);
  EXPECT_EQ(g.node(1).attribute(0).i(), 10);
  EXPECT_EQ(g.node(2).attribute(0).name(), "pads");
  EXPECT_EQ(g.node(3).attribute(0).type(), onnx::AttributeProto::INT);
  EXPECT_EQ(g.node(3).attribute(0).i(), 3);
  EXPECT_EQ(g.node(4).attribute_size(), 0);
  EXPECT_EQ(result.changes.size(), 5u);

  Builder selu(1, 3);
  selu.node("Selu", "selu", {"x"}, {"y"});
  EXPECT_NE(error_of(selu.model, 6).find("Selu-1's default alpha/gamma"), std::string::npos);
}

TEST(VersionConverter, RenamesAndNewDefaults) {
  Builder b(10);
  b.node("RoiAlign", "roi", {"x", "rois", "idx"}, {"r"});
  b.node("Scatter", "scatter", {"x", "i", "u"}, {"s"});
  Builder::i(b.node("TopK", "topk", {"x"}, {"v", "i"}), "axis", 0);
  convert_opset(b.model, 16);
  const auto& g = b.model.graph();
  ASSERT_EQ(g.node(0).attribute_size(), 1);
  EXPECT_EQ(g.node(0).attribute(0).s(), "output_half_pixel");
  EXPECT_EQ(g.node(1).op_type(), "ScatterElements");

  Builder topk(9);
  Builder::i(topk.node("TopK", "topk", {"x"}, {"v", "i"}), "k", 3);
  convert_opset(topk.model, 11);
  ASSERT_EQ(topk.model.graph().node(0).input_size(), 2);
  EXPECT_EQ(topk.model.graph().initializer(0).int64_data(0), 3);
  EXPECT_EQ(topk.model.graph().initializer(0).dims(0), 1);

  Builder grid(16);
  auto& gs = grid.node("GridSample", "gs", {"x", "grid"}, {"y"});
  auto* mode = gs.add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("bicubic");
  convert_opset(grid.model, 20);
  EXPECT_EQ(grid.model.graph().node(0).attribute(0).s(), "cubic");
  Builder grid_default(16);
  grid_default.node("GridSample", "gs", {"x", "grid"}, {"y"});  // bilinear by default
  convert_opset(grid_default.model, 22);
  EXPECT_EQ(grid_default.model.graph().node(0).attribute(0).s(), "linear");
}

}  // namespace
