// Quantize float32 -> int8 (per-tensor) and dequantize back through qdq's public API.
// Exits 0 if every value is as ONNX specifies, 1 otherwise.
#include <qdq/qdq.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

int main() {
  // x / 0.5 rounds half to even (-2.5 -> -2, -0.5 -> -0), then + 1; 60 and -70 test saturation.
  const std::vector<float> x = {-2.0f, -1.25f, -0.25f, 0.0f, 0.75f, 1.5f, 60.0f, -70.0f};
  const std::vector<int64_t> shape = {2, 4};
  const float scale = 0.5f;
  const int8_t zero_point = 1;

  const qdq::TensorView x_view{qdq::DataType::kFloat, shape, x.data(), x.size() * sizeof(float)};
  const qdq::TensorView scale_view{qdq::DataType::kFloat, {}, &scale, sizeof scale};  // rank 0
  const qdq::TensorView zero_point_view{qdq::DataType::kInt8, {}, &zero_point, sizeof zero_point};

  // Validate and size the output first; the zero point's type (INT8) decides y's type.
  const qdq::QuantizeLinearAttributes q_attributes;  // opset 25, every attribute at its default
  const qdq::TensorSpec y_spec = qdq::quantize_linear_output(q_attributes, x_view, scale_view, &zero_point_view);
  if (y_spec.type != qdq::DataType::kInt8 || y_spec.size_bytes != x.size()) {
    std::fprintf(stderr, "unexpected output spec: %s, %llu bytes\n", qdq::data_type_name(y_spec.type).c_str(),
                 static_cast<unsigned long long>(y_spec.size_bytes));
    return 1;
  }
  std::vector<int8_t> y(y_spec.size_bytes);
  qdq::quantize_linear(q_attributes, x_view, scale_view, &zero_point_view,
                       {y_spec.type, y_spec.shape, y.data(), y.size()});

  // Dequantize y with the same scale and zero point: (y - 1) * 0.5.
  const qdq::TensorView y_view{y_spec.type, y_spec.shape, y.data(), y.size()};
  const qdq::DequantizeLinearAttributes dq_attributes;
  const qdq::TensorSpec z_spec = qdq::dequantize_linear_output(dq_attributes, y_view, scale_view, &zero_point_view);
  std::vector<float> z(x.size());
  qdq::dequantize_linear(dq_attributes, y_view, scale_view, &zero_point_view,
                         {z_spec.type, z_spec.shape, z.data(), z.size() * sizeof(float)});

  const std::vector<int8_t> y_expected = {-3, -1, 1, 1, 3, 4, 121, -128};
  const std::vector<float> z_expected = {-2.0f, -1.0f, 0.0f, 0.0f, 1.0f, 1.5f, 60.0f, -64.5f};
  int failures = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (y[i] != y_expected[i] || z[i] != z_expected[i]) {
      std::fprintf(stderr, "element %zu: x=%g y=%d (want %d) z=%g (want %g)\n", i, x[i], y[i], y_expected[i], z[i],
                   z_expected[i]);
      ++failures;
    }
  }

  // Errors are qdq::Error, thrown before anything is written.
  std::vector<int8_t> untouched(y.size(), 42);
  try {
    const int8_t int8_scale = 1;  // scales are floating point
    const qdq::TensorView bad_scale{qdq::DataType::kInt8, {}, &int8_scale, sizeof int8_scale};
    qdq::quantize_linear(q_attributes, x_view, bad_scale, &zero_point_view,
                         {qdq::DataType::kInt8, shape, untouched.data(), untouched.size()});
    std::fprintf(stderr, "an INT8 scale was accepted\n");
    ++failures;
  } catch (const qdq::Error&) {
    for (int8_t value : untouched) failures += value != 42;
  }

  // The library and the headers it was compiled against agree on the version.
  const std::string expected_version = std::to_string(QDQ_VERSION_MAJOR) + "." + std::to_string(QDQ_VERSION_MINOR) +
                                       "." + std::to_string(QDQ_VERSION_PATCH);
  failures += qdq::version() != expected_version;

  std::printf("qdq %s: %s\n", std::string(qdq::version()).c_str(), failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
