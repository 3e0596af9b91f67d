// Weight-only quantization of ONNX models (quantize_model.hpp).
#include "quantize_model.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "model_io.hpp"
#include "onnx_subset.pb.h"
#include "version_converter.hpp"

namespace qdq::onnx {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& problem) { throw Error(what + ": " + problem); }

// ---------------------------------------------------------------------------------------------------
// Formats

struct FormatInfo {
  WeightFormat format;
  const char* name;
  DataType element;
  bool integer;
  bool blocked;       // blocks along the reduction axis (else per channel)
  bool mx;            // e8m0 block scales by the OCP MX rule
  bool signed_codes;  // integer formats: signed code range
  int bits;
  int emax;  // MX: exponent of the element type's largest power of two
};

constexpr FormatInfo kFormats[] = {
    {WeightFormat::kInt8, "int8", DataType::kInt8, true, false, false, true, 8, 0},
    {WeightFormat::kUint8, "uint8", DataType::kUint8, true, false, false, false, 8, 0},
    {WeightFormat::kInt4, "int4", DataType::kInt4, true, true, false, true, 4, 0},
    {WeightFormat::kUint4, "uint4", DataType::kUint4, true, true, false, false, 4, 0},
    {WeightFormat::kFloat8E4M3FN, "float8e4m3fn", DataType::kFloat8E4M3FN, false, false, false, true, 8, 0},
    {WeightFormat::kMxfp8, "mxfp8", DataType::kFloat8E4M3FN, false, true, true, true, 8, 8},
    {WeightFormat::kMxfp4, "mxfp4", DataType::kFloat4E2M1, false, true, true, true, 4, 2},
};

const FormatInfo& info(WeightFormat format) {
  for (const auto& f : kFormats) {
    if (f.format == format) return f;
  }
  return kFormats[0];
}

bool is_weight_type(int32_t type) {
  return type == static_cast<int32_t>(DataType::kFloat) || type == static_cast<int32_t>(DataType::kFloat16) ||
         type == static_cast<int32_t>(DataType::kBFloat16);
}

// ---------------------------------------------------------------------------------------------------
// Element conversions (host little-endian, like the rest of qdq::onnx)

// IEEE binary16 by hand: _Float16 is not available on every compiler and target qdq supports.
float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  const uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  const uint32_t wide =
      exponent == 31 ? sign | 0x7F800000u | (mantissa << 13) : sign | ((exponent + 112) << 23) | (mantissa << 13);
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}

// Rounds to nearest, ties to even (through float32 first: a scale's double rounding is harmless,
// the codes are computed from the stored value).
uint16_t double_to_half(double value) {
  const float f = static_cast<float>(value);
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) return static_cast<uint16_t>(sign | (magnitude > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (magnitude >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520 rounds to inf
  if (magnitude < 0x38800000u) {  // below 2^-14: a subnormal multiple of 2^-24, rounded half to even
    float m;
    std::memcpy(&m, &magnitude, 4);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(static_cast<double>(m) * 16777216.0)));
  }
  uint32_t h = (((magnitude >> 23) - 112) << 10) | ((magnitude >> 13) & 0x3FFu);
  const uint32_t rest = magnitude & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0)) ++h;  // a carry moves into the exponent
  return static_cast<uint16_t>(sign | h);
}

float bfloat_to_float(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}

uint16_t float_to_bfloat(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (std::isnan(value)) return 0x7FC0;
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// The stored value of a scale: rounded to nearest in the scale type; a result that underflows to 0
// becomes the type's smallest positive (subnormal) value, so no scale is ever 0, and no scale is
// NaN or infinite (the inputs are finite and at most float32's maximum).
double store_scale(double value, DataType type, uint8_t* out, uint64_t index) {
  switch (type) {
    case DataType::kFloat16: {
      uint16_t bits = double_to_half(value);
      if ((bits & 0x7FFF) == 0) bits = 0x0001;
      if ((bits & 0x7C00) == 0x7C00) bits = 0x7BFF;
      std::memcpy(out + 2 * index, &bits, 2);
      return half_to_float(bits);
    }
    case DataType::kBFloat16: {
      uint16_t bits = float_to_bfloat(static_cast<float>(value));
      if ((bits & 0x7FFF) == 0) bits = 0x0001;
      if ((bits & 0x7F80) == 0x7F80) bits = 0x7F7F;
      std::memcpy(out + 2 * index, &bits, 2);
      return bfloat_to_float(bits);
    }
    default: {
      float f = static_cast<float>(value);
      if (f == 0.0f) f = std::numeric_limits<float>::denorm_min();
      if (std::isinf(f)) f = std::numeric_limits<float>::max();
      std::memcpy(out + 4 * index, &f, 4);
      return f;
    }
  }
}

void store_code(DataType type, uint8_t* out, uint64_t index, int64_t value) {
  const int bits = bit_width(type);
  if (bits == 4) {
    const uint8_t nibble = static_cast<uint8_t>(value) & 0x0F;
    uint8_t& byte = out[index / 2];
    byte = (index % 2 == 0) ? static_cast<uint8_t>((byte & 0xF0) | nibble)
                            : static_cast<uint8_t>((byte & 0x0F) | (nibble << 4));
  } else {
    out[index] = static_cast<uint8_t>(value);
  }
}

// A copy of elements [first, first + count) of `tensor` (packed types element by element) as a tensor
// of `shape`.
Tensor slice(const Tensor& tensor, uint64_t first, uint64_t count, std::vector<int64_t> shape) {
  Tensor out = make_tensor(tensor.type, std::move(shape));
  const int bits = bit_width(tensor.type);
  if (bits >= 8) {
    const size_t size = static_cast<size_t>(bits / 8);
    std::memcpy(out.data.data(), tensor.data.data() + first * size, count * size);
  } else if (first % 2 == 0) {  // starts on a byte: whole bytes, then the padding nibble cleared
    std::memcpy(out.data.data(), tensor.data.data() + first / 2, static_cast<size_t>((count + 1) / 2));
    if (count % 2 == 1) out.data[count / 2] &= 0x0F;
  } else {
    for (uint64_t k = 0; k < count; ++k) {
      const uint64_t from = first + k;
      const uint8_t nibble = (tensor.data[from / 2] >> ((from % 2) * 4)) & 0x0F;
      store_code(tensor.type, out.data.data(), k, nibble);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Quantizing one weight

// Elements [first, first + count) of a weight as float32: the bytes themselves when they are float32
// and aligned, else decoded into `buffer`.
const float* decode(DataType type, const uint8_t* data, uint64_t first, uint64_t count, std::vector<float>& buffer) {
  if (type == DataType::kFloat) {
    const uint8_t* p = data + 4 * first;
    if (reinterpret_cast<uintptr_t>(p) % alignof(float) == 0) return reinterpret_cast<const float*>(p);
    buffer.resize(count);
    std::memcpy(buffer.data(), p, count * 4);
    return buffer.data();
  }
  buffer.resize(count);
  const bool half = type == DataType::kFloat16;
  for (uint64_t k = 0; k < count; ++k) {
    uint16_t bits;
    std::memcpy(&bits, data + 2 * (first + k), 2);
    buffer[k] = half ? half_to_float(bits) : bfloat_to_float(bits);
  }
  return buffer.data();
}

// Non-finite elements take the neutral value of the reduction, so NaN and ±inf never widen a range.
inline float finite_or(float v, float neutral) {
  return std::fabs(v) <= std::numeric_limits<float>::max() ? v : neutral;
}

// The scans below are written on 8-lane vectors (GCC/Clang vector extensions) so that they vectorise
// without -ffast-math: every lane does exactly what the scalar code did for its elements, in the same
// order, so ranges are identical and error sums identical. On x86-64 they are also compiled for AVX2
// and picked at run time (no FMA: a fused multiply-add would round differently from the other clone).
using Lanes = float __attribute__((vector_size(32)));
using LaneBits = int32_t __attribute__((vector_size(32)));
constexpr int kLanes = 8;
#if defined(__x86_64__) && defined(__ELF__) && !defined(QDQ_NO_TARGET_CLONES) && \
    ((defined(__clang__) && __clang_major__ >= 14) || (!defined(__clang__) && defined(__GNUC__)))
#define QDQ_SCAN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define QDQ_SCAN_CLONES
#endif

#define QDQ_LANES_LOAD(out, pointer) std::memcpy(&(out), (pointer), sizeof(Lanes))
#define QDQ_LANES_STORE(pointer, in) std::memcpy((pointer), &(in), sizeof(Lanes))
// mask ? a : b lane by lane (mask lanes all ones or all zeros).
#define QDQ_LANES_SELECT(mask, a, b) \
  reinterpret_cast<Lanes>((reinterpret_cast<LaneBits>(a) & (mask)) | (reinterpret_cast<LaneBits>(b) & ~(mask)))
// All ones in the lanes whose value is finite (|x| < inf; NaN has a larger bit pattern than inf).
#define QDQ_LANES_FINITE(x) ((reinterpret_cast<LaneBits>(x) & 0x7FFFFFFF) < 0x7F800000)

QDQ_SCAN_CLONES void reduce_range(const float* v, uint64_t n, float& lo, float& hi) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  Lanes l, h;
  for (int lane = 0; lane < kLanes; ++lane) {
    l[lane] = inf;
    h[lane] = -inf;
  }
  const Lanes pos = l, neg = h;
  uint64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    Lanes x;
    QDQ_LANES_LOAD(x, v + k);
    const LaneBits finite = QDQ_LANES_FINITE(x);
    const Lanes a = QDQ_LANES_SELECT(finite, x, pos), b = QDQ_LANES_SELECT(finite, x, neg);
    l = QDQ_LANES_SELECT(a < l, a, l);
    h = QDQ_LANES_SELECT(b > h, b, h);
  }
  for (; k < n; ++k) {
    l[0] = std::min(l[0], finite_or(v[k], inf));
    h[0] = std::max(h[0], finite_or(v[k], -inf));
  }
  for (int lane = 0; lane < kLanes; ++lane) {
    lo = std::min(lo, l[lane]);
    hi = std::max(hi, h[lane]);
  }
}

QDQ_SCAN_CLONES void widen_elementwise(const float* v, uint64_t n, float* lo, float* hi) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  Lanes pos, neg;
  for (int lane = 0; lane < kLanes; ++lane) {
    pos[lane] = inf;
    neg[lane] = -inf;
  }
  uint64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    Lanes x, l, h;
    QDQ_LANES_LOAD(x, v + k);
    QDQ_LANES_LOAD(l, lo + k);
    QDQ_LANES_LOAD(h, hi + k);
    const LaneBits finite = QDQ_LANES_FINITE(x);
    const Lanes a = QDQ_LANES_SELECT(finite, x, pos), b = QDQ_LANES_SELECT(finite, x, neg);
    l = QDQ_LANES_SELECT(a < l, a, l);
    h = QDQ_LANES_SELECT(b > h, b, h);
    QDQ_LANES_STORE(lo + k, l);
    QDQ_LANES_STORE(hi + k, h);
  }
  for (; k < n; ++k) {
    const float a = finite_or(v[k], inf), b = finite_or(v[k], -inf);
    lo[k] = a < lo[k] ? a : lo[k];
    hi[k] = b > hi[k] ? b : hi[k];
  }
}

