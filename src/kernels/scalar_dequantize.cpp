// The scalar reference DequantizeLinear kernel: the portable fallback and the oracle for the
// vectorised kernels. y = round_to_output(float32(x − zero_point) · float32(scale)): the difference
// exact (integers) or in float32 (FLOAT4E2M1), one float32 product, one rounding to the output type.
#include <algorithm>

#include "kernels/kernels.hpp"
#include "kernels/params.hpp"

namespace qdq::detail {
namespace {

using T = DataType;
constexpr int64_t kChunk = 256;

/// float32(x − zero point) of elements [first, first + count).
void differences(const DequantizeCall& c, int64_t first, int64_t count, int64_t param_index, int step, float* d) {
  switch (c.x_type) {
    case T::kFloat8E4M3FN:
      for (int64_t i = 0; i < count; ++i) d[i] = decode<Float8E4M3FNFormat>(load_le<uint8_t>(c.x, first + i));
      return;
    case T::kFloat8E4M3FNUZ:
      for (int64_t i = 0; i < count; ++i) d[i] = decode<Float8E4M3FNUZFormat>(load_le<uint8_t>(c.x, first + i));
      return;
    case T::kFloat8E5M2:
      for (int64_t i = 0; i < count; ++i) d[i] = decode<Float8E5M2Format>(load_le<uint8_t>(c.x, first + i));
      return;
    case T::kFloat8E5M2FNUZ:
      for (int64_t i = 0; i < count; ++i) d[i] = decode<Float8E5M2FNUZFormat>(load_le<uint8_t>(c.x, first + i));
      return;
    case T::kFloat4E2M1:
      for (int64_t i = 0; i < count; ++i) {
        float v = decode<Float4E2M1Format>(load_code(c.x, 4, first + i));
        if (c.zero_point != nullptr) v -= decode<Float4E2M1Format>(load_code(c.zero_point, 4, param_index + i * step));
        d[i] = v;
      }
      return;
    default:
      for (int64_t i = 0; i < count; ++i) {
        int64_t v = load_integer(c.x, c.x_type, first + i);
        if (c.zero_point != nullptr) v -= load_integer(c.zero_point, c.zero_point_type, param_index + i * step);
        d[i] = static_cast<float>(v);  // one rounding (RNE); exact below 2^24
      }
      return;
  }
}

void store(const DequantizeCall& c, void* y, int64_t first, int64_t count, const float* p) {
  switch (c.y_type) {
    case T::kFloat16:
      for (int64_t i = 0; i < count; ++i) {
        const uint16_t h = float_to_half(p[i]);
        std::memcpy(static_cast<uint8_t*>(y) + (first + i) * 2, &h, 2);
      }
      return;
    case T::kBFloat16:
      for (int64_t i = 0; i < count; ++i) {
        const uint16_t b = float_to_bfloat16(p[i]);
        std::memcpy(static_cast<uint8_t*>(y) + (first + i) * 2, &b, 2);
      }
      return;
    default:
      std::memcpy(static_cast<uint8_t*>(y) + first * 4, p, static_cast<size_t>(count) * 4);
      return;
  }
}

}  // namespace

void dequantize_scalar(const DequantizeCall& call, void* y, int64_t begin, int64_t end) {
  float d[kChunk];
  for_each_piece(call.plan, begin, end, kChunk, [&](int64_t first, int64_t count, int64_t param_index, int step) {
    differences(call, first, count, param_index, step, d);
    float scale = static_cast<float>(load_real(call.scale, call.scale_type, param_index));
    for (int64_t i = 0; i < count; ++i) {
      if (step != 0) scale = static_cast<float>(load_real(call.scale, call.scale_type, param_index + i));
      d[i] = d[i] * scale;
    }
    store(call, y, first, count, d);
  });
}

}  // namespace qdq::detail
