// qdq quantize's C++ layer: scale rules of every format on edge-case weights, the axis each consumer op
// gets, Constant nodes and subgraphs, unknown-field preservation, external data, path attacks and
// atomic output.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>

#include "model_io.hpp"
#include "onnx_subset.pb.h"
#include "qdq_onnx.hpp"
#include "quantize_model.hpp"

namespace {

using qdq::DataType;
using qdq::onnx::QuantizeModelOptions;
using qdq::onnx::Tensor;
using qdq::onnx::WeightFormat;
using qdq::onnx::WeightGranularity;
namespace fs = std::filesystem;

constexpr WeightFormat kAllFormats[] = {WeightFormat::kInt8,  WeightFormat::kUint8,        WeightFormat::kInt4,
                                        WeightFormat::kUint4, WeightFormat::kFloat8E4M3FN, WeightFormat::kMxfp8,
                                        WeightFormat::kMxfp4};

bool blocked(WeightFormat f) {
  return f == WeightFormat::kInt4 || f == WeightFormat::kUint4 || f == WeightFormat::kMxfp8 ||
         f == WeightFormat::kMxfp4;
}

// binary16 <-> float for the tests, by hand (no compiler half type is portable).
double half_value(uint16_t b) {
  const int exponent = (b >> 10) & 0x1F, mantissa = b & 0x3FF;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return (b & 0x8000) ? -magnitude : magnitude;
}

// Rounds to the nearest binary16 (values in the normal or subnormal range; no overflow here).
uint16_t to_half(float v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(v));
  if (a < std::ldexp(1.0, -14))
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0)));
  const int e = std::ilogb(a);
  const double m = std::nearbyint(std::ldexp(a, 10 - e));  // 1024..2048; 2048 carries into the exponent
  return static_cast<uint16_t>(sign | ((static_cast<uint32_t>(e + 15) << 10) + static_cast<uint32_t>(m) - 1024));
}

// A scale element as a double, whatever its type.
double scale_value(const Tensor& scale, uint64_t k) {
  switch (scale.type) {
    case DataType::kFloat: {
      float f;
      std::memcpy(&f, scale.data.data() + 4 * k, 4);
      return f;
    }
    case DataType::kFloat8E8M0: return scale.data[k] == 0xFF ? NAN : std::ldexp(1.0, scale.data[k] - 127);
    case DataType::kFloat16: {
      uint16_t b;
      std::memcpy(&b, scale.data.data() + 2 * k, 2);
      return half_value(b);
    }
    default: return NAN;
  }
}

uint64_t elements(const Tensor& t) { return qdq::element_count(t.shape); }

// Dequantizes `q` (as DequantizeLinear at opset 24 would) into float32.
std::vector<float> dequantize(const qdq::onnx::QuantizedWeight& q, const WeightGranularity& g) {
  qdq::DequantizeLinearAttributes a;
  a.opset = 24;
  if (g.kind != WeightGranularity::Kind::kPerTensor) a.axis = g.axis;
  if (g.kind == WeightGranularity::Kind::kBlocked) a.block_size = g.block_size;
  a.output_dtype = static_cast<int64_t>(DataType::kFloat);
  Tensor out = qdq::onnx::make_tensor(DataType::kFloat, q.codes.shape);
  const qdq::TensorView zp = q.zero_point ? q.zero_point->view() : qdq::TensorView{};
  qdq::dequantize_linear(a, q.codes.view(), q.scale.view(), q.zero_point ? &zp : nullptr, out.mutable_view());
  std::vector<float> v(elements(out));
  std::memcpy(v.data(), out.data.data(), out.data.size());
  return v;
}

WeightGranularity granularity_for(WeightFormat f) {
  if (blocked(f)) return {WeightGranularity::Kind::kBlocked, 1, 32};
  return {WeightGranularity::Kind::kPerChannel, 0, 0};
}

// Two rows (channels) of 32 elements: row 0 holds `row0`, row 1 is ordinary data.
qdq::onnx::QuantizedWeight quantize_rows(WeightFormat f, const std::vector<float>& row0, Tensor& weight,
                                         bool symmetric = true) {
  weight = qdq::onnx::make_tensor(DataType::kFloat, {2, 32});
  std::vector<float> values(64);
  for (int k = 0; k < 32; ++k) values[static_cast<size_t>(k)] = row0[static_cast<size_t>(k) % row0.size()];
  for (int k = 32; k < 64; ++k) values[static_cast<size_t>(k)] = static_cast<float>(k - 48) / 8.0f;
  std::memcpy(weight.data.data(), values.data(), 256);
  return qdq::onnx::quantize_weight(weight.view(), f, granularity_for(f), symmetric, 24);
}

float weight_at(const Tensor& w, uint64_t k) {
  float f;
  std::memcpy(&f, w.data.data() + 4 * k, 4);
  return f;
}