// The symmetric rules need max|w| only, not min and max: one comparison per element instead of two,
// and one array instead of two. The magnitudes are compared as integers, which order exactly like the
// non-negative floats they are; a non-finite element counts as 0 (it never widens a range).
#define QDQ_LANES_FINITE_MAGNITUDE(x) \
  ((reinterpret_cast<LaneBits>(x) & 0x7FFFFFFF) & ((reinterpret_cast<LaneBits>(x) & 0x7FFFFFFF) < 0x7F800000))
// Lane-wise max of integer lanes (GCC and Clang compile the vector ?: to one vpmaxsd).
#define QDQ_BITS_MAX(a, b) ((a) > (b) ? (a) : (b))

QDQ_SCAN_CLONES void reduce_abs(const float* v, uint64_t n, float& amax) {
  LaneBits m = {};
  uint64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    Lanes x;
    QDQ_LANES_LOAD(x, v + k);
    const LaneBits a = QDQ_LANES_FINITE_MAGNITUDE(x);
    m = QDQ_BITS_MAX(a, m);
  }
  float result = amax;
  for (int lane = 0; lane < kLanes; ++lane) result = std::max(result, reinterpret_cast<Lanes>(m)[lane]);
  for (; k < n; ++k) result = std::max(result, finite_or(std::fabs(v[k]), 0.0f));
  amax = result;
}

QDQ_SCAN_CLONES void widen_abs_elementwise(const float* v, uint64_t n, float* amax) {
  uint64_t k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    Lanes x, m;
    QDQ_LANES_LOAD(x, v + k);
    QDQ_LANES_LOAD(m, amax + k);
    const LaneBits a = QDQ_LANES_FINITE_MAGNITUDE(x), old = reinterpret_cast<LaneBits>(m);
    const LaneBits wider = QDQ_BITS_MAX(a, old);
    QDQ_LANES_STORE(amax + k, wider);
  }
  for (; k < n; ++k) amax[k] = std::max(amax[k], finite_or(std::fabs(v[k]), 0.0f));
}

// Σw², Σ(w−ŵ)² and max|w−ŵ| over the finite w; counts the others. Blocks of 1024 are summed in float
// lanes (vectorised) and added in double; a block holding magnitudes whose squares could overflow
// float is summed in double instead.
QDQ_SCAN_CLONES void accumulate_error(const float* w, const float* back, uint64_t n, double& signal, double& noise,
                                      double& max_error, uint64_t& non_finite) {
  constexpr uint64_t kBlock = 1024;
  constexpr float kMaxFinite = std::numeric_limits<float>::max();
  const LaneBits magnitude = {0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF,
                              0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF};
  const Lanes zero = {};
  for (uint64_t b0 = 0; b0 < n; b0 += kBlock) {
    const uint64_t count = std::min(kBlock, n - b0);
    const float* x = w + b0;
    const float* y = back + b0;
    // The maxima are kept as magnitude bits and compared as integers (exactly the float order for
    // these non-negative values, a NaN error excluded as the float comparison excluded it): a 1-cycle
    // integer max instead of a compare and blend on the loop's critical path.
    Lanes s = {}, e2 = {};
    LaneBits m = {}, big = {}, bad = {};
    uint64_t k = 0;
    // First as if every w were finite and every error a number (half the work). Where that is not so,
    // a sum is not finite either, and the block is summed again with the non-finite w masked out; a
    // block that passes gets exactly what the masked loop would have computed.
    for (; k + kLanes <= count; k += kLanes) {
      Lanes xl, yl;
      QDQ_LANES_LOAD(xl, x + k);
      QDQ_LANES_LOAD(yl, y + k);
      const Lanes e = xl - yl;
      s += xl * xl;
      e2 += e * e;
      const LaneBits ae = reinterpret_cast<LaneBits>(e) & magnitude;
      const LaneBits ax = reinterpret_cast<LaneBits>(xl) & magnitude;
      m = QDQ_BITS_MAX(ae, m);
      big = QDQ_BITS_MAX(ax, big);
    }
    const LaneBits sums_finite = QDQ_LANES_FINITE(s) & QDQ_LANES_FINITE(e2);
    bool clean = true;
    for (int lane = 0; lane < kLanes; ++lane) clean = clean && sums_finite[lane] != 0;
    if (!clean) {
      s = e2 = Lanes{};
      m = big = LaneBits{};
      k = 0;
    }
    for (; !clean && k + kLanes <= count; k += kLanes) {
      Lanes xl, yl;
      QDQ_LANES_LOAD(xl, x + k);
      QDQ_LANES_LOAD(yl, y + k);
      const LaneBits finite = QDQ_LANES_FINITE(xl);
      const Lanes xv = QDQ_LANES_SELECT(finite, xl, zero), yv = QDQ_LANES_SELECT(finite, yl, zero);
      const Lanes e = xv - yv;
      s += xv * xv;
      e2 += e * e;
      const LaneBits ae = reinterpret_cast<LaneBits>(e) & magnitude;
      const LaneBits ae_number = ae & (ae <= 0x7F800000);
      const LaneBits axv = reinterpret_cast<LaneBits>(xv) & magnitude;
      m = QDQ_BITS_MAX(ae_number, m);
      big = QDQ_BITS_MAX(axv, big);
      bad += ~finite & 1;
    }
    float biggest = 0;
    for (int lane = 0; lane < kLanes; ++lane) biggest = std::max(biggest, reinterpret_cast<Lanes>(big)[lane]);
    for (uint64_t i = k; i < count; ++i) biggest = std::max(biggest, finite_or(std::fabs(x[i]), 0.0f));
    // Elements [from, count) one by one, in double.
    const auto add_in_double = [&](uint64_t from) {
      for (uint64_t i = from; i < count; ++i) {
        if (!(std::fabs(x[i]) <= kMaxFinite)) {
          ++non_finite;
          continue;
        }
        const double e = static_cast<double>(x[i]) - static_cast<double>(y[i]);
        signal += static_cast<double>(x[i]) * static_cast<double>(x[i]);
        noise += e * e;
        max_error = std::max(max_error, std::fabs(e));
      }
    };
    if (biggest > 1e18f) {  // squares near float's range: the whole block in double
      add_in_double(0);
      continue;
    }
    add_in_double(k);
    for (int lane = 0; lane < kLanes; ++lane) {
      signal += s[lane];
      noise += e2[lane];
      max_error = std::max(max_error, static_cast<double>(reinterpret_cast<Lanes>(m)[lane]));
      non_finite += static_cast<uint64_t>(bad[lane]);
    }
  }
}

// The geometry of a weight around the quantization axis: elements (o, c, j) of [outer, D, inner], and
// the index of the scale each element uses.
struct Geometry {
  std::vector<int64_t> dims;
  uint64_t elements = 0;
  uint64_t outer = 1, channels = 1, inner = 1;
  uint64_t blocks = 1;  // blocks along the axis (blocked only)
  uint64_t block = 0;
  WeightGranularity::Kind kind = WeightGranularity::Kind::kPerTensor;
  int64_t axis = 0;
  std::vector<int64_t> param_shape;
  uint64_t params = 1;

  uint64_t param_index(uint64_t o, uint64_t c, uint64_t j) const {
    switch (kind) {
      case WeightGranularity::Kind::kPerTensor: return 0;
      case WeightGranularity::Kind::kPerChannel: return c;
      case WeightGranularity::Kind::kBlocked: return (o * blocks + c / block) * inner + j;
    }
    return 0;
  }
};

