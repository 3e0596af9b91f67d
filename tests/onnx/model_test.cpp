// ONNX models: evaluation of single nodes and chains, binding rules, and every rejected model.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <regex>

#include "onnx_subset.pb.h"
#include "qdq_onnx.hpp"

namespace {

using qdq::DataType;
using qdq::onnx::Tensor;
namespace fs = std::filesystem;

Tensor floats(std::vector<int64_t> shape, std::vector<float> values, std::string name = {}) {
  Tensor t = qdq::onnx::make_tensor(DataType::kFloat, std::move(shape), std::move(name));
  EXPECT_EQ(t.data.size(), values.size() * 4);
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());  // memcpy(nullptr, …, 0) is UB
  return t;
}

Tensor bytes(DataType type, std::vector<int64_t> shape, std::vector<uint8_t> data, std::string name = {}) {
  Tensor t = qdq::onnx::make_tensor(type, std::move(shape), std::move(name));
  EXPECT_EQ(t.data.size(), data.size());
  t.data = std::move(data);
  return t;
}

std::vector<float> as_floats(const Tensor& t) {
  std::vector<float> out(t.data.size() / 4);
  if (!out.empty()) std::memcpy(out.data(), t.data.data(), t.data.size());
  return out;
}

// Builds ModelProtos the way the ONNX helpers do.
class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset, std::string domain = "") {
    proto_.set_ir_version(10);
    auto* o = proto_.add_opset_import();
    o->set_domain(std::move(domain));
    o->set_version(opset);
    proto_.mutable_graph()->set_name("g");
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs) {
    auto* n = proto_.mutable_graph()->add_node();
    n->set_op_type(op);
    for (auto& i : inputs) n->add_input(i);
    for (auto& o : outputs) n->add_output(o);
    return *n;
  }
  static void int_attribute(onnx::NodeProto& n, const std::string& name, int64_t value) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(2);
    a->set_i(value);
  }
  void input(const std::string& name, DataType type, std::optional<std::vector<int64_t>> shape = std::nullopt) {
    value_info(proto_.mutable_graph()->add_input(), name, type, shape);
  }
  void output(const std::string& name, DataType type = DataType::kUndefined,
              std::optional<std::vector<int64_t>> shape = std::nullopt) {
    value_info(proto_.mutable_graph()->add_output(), name, type, shape);
  }
  void initializer(const Tensor& t) {
    ASSERT_TRUE(proto_.mutable_graph()->add_initializer()->ParseFromString(qdq::onnx::serialize_tensor(t)));
  }
  onnx::ModelProto& proto() { return proto_; }
  std::string serialized() const {
    std::string out;
    EXPECT_TRUE(proto_.SerializeToString(&out));
    return out;
  }
  qdq::onnx::Model model() const { return qdq::onnx::parse_model(serialized(), "m.onnx"); }

 private:
  static void value_info(onnx::ValueInfoProto* v, const std::string& name, DataType type,
                         const std::optional<std::vector<int64_t>>& shape) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(static_cast<int32_t>(type));
    if (shape) {
      auto* s = t->mutable_shape();
      for (int64_t d : *shape) {
        if (d < 0) s->add_dim()->set_dim_param("N");
        else s->add_dim()->set_dim_value(d);
      }
    }
  }
  onnx::ModelProto proto_;
};