TEST(QuantizeScaleRules, EveryScaleIsPositiveAndFiniteOnEdgeCases) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::map<std::string, std::vector<float>> cases = {
      {"zero", {0.0f}},
      {"negative zero", {-0.0f}},
      {"constant", {0.75f}},
      {"negative constant", {-3.0f}},
      {"tiny", {1e-30f, -2e-30f}},
      {"subnormal", {1e-40f, -1e-45f}},
      {"huge", {3e38f, -3.4e38f}},
      {"nan", {nan}},
      {"inf", {inf, -inf}},
      {"nan and values", {nan, 1.0f, -2.0f}},
      {"inf and values", {inf, 0.5f}},
  };
  for (WeightFormat f : kAllFormats) {
    for (bool symmetric : {true, false}) {
      const bool integer = f == WeightFormat::kInt8 || f == WeightFormat::kUint8 || f == WeightFormat::kInt4 ||
                           f == WeightFormat::kUint4;
      if (!symmetric && !integer) continue;
      for (const auto& [label, row0] : cases) {
        SCOPED_TRACE(std::string(qdq::onnx::weight_format_name(f)) + (symmetric ? " symmetric " : " asymmetric ") +
                     label);
        Tensor w;
        const auto q = quantize_rows(f, row0, w, symmetric);
        for (uint64_t k = 0; k < elements(q.scale); ++k) {
          const double s = scale_value(q.scale, k);
          EXPECT_TRUE(std::isfinite(s) && s > 0) << "scale " << k << " = " << s;
        }
        const std::vector<float> back = dequantize(q, granularity_for(f));
        // The ordinary row keeps its usual accuracy; finite elements of the edge row are within one
        // step of the grid of their scale (or exact for zero/constant rows of the integer formats).
        for (uint64_t k = 0; k < 64; ++k) {
          const float x = weight_at(w, k);
          if (!std::isfinite(x)) continue;
          const double range = k < 32 ? 0 : 2.0;
          double tolerance = 0.6 * range;  // loose bound for the coarsest formats (mxfp4 ≈ 2⁻¹ relative)
          if (k < 32) {
            double amax = 0;
            for (float v : row0) {
              if (std::isfinite(v)) amax = std::max(amax, std::fabs(static_cast<double>(v)));
            }
            tolerance = amax * 0.6 + 1e-37;
          }
          EXPECT_LE(std::fabs(static_cast<double>(back[k]) - x), tolerance) << "element " << k << " = " << x;
        }
        if (label == "zero" || label == "negative zero" || label == "nan") {
          for (uint64_t k = 0; k < 32; ++k) {
            if (std::isfinite(weight_at(w, k))) {
              EXPECT_EQ(back[k], 0.0f);
            }
          }
        }
        if (integer && (label == "constant" || label == "negative constant")) {
          for (uint64_t k = 0; k < 32; ++k) EXPECT_NEAR(back[k], weight_at(w, k), 1e-6 * std::fabs(weight_at(w, k)));
        }
        if (label.rfind("nan", 0) == 0 || label.rfind("inf", 0) == 0) {
          EXPECT_GT(q.non_finite, 0u);
        }
        EXPECT_TRUE(std::isfinite(q.sqnr_db));
        EXPECT_TRUE(std::isfinite(q.max_abs_error));
      }
    }
  }
}

TEST(QuantizeScaleRules, DocumentedValues) {
  Tensor w;
  // int8: max|w| / 127, zero point 0.
  auto q = quantize_rows(WeightFormat::kInt8, {127.0f, -1.0f}, w);
  EXPECT_EQ(scale_value(q.scale, 0), 1.0);
  ASSERT_TRUE(q.zero_point);
  EXPECT_EQ(q.zero_point->data[0], 0);
  // uint8 asymmetric: range [min(0,lo), max(0,hi)] / 255, zero point round(-lo / scale).
  q = quantize_rows(WeightFormat::kUint8, {-1.0f, 3.0f}, w, false);
  EXPECT_FLOAT_EQ(static_cast<float>(scale_value(q.scale, 0)), 4.0f / 255.0f);
  EXPECT_EQ(q.zero_point->data[0], 64);  // 63.75 → 64
  // uint8 on a positive constant: the range still includes 0.
  q = quantize_rows(WeightFormat::kUint8, {2.0f}, w, false);
  EXPECT_FLOAT_EQ(static_cast<float>(scale_value(q.scale, 0)), 2.0f / 255.0f);
  EXPECT_EQ(q.zero_point->data[0], 0);
  // Zero rows: scale 1.
  q = quantize_rows(WeightFormat::kInt8, {0.0f}, w);
  EXPECT_EQ(scale_value(q.scale, 0), 1.0);
  // float8e4m3fn: max|w| / 448.
  q = quantize_rows(WeightFormat::kFloat8E4M3FN, {448.0f, 1.0f}, w);
  EXPECT_EQ(scale_value(q.scale, 0), 1.0);
  EXPECT_FALSE(q.zero_point);
  // MX: 2^(floor(log2 max|w|) − emax): e4m3 emax 8, e2m1 emax 2.
  q = quantize_rows(WeightFormat::kMxfp8, {448.0f}, w);
  EXPECT_EQ(q.scale.type, DataType::kFloat8E8M0);
  EXPECT_EQ(q.scale.data[0], 127);
  q = quantize_rows(WeightFormat::kMxfp4, {6.0f}, w);
  EXPECT_EQ(q.scale.data[0], 127);
  q = quantize_rows(WeightFormat::kMxfp4, {8.0f}, w);
  EXPECT_EQ(q.scale.data[0], 128);
  q = quantize_rows(WeightFormat::kMxfp4, {0.0f}, w);
  EXPECT_EQ(q.scale.data[0], 127);  // an all-zero block: 2^0
  q = quantize_rows(WeightFormat::kMxfp8, {1e-45f}, w);
  EXPECT_EQ(q.scale.data[0], 0);  // clamped at 2^-127
  // int4 symmetric: max|w| / 7; uint4 asymmetric: range / 15.
  q = quantize_rows(WeightFormat::kInt4, {7.0f, -3.0f}, w);
  EXPECT_EQ(scale_value(q.scale, 0), 1.0);
  q = quantize_rows(WeightFormat::kUint4, {15.0f}, w, false);
  EXPECT_EQ(scale_value(q.scale, 0), 1.0);
}