Geometry geometry(std::span<const int64_t> shape, const WeightGranularity& granularity) {
  Geometry g;
  g.dims.assign(shape.begin(), shape.end());
  g.elements = element_count(shape);
  g.kind = granularity.kind;
  g.axis = granularity.axis;
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (g.kind == WeightGranularity::Kind::kPerTensor) {
    g.inner = g.elements;
    return g;
  }
  if (g.axis < 0 || g.axis >= rank) {
    throw Error("quantization axis " + std::to_string(g.axis) + " is outside a weight of shape " +
                shape_to_string(shape));
  }
  for (int64_t d = 0; d < g.axis; ++d) g.outer *= static_cast<uint64_t>(shape[d]);
  g.channels = static_cast<uint64_t>(shape[g.axis]);
  for (int64_t d = g.axis + 1; d < rank; ++d) g.inner *= static_cast<uint64_t>(shape[d]);
  if (g.kind == WeightGranularity::Kind::kPerChannel) {
    g.param_shape = {shape[g.axis]};
    g.params = g.channels;
  } else {
    if (granularity.block_size <= 0) throw Error("block size must be positive");
    g.block = static_cast<uint64_t>(granularity.block_size);
    g.blocks = (g.channels + g.block - 1) / g.block;
    g.param_shape = g.dims;
    g.param_shape[g.axis] = static_cast<int64_t>(g.blocks);
    g.params = g.outer * g.blocks * g.inner;
  }
  return g;
}

// Rows of dimension 0 handled per chunk: about `target` elements, whole blocks when blocked along axis 0,
// and an even element count when codes are packed, so each chunk starts on a byte.
uint64_t chunk_rows(const Geometry& g, bool packed, uint64_t target) {
  if (g.dims.empty() || g.dims[0] == 0) return 1;
  const uint64_t rows = static_cast<uint64_t>(g.dims[0]);
  const uint64_t row = g.elements / rows;
  uint64_t chunk = std::max<uint64_t>(1, target / std::max<uint64_t>(row, 1));
  if (g.kind == WeightGranularity::Kind::kBlocked && g.axis == 0) chunk = (chunk + g.block - 1) / g.block * g.block;
  if (packed && row % 2 == 1 && chunk % 2 == 1) ++chunk;
  return std::min(chunk, rows);
}

// The scale (and zero point) tensors' elements used by rows [r0, r1): [first, first + count), shape.
struct ParamSlice {
  uint64_t first = 0, count = 0;
  std::vector<int64_t> shape;
};

ParamSlice param_slice(const Geometry& g, uint64_t r0, uint64_t r1) {
  ParamSlice s;
  const bool whole_rows = g.dims.empty() || (r0 == 0 && r1 == static_cast<uint64_t>(g.dims[0]));
  if (g.kind == WeightGranularity::Kind::kPerTensor || whole_rows ||
      (g.kind == WeightGranularity::Kind::kPerChannel && g.axis != 0)) {
    s.first = 0;
    s.count = g.params;
    s.shape = g.param_shape;
    return s;
  }
  if (g.kind == WeightGranularity::Kind::kPerChannel) {  // axis 0
    s.first = r0;
    s.count = r1 - r0;
    s.shape = {static_cast<int64_t>(r1 - r0)};
    return s;
  }
  uint64_t param_row = 1;
  for (size_t d = 1; d < g.param_shape.size(); ++d) param_row *= static_cast<uint64_t>(g.param_shape[d]);
  uint64_t p0 = r0, p1 = r1;
  if (g.axis == 0) {
    p0 = r0 / g.block;
    p1 = (r1 + g.block - 1) / g.block;
  }
  s.first = p0 * param_row;
  s.count = (p1 - p0) * param_row;
  s.shape = g.param_shape;
  s.shape[0] = static_cast<int64_t>(p1 - p0);
  return s;
}

void check_format_granularity(const FormatInfo& f, const WeightGranularity& granularity) {
  if (f.mx && (granularity.kind != WeightGranularity::Kind::kBlocked || granularity.block_size != 32)) {
    throw Error(std::string(f.name) + " needs blocks of 32 (OCP Microscaling)");
  }
}

// Helper threads started once and reused for every wave of every tensor (a model has thousands of
// waves; starting threads for each cost more than some waves' work). The calling thread works too,
// so `threads` threads run in all, never more.
class WorkerPool {
 public:
  explicit WorkerPool(int threads) {
    for (int t = 1; t < threads; ++t) helpers_.emplace_back([this] { help(); });
  }
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : helpers_) t.join();
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // body(task) for every task in [0, tasks), on the helpers and the calling thread; returns when all
  // have finished and rethrows the first exception one of them threw. Not reentrant.
  void run(size_t tasks, const std::function<void(size_t)>& body) {
    if (helpers_.empty() || tasks <= 1) {
      for (size_t k = 0; k < tasks; ++k) body(k);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      body_ = &body;
      tasks_ = tasks;
      next_.store(0);
      failure_ = nullptr;
      busy_ = static_cast<int>(helpers_.size());
      ++generation_;
    }
    wake_.notify_all();
    drain();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return busy_ == 0; });
    body_ = nullptr;
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
  }

 private:
  void drain() {
    for (size_t k = next_.fetch_add(1); k < tasks_; k = next_.fetch_add(1)) {
      try {
        (*body_)(k);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!failure_) failure_ = std::current_exception();
      }
    }
  }

  void help() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      lock.unlock();
      drain();
      lock.lock();
      if (--busy_ == 0) done_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> helpers_;
  const std::function<void(size_t)>* body_ = nullptr;
  size_t tasks_ = 0;
  std::atomic<size_t> next_{0};
  uint64_t generation_ = 0;
  int busy_ = 0;
  std::exception_ptr failure_;
  bool stop_ = false;
};

// The threads `execution` asks for when it brings no parallel_for of its own.
int pool_threads(const ExecutionOptions& execution) {
  if (execution.parallel_for) return 1;
  return execution.num_threads > 0 ? execution.num_threads : default_num_threads();
}

// `execution` with its parallel_for running on `pool` (when it had none of its own).
ExecutionOptions on_pool(const ExecutionOptions& execution, WorkerPool& pool) {
  ExecutionOptions result = execution;
  if (!result.parallel_for) {
    result.parallel_for = [&pool](size_t tasks, const std::function<void(size_t)>& body) { pool.run(tasks, body); };
  }
  return result;
}

}  // namespace

std::string_view weight_format_name(WeightFormat format) { return info(format).name; }

std::optional<WeightFormat> parse_weight_format(std::string_view name) {
  for (const auto& f : kFormats) {
    if (name == f.name) return f.format;
  }
  return std::nullopt;
}

std::string WeightGranularity::to_string() const {
  switch (kind) {
    case Kind::kPerTensor: return "per-tensor";
    case Kind::kPerChannel: return "per-channel(axis=" + std::to_string(axis) + ")";
    case Kind::kBlocked: return "blocked(axis=" + std::to_string(axis) + ",block=" + std::to_string(block_size) + ")";
  }
  return "?";
}

int64_t required_opset(WeightFormat format, const WeightGranularity& granularity, DataType weight_type) {
  const FormatInfo& f = info(format);
  int64_t opset = 10;
  if (granularity.kind != WeightGranularity::Kind::kPerTensor) opset = 13;
  if (weight_type != DataType::kFloat) opset = std::max<int64_t>(opset, 19);  // float16/bfloat16 scales
  if (f.element == DataType::kFloat8E4M3FN) opset = std::max<int64_t>(opset, 19);
  if (f.bits == 4 || granularity.kind == WeightGranularity::Kind::kBlocked) opset = std::max<int64_t>(opset, 21);
  if (f.element == DataType::kFloat4E2M1) opset = std::max<int64_t>(opset, 23);
  if (f.mx) opset = std::max<int64_t>(opset, 24);
  return opset;
}

