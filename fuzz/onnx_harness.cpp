// run_onnx_case: hostile ONNX files. See harness.hpp.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "harness.hpp"
#include "qdq_onnx.hpp"

namespace {

using qdq::DataType;
namespace onnx = qdq::onnx;

constexpr uint64_t kMaxSynthesizedBytes = 1u << 20;  // largest graph input the harness makes up

[[noreturn]] void violated(const char* condition, const std::string& detail) {
  std::fprintf(stderr, "qdq-fuzz invariant violated: %s: %s\n", condition, detail.c_str());
  std::fflush(stderr);
  std::abort();
}
#define QDQ_FUZZ_CHECK(cond, detail)        \
  do {                                      \
    if (!(cond)) violated(#cond, (detail)); \
  } while (0)

bool same_tensor(const onnx::Tensor& a, const onnx::Tensor& b) {
  return a.type == b.type && a.shape == b.shape && a.data == b.data;
}

/// A tensor that parsed must be well-formed and survive both serializations unchanged.
void check_tensor(const onnx::Tensor& t, const std::string& what) {
  const uint64_t count = qdq::element_count(t.shape);
  QDQ_FUZZ_CHECK(t.data.size() == qdq::storage_bytes(t.type, count),
                 what + ": data size does not match type and shape");
  for (bool typed : {false, true}) {
    const std::string bytes = onnx::serialize_tensor(t, typed);
    const onnx::Tensor back = onnx::parse_tensor(bytes, what + " (re-parsed)");
    QDQ_FUZZ_CHECK(same_tensor(t, back),
                   what + ": serialize/parse round trip changed the tensor (typed " + std::to_string(typed) + ")");
    QDQ_FUZZ_CHECK(back.name == t.name, what + ": round trip changed the name");
  }
  QDQ_FUZZ_CHECK(!onnx::compare_tensors(t, t, "t").has_value(), what + ": a tensor differs from itself");
  if (count > 0) {
    (void)onnx::format_element(t.type, onnx::element_code(t, 0));
    (void)onnx::format_element(t.type, onnx::element_code(t, count - 1));
  }
}

/// Made-up tensors for the graph inputs a model does not initialize: the declared type (FLOAT if
/// none) and shape (unknown dims 3, unknown rank [4]); bytes from a hash of the file. Empty if one
/// cannot be made (unusable type, too large).
bool synthesize_inputs(const onnx::Model& model, const uint8_t* data, size_t size, std::vector<onnx::Tensor>& out) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  for (const onnx::ValueInfo& info : model.inputs) {
    bool initializer = false;
    for (const onnx::Tensor& init : model.initializers) initializer = initializer || init.name == info.name;
    if (initializer) continue;
    const DataType type = info.type == DataType::kUndefined ? DataType::kFloat : info.type;
    std::vector<int64_t> shape = info.shape ? *info.shape : std::vector<int64_t>{4};
    for (int64_t& d : shape) {
      if (d < 0) d = 3;
    }
    onnx::Tensor t;
    try {
      const uint64_t count = qdq::element_count(shape);
      if (qdq::storage_bytes(type, count) > kMaxSynthesizedBytes) return false;
      t = onnx::make_tensor(type, shape, info.name);
    } catch (const qdq::Error&) {
      return false;
    }
    for (uint8_t& b : t.data) {
      h = h * 6364136223846793005ull + 1442695040888963407ull;
      b = static_cast<uint8_t>(h >> 56);
    }
    // keep sub-byte padding clear, as parse_tensor would
    const int bits = qdq::bit_width(type);
    const uint64_t count = qdq::element_count(shape);
    if (bits < 8 && !t.data.empty() && count % static_cast<uint64_t>(8 / bits) != 0) {
      t.data.back() &=
          static_cast<uint8_t>((1u << (count % static_cast<uint64_t>(8 / bits) * static_cast<uint64_t>(bits))) - 1u);
    }
    out.push_back(std::move(t));
  }
  return true;
}

}  // namespace

int run_onnx_case(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  try {
    const onnx::Tensor t = onnx::parse_tensor(bytes, "fuzz.pb");
    check_tensor(t, "fuzz.pb");
  } catch (const qdq::Error& e) {
    QDQ_FUZZ_CHECK(std::strncmp(e.what(), "fuzz.pb", 7) == 0,
                   std::string("message does not start with the file: ") + e.what());
  }

  onnx::Model model;
  try {
    model = onnx::parse_model(bytes, "fuzz.onnx");
  } catch (const qdq::Error& e) {
    QDQ_FUZZ_CHECK(std::strncmp(e.what(), "fuzz.onnx", 9) == 0,
                   std::string("message does not start with the file: ") + e.what());
    return 0;
  }
  for (const onnx::Tensor& init : model.initializers) check_tensor(init, "initializer '" + init.name + "'");

  std::vector<onnx::Tensor> inputs;
  if (!synthesize_inputs(model, data, size, inputs)) return 0;
  std::vector<onnx::Tensor> outputs;
  qdq::ExecutionOptions options;
  options.num_threads = 1;
  try {
    outputs = onnx::run_model(model, inputs, options);
  } catch (const qdq::Error& e) {
    QDQ_FUZZ_CHECK(std::strncmp(e.what(), "fuzz.onnx", 9) == 0,
                   std::string("message does not start with the file: ") + e.what());
    return 0;
  }
  QDQ_FUZZ_CHECK(outputs.size() == model.outputs.size(),
                 "run_model returned a different number of outputs than the graph has");
  for (const onnx::Tensor& out : outputs) {
    QDQ_FUZZ_CHECK(out.data.size() == qdq::storage_bytes(out.type, qdq::element_count(out.shape)),
                   "output '" + out.name + "' is malformed");
  }
  // The scalar kernels (and, for larger tensors, two threads) must agree bit for bit.
  qdq::ExecutionOptions scalar;
  scalar.num_threads = 2;
  scalar.force_scalar = true;
  const std::vector<onnx::Tensor> again = onnx::run_model(model, inputs, scalar);
  QDQ_FUZZ_CHECK(again.size() == outputs.size(), "output count differs between runs");
  for (size_t k = 0; k < outputs.size(); ++k) {
    QDQ_FUZZ_CHECK(same_tensor(outputs[k], again[k]),
                   "output " + std::to_string(k) + " differs between the default and scalar kernels");
  }
  return 0;
}