TEST(QuantizeScaleRules, Float16WeightsKeepFloat16Scales) {
  Tensor w = qdq::onnx::make_tensor(DataType::kFloat16, {2, 32});
  for (uint64_t k = 0; k < 64; ++k) {
    const uint16_t h = to_half(k < 32 ? 1e-7f : static_cast<float>(k) / 64.0f);  // row 0: subnormal
    std::memcpy(w.data.data() + 2 * k, &h, 2);
  }
  const auto q =
      qdq::onnx::quantize_weight(w.view(), WeightFormat::kInt8, {WeightGranularity::Kind::kPerChannel, 0, 0}, true, 19);
  EXPECT_EQ(q.scale.type, DataType::kFloat16);
  EXPECT_GT(scale_value(q.scale, 0), 0.0);
  EXPECT_TRUE(std::isfinite(q.sqnr_db));
}

// ---------------------------------------------------------------------------------------------------
// Model-level tests

class TempFolder {
 public:
  TempFolder() {
    char pattern[] = "/tmp/qdq-quantize-test-XXXXXX";
    const char* made = ::mkdtemp(pattern);
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::string path_;
};

onnx::TensorProto float_tensor(const std::string& name, std::vector<int64_t> dims, float seed = 1.0f) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(1);
  uint64_t n = 1;
  for (int64_t d : dims) {
    t.add_dims(d);
    n *= static_cast<uint64_t>(d);
  }
  std::string raw(n * 4, '\0');
  for (uint64_t k = 0; k < n; ++k) {
    const float v = std::sin(static_cast<float>(k) * 0.37f + seed) * (1.0f + static_cast<float>(k % 7));
    std::memcpy(raw.data() + 4 * k, &v, 4);
  }
  t.set_raw_data(raw);
  return t;
}

class Model {
 public:
  explicit Model(int64_t opset = 21) {
    proto.set_ir_version(10);
    auto* o = proto.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    proto.mutable_graph()->set_name("g");
  }
  onnx::NodeProto& node(onnx::GraphProto& g, const std::string& op, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string& name = {}) {
    auto* n = g.add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + std::to_string(g.node_size()) : name);
    for (auto& i : inputs) n->add_input(i);
    for (auto& o : outputs) n->add_output(o);
    return *n;
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                        const std::string& name = {}) {
    return node(*proto.mutable_graph(), op, std::move(inputs), std::move(outputs), name);
  }
  static void attribute(onnx::NodeProto& n, const std::string& name, int64_t value) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(2);
    a->set_i(value);
  }
  void initializer(onnx::TensorProto t) { *proto.mutable_graph()->add_initializer() = std::move(t); }
  void input(const std::string& name) { proto.mutable_graph()->add_input()->set_name(name); }
  void output(const std::string& name) { proto.mutable_graph()->add_output()->set_name(name); }
  void save(const std::string& path) const {
    std::ofstream out(path, std::ios::binary);
    ASSERT_TRUE(proto.SerializeToOstream(&out));
  }
  onnx::ModelProto proto;
};

onnx::ModelProto load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromIstream(&in)) << path;
  return m;
}

const onnx::NodeProto* producer(const onnx::GraphProto& g, const std::string& output) {
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) {
      if (o == output) return &n;
    }
  }
  return nullptr;
}

int64_t int_attr(const onnx::NodeProto& n, const std::string& name, int64_t fallback = -99) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.i();
  }
  return fallback;
}

QuantizeModelOptions options(WeightFormat f) {
  QuantizeModelOptions o;
  o.format = f;
  o.min_elements = 16;
  return o;
}

TEST(QuantizeModel, AxisForEveryConsumerOp) {
  TempFolder dir;
  Model m(21);
  m.input("x");
  m.initializer(float_tensor("matmul_b", {64, 48}));
  m.node("MatMul", {"x", "matmul_b"}, {"y1"});
  m.initializer(float_tensor("matmul_b3", {2, 64, 48}));
  m.node("MatMul", {"x", "matmul_b3"}, {"y1b"});
  m.initializer(float_tensor("gemm_b", {64, 40}));
  m.node("Gemm", {"x", "gemm_b"}, {"y2"});
  m.initializer(float_tensor("gemm_bt", {40, 64}));
  Model::attribute(m.node("Gemm", {"x", "gemm_bt"}, {"y3"}), "transB", 1);
  m.initializer(float_tensor("conv_w", {16, 64, 3, 3}));
  m.node("Conv", {"x", "conv_w"}, {"y4"});
  m.initializer(float_tensor("convt_w", {64, 16, 3, 3}));
  m.node("ConvTranspose", {"x", "convt_w"}, {"y5"});
  for (const char* op : {"LSTM", "GRU", "RNN"}) {
    const std::string p = op;
    m.initializer(float_tensor(p + "_w", {1, 128, 64}));
    m.initializer(float_tensor(p + "_r", {1, 128, 32}));
    m.node(op, {"x", p + "_w", p + "_r"}, {p + "_y"});
  }
  m.initializer(float_tensor("embedding", {100, 64}));
  m.node("Gather", {"embedding", "ids"}, {"y6"});
  m.save(dir / "in.onnx");

  struct Expect {
    const char* name;
    int64_t channel_axis;
    int64_t block_axis;
  };
  const Expect expected[] = {{"matmul_b", 1, 0}, {"matmul_b3", 2, 1}, {"gemm_b", 1, 0}, {"gemm_bt", 0, 1},
                             {"conv_w", 0, 1},   {"convt_w", 1, 0},   {"LSTM_w", 1, 2}, {"LSTM_r", 1, 2},
                             {"GRU_w", 1, 2},    {"GRU_r", 1, 2},     {"RNN_w", 1, 2},  {"RNN_r", 1, 2},
                             {"embedding", 0, 1}};
  for (WeightFormat f : {WeightFormat::kInt8, WeightFormat::kInt4}) {
    const auto report = qdq::onnx::quantize_model_file(dir / "in.onnx", dir / "out.onnx", options(f));
    EXPECT_EQ(report.tensors.size(), std::size(expected));
    const onnx::ModelProto out = load(dir / "out.onnx");
    for (const Expect& e : expected) {
      SCOPED_TRACE(e.name);
      const onnx::NodeProto* dq = producer(out.graph(), e.name);
      ASSERT_NE(dq, nullptr);
      EXPECT_EQ(dq->op_type(), "DequantizeLinear");
      EXPECT_EQ(int_attr(*dq, "axis"), f == WeightFormat::kInt8 ? e.channel_axis : e.block_axis);
      EXPECT_EQ(int_attr(*dq, "block_size"), f == WeightFormat::kInt8 ? -99 : 32);
    }
  }
}