namespace {

// Receives a weight's codes in order, a wave of pieces at a time (the bytes are valid during the call).
using CodesSink = std::function<void(std::span<const uint8_t> codes)>;

// quantize_weight's work; its pieces run on execution.parallel_for when it is set, else serially.
// With a `sink` the codes go to it as they are made, through one wave-sized buffer that stays in the
// cache, and the result's codes tensor has no data: no tensor-sized buffer is allocated, zero-filled
// and read back.
QuantizedWeight quantize_pieces(const TensorView& weight, WeightFormat format, const WeightGranularity& granularity,
                                bool symmetric, int64_t opset, const ExecutionOptions& execution,
                                const std::function<void(size_t end)>& release, const CodesSink& sink) {
  const FormatInfo& f = info(format);
  if (!is_weight_type(static_cast<int32_t>(weight.type))) {
    throw Error("cannot quantize a " + data_type_name(weight.type) + " weight (FLOAT, FLOAT16 or BFLOAT16 only)");
  }
  if (!f.integer && !symmetric) throw Error(std::string(f.name) + " has no asymmetric form");
  check_format_granularity(f, granularity);
  const Geometry g = geometry(weight.shape, granularity);
  const uint64_t weight_size = static_cast<uint64_t>(bit_width(weight.type) / 8);
  if (weight.size_bytes != g.elements * weight_size) throw Error("weight byte size does not match its shape");
  const auto* x = static_cast<const uint8_t*>(weight.data);
  const DataType scale_type = f.mx ? DataType::kFloat8E8M0 : weight.type;
  const bool packed = f.bits == 4;
  const uint64_t rows = g.dims.empty() ? 1 : static_cast<uint64_t>(g.dims[0]);
  const uint64_t row = rows == 0 ? 0 : g.elements / rows;
  const uint64_t step = chunk_rows(g, packed, uint64_t{1} << 22);
  // Pass 1 scans pieces of about 1 MiB of float32 in parallel where each piece keeps its own ranges.
  const uint64_t scan_step = chunk_rows(g, packed, uint64_t{1} << 18);
  // Pass 2 quantizes, dequantizes and compares in pieces of about 256 KiB of float32, so the weight,
  // its codes and its dequantized copy all stay in the core's L2 cache (2 MiB or less on current
  // x86-64 cores) from the quantization to the error sum: the weight is read from memory once there.
  const uint64_t step2 = chunk_rows(g, packed, uint64_t{1} << 16);

  // Pass 1: the finite range of every scale group. NaN and ±inf do not widen a range. The symmetric
  // rules use max|w| only: then `hi` holds it and `lo` is unused (every `lo` pointer is `hi`'s).
  const bool magnitude_only = symmetric;
  std::vector<float> lo(magnitude_only ? 0 : g.params, std::numeric_limits<float>::infinity());
  std::vector<float> hi(g.params, magnitude_only ? 0.0f : -std::numeric_limits<float>::infinity());
  float* const lo_base = magnitude_only ? hi.data() : lo.data();
  const auto reduce = [magnitude_only](const float* v, uint64_t n, float& l, float& h) {
    if (magnitude_only) {
      reduce_abs(v, n, h);
    } else {
      reduce_range(v, n, l, h);
    }
  };
  const auto widen = [magnitude_only](const float* v, uint64_t n, float* l, float* h) {
    if (magnitude_only) {
      widen_abs_elementwise(v, n, h);
    } else {
      widen_elementwise(v, n, l, h);
    }
  };
  QuantizedWeight result;
  std::vector<float> decoded;
  // Blocked along axis 0 (MatMul weights blocked along K), a piece of pass 2 holds whole blocks, so it
  // finds its own ranges and parameters just before quantizing them: the weight is read from memory
  // once. Packed zero points need each piece's parameters to start on a byte.
  const bool fused = g.kind == WeightGranularity::Kind::kBlocked && g.axis == 0 && !g.dims.empty() && g.inner > 0 &&
                     step2 % g.block == 0 && (!packed || ((step2 / g.block) * g.inner) % 2 == 0);
  const auto scan_rows = [&](uint64_t r0, uint64_t r1, float* range_lo, float* range_hi, std::vector<float>& buffer) {
    const uint64_t e0 = r0 * row, e1 = r1 * row;
    const float* v = decode(weight.type, x, e0, e1 - e0, buffer);
    if (g.kind == WeightGranularity::Kind::kPerTensor) {
      reduce(v, e1 - e0, range_lo[0], range_hi[0]);
    } else if (g.inner == 1) {
      // The axis is the last one: rows of `channels` consecutive elements.
      for (uint64_t e = e0; e < e1; e += g.channels) {
        const float* line = v + (e - e0);
        const uint64_t o = e / g.channels;
        if (g.kind == WeightGranularity::Kind::kPerChannel) {
          widen(line, g.channels, range_lo, range_hi);
        } else {
          for (uint64_t b = 0; b < g.blocks; ++b) {
            const uint64_t first = b * g.block, n = std::min(g.block, g.channels - first);
            reduce(line + first, n, range_lo[o * g.blocks + b], range_hi[o * g.blocks + b]);
          }
        }
      }
    } else {
      uint64_t line = e0 / g.inner;
      uint64_t o = line / g.channels, c = line % g.channels;
      for (uint64_t e = e0; e < e1; e += g.inner) {
        const float* values = v + (e - e0);
        if (g.kind == WeightGranularity::Kind::kPerChannel) {
          reduce(values, g.inner, range_lo[c], range_hi[c]);
        } else {
          const uint64_t p = (o * g.blocks + c / g.block) * g.inner;
          widen(values, g.inner, range_lo + p, range_hi + p);
        }
        if (++c == g.channels) {
          c = 0;
          ++o;
        }
      }
    }
  };

  // Runs piece(0 .. pieces) `wave` at a time, on execution.parallel_for when it is set (pieces are
  // fixed, so results never depend on it), and after_wave(end) when a wave's pieces have finished.
  const auto run_waves = [&](uint64_t pieces, uint64_t wave, const std::function<void(uint64_t)>& piece,
                             const std::function<void(uint64_t)>& after_wave) {
    for (uint64_t w0 = 0; w0 < pieces; w0 += wave) {
      const uint64_t w1 = std::min(pieces, w0 + wave);
      if (execution.parallel_for && w1 - w0 > 1) {
        execution.parallel_for(static_cast<size_t>(w1 - w0), [&](size_t task) { piece(w0 + task); });
      } else {
        for (uint64_t k = w0; k < w1; ++k) piece(k);
      }
      after_wave(w1);
    }
  };

  if (!fused && g.inner > 0 && rows > 0) {
    // Blocked or per channel along axis 0, the parameters follow the rows: one serial pass (a piece's
    // copy of every range would cost more than its scan).
    if (g.kind == WeightGranularity::Kind::kBlocked ||
        (g.kind == WeightGranularity::Kind::kPerChannel && g.axis == 0)) {
      for (uint64_t r0 = 0; r0 < rows; r0 += step) {
        const uint64_t r1 = std::min(rows, r0 + step);
        scan_rows(r0, r1, lo_base, hi.data(), decoded);
        if (release) release(static_cast<size_t>(r1 * row * weight_size));
      }
    } else {
      // Per tensor or per channel along a later axis (at most a row's worth of parameters): each piece
      // widens its own copy of the ranges; the copies are merged in piece order (min and max are
      // exact, so any order gives the same). Waves of 16 pieces: about 16 MiB of float32, then its
      // pages are released.
      constexpr uint64_t kWave = 16;
      const uint64_t pieces = (rows + scan_step - 1) / scan_step;
      std::vector<float> piece_lo(magnitude_only ? 0 : static_cast<size_t>(kWave * g.params));
      std::vector<float> piece_hi(static_cast<size_t>(kWave * g.params));
      run_waves(
          pieces, kWave,
          [&](uint64_t k) {
            float* h = piece_hi.data() + (k % kWave) * g.params;
            float* l = magnitude_only ? h : piece_lo.data() + (k % kWave) * g.params;
            if (magnitude_only) {
              std::fill(h, h + g.params, 0.0f);
            } else {
              std::fill(l, l + g.params, std::numeric_limits<float>::infinity());
              std::fill(h, h + g.params, -std::numeric_limits<float>::infinity());
            }
            std::vector<float> buffer;
            scan_rows(k * scan_step, std::min(rows, (k + 1) * scan_step), l, h, buffer);
          },
          [&](uint64_t w1) {
            for (uint64_t k = (w1 - 1) / kWave * kWave; k < w1; ++k) {
              const float* h = piece_hi.data() + (k % kWave) * g.params;
              if (!magnitude_only) {
                const float* l = piece_lo.data() + (k % kWave) * g.params;
                for (uint64_t q = 0; q < g.params; ++q) lo[q] = std::min(lo[q], l[q]);
              }
              for (uint64_t q = 0; q < g.params; ++q) hi[q] = std::max(hi[q], h[q]);
            }
            if (release) release(static_cast<size_t>(std::min(rows, w1 * scan_step) * row * weight_size));
          });
    }
  }

  // The scales and zero points (README of the rules: docs/model-quantization.md).
  result.scale = make_tensor(scale_type, g.param_shape);
  const bool with_zero_point = f.integer || (f.element == DataType::kFloat8E4M3FN && !f.mx && opset < 21);
  Tensor zero_point;
  if (with_zero_point) zero_point = make_tensor(f.element, g.param_shape);
  const double type_max = weight.type == DataType::kFloat16    ? 65504.0
                          : weight.type == DataType::kBFloat16 ? 3.3895313892515355e38
                                                               : static_cast<double>(std::numeric_limits<float>::max());
  const int64_t qmin = f.integer ? (f.signed_codes ? -(int64_t{1} << (f.bits - 1)) : 0) : 0;
  const int64_t qmax = f.integer ? (f.signed_codes ? (int64_t{1} << (f.bits - 1)) - 1 : (int64_t{1} << f.bits) - 1) : 0;
  // The symmetric integer rule on float32 scales, in float: a float32 quotient of float32 operands
  // computed in double and rounded to float is the correctly rounded float32 quotient (double has
  // more than 2 * 24 + 2 bits), so this is store_scale(amax / levels) exactly, at a fraction of its cost.
  const bool float_symmetric = magnitude_only && f.integer && scale_type == DataType::kFloat;
  const float float_levels = static_cast<float>(f.signed_codes ? qmax : (qmax - 1) / 2);
  const auto compute_params = [&](uint64_t p_begin, uint64_t p_end) {
    if (float_symmetric) {
      uint8_t* scales = result.scale.data.data();
      for (uint64_t p = p_begin; p < p_end; ++p) {
        const float amax = hi[p];
        float scale = amax > 0 ? amax / float_levels : 1.0f;
        if (scale == 0.0f) scale = std::numeric_limits<float>::denorm_min();
        std::memcpy(scales + 4 * p, &scale, 4);
      }
      // make_tensor zero-filled the zero points, the signed formats' 0.
      if (!f.signed_codes) {
        for (uint64_t p = p_begin; p < p_end; ++p) store_code(f.element, zero_point.data.data(), p, (qmax + 1) / 2);
      }
      return;
    }
    for (uint64_t p = p_begin; p < p_end; ++p) {
      const bool any = magnitude_only || lo[p] <= hi[p];
      const double amax = magnitude_only ? static_cast<double>(hi[p])
                          : any ? std::max(std::fabs(static_cast<double>(lo[p])), std::fabs(static_cast<double>(hi[p])))
                                : 0.0;
      if (f.mx) {
        int code = 127;  // 2^0 for a block without a non-zero finite element
        if (amax > 0) code = std::clamp(std::ilogb(amax) - f.emax + 127, 0, 254);
        result.scale.data[p] = static_cast<uint8_t>(code);
        continue;
      }
      if (!f.integer) {  // float8e4m3fn: max|w| / 448
        store_scale(amax > 0 ? amax / 448.0 : 1.0, scale_type, result.scale.data.data(), p);
        continue;
      }
      int64_t zp = 0;
      // An asymmetric grid's rounded zero point can push its far end past the weight type's largest
      // value, which would dequantize to infinity; groups that large use the symmetric rule.
      if (symmetric || amax > type_max / 4) {
        const int64_t levels = f.signed_codes ? qmax : (qmax - 1) / 2;  // 127/7 either way
        if (!f.signed_codes) zp = (qmax + 1) / 2;
        store_scale(amax > 0 ? amax / static_cast<double>(levels) : 1.0, scale_type, result.scale.data.data(), p);
      } else {
        const double low = any ? std::min(0.0, static_cast<double>(lo[p])) : 0.0;
        const double high = any ? std::max(0.0, static_cast<double>(hi[p])) : 0.0;
        const double range = high - low;
        const double stored = store_scale(range > 0 ? range / static_cast<double>(qmax - qmin) : 1.0, scale_type,
                                          result.scale.data.data(), p);
        zp = static_cast<int64_t>(std::clamp(std::nearbyint(static_cast<double>(qmin) - low / stored),
                                             static_cast<double>(qmin), static_cast<double>(qmax)));
      }
      if (with_zero_point) store_code(f.element, zero_point.data.data(), p, zp);
    }
  };
  if (!fused) compute_params(0, g.params);

  // Pass 2: QuantizeLinear at the output opset from the stored parameters, chunk by chunk, then
  // DequantizeLinear of the same chunk for the error.
  QuantizeLinearAttributes qa;
  qa.opset = opset;
  DequantizeLinearAttributes da;
  da.opset = opset;
  if (g.kind != WeightGranularity::Kind::kPerTensor) qa.axis = da.axis = g.axis;
  if (g.kind == WeightGranularity::Kind::kBlocked) qa.block_size = da.block_size = static_cast<int64_t>(g.block);
  if (!with_zero_point) qa.output_dtype = static_cast<int64_t>(f.element);
  if (f.mx) da.output_dtype = static_cast<int64_t>(weight.type);
  // Waves of about 16 MiB of float32, then its pages are released.
  const uint64_t wave = std::max<uint64_t>(1, (uint64_t{1} << 22) / std::max<uint64_t>(1, step2 * row));
  std::vector<uint8_t> wave_codes;
  if (sink) {
    result.codes.type = f.element;
    result.codes.shape = g.dims;
    wave_codes.resize(static_cast<size_t>(storage_bytes(f.element, std::min(g.elements, wave * step2 * row))));
  } else {
    result.codes = make_tensor(f.element, g.dims);
  }
  // Every piece starts on a byte (chunk_rows), so a wave's codes are whole bytes from its first.
  const auto wave_first_byte = [&](uint64_t piece) {
    return piece / wave * wave * step2 * row * static_cast<uint64_t>(f.bits) / 8;
  };
  // Each piece is quantized, dequantized and compared on one thread (the kernels are called
  // single-threaded: at this size the pool's hand-over costs more than it gains); pieces run in
  // parallel a wave at a time, and their sums are added in piece order, so nothing depends on threads.
  struct PieceError {
    double signal = 0, noise = 0, max_error = 0;
    uint64_t non_finite = 0;
  };
  const uint64_t pieces = rows == 0 ? 0 : (rows + step2 - 1) / step2;
  std::vector<PieceError> errors(static_cast<size_t>(pieces));
  ExecutionOptions single;
  single.num_threads = 1;
  single.force_scalar = execution.force_scalar;
  const auto run_piece = [&](uint64_t piece) {
    const uint64_t r0 = piece * step2, r1 = std::min(rows, r0 + step2);
    const uint64_t e0 = r0 * row, count = (r1 - r0) * row;
    std::vector<int64_t> chunk_shape = g.dims;
    if (!chunk_shape.empty()) chunk_shape[0] = static_cast<int64_t>(r1 - r0);
    if (fused) {
      std::vector<float> decoded_rows;
      const float* values = decode(weight.type, x, e0, count, decoded_rows);
      for (uint64_t r = r0; r < r1; ++r) {
        const uint64_t p = (r / g.block) * g.inner;
        widen(values + (r - r0) * row, g.inner, lo_base + p, hi.data() + p);
      }
      compute_params(r0 / g.block * g.inner, (r1 + g.block - 1) / g.block * g.inner);
    }
    const ParamSlice ps = param_slice(g, r0, r1);
    // Parameters shared by every piece (per tensor, per channel along a later axis) are used in place.
    const bool all_params = ps.first == 0 && ps.count == g.params;
    std::optional<Tensor> scale_part, zp_part;
    if (!all_params) {
      scale_part = slice(result.scale, ps.first, ps.count, ps.shape);
      if (with_zero_point) zp_part = slice(zero_point, ps.first, ps.count, ps.shape);
    }
    TensorView xv{weight.type, chunk_shape, x + e0 * weight_size, static_cast<size_t>(count * weight_size)};
    const uint64_t code_offset = e0 * static_cast<uint64_t>(f.bits) / 8;
    const size_t code_bytes = static_cast<size_t>(storage_bytes(f.element, count));
    uint8_t* const codes =
        sink ? wave_codes.data() + (code_offset - wave_first_byte(piece)) : result.codes.data.data() + code_offset;
    // A reused wave buffer holds older codes: the padding nibble of an odd count must start at zero.
    if (sink && packed && count % 2 == 1) codes[code_bytes - 1] = 0;
    MutableTensorView yv{f.element, chunk_shape, codes, code_bytes};
    const TensorView sv = all_params ? result.scale.view() : scale_part->view();
    const TensorView zv = !with_zero_point ? TensorView{} : all_params ? zero_point.view() : zp_part->view();
    const TensorView* zpv = with_zero_point ? &zv : nullptr;
    quantize_linear(qa, xv, sv, zpv, yv, single);
    // Written whole by dequantize_linear: not zero-filled first.
    const size_t back_bytes = static_cast<size_t>(count * weight_size);
    const std::unique_ptr<uint8_t[]> back(new uint8_t[back_bytes]);
    const MutableTensorView back_view{weight.type, chunk_shape, back.get(), back_bytes};
    const TensorView codes_view{f.element, chunk_shape, yv.data, code_bytes};
    dequantize_linear(da, codes_view, sv, zpv, back_view, single);
    std::vector<float> decoded_x, decoded_back;
    const float* original = decode(weight.type, x, e0, count, decoded_x);
    const float* restored = decode(weight.type, back.get(), 0, count, decoded_back);
    PieceError& pe = errors[static_cast<size_t>(piece)];
    accumulate_error(original, restored, count, pe.signal, pe.noise, pe.max_error, pe.non_finite);
  };
  run_waves(pieces, wave, run_piece, [&](uint64_t w1) {
    if (release) release(static_cast<size_t>(std::min(rows, w1 * step2) * row * weight_size));
    if (sink) {
      const uint64_t first = wave_first_byte(w1 - 1);
      const uint64_t end = storage_bytes(f.element, std::min(rows, w1 * step2) * row);
      sink(std::span<const uint8_t>(wave_codes.data(), static_cast<size_t>(end - first)));
    }
  });
  double signal = 0, noise = 0, max_error = 0;
  uint64_t non_finite = 0;
  for (const PieceError& pe : errors) {
    signal += pe.signal;
    noise += pe.noise;
    max_error = std::max(max_error, pe.max_error);
    non_finite += pe.non_finite;
  }
  // Sub-byte padding bits stay zero: make_tensor zero-fills and quantize_linear clears them.
  if (with_zero_point && f.integer) result.zero_point = std::move(zero_point);
  result.max_abs_error = max_error;
  result.non_finite = non_finite;
  result.sqnr_db = noise > 0 ? std::min(300.0, 10.0 * std::log10(signal / noise)) : 300.0;
  if (noise > 0 && signal == 0) result.sqnr_db = -300.0;
  return result;
}

}  // namespace