// Expects `f` to throw a qdq::Error whose one-line message contains every needle.
template <typename F>
void expect_error(F&& f, std::initializer_list<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const qdq::Error& e) {
    const std::string message = e.what();
    for (const std::string& needle : needles) EXPECT_NE(message.find(needle), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(RunModel, QuantizeThenDequantizeChain) {
  ModelBuilder b(25);
  b.node("QuantizeLinear", {"x", "s", "zp"}, {"q"});
  b.node("DequantizeLinear", {"q", "s", "zp"}, {"y"});
  b.input("x", DataType::kFloat, std::vector<int64_t>{-1});
  b.input("s", DataType::kFloat, std::vector<int64_t>{});  // also an initializer: not bound
  b.input("zp", DataType::kUint8);
  b.initializer(floats({}, {2.0f}, "s"));
  b.output("q", DataType::kUint8, std::vector<int64_t>{4});
  b.output("y", DataType::kFloat);
  const auto model = b.model();
  EXPECT_EQ(model.opset, 25);
  const auto out = qdq::onnx::run_model(
      model, {floats({4}, {0.0f, 1.5f, -3.0f, 300.0f}, "ignored"), bytes(DataType::kUint8, {}, {128})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "q");
  EXPECT_EQ(out[0].type, DataType::kUint8);
  EXPECT_EQ(out[0].data, (std::vector<uint8_t>{128, 129, 126, 255}));  // 0.75 → 1, −1.5 → −2, saturate
  EXPECT_EQ(out[1].shape, std::vector<int64_t>{4});
  EXPECT_EQ(as_floats(out[1]), (std::vector<float>{0.0f, 2.0f, -4.0f, 254.0f}));
}

TEST(RunModel, DynamicQuantizeFeedsDequantize) {
  ModelBuilder b(11);
  b.node("DynamicQuantizeLinear", {"x"}, {"y", "y_scale", "y_zp"});
  b.node("DequantizeLinear", {"y", "y_scale", "y_zp"}, {"r"});
  b.input("x", DataType::kFloat);
  for (const char* name : {"y", "y_scale", "y_zp", "r"}) b.output(name);
  const Tensor x = floats({2, 3}, {0.0f, 2.0f, -3.0f, -2.5f, 1.34f, 0.5f});
  const auto out = qdq::onnx::run_model(b.model(), {x});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].type, DataType::kUint8);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(out[1].type, DataType::kFloat);
  EXPECT_TRUE(out[1].shape.empty());
  EXPECT_EQ(out[2].type, DataType::kUint8);
  EXPECT_TRUE(out[2].shape.empty());
  // The same values as calling the operators directly.
  Tensor y = qdq::onnx::make_tensor(DataType::kUint8, {2, 3});
  const auto params = qdq::dynamic_quantize_linear(x.view(), y.mutable_view());
  EXPECT_EQ(out[0].data, y.data);
  EXPECT_EQ(as_floats(out[1])[0], params.y_scale);
  EXPECT_EQ(out[2].data[0], params.y_zero_point);
  EXPECT_EQ(out[3].type, DataType::kFloat);
  EXPECT_EQ(out[3].shape, (std::vector<int64_t>{2, 3}));
}

TEST(RunModel, OmittedOptionalInputsAndAttributes) {
  ModelBuilder b(21);
  auto& n = b.node("QuantizeLinear", {"x", "s", ""}, {"y"});
  ModelBuilder::int_attribute(n, "output_dtype", static_cast<int64_t>(DataType::kInt4));
  ModelBuilder::int_attribute(n, "axis", 0);
  b.input("x", DataType::kFloat);
  b.input("s", DataType::kFloat);
  b.output("y", DataType::kInt4, std::vector<int64_t>{3});
  const auto out = qdq::onnx::run_model(b.model(), {floats({3}, {1.0f, -20.0f, 7.0f}), floats({}, {1.0f})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, DataType::kInt4);
  EXPECT_EQ(out[0].data, (std::vector<uint8_t>{0x81, 0x07}));  // 1, −8 (saturated), 7
  // ai.onnx names the default domain too.
  ModelBuilder c(25, "ai.onnx");
  c.node("DequantizeLinear", {"x", "s"}, {"y"}).set_domain("ai.onnx");
  c.input("x", DataType::kInt8);
  c.input("s", DataType::kFloat);
  c.output("y");
  const auto r = qdq::onnx::run_model(c.model(), {bytes(DataType::kInt8, {2}, {0xFE, 3}), floats({}, {0.5f})});
  EXPECT_EQ(as_floats(r[0]), (std::vector<float>{-1.0f, 1.5f}));
}

TEST(RunModel, ThreadCountDoesNotChangeResults) {
  ModelBuilder b(25);
  b.node("QuantizeLinear", {"x", "s"}, {"y"});
  b.input("x", DataType::kFloat);
  b.input("s", DataType::kFloat);
  b.output("y");
  std::vector<float> values(100000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 997) * 0.37f - 150.0f;
  const std::vector<Tensor> inputs = {floats({100000}, values), floats({}, {0.7f})};
  qdq::ExecutionOptions one;
  one.num_threads = 1;
  qdq::ExecutionOptions four;
  four.num_threads = 4;
  EXPECT_EQ(qdq::onnx::run_model(b.model(), inputs, one)[0].data,
            qdq::onnx::run_model(b.model(), inputs, four)[0].data);
}

TEST(RunModel, AllConformanceTestsPass) {
  size_t tests = 0;
  for (const auto& entry : fs::directory_iterator(QDQ_ONNX_NODE_TESTS)) {
    SCOPED_TRACE(entry.path().string());
    const auto model = qdq::onnx::read_model_file((entry.path() / "model.onnx").string());
    const fs::path set = entry.path() / "test_data_set_0";
    std::vector<Tensor> inputs;
    for (int k = 0; fs::exists(set / ("input_" + std::to_string(k) + ".pb")); ++k) {
      inputs.push_back(qdq::onnx::read_tensor_file((set / ("input_" + std::to_string(k) + ".pb")).string()));
    }
    const auto got = qdq::onnx::run_model(model, inputs);
    size_t k = 0;
    for (; fs::exists(set / ("output_" + std::to_string(k) + ".pb")); ++k) {
      ASSERT_LT(k, got.size());
      const Tensor expected = qdq::onnx::read_tensor_file((set / ("output_" + std::to_string(k) + ".pb")).string());
      const auto diff = qdq::onnx::compare_tensors(got[k], expected, "output_" + std::to_string(k));
      EXPECT_FALSE(diff) << *diff;
    }
    EXPECT_EQ(k, got.size());
    ++tests;
  }
  EXPECT_EQ(tests, 30u);
}

// --- rejected models --------------------------------------------------------------------------------

TEST(ModelReject, UnknownOperator) {
  ModelBuilder b(25);
  b.node("Relu", {"x"}, {"y"}).set_name("act");
  b.input("x", DataType::kFloat);
  b.output("y");
  expect_error([&] { b.model(); }, {"m.onnx: node 0 (Relu 'act')", "operator 'Relu' is not supported"});
}

TEST(ModelReject, NonDefaultDomain) {
  ModelBuilder b(25);
  b.node("QuantizeLinear", {"x", "s"}, {"y"}).set_domain("com.microsoft");
  b.input("x", DataType::kFloat);
  b.input("s", DataType::kFloat);
  b.output("y");
  expect_error([&] { b.model(); }, {"m.onnx: node 0 (QuantizeLinear)", "domain 'com.microsoft'"});
}

TEST(ModelReject, AttributeNotInt) {
  ModelBuilder b(25);
  auto& n = b.node("QuantizeLinear", {"x", "s"}, {"y"});
  auto* a = n.add_attribute();
  a->set_name("axis");
  a->set_type(1);
  a->set_f(1.0f);
  b.input("x", DataType::kFloat);
  b.input("s", DataType::kFloat);
  b.output("y");
  expect_error([&] { b.model(); }, {"attribute 'axis' has type FLOAT (1), expected INT"});
}

TEST(ModelReject, UnknownAndDuplicateAttributes) {
  ModelBuilder b(25);
  auto& n = b.node("DequantizeLinear", {"x", "s"}, {"y"});
  ModelBuilder::int_attribute(n, "saturate", 1);  // QuantizeLinear only
  expect_error([&] { b.model(); }, {"unknown attribute 'saturate' for DequantizeLinear"});
  ModelBuilder c(25);
  auto& m = c.node("QuantizeLinear", {"x", "s"}, {"y"});
  ModelBuilder::int_attribute(m, "axis", 0);
  ModelBuilder::int_attribute(m, "axis", 1);
  expect_error([&] { c.model(); }, {"attribute 'axis' is given twice"});
}

TEST(ModelReject, ForbiddenTypeOrAttributeAtAnOpset) {
  // FLOAT8 inputs arrive with opset 19; opset 13's DequantizeLinear must refuse them.
  ModelBuilder b(13);
  b.node("DequantizeLinear", {"x", "s"}, {"y"});
  b.input("x", DataType::kFloat8E4M3FN);
  b.input("s", DataType::kFloat);
  b.output("y");
  expect_error(
      [&] {
        qdq::onnx::run_model(b.model(), {bytes(DataType::kFloat8E4M3FN, {1}, {0x38}), floats({}, {1.0f})});
      },
      {"m.onnx: node 0 (DequantizeLinear)"});
  // INT4 is v21+.
  ModelBuilder c(19);
  auto& n = c.node("QuantizeLinear", {"x", "s", "zp"}, {"y"});
  (void)n;
  c.input("x", DataType::kFloat);
  c.input("s", DataType::kFloat);
  c.input("zp", DataType::kInt4);
  c.output("y");
  expect_error(
      [&] {
        qdq::onnx::run_model(c.model(), {floats({1}, {1.0f}), floats({}, {1.0f}), bytes(DataType::kInt4, {}, {0})});
      },
      {"m.onnx: node 0 (QuantizeLinear)"});
  // block_size is v21+.
  ModelBuilder d(19);
  ModelBuilder::int_attribute(d.node("QuantizeLinear", {"x", "s"}, {"y"}), "block_size", 2);
  d.input("x", DataType::kFloat);
  d.input("s", DataType::kFloat);
  d.output("y");
  expect_error(
      [&] {
        qdq::onnx::run_model(d.model(), {floats({2}, {1.0f, 2.0f}), floats({1}, {1.0f})});
      },
      {"m.onnx: node 0 (QuantizeLinear)", "block_size"});
  // DynamicQuantizeLinear exists from opset 11.
  ModelBuilder e(10);
  e.node("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"});
  expect_error([&] { e.model(); }, {"DynamicQuantizeLinear needs opset 11 or later, the model imports opset 10"});
}

TEST(ModelReject, OpsetImport) {
  ModelBuilder b(25, "com.example");
  b.node("QuantizeLinear", {"x", "s"}, {"y"});
  expect_error([&] { b.model(); }, {"m.onnx: has no opset_import for the default ONNX domain"});
  ModelBuilder c(25);
  auto* o = c.proto().add_opset_import();
  o->set_domain("ai.onnx");
  o->set_version(19);
  expect_error([&] { c.model(); }, {"imports the default ONNX domain twice"});
  ModelBuilder d(25);
  d.proto().clear_graph();
  expect_error([&] { d.model(); }, {"m.onnx: has no graph"});
}

TEST(ModelReject, NodeArity) {
  ModelBuilder b(25);
  b.node("QuantizeLinear", {"x"}, {"y"});
  expect_error([&] { b.model(); }, {"has 1 inputs, QuantizeLinear takes 2 to 3"});
  ModelBuilder c(25);
  c.node("DynamicQuantizeLinear", {"x"}, {"y"});
  expect_error([&] { c.model(); }, {"has 1 outputs, DynamicQuantizeLinear has 3"});
  ModelBuilder d(25);
  d.node("DequantizeLinear", {"", "s"}, {"y"});
  expect_error([&] { d.model(); }, {"required input 0 is empty"});
}

TEST(ModelReject, Binding) {
  ModelBuilder b(25);
  b.node("QuantizeLinear", {"x", "s"}, {"y"});
  b.input("x", DataType::kFloat, std::vector<int64_t>{2, -1});
  b.input("s", DataType::kFloat);
  b.output("y");
  const auto model = b.model();
  expect_error(
      [&] {
        qdq::onnx::run_model(model, {floats({2}, {1, 2})});
      },
      {"m.onnx: the model takes 2 inputs, 1 given"});
  expect_error(
      [&] {
        qdq::onnx::run_model(model, {bytes(DataType::kUint8, {2, 1}, {1, 2}), floats({}, {1})});
      },
      {"input 0 ('x'): is UINT8 [2,1], but the model declares element type FLOAT"});
  expect_error(
      [&] {
        qdq::onnx::run_model(model, {floats({3, 1}, {1, 2, 3}), floats({}, {1})});
      },
      {"input 0 ('x'): is FLOAT [3,1], but the model declares shape [2,?]"});
  // Symbolic dimensions accept any size.
  EXPECT_EQ(qdq::onnx::run_model(model, {floats({2, 2}, {1, 2, 3, 4}), floats({}, {1})})[0].shape,
            (std::vector<int64_t>{2, 2}));

  ModelBuilder c(25);
  c.node("QuantizeLinear", {"x", "nowhere"}, {"y"});
  c.input("x", DataType::kFloat);
  c.output("y");
  expect_error([&] { qdq::onnx::run_model(c.model(), {floats({1}, {1})}); },
               {"input 'nowhere' is not a graph input, an initializer or an earlier node's output"});
  ModelBuilder d(25);
  d.node("QuantizeLinear", {"x", "x"}, {"y"});
  d.input("x", DataType::kFloat);
  d.output("z");
  expect_error([&] { qdq::onnx::run_model(d.model(), {floats({}, {1})}); }, {"graph output 0 'z' is never produced"});
  ModelBuilder e(25);
  e.node("QuantizeLinear", {"x", "x"}, {"y"});
  e.input("x", DataType::kFloat);
  e.output("y", DataType::kInt8);
  expect_error([&] { qdq::onnx::run_model(e.model(), {floats({}, {1})}); },
               {"graph output 0 ('y'): is UINT8 [], but the model declares element type INT8"});
}

TEST(ModelReject, CorruptTruncatedAndMissingFiles) {
  expect_error([] { qdq::onnx::parse_model(std::string("\x3a\x7f\x0a", 3), "bad.onnx"); },
               {"bad.onnx: not a valid ONNX model (corrupt or truncated protobuf)"});
  ModelBuilder b(25);
  b.node("QuantizeLinear", {"x", "s"}, {"y"});
  const std::string good = b.serialized();
  expect_error([&] { qdq::onnx::parse_model(good.substr(0, good.size() - 8), "cut.onnx"); },
               {"cut.onnx: not a valid ONNX model"});
  expect_error([] { qdq::onnx::read_model_file("/nonexistent/model.onnx"); },
               {"/nonexistent/model.onnx: cannot open: No such file or directory"});
  // A broken initializer names the model and the initializer.
  ModelBuilder c(25);
  auto* init = c.proto().mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(1);
  init->add_dims(2);
  init->set_raw_data(std::string(3, '\0'));
  expect_error([&] { c.model(); }, {"m.onnx: initializer 0 'w': raw_data has 3 bytes, but FLOAT [2] needs 8"});
}

TEST(ModelReject, OperatorErrorsNameTheNode) {
  ModelBuilder b(25);
  b.node("DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}).set_name("dq");
  b.input("x", DataType::kUndefined);
  b.output("y");
  expect_error([&] { qdq::onnx::run_model(b.model(), {bytes(DataType::kUint8, {1}, {1})}); },
               {"m.onnx: node 0 (DynamicQuantizeLinear 'dq')", "must be FLOAT"});
  expect_error([&] { qdq::onnx::run_model(b.model(), {floats({0}, {})}); },
               {"m.onnx: node 0 (DynamicQuantizeLinear 'dq')"});
}

}  // namespace