TEST(QuantizeModel, ConflictingAxesGoPerTensorOrAreSkipped) {
  TempFolder dir;
  Model m(21);
  m.input("x");
  m.initializer(float_tensor("shared", {64, 64}));
  m.node("MatMul", {"x", "shared"}, {"y1"});
  Model::attribute(m.node("Gemm", {"x", "shared"}, {"y2"}), "transB", 1);
  m.initializer(float_tensor("bias_like", {64, 64}));
  m.node("Add", {"x", "bias_like"}, {"y3"});
  m.initializer(float_tensor("small", {4, 2}));
  m.node("MatMul", {"x", "small"}, {"y4"});
  m.save(dir / "in.onnx");
  auto report = qdq::onnx::quantize_model_file(dir / "in.onnx", dir / "out.onnx", options(WeightFormat::kInt8));
  ASSERT_EQ(report.tensors.size(), 1u);
  EXPECT_EQ(report.tensors[0].granularity, "per-tensor");
  EXPECT_NE(report.tensors[0].note.find("different axes"), std::string::npos);
  ASSERT_EQ(report.skipped.size(), 2u);
  report = qdq::onnx::quantize_model_file(dir / "in.onnx", dir / "out.onnx", options(WeightFormat::kInt4));
  EXPECT_EQ(report.tensors.size(), 0u);
  bool found = false;
  for (const auto& s : report.skipped)
    found |= s.name == "shared" && s.reason.find("different axes") != std::string::npos;
  EXPECT_TRUE(found);
  EXPECT_NE(report.to_json().find("\"skipped\": [{\"name\": "), std::string::npos);
}

TEST(QuantizeModel, FiltersSelectWeights) {
  TempFolder dir;
  Model m(21);
  m.input("x");
  for (const char* name : {"layer0.w", "layer1.w", "head.w"}) {
    m.initializer(float_tensor(name, {32, 32}));
    m.node("MatMul", {"x", name}, {std::string(name) + ".y"});
  }
  m.initializer(float_tensor("conv.w", {8, 32, 3}));
  m.node("Conv", {"x", "conv.w"}, {"conv.y"});
  m.save(dir / "in.onnx");
  QuantizeModelOptions o = options(WeightFormat::kInt8);
  o.include = {"layer*"};
  o.exclude = {"*1.w"};
  auto report = qdq::onnx::quantize_model_file(dir / "in.onnx", dir / "out.onnx", o);
  ASSERT_EQ(report.tensors.size(), 1u);
  EXPECT_EQ(report.tensors[0].name, "layer0.w");
  o = options(WeightFormat::kInt8);
  o.op_types = {"Conv"};
  report = qdq::onnx::quantize_model_file(dir / "in.onnx", dir / "out.onnx", o);
  ASSERT_EQ(report.tensors.size(), 1u);
  EXPECT_EQ(report.tensors[0].name, "conv.w");
  o = options(WeightFormat::kInt8);
  o.min_elements = 2000;
  report = qdq::onnx::quantize_model_file(dir / "in.onnx", dir / "out.onnx", o);
  EXPECT_EQ(report.tensors.size(), 0u);
  EXPECT_EQ(report.skipped.size(), 4u);
}