QuantizedWeight quantize_weight(const TensorView& weight, WeightFormat format, const WeightGranularity& granularity,
                                bool symmetric, int64_t opset, const ExecutionOptions& execution,
                                const std::function<void(size_t end)>& release) {
  if (execution.parallel_for || pool_threads(execution) <= 1) {
    return quantize_pieces(weight, format, granularity, symmetric, opset, execution, release, {});
  }
  WorkerPool pool(pool_threads(execution));
  return quantize_pieces(weight, format, granularity, symmetric, opset, on_pool(execution, pool), release, {});
}

// ---------------------------------------------------------------------------------------------------
// Models

namespace {

struct Use {
  std::string op_type;
  std::string label;  // "MatMul 'name'"
  int input = 0;
  const ::onnx::NodeProto* node = nullptr;
};

struct Candidate {
  std::string name;
  ::onnx::GraphProto* graph = nullptr;
  ::onnx::TensorProto* tensor = nullptr;
  ::onnx::NodeProto* constant = nullptr;  // the Constant node holding `tensor`, if any
  std::vector<Use> uses;
  bool graph_output = false;
};

struct Scope {
  const Scope* outer = nullptr;
  std::unordered_map<std::string, int> defs;  // -1: a name that is not a candidate

  int lookup(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->outer) {
      auto it = s->defs.find(name);
      if (it != s->defs.end()) return it->second;
    }
    return -1;
  }
};

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