// A Constant node in an If branch, a main-graph initializer read inside the branch, and unknown fields
// on every message kind the quantizer rewrites.
TEST(QuantizeModel, ConstantsSubgraphsAndUnknownFieldsSurvive) {
  TempFolder dir;
  Model m(21);
  // Field 999, varint 42: a field no onnx.proto message has.
  const std::string unknown = std::string("\xB8\x3E\x2A", 3);
  m.input("x");
  m.input("cond");
  m.output("y");
  m.initializer(float_tensor("outer_w", {32, 32}));
  m.proto.mutable_graph()->mutable_initializer(0)->mutable_unknown_fields()->append(unknown);
  m.proto.mutable_graph()->mutable_initializer(0)->set_doc_string("kept");
  onnx::NodeProto& branch = m.node("If", {"cond"}, {"y"}, "if");
  branch.mutable_unknown_fields()->append(unknown);
  auto* then_attr = branch.add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(5);
  then_attr->mutable_unknown_fields()->append(unknown);
  onnx::GraphProto& then_graph = *then_attr->mutable_g();
  then_graph.set_name("then");
  then_graph.mutable_unknown_fields()->append(unknown);
  onnx::NodeProto& constant = m.node(then_graph, "Constant", {}, {"inner_w"}, "const");
  constant.mutable_unknown_fields()->append(unknown);
  auto* value = constant.add_attribute();
  value->set_name("value");
  value->set_type(4);
  *value->mutable_t() = float_tensor("", {32, 16});
  value->mutable_t()->mutable_unknown_fields()->append(unknown);
  m.node(then_graph, "MatMul", {"x", "inner_w"}, {"t1"});
  m.node(then_graph, "MatMul", {"t1", "outer_w"}, {"t2"});
  auto* then_out = then_graph.add_output();
  then_out->set_name("t2");
  then_out->mutable_unknown_fields()->append(unknown);
  auto* else_attr = branch.add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(5);
  onnx::GraphProto& else_graph = *else_attr->mutable_g();
  m.node(else_graph, "Identity", {"x"}, {"e"});
  else_graph.add_output()->set_name("e");
  m.proto.mutable_unknown_fields()->append(unknown);
  m.proto.mutable_graph()->mutable_unknown_fields()->append(unknown);
  m.proto.mutable_graph()->mutable_input(0)->mutable_unknown_fields()->append(unknown);
  auto* meta = m.proto.add_metadata_props();
  meta->set_key("author");
  meta->set_value("test");
  auto* other = m.proto.add_opset_import();
  other->set_domain("com.example");
  other->set_version(3);
  m.save(dir / "in.onnx");

  const auto report = qdq::onnx::quantize_model_file(dir / "in.onnx", dir / "out.onnx", options(WeightFormat::kInt8));
  ASSERT_EQ(report.tensors.size(), 2u);
  const onnx::ModelProto out = load(dir / "out.onnx");
  EXPECT_EQ(out.unknown_fields(), unknown);
  EXPECT_EQ(out.graph().unknown_fields(), unknown);
  EXPECT_EQ(out.graph().input(0).unknown_fields(), unknown);
  ASSERT_EQ(out.metadata_props_size(), 1);
  ASSERT_EQ(out.opset_import_size(), 2);
  EXPECT_EQ(out.opset_import(1).domain(), "com.example");
  // The outer initializer: rewritten in place (unknown field and doc string kept), DQ in the main graph.
  const onnx::NodeProto* outer_dq = producer(out.graph(), "outer_w");
  ASSERT_NE(outer_dq, nullptr);
  EXPECT_EQ(outer_dq->op_type(), "DequantizeLinear");
  const onnx::TensorProto* outer_q = nullptr;
  for (const auto& t : out.graph().initializer()) {
    if (t.name() == outer_dq->input(0)) outer_q = &t;
  }
  ASSERT_NE(outer_q, nullptr);
  EXPECT_EQ(outer_q->data_type(), static_cast<int>(DataType::kInt8));
  EXPECT_EQ(outer_q->unknown_fields(), unknown);
  EXPECT_EQ(outer_q->doc_string(), "kept");
  // The If node, its attribute and its branch keep their unknown fields; the Constant became a DQ node
  // with the same name and unknown fields, its tensor an initializer of the branch.
  const onnx::NodeProto* if_node = producer(out.graph(), "y");
  ASSERT_NE(if_node, nullptr);
  EXPECT_EQ(if_node->unknown_fields(), unknown);
  EXPECT_EQ(if_node->attribute(0).unknown_fields(), unknown);
  const onnx::GraphProto& then_out_graph = if_node->attribute(0).g();
  EXPECT_EQ(then_out_graph.unknown_fields(), unknown);
  EXPECT_EQ(then_out_graph.output(0).unknown_fields(), unknown);
  const onnx::NodeProto* inner_dq = producer(then_out_graph, "inner_w");
  ASSERT_NE(inner_dq, nullptr);
  EXPECT_EQ(inner_dq->op_type(), "DequantizeLinear");
  EXPECT_EQ(inner_dq->name(), "const");
  EXPECT_EQ(inner_dq->unknown_fields(), unknown);
  EXPECT_EQ(int_attr(*inner_dq, "axis"), 1);
  ASSERT_EQ(then_out_graph.initializer_size(), 3);  // codes, scale, zero point
  EXPECT_EQ(then_out_graph.initializer(0).unknown_fields(), unknown);
  EXPECT_EQ(out.opset_import(0).version(), 21);
}

TEST(QuantizeModel, Float16WeightsDequantizeToFloat16AndMxSetsOutputDtype) {
  TempFolder dir;
  Model m(24);
  m.proto.set_ir_version(12);
  m.input("x");
  onnx::TensorProto t = float_tensor("w16", {64, 32});
  std::string raw(64 * 32 * 2, '\0');
  for (int k = 0; k < 64 * 32; ++k) {
    float v;
    std::memcpy(&v, t.raw_data().data() + 4 * k, 4);
    const uint16_t h = to_half(v);
    std::memcpy(raw.data() + 2 * k, &h, 2);
  }
  t.set_data_type(10);
  t.set_raw_data(raw);
  m.initializer(t);
  m.node("MatMul", {"x", "w16"}, {"y"});
  m.save(dir / "in.onnx");
  for (WeightFormat f : {WeightFormat::kInt8, WeightFormat::kMxfp4}) {
    qdq::onnx::quantize_model_file(dir / "in.onnx", dir / "out.onnx", options(f));
    const onnx::ModelProto out = load(dir / "out.onnx");
    const onnx::NodeProto* dq = producer(out.graph(), "w16");
    ASSERT_NE(dq, nullptr);
    for (const auto& init : out.graph().initializer()) {
      if (init.name() == dq->input(1)) {
        EXPECT_EQ(init.data_type(), f == WeightFormat::kMxfp4 ? 24 : 10);
      }
    }
    EXPECT_EQ(int_attr(*dq, "output_dtype"), f == WeightFormat::kMxfp4 ? 10 : -99);
  }
}

TEST(QuantizeModel, NeededOpsetConversionFailsCleanly) {
  TempFolder dir;
  Model m(9);
  m.proto.set_ir_version(4);
  m.input("x");
  m.initializer(float_tensor("w", {32, 32}));
  m.node("MatMul", {"x", "w"}, {"y"});
  m.save(dir / "in.onnx");
  // Per-channel int8 needs opset 13. Whether the converter can raise it or not, the call either
  // succeeds with opset >= 13 or fails naming the opsets, and then writes nothing.
  try {
    const auto report = qdq::onnx::quantize_model_file(dir / "in.onnx", dir / "out.onnx", options(WeightFormat::kInt8));
    EXPECT_GE(report.opset_to, 13);
  } catch (const qdq::Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs opset 13"), std::string::npos) << e.what();
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"in.onnx"});
  }
}

// ---------------------------------------------------------------------------------------------------
// External data, path attacks, atomicity

// Moves every initializer's raw_data into `data_name` next to the model.
void externalize(onnx::ModelProto& model, const std::string& folder, const std::string& data_name,
                 const std::string& location) {
  std::ofstream data(folder + "/" + data_name, std::ios::binary);
  uint64_t offset = 0;
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    data.write(t.raw_data().data(), static_cast<std::streamsize>(t.raw_data().size()));
    auto add = [&](const char* k, const std::string& v) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", location);
    add("offset", std::to_string(offset));
    add("length", std::to_string(t.raw_data().size()));
    offset += t.raw_data().size();
    t.clear_raw_data();
    t.set_data_location(1);
  }
}

Model two_matmuls() {
  Model m(21);
  m.input("x");
  m.initializer(float_tensor("w1", {64, 64}, 1.0f));
  m.node("MatMul", {"x", "w1"}, {"y1"});
  m.initializer(float_tensor("w2", {64, 32}, 2.0f));
  m.node("MatMul", {"y1", "w2"}, {"y2"});
  m.initializer(float_tensor("bias", {32}, 3.0f));
  m.node("Add", {"y2", "bias"}, {"y"});
  m.output("y");
  return m;
}

TEST(ModelIo, ExternalDataRoundTrip) {
  TempFolder dir;
  Model inline_model = two_matmuls();
  inline_model.save(dir / "inline.onnx");
  Model m = two_matmuls();
  externalize(m.proto, dir.path(), "weights.bin", "weights.bin");
  m.save(dir / "ext.onnx");
  QuantizeModelOptions o = options(WeightFormat::kInt8);
  const auto a = qdq::onnx::quantize_model_file(dir / "inline.onnx", dir / "a.onnx", o);
  const auto b = qdq::onnx::quantize_model_file(dir / "ext.onnx", dir / "b.onnx", o);  // external in: external out
  o.external_data = true;
  const auto c = qdq::onnx::quantize_model_file(dir / "ext.onnx", dir / "c.onnx", o);  // external in and out
  EXPECT_TRUE(c.external_data);
  EXPECT_TRUE(fs::exists(dir / "c.onnx.data"));
  EXPECT_TRUE(b.external_data);
  EXPECT_TRUE(fs::exists(dir / "b.onnx.data"));
  EXPECT_FALSE(a.external_data);
  EXPECT_FALSE(fs::exists(dir / "a.onnx.data"));
  // The same tensors whatever the layout: read all three back through ModelSource.
  auto tensors = [](const std::string& path) {
    qdq::onnx::ModelSource source(path);
    std::map<std::string, std::string> bytes;
    for (const auto& t : source.model().graph().initializer()) {
      const auto b = source.tensor_bytes(t, t.name());
      bytes[t.name()] = std::string(reinterpret_cast<const char*>(b.data()), b.size());
    }
    return bytes;
  };
  const auto ta = tensors(dir / "a.onnx");
  EXPECT_EQ(ta.size(), 7u);  // 2 × (codes, scale, zero point) + bias
  EXPECT_EQ(ta, tensors(dir / "b.onnx"));
  EXPECT_EQ(ta, tensors(dir / "c.onnx"));
  EXPECT_EQ(a.tensors[0].sqnr_db, c.tensors[0].sqnr_db);
  // In the external layout the big tensors are external, the small ones inline.
  const onnx::ModelProto cm = load(dir / "c.onnx");
  for (const auto& t : cm.graph().initializer()) {
    const bool big = qdq::onnx::ModelSource::data_bytes(t, t.name()) >= 1024;
    EXPECT_EQ(t.data_location() == 1, big) << t.name();
  }
  // A model-level write that keeps everything external works for convert-like callers too.
  qdq::onnx::ModelSource source(dir / "c.onnx");
  qdq::onnx::WriteModelOptions wo;
  wo.external_data = true;
  qdq::onnx::write_model_file(source.model(), &source, dir / "d.onnx", wo);
  EXPECT_EQ(ta, tensors(dir / "d.onnx"));
}