::onnx::AttributeProto* find_attribute(::onnx::NodeProto& node, const std::string& name) {
  for (auto& a : *node.mutable_attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

const ::onnx::AttributeProto* find_attribute(const ::onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// Walks a graph and its subgraphs, resolving every node input by ONNX's scoping (a subgraph sees its
// own names first, then its parents'), so that each use is attributed to the right definition.
void collect(::onnx::GraphProto& graph, const Scope* outer, std::vector<Candidate>& candidates) {
  Scope scope;
  scope.outer = outer;
  for (const auto& input : graph.input()) scope.defs[input.name()] = -1;
  for (auto& tensor : *graph.mutable_initializer()) {
    int id = -1;
    if (is_weight_type(tensor.data_type())) {
      id = static_cast<int>(candidates.size());
      candidates.push_back(Candidate{tensor.name(), &graph, &tensor, nullptr, {}, false});
    }
    scope.defs[tensor.name()] = id;
  }
  for (auto& node : *graph.mutable_node()) {
    int id = -1;
    if (node.op_type() == "Constant" && is_default_domain(node.domain()) && node.output_size() == 1 &&
        node.attribute_size() == 1) {
      ::onnx::AttributeProto& a = *node.mutable_attribute(0);
      if (a.name() == "value" && a.has_t() && is_weight_type(a.t().data_type()) && a.ref_attr_name().empty()) {
        id = static_cast<int>(candidates.size());
        candidates.push_back(Candidate{node.output(0), &graph, a.mutable_t(), &node, {}, false});
      }
    }
    for (const auto& output : node.output()) {
      if (!output.empty()) scope.defs[output] = id;
    }
  }
  int index = 0;
  for (auto& node : *graph.mutable_node()) {
    const std::string label =
        node.op_type() + (node.name().empty() ? " #" + std::to_string(index) : " '" + node.name() + "'");
    for (int i = 0; i < node.input_size(); ++i) {
      if (node.input(i).empty()) continue;
      const int id = scope.lookup(node.input(i));
      if (id >= 0) candidates[static_cast<size_t>(id)].uses.push_back(Use{node.op_type(), label, i, &node});
    }
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) collect(*attribute.mutable_g(), &scope, candidates);
      for (auto& sub : *attribute.mutable_graphs()) collect(sub, &scope, candidates);
    }
    ++index;
  }
  for (const auto& output : graph.output()) {
    const int id = scope.lookup(output.name());
    if (id >= 0) candidates[static_cast<size_t>(id)].graph_output = true;
  }
}

// The axes a weight slot needs: the output-channel axis (per channel; -1 = none) and the reduction axis
// (blocks; -1 = none).
struct Layout {
  int64_t channel = -1;
  int64_t block = -1;
  bool operator==(const Layout&) const = default;
};

int64_t int_attribute(const ::onnx::NodeProto& node, const std::string& name, int64_t fallback) {
  const ::onnx::AttributeProto* a = find_attribute(node, name);
  return a != nullptr && a->has_i() ? a->i() : fallback;
}

// The layout of a weight of `rank` at `use`, or std::nullopt with `why` set if the slot is not a weight.
std::optional<Layout> layout_for(const Use& use, int64_t rank, std::string& why) {
  const std::string& op = use.op_type;
  const bool onnx_domain = is_default_domain(use.node->domain());
  auto not_weight = [&](const std::string& slot) -> std::optional<Layout> {
    why = "read by " + use.label + " as " + slot + ", not a weight input";
    return std::nullopt;
  };
  if (!onnx_domain) return not_weight("input " + std::to_string(use.input) + " (domain '" + use.node->domain() + "')");
  auto need_rank = [&](int64_t low, int64_t high) {
    if (rank < low || rank > high) {
      why = "rank " + std::to_string(rank) + " is not a weight shape for " + use.label;
      return false;
    }
    return true;
  };
  if (op == "MatMul") {
    if (use.input != 1) return not_weight("input A");
    if (!need_rank(1, 64)) return std::nullopt;
    if (rank == 1) return Layout{-1, 0};
    return Layout{rank - 1, rank - 2};  // B [.., K, N]: channels N, blocks along K
  }
  if (op == "Gemm") {
    if (use.input != 1) return not_weight(use.input == 0 ? "input A" : "input C");
    if (!need_rank(2, 2)) return std::nullopt;
    return int_attribute(*use.node, "transB", 0) != 0 ? Layout{0, 1} : Layout{1, 0};
  }
  if (op == "Conv") {
    if (use.input != 1) return not_weight(use.input == 0 ? "input X" : "input B");
    if (!need_rank(3, 64)) return std::nullopt;
    return Layout{0, 1};  // W [M, C/group, k...]
  }
  if (op == "ConvTranspose") {
    if (use.input != 1) return not_weight(use.input == 0 ? "input X" : "input B");
    if (!need_rank(3, 64)) return std::nullopt;
    return Layout{1, 0};  // W [C, M/group, k...]
  }
  if (op == "LSTM" || op == "GRU" || op == "RNN") {
    if (use.input != 1 && use.input != 2) return not_weight("input " + std::to_string(use.input));
    if (!need_rank(3, 3)) return std::nullopt;
    return Layout{1, 2};  // W [dirs, gates·H, I], R [dirs, gates·H, H]
  }
  if (op == "Gather") {
    if (use.input != 0) return not_weight("indices");
    if (!need_rank(1, 64)) return std::nullopt;
    int64_t axis = int_attribute(*use.node, "axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) {
      why = "Gather axis out of range at " + use.label;
      return std::nullopt;
    }
    if (rank == 1) return Layout{-1, 0};
    return Layout{axis, axis == rank - 1 ? rank - 2 : rank - 1};  // per row; blocks along a row
  }
  return not_weight("input " + std::to_string(use.input));
}

std::string layout_text(const Layout& layout, bool blocked) {
  const int64_t axis = blocked ? layout.block : layout.channel;
  return axis < 0 ? std::string("no axis")
                  : (blocked ? "blocks along axis " : "channels on axis ") + std::to_string(axis);
}

// Names unique across the whole model (all graphs share one namespace for values).
class NameSet {
 public:
  explicit NameSet(::onnx::ModelProto& model) {
    for_each_graph(model, [&](::onnx::GraphProto& g) {
      for (const auto& v : g.input()) names_.insert(v.name());
      for (const auto& v : g.output()) names_.insert(v.name());
      for (const auto& v : g.value_info()) names_.insert(v.name());
      for (const auto& t : g.initializer()) names_.insert(t.name());
      for (const auto& n : g.node()) {
        for (const auto& s : n.input()) names_.insert(s);
        for (const auto& s : n.output()) names_.insert(s);
        if (!n.name().empty()) names_.insert(n.name());
      }
    });
  }
  std::string make(const std::string& base) {
    std::string name = base;
    for (int k = 1; names_.count(name) != 0; ++k) name = base + "_" + std::to_string(k);
    names_.insert(name);
    return name;
  }

 private:
  std::unordered_set<std::string> names_;
};

int64_t default_opset(const ::onnx::ModelProto& model) {
  for (const auto& opset : model.opset_import()) {
    if (is_default_domain(opset.domain())) return opset.version();
  }
  return 0;
}

// The least IR version a model of this opset must declare (onnx.helper.VERSION_TABLE).
int64_t ir_for_opset(int64_t opset) {
  if (opset >= 25) return 13;
  if (opset >= 24) return 12;
  if (opset >= 23) return 11;
  if (opset >= 21) return 10;
  if (opset >= 19) return 9;
  if (opset >= 15) return 8;
  if (opset >= 12) return 7;
  if (opset >= 11) return 6;
  if (opset >= 10) return 5;
  return 3;
}

struct Selected {
  size_t candidate = 0;
  WeightGranularity granularity;
  std::string note;
  uint64_t bytes_before = 0;
  uint64_t bytes_after = 0;
};

struct Selection {
  std::vector<Candidate> candidates;
  std::vector<Selected> selected;
  std::vector<SkippedTensorReport> skipped;
  int64_t required_opset = 0;
};

bool matches_any(const std::vector<std::string>& patterns, const std::string& name) {
  for (const auto& p : patterns) {
    if (::fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

Selection select(::onnx::ModelProto& model, const QuantizeModelOptions& options, int64_t block_size,
                 const std::string& what) {
  Selection s;
  const FormatInfo& f = info(options.format);
  collect(*model.mutable_graph(), nullptr, s.candidates);
  for (size_t k = 0; k < s.candidates.size(); ++k) {
    const Candidate& c = s.candidates[k];
    auto skip = [&](const std::string& reason) { s.skipped.push_back({c.name, reason}); };
    if (c.graph_output) {
      skip("is a graph output");
      continue;
    }
    if (c.uses.empty()) {
      skip("not read by any node");
      continue;
    }
    const int64_t rank = c.tensor->dims_size();
    std::string why;
    std::vector<Layout> layouts;
    for (const Use& use : c.uses) {
      std::optional<Layout> layout = layout_for(use, rank, why);
      if (!layout) break;
      layouts.push_back(*layout);
    }
    if (layouts.size() != c.uses.size()) {
      skip(why);
      continue;
    }
    if (!options.op_types.empty()) {
      std::string outside;
      for (const Use& use : c.uses) {
        if (std::find(options.op_types.begin(), options.op_types.end(), use.op_type) == options.op_types.end()) {
          outside = use.label;
          break;
        }
      }
      if (!outside.empty()) {
        skip("read by " + outside + ", not in --op-types");
        continue;
      }
    }
    if (!options.include.empty() && !matches_any(options.include, c.name)) {
      skip("does not match --include");
      continue;
    }
    if (matches_any(options.exclude, c.name)) {
      skip("matches --exclude");
      continue;
    }
    const std::string tensor_what = what + ": tensor '" + c.name + "'";
    const std::vector<int64_t> dims(c.tensor->dims().begin(), c.tensor->dims().end());
    for (int64_t d : dims) {
      if (d < 0) fail(tensor_what, "negative dimension in " + shape_to_string(dims));
    }
    const uint64_t elements = element_count(dims);
    if (elements == 0) {
      skip("has no elements");
      continue;
    }
    if (elements < static_cast<uint64_t>(std::max<int64_t>(options.min_elements, 0))) {
      skip(std::to_string(elements) + " elements, below --min-elements " + std::to_string(options.min_elements));
      continue;
    }
    Selected sel;
    sel.candidate = k;
    bool agree = true;
    for (const Layout& l : layouts) agree = agree && l == layouts[0];
    std::string conflict;
    if (!agree) {
      conflict = "consumers need different axes:";
      for (size_t u = 0; u < layouts.size(); ++u) {
        conflict += (u ? ", " : " ") + c.uses[u].label + " (" + layout_text(layouts[u], f.blocked) + ")";
      }
    }
    if (f.blocked) {
      if (!agree) {
        skip(conflict);
        continue;
      }
      if (layouts[0].block < 0) {
        skip("has no reduction axis to block along");
        continue;
      }
      int64_t axis = layouts[0].block;
      // A convolution with few input channels per group (depthwise, the first layer, an STFT basis)
      // would get blocks of a handful of elements, each with its own scale: block along the longest
      // kernel axis instead when the channel axis is shorter than a block.
      bool all_convolutions = true;
      for (const Use& use : c.uses)
        all_convolutions = all_convolutions && (use.op_type == "Conv" || use.op_type == "ConvTranspose");
      if (all_convolutions && dims[static_cast<size_t>(axis)] < block_size) {
        for (size_t d = 2; d < dims.size(); ++d) {
          if (dims[d] > dims[static_cast<size_t>(axis)]) axis = static_cast<int64_t>(d);
        }
      }
      if (dims[static_cast<size_t>(axis)] < 2) {
        skip("its reduction axes are too short to block (" + shape_to_string(dims) + ")");
        continue;
      }
      sel.granularity = {WeightGranularity::Kind::kBlocked, axis, block_size};
    } else if (!agree) {
      sel.granularity = {WeightGranularity::Kind::kPerTensor, 0, 0};
      sel.note = conflict + "; quantized per tensor";
    } else if (layouts[0].channel < 0) {
      sel.granularity = {WeightGranularity::Kind::kPerTensor, 0, 0};
      sel.note = "rank 1: no channel axis; quantized per tensor";
    } else {
      sel.granularity = {WeightGranularity::Kind::kPerChannel, layouts[0].channel, 0};
    }
    const auto weight_type = static_cast<DataType>(c.tensor->data_type());
    sel.bytes_before = storage_bytes(weight_type, elements);
    const Geometry g = geometry(dims, sel.granularity);
    const DataType scale_type = f.mx ? DataType::kFloat8E8M0 : weight_type;
    sel.bytes_after = storage_bytes(f.element, elements) + storage_bytes(scale_type, g.params) +
                      (f.integer ? storage_bytes(f.element, g.params) : 0);
    s.required_opset = std::max(s.required_opset, required_opset(options.format, sel.granularity, weight_type));
    s.selected.push_back(std::move(sel));
  }
  return s;
}

void set_int_attribute(::onnx::NodeProto& node, const std::string& name, int64_t value) {
  ::onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(value);
}

void fill_tensor(::onnx::TensorProto& proto, const std::string& name, const Tensor& tensor) {
  proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(tensor.type));
  proto.clear_dims();
  for (int64_t d : tensor.shape) proto.add_dims(d);
  proto.set_raw_data(tensor.data.data(), tensor.data.size());
}

// JSON text of a string (RFC 8259 escapes) and of a double (shortest round trip; null if not finite).
void json_string(std::string& out, std::string_view text) {
  out += '"';
  for (unsigned char ch : text) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (ch < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", ch);
          out += buffer;
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  out += '"';
}

void json_number(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string_view text(buffer, static_cast<size_t>(result.ptr - buffer));
  out += text;
  if (text.find_first_of(".eEn") == std::string_view::npos) out += ".0";
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return buffer;
}

}  // namespace

std::string ModelReport::to_json() const {
  std::string out = "{\"input\": ";
  json_string(out, input);
  out += ", \"output\": ";
  json_string(out, output);
  out += ", \"format\": ";
  json_string(out, format);
  out += ", \"opset\": {\"from\": " + std::to_string(opset_from) + ", \"to\": " + std::to_string(opset_to) + "}";
  out += ", \"ir_version\": {\"from\": " + std::to_string(ir_version_from) +
         ", \"to\": " + std::to_string(ir_version_to) + "}";
  out += ", \"conversions\": [";
  for (size_t k = 0; k < conversions.size(); ++k) {
    if (k) out += ", ";
    json_string(out, conversions[k]);
  }
  out += "], \"external_data\": ";
  out += external_data ? "true" : "false";
  out += ", \"tensors\": [";
  for (size_t k = 0; k < tensors.size(); ++k) {
    const QuantizedTensorReport& t = tensors[k];
    if (k) out += ", ";
    out += "{\"name\": ";
    json_string(out, t.name);
    out += ", \"shape\": [";
    for (size_t d = 0; d < t.shape.size(); ++d) out += (d ? ", " : "") + std::to_string(t.shape[d]);
    out += "], \"consumers\": [";
    for (size_t c = 0; c < t.consumers.size(); ++c) {
      if (c) out += ", ";
      json_string(out, t.consumers[c]);
    }
    out += "], \"format\": ";
    json_string(out, t.format);
    out += ", \"granularity\": ";
    json_string(out, t.granularity);
    out += ", \"note\": ";
    json_string(out, t.note);
    out += ", \"weight_type\": ";
    json_string(out, data_type_name(t.weight_type));
    out += ", \"bytes_before\": " + std::to_string(t.bytes_before) +
           ", \"bytes_after\": " + std::to_string(t.bytes_after) + ", \"sqnr_db\": ";
    json_number(out, t.sqnr_db);
    out += ", \"max_abs_error\": ";
    json_number(out, t.max_abs_error);
    out += ", \"non_finite\": " + std::to_string(t.non_finite) + "}";
  }
  out += "], \"skipped\": [";
  for (size_t k = 0; k < skipped.size(); ++k) {
    if (k) out += ", ";
    out += "{\"name\": ";
    json_string(out, skipped[k].name);
    out += ", \"reason\": ";
    json_string(out, skipped[k].reason);
    out += "}";
  }
  out += "], \"totals\": {\"tensors_quantized\": " + std::to_string(tensors.size()) +
         ", \"weight_bytes_before\": " + std::to_string(weight_bytes_before) +
         ", \"weight_bytes_after\": " + std::to_string(weight_bytes_after) +
         ", \"model_bytes_before\": " + std::to_string(model_bytes_before) +
         ", \"model_bytes_after\": " + std::to_string(model_bytes_after) + ", \"seconds\": ";
  json_number(out, seconds);
  out += "}";
  if (check_json) out += ", \"check\": " + *check_json;
  out += "}";
  return out;
}

std::string ModelReport::to_text() const {
  std::string out = input + " -> " + output + " (" + format + ")\n";
  out += "opset " + std::to_string(opset_from) + " -> " + std::to_string(opset_to) + ", IR version " +
         std::to_string(ir_version_from) + " -> " + std::to_string(ir_version_to) + "\n";
  for (const auto& c : conversions) out += "  converted: " + c + "\n";
  out += "quantized " + std::to_string(tensors.size()) + " tensor" + (tensors.size() == 1 ? "" : "s") + ":\n";
  for (const auto& t : tensors) {
    char numbers[96];
    std::snprintf(numbers, sizeof numbers, "SQNR %.1f dB, max |error| %.3g", t.sqnr_db, t.max_abs_error);
    out += "  " + t.name + " " + shape_to_string(t.shape) + " " + data_type_name(t.weight_type) + " (";
    for (size_t c = 0; c < t.consumers.size(); ++c) out += (c ? ", " : "") + t.consumers[c];
    out += "): " + t.format + " " + t.granularity + ", " + human_bytes(t.bytes_before) + " -> " +
           human_bytes(t.bytes_after) + ", " + numbers;
    if (t.non_finite) out += ", " + std::to_string(t.non_finite) + " NaN/inf elements";
    out += "\n";
    if (!t.note.empty()) out += "    note: " + t.note + "\n";
  }
  if (!skipped.empty()) {
    out += "skipped " + std::to_string(skipped.size()) + " float tensor" + (skipped.size() == 1 ? "" : "s") + ":\n";
    for (const auto& s : skipped) out += "  " + s.name + ": " + s.reason + "\n";
  }
  char seconds_text[32];
  std::snprintf(seconds_text, sizeof seconds_text, "%.2f s", seconds);
  out += "weights " + human_bytes(weight_bytes_before) + " -> " + human_bytes(weight_bytes_after) + "; model " +
         human_bytes(model_bytes_before) + " -> " + human_bytes(model_bytes_after) +
         (external_data ? " (external data)" : "") + "; " + seconds_text + "\n";
  if (check_json) out += "check: " + *check_json + "\n";
  return out;
}

ModelReport quantize_model_file(const std::string& input, const std::string& output,
                                const QuantizeModelOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const FormatInfo& f = info(options.format);
  int64_t block_size = 32;
  if (options.block_size) {
    block_size = *options.block_size;
    if (f.mx && block_size != 32)
      throw Error(std::string(f.name) + " uses blocks of 32 (OCP Microscaling); --block-size " +
                  std::to_string(block_size) + " is not allowed");
    if (!f.mx && !f.blocked)
      throw Error(std::string("--block-size applies to the blocked formats (int4, uint4, mxfp8, mxfp4), not ") +
                  f.name);
    if (block_size < 16 || block_size > 256) {
      throw Error("--block-size " + std::to_string(block_size) + " is outside 16..256");
    }
  }
  const bool symmetric =
      options.symmetric.value_or(!(options.format == WeightFormat::kUint8 || options.format == WeightFormat::kUint4));
  if (!f.integer && !symmetric)
    throw Error(std::string(f.name) + " is symmetric only; --asymmetric applies to int8, uint8, int4, uint4");
  if (options.min_elements < 0) throw Error("--min-elements must not be negative");

  ModelSource source(input);
  ::onnx::ModelProto& model = source.model();
  ModelReport report;
  report.input = input;
  report.output = output;
  report.format = f.name;
  report.opset_from = default_opset(model);
  report.ir_version_from = model.ir_version();
  report.model_bytes_before = source.bytes_on_disk();

  Selection selection = select(model, options, block_size, input);
  int64_t target = report.opset_from;
  if (!selection.selected.empty()) target = std::max(target, selection.required_opset);
  if (target > report.opset_from) {
    if (report.opset_from == 0) fail(input, "the model imports no ai.onnx opset");
    try {
      OpsetConversion conversion = convert_opset(model, target);
      report.conversions = std::move(conversion.changes);
    } catch (const Error& e) {
      fail(input, std::string(f.name) + " needs opset " + std::to_string(target) + " (the model has " +
                      std::to_string(report.opset_from) + "): " + e.what());
    }
    selection = select(model, options, block_size, input);  // the converter may have moved messages
  }
  report.opset_to = default_opset(model);
  if (report.opset_to < target)
    fail(input, "the version converter did not raise the opset to " + std::to_string(target));
  if (!selection.selected.empty() && model.ir_version() < ir_for_opset(report.opset_to)) {
    model.set_ir_version(ir_for_opset(report.opset_to));
  }
  report.ir_version_to = model.ir_version();
  report.skipped = selection.skipped;

  uint64_t estimate = inline_model_bytes(model) + (uint64_t{1} << 20);
  for (const Selected& sel : selection.selected) estimate = estimate - sel.bytes_before + sel.bytes_after;
  // A model that keeps its weights in external data stays that way: it is usually large, and holding
  // every quantized tensor in the message until the end would cost memory proportional to the model.
  bool input_external = false;
  for_each_tensor(model,
                  [&](::onnx::TensorProto& t) { input_external = input_external || ModelSource::is_external(t); });
  report.external_data = options.external_data || input_external || estimate > kProtobufLimit;
  ModelWriter writer(output, report.external_data);

  NameSet names(model);
  std::map<::onnx::GraphProto*, std::vector<std::unique_ptr<::onnx::NodeProto>>> front_nodes;  // DQ per graph
  std::set<std::pair<::onnx::GraphProto*, std::string>> drop_inputs;
  const size_t total = selection.selected.size();
  // One pool for every tensor of the model (unless the caller brings its own parallel_for).
  std::optional<WorkerPool> pool;
  ExecutionOptions execution = options.execution;
  if (total > 0 && pool_threads(execution) > 1) {
    pool.emplace(pool_threads(execution));
    execution = on_pool(options.execution, *pool);
  }
  for (size_t k = 0; k < total; ++k) {
    const Selected& sel = selection.selected[k];
    Candidate& c = selection.candidates[sel.candidate];
    if (options.progress) options.progress(k, total, c.name);
    const std::string what = input + ": tensor '" + c.name + "'";
    const auto weight_type = static_cast<DataType>(c.tensor->data_type());
    const std::vector<int64_t> dims(c.tensor->dims().begin(), c.tensor->dims().end());
    QuantizedWeight q;
    // Codes bound for the data file are written there as they are made (one large write per wave of
    // pieces, from a buffer still in the cache), not gathered into a tensor first.
    const bool stream_codes =
        writer.external_data() && storage_bytes(f.element, element_count(dims)) >= ModelWriter::kExternalThreshold;
    CodesSink sink;
    if (stream_codes) {
      writer.begin_external();
      sink = [&writer](std::span<const uint8_t> codes) { writer.append_external(codes); };
    }
    {
      TensorBytes bytes = source.tensor_bytes(*c.tensor, what);
      const TensorView view{weight_type, dims, bytes.size() ? bytes.data() : reinterpret_cast<const uint8_t*>(""),
                            bytes.size()};
      try {
        q = quantize_pieces(
            view, options.format, sel.granularity, symmetric, report.opset_to, execution,
            [&bytes](size_t end) { bytes.release_until(end); }, sink);
      } catch (const Error& e) {
        fail(what, e.what());
      }
    }

    // The weight's own TensorProto becomes the quantized tensor, so its other fields survive.
    ::onnx::TensorProto* t = c.tensor;
    if (c.constant != nullptr) {
      ::onnx::AttributeProto* value = find_attribute(*c.constant, "value");
      t = value->release_t();
      c.constant->mutable_attribute()->DeleteSubrange(0, 1);
      c.graph->mutable_initializer()->AddAllocated(t);
    }
    const std::string quantized_name = names.make(c.name + "_quantized");
    t->set_name(quantized_name);
    t->set_data_type(static_cast<int32_t>(q.codes.type));
    t->clear_float_data();
    t->clear_int32_data();
    t->clear_raw_data();
    t->clear_external_data();
    t->clear_data_location();
    if (stream_codes) {
      writer.end_external(*t);
    } else if (writer.external_data() && q.codes.data.size() >= ModelWriter::kExternalThreshold) {
      writer.write_external(*t, q.codes.data);
    } else {
      t->set_raw_data(q.codes.data.data(), q.codes.data.size());
    }
    std::vector<uint8_t>().swap(q.codes.data);
    auto add_parameter = [&](const std::string& suffix, const Tensor& tensor) {
      const std::string name = names.make(c.name + suffix);
      ::onnx::TensorProto* p = c.graph->add_initializer();
      fill_tensor(*p, name, tensor);
      if (writer.external_data() && tensor.data.size() >= ModelWriter::kExternalThreshold) {
        writer.write_external(*p, tensor.data);
      }
      return name;
    };
    const std::string scale_name = add_parameter("_scale", q.scale);
    std::string zero_point_name;
    if (q.zero_point) zero_point_name = add_parameter("_zero_point", *q.zero_point);

    ::onnx::NodeProto* node = c.constant;
    if (node == nullptr) {
      auto owned = std::make_unique<::onnx::NodeProto>();
      node = owned.get();
      node->set_name(names.make(c.name + "_DequantizeLinear"));
      node->add_output(c.name);
      front_nodes[c.graph].push_back(std::move(owned));
      drop_inputs.insert({c.graph, c.name});
    }
    node->set_op_type("DequantizeLinear");
    node->clear_domain();
    node->clear_input();
    node->add_input(quantized_name);
    node->add_input(scale_name);
    if (!zero_point_name.empty()) node->add_input(zero_point_name);
    if (sel.granularity.kind != WeightGranularity::Kind::kPerTensor) {
      set_int_attribute(*node, "axis", sel.granularity.axis);
    }
    if (sel.granularity.kind == WeightGranularity::Kind::kBlocked) {
      set_int_attribute(*node, "block_size", sel.granularity.block_size);
    }
    if (f.mx) set_int_attribute(*node, "output_dtype", static_cast<int64_t>(weight_type));

    QuantizedTensorReport r;
    r.name = c.name;
    r.shape = dims;
    for (const Use& use : c.uses) r.consumers.push_back(use.label);
    r.format = f.name;
    r.granularity = sel.granularity.to_string();
    r.note = sel.note;
    r.weight_type = weight_type;
    r.bytes_before = sel.bytes_before;
    r.bytes_after = sel.bytes_after;
    r.sqnr_db = q.sqnr_db;
    r.max_abs_error = q.max_abs_error;
    r.non_finite = q.non_finite;
    report.weight_bytes_before += r.bytes_before;
    report.weight_bytes_after += r.bytes_after;
    report.tensors.push_back(std::move(r));
    if (options.progress) options.progress(k + 1, total, c.name);
  }

  // The new DequantizeLinear nodes of initializers go first in their graph: their inputs are all
  // initializers, so that order is topological whatever the graph holds.
  for (auto& [graph, nodes] : front_nodes) {
    auto* list = graph->mutable_node();
    const int old_count = list->size();
    std::vector<::onnx::NodeProto*> old(static_cast<size_t>(old_count));
    list->ExtractSubrange(0, old_count, old.data());
    for (auto& node : nodes) list->AddAllocated(node.release());
    for (auto* node : old) list->AddAllocated(node);
  }
  // A weight listed as a graph input too (IR < 4) would now be both an input and a node output.
  for (const auto& [graph, name] : drop_inputs) {
    auto* inputs = graph->mutable_input();
    for (int i = inputs->size() - 1; i >= 0; --i) {
      if (inputs->Get(i).name() == name) inputs->DeleteSubrange(i, 1);
    }
  }

  writer.finish(model, &source);
  if (options.before_commit) options.before_commit(writer.staged_model_path());
  writer.commit();
  report.model_bytes_after = writer.bytes_written();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace qdq::onnx