TEST(ModelIo, ExternalLocationsOutsideTheFolderAreRejected) {
  TempFolder dir;
  fs::create_directories(dir / "model");
  fs::create_directories(dir / "elsewhere");
  {
    Model m = two_matmuls();
    externalize(m.proto, dir / "elsewhere", "w.bin", "w.bin");
  }
  fs::create_symlink(dir / "elsewhere/w.bin", dir / "model/link.bin");
  fs::create_symlink(dir / "elsewhere", dir / "model/linkdir");
  const std::string absolute = dir / "elsewhere/w.bin";
  const std::pair<std::string, std::string> attacks[] = {
      {"../elsewhere/w.bin", "'..'"},
      {"sub/../../elsewhere/w.bin", "'..'"},
      {absolute, "absolute"},
      {"link.bin", "outside the model's folder"},
      {"linkdir/w.bin", "outside the model's folder"},
      {"missing.bin", "cannot be opened"},
  };
  for (const auto& [location, message] : attacks) {
    SCOPED_TRACE(location);
    Model m = two_matmuls();
    // The bytes go to a scratch file; the model then names the attack location.
    externalize(m.proto, dir / "model", "scratch.bin", location);
    m.save(dir / "model/in.onnx");
    try {
      qdq::onnx::quantize_model_file(dir / "model/in.onnx", dir / "model/out.onnx", options(WeightFormat::kInt8));
      ADD_FAILURE() << "accepted";
    } catch (const qdq::Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
    EXPECT_FALSE(fs::exists(dir / "model/out.onnx"));
  }
  // Length and range checks.
  Model m = two_matmuls();
  externalize(m.proto, dir / "model", "ok.bin", "ok.bin");
  m.proto.mutable_graph()->mutable_initializer(1)->mutable_external_data(1)->set_value("999999");
  m.save(dir / "model/in.onnx");
  EXPECT_THROW(qdq::onnx::ModelSource(dir / "model/in.onnx"), qdq::Error);
}

TEST(ModelIo, NothingIsLeftBehindAfterAFailure) {
  TempFolder dir;
  Model m = two_matmuls();
  m.save(dir / "in.onnx");
  QuantizeModelOptions o = options(WeightFormat::kInt8);
  o.external_data = true;
  o.before_commit = [&](const std::string& staged) {
    EXPECT_TRUE(fs::exists(staged));
    EXPECT_TRUE(fs::exists(staged + ".data"));
    throw qdq::Error("check failed");
  };
  EXPECT_THROW(qdq::onnx::quantize_model_file(dir / "in.onnx", dir / "out.onnx", o), qdq::Error);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"in.onnx"});
  // An existing output is left as it was.
  { std::ofstream(dir / "out.onnx") << "old"; }
  EXPECT_THROW(qdq::onnx::quantize_model_file(dir / "in.onnx", dir / "out.onnx", o), qdq::Error);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"in.onnx", "out.onnx"}));
  EXPECT_EQ(fs::file_size(dir / "out.onnx"), 3u);
  // A bad input: nothing written.
  { std::ofstream(dir / "bad.onnx") << "not a model"; }
  EXPECT_THROW(qdq::onnx::quantize_model_file(dir / "bad.onnx", dir / "out2.onnx", options(WeightFormat::kInt8)),
               qdq::Error);
  EXPECT_FALSE(fs::exists(dir / "out2.onnx"));
  // The signal-handler cleanup removes a writer's staged files.
  {
    qdq::onnx::ModelWriter writer(dir / "sig.onnx", true);
    qdq::onnx::remove_temporary_model_files();
    EXPECT_EQ(dir.entries(), (std::vector<std::string>{"bad.onnx", "in.onnx", "out.onnx"}));
  }
}

TEST(QuantizeModel, ReportJsonHasTheContractFields) {
  TempFolder dir;
  two_matmuls().save(dir / "in.onnx");
  const auto report = qdq::onnx::quantize_model_file(dir / "in.onnx", dir / "out.onnx", options(WeightFormat::kInt4));
  const std::string json = report.to_json();
  for (const char* key :
       {"\"input\": ", "\"output\": ", "\"format\": \"int4\"", "\"opset\": {\"from\": 21, \"to\": 21}",
        "\"ir_version\": {\"from\": 10, \"to\": 10}", "\"conversions\": []", "\"tensors\": [", "\"shape\": [64, 64]",
        "\"consumers\": [\"MatMul 'MatMul1'\"]", "\"granularity\": \"blocked(axis=0,block=32)\"",
        "\"bytes_before\": 16384", "\"sqnr_db\": ", "\"max_abs_error\": ", "\"skipped\": [{\"name\": \"bias\"",
        "\"totals\": {\"tensors_quantized\": 2",
        "\"weight_bytes_before\": ", "\"model_bytes_before\": ", "\"seconds\": "}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << " in " << json;
  }
  EXPECT_EQ(json.find("\"check\""), std::string::npos);
  EXPECT_NE(report.to_text().find("w1 [64,64]"), std::string::npos);
}

}  // namespace

namespace {

// The stored codes are exactly qdq::quantize_linear of the original weight with the stored scale and
// zero point at the output opset, for every format.
TEST(QuantizeModel, CodesAreQuantizeLinearOfTheStoredScales) {
  TempFolder dir;
  Model m(24);
  m.proto.set_ir_version(12);
  m.input("x");
  const onnx::TensorProto original = float_tensor("w", {96, 40}, 5.0f);
  m.initializer(original);
  m.node("MatMul", {"x", "w"}, {"y"});
  m.save(dir / "in.onnx");
  for (WeightFormat f : kAllFormats) {
    SCOPED_TRACE(std::string(qdq::onnx::weight_format_name(f)));
    qdq::onnx::quantize_model_file(dir / "in.onnx", dir / "out.onnx", options(f));
    const onnx::ModelProto out = load(dir / "out.onnx");
    const onnx::NodeProto* dq = producer(out.graph(), "w");
    ASSERT_NE(dq, nullptr);
    std::map<std::string, Tensor> inits;
    for (const auto& t : out.graph().initializer()) {
      Tensor tensor;
      tensor.type = static_cast<DataType>(t.data_type());
      tensor.shape.assign(t.dims().begin(), t.dims().end());
      tensor.data.assign(t.raw_data().begin(), t.raw_data().end());
      inits[t.name()] = std::move(tensor);
    }
    const Tensor& codes = inits.at(dq->input(0));
    const Tensor& scale = inits.at(dq->input(1));
    const Tensor* zero_point = dq->input_size() > 2 ? &inits.at(dq->input(2)) : nullptr;
    qdq::QuantizeLinearAttributes a;
    a.opset = 24;
    a.axis = int_attr(*dq, "axis");
    if (int_attr(*dq, "block_size") != -99) a.block_size = int_attr(*dq, "block_size");
    if (zero_point == nullptr) a.output_dtype = static_cast<int64_t>(codes.type);
    Tensor weight;
    weight.type = DataType::kFloat;
    weight.shape = {96, 40};
    weight.data.assign(original.raw_data().begin(), original.raw_data().end());
    Tensor expected = qdq::onnx::make_tensor(codes.type, codes.shape);
    const qdq::TensorView zv = zero_point ? zero_point->view() : qdq::TensorView{};
    qdq::quantize_linear(a, weight.view(), scale.view(), zero_point ? &zv : nullptr, expected.mutable_view());
    EXPECT_EQ(expected.data, codes.data);
  }
}

// quantize_weight works in pieces spread over threads (and, blocked along axis 0, finds each piece's
// parameters inside the piece): every byte and every report figure must be the same whatever the
// thread count or the order the caller's parallel_for runs the pieces in. The shape gives several
// pieces with odd row lengths; a few NaN and inf elements take the non-finite paths.
TEST(QuantizeWeight, ResultsDoNotDependOnThreads) {
  const std::vector<int64_t> shape = {600, 1030};
  std::vector<float> values(600 * 1030);
  uint32_t state = 12345;
  for (float& v : values) {
    state = state * 1664525u + 1013904223u;
    v = (static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * 3.0f;
  }
  values[7] = std::numeric_limits<float>::quiet_NaN();
  values[300000] = std::numeric_limits<float>::infinity();
  values[600000] = -std::numeric_limits<float>::infinity();
  const qdq::TensorView weight{DataType::kFloat, shape, values.data(), values.size() * sizeof(float)};
  std::vector<WeightGranularity> granularities(3);
  granularities[0].kind = WeightGranularity::Kind::kPerChannel;
  granularities[0].axis = 1;
  granularities[1].kind = granularities[2].kind = WeightGranularity::Kind::kBlocked;
  granularities[1].axis = 0;
  granularities[2].axis = 1;
  granularities[1].block_size = granularities[2].block_size = 32;
  qdq::ExecutionOptions one, three, reversed;
  one.num_threads = 1;
  three.num_threads = 3;
  reversed.parallel_for = [](size_t tasks, const std::function<void(size_t)>& body) {
    for (size_t t = tasks; t-- > 0;) body(t);
  };
  for (WeightFormat f : kAllFormats) {
    const bool mx = f == WeightFormat::kMxfp8 || f == WeightFormat::kMxfp4;
    const bool symmetric = f != WeightFormat::kUint8 && f != WeightFormat::kUint4;
    for (const WeightGranularity& granularity : granularities) {
      if (mx && granularity.kind != WeightGranularity::Kind::kBlocked) continue;
      SCOPED_TRACE(std::string(qdq::onnx::weight_format_name(f)) + " " + granularity.to_string());
      const auto base = qdq::onnx::quantize_weight(weight, f, granularity, symmetric, 24, one);
      for (const qdq::ExecutionOptions* execution : {&three, &reversed}) {
        const auto q = qdq::onnx::quantize_weight(weight, f, granularity, symmetric, 24, *execution);
        EXPECT_EQ(q.codes.data, base.codes.data);
        EXPECT_EQ(q.scale.data, base.scale.data);
        ASSERT_EQ(q.zero_point.has_value(), base.zero_point.has_value());
        if (q.zero_point) {
          EXPECT_EQ(q.zero_point->data, base.zero_point->data);
        }
        EXPECT_EQ(q.sqnr_db, base.sqnr_db);
        EXPECT_EQ(q.max_abs_error, base.max_abs_error);
        EXPECT_EQ(q.non_finite, 3u);
      }
    }
  }
}

}  // namespace

namespace {

TEST(QuantizeModel, ShortConvolutionChannelAxesBlockAlongTheKernel) {
  TempFolder dir;
  Model m(21);
  m.input("x");
  m.initializer(float_tensor("stft", {64, 1, 256}));  // one input channel: blocks along the kernel
  m.node("Conv", {"x", "stft"}, {"y1"});
  m.initializer(float_tensor("pointwise", {64, 1, 1}));  // nothing to block along
  m.node("Conv", {"x", "pointwise"}, {"y2"});
  m.save(dir / "in.onnx");
  QuantizeModelOptions o = options(WeightFormat::kInt4);
  const auto report = qdq::onnx::quantize_model_file(dir / "in.onnx", dir / "out.onnx", o);
  ASSERT_EQ(report.tensors.size(), 1u);
  EXPECT_EQ(report.tensors[0].granularity, "blocked(axis=2,block=32)");
  EXPECT_LT(report.tensors[0].bytes_after, report.tensors[0].bytes_before);
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0].name, "pointwise");
}

}  // namespace
