// run_operator_case: the operators on hostile arguments. See harness.hpp.
//
// The bytes are read as a little program: which operator, opset, types (plausible ones mostly, any
// 32-bit number sometimes), shapes (small dims mostly; sometimes dims that make several 32768-element
// tasks; sometimes 2^31, 2^40, 2^62, INT64_MAX or negative ones), the scale layout, attributes, how
// each buffer is sized and what it holds. Buffers are always allocated with exactly the size that is
// claimed for them (or a null pointer with size 0): the harness never lies to qdq about memory.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "qdq/qdq.hpp"
#include "types/packing.hpp"
#include "types/type_lists.hpp"

namespace {

using qdq::DataType;
using T = DataType;

constexpr uint64_t kMaxInputBytes = 1u << 20;    // largest input buffer the harness allocates
constexpr uint64_t kMaxOutputBytes = 16u << 20;  // largest output buffer
constexpr int64_t kTaskGrain = 32768;            // qdq's task size (src/parallel.hpp)

[[noreturn]] void violated(const char* condition, const std::string& detail) {
  std::fprintf(stderr, "qdq-fuzz invariant violated: %s: %s\n", condition, detail.c_str());
  std::fflush(stderr);
  std::abort();
}
#define QDQ_FUZZ_CHECK(cond, detail)        \
  do {                                      \
    if (!(cond)) violated(#cond, (detail)); \
  } while (0)

// ------------------------------------------------------------------------------------------------
// Reading the fuzz input

class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  uint8_t u8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint32_t u32() { return static_cast<uint32_t>(u16()) | (static_cast<uint32_t>(u16()) << 16); }
  uint64_t u64() { return static_cast<uint64_t>(u32()) | (static_cast<uint64_t>(u32()) << 32); }

 private:
  const uint8_t* p_;
  size_t n_;
};

/// splitmix64, for filling buffers from an 8-byte seed.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

DataType pick_type(Input& in, std::span<const T> plausible) {
  const uint8_t b = in.u8();
  if (b < 176) return plausible[b % plausible.size()];
  if (b < 248) return static_cast<T>(b % (qdq::detail::kLastDataType + 1));  // UNDEFINED, STRING, ... included
  return static_cast<T>(static_cast<int32_t>(in.u32()));
}

DataType pick_type(Input& in, std::initializer_list<T> plausible) {
  return pick_type(in, std::span<const T>(plausible.begin(), plausible.size()));
}

/// Whether `picks` holds exactly the types of `list`, each once.
constexpr bool same_types(std::span<const T> picks, const qdq::detail::TypeList& list) {
  if (picks.size() != list.size()) return false;
  for (T t : picks) {
    if (!list.contains(t)) return false;
  }
  for (T t : list) {
    if (std::find(picks.begin(), picks.end(), t) == picks.end()) return false;
  }
  return true;
}

// A fuzz input picks a type by its index in these lists, so their order is part of the corpus's
// encoding and stays as written; the static_asserts make them follow the type list.
constexpr T kQuantizedPicks[] = {
    T::kUint8, T::kInt8,         T::kUint16,         T::kInt16,      T::kInt4,           T::kUint4,     T::kInt2,
    T::kUint2, T::kFloat8E4M3FN, T::kFloat8E4M3FNUZ, T::kFloat8E5M2, T::kFloat8E5M2FNUZ, T::kFloat4E2M1};
static_assert(same_types(kQuantizedPicks, qdq::detail::kQuantizedTypes),
              "kQuantizedPicks must list every quantized type of data_types.inc; append a new one at the end");
constexpr T kDequantizeXPicks[] = {
    T::kUint8, T::kInt8,  T::kUint16,       T::kInt16,          T::kInt32,      T::kInt4,           T::kUint4,
    T::kInt2,  T::kUint2, T::kFloat8E4M3FN, T::kFloat8E4M3FNUZ, T::kFloat8E5M2, T::kFloat8E5M2FNUZ, T::kFloat4E2M1};
static_assert(
    same_types(kDequantizeXPicks, qdq::detail::types_in_role(qdq::detail::TypeRole::kDequantizeX)),
    "kDequantizeXPicks must list every DequantizeLinear x type of data_types.inc; append a new one at the end");

int64_t pick_dim(Input& in) {
  const uint8_t b = in.u8();
  if (b < 176) return b % 6;
  if (b < 236) return 6 + b % 61;
  if (b < 240) return kTaskGrain * (1 + b % 3) + (b % 5) * 3 - 5;  // several tasks, odd ends
  switch (b) {
    case 240: return (int64_t{1} << 31) + 3;
    case 241: return int64_t{1} << 40;
    case 242: return int64_t{1} << 62;
    case 243: return INT64_MAX;
    case 244: return -1;
    case 245: return INT64_MIN;
    case 246: return (int64_t{1} << 32) + 1;
    case 247: return int64_t{1} << 21;
    default: return static_cast<int64_t>(in.u64());
  }
}

std::vector<int64_t> pick_shape(Input& in) {
  const uint8_t b = in.u8();
  const int rank = b < 240 ? b % 5 : 5 + b % 4;
  std::vector<int64_t> shape(static_cast<size_t>(rank));
  for (int64_t& d : shape) d = pick_dim(in);
  return shape;
}

std::optional<int64_t> pick_attribute(Input& in, std::initializer_list<int64_t> plausible) {
  const uint8_t b = in.u8();
  if (b < 96) return std::nullopt;
  if (b < 224) return *(plausible.begin() + b % plausible.size());
  switch (b) {
    case 224: return INT64_MAX;
    case 225: return INT64_MIN;
    case 226: return int64_t{1} << 62;
    case 227: return -1;
    default: return static_cast<int64_t>(in.u64());
  }
}

int64_t pick_opset(Input& in) {
  static constexpr int64_t kOpsets[] = {10, 13, 19, 21, 23, 24, 25, 25, 25, 25, 11, 18, 20, 22, 26, 9, 0, -1};
  const uint8_t b = in.u8();
  if (b < 250) return kOpsets[b % std::size(kOpsets)];
  return static_cast<int64_t>(in.u64());
}

// ------------------------------------------------------------------------------------------------
// What qdq should accept, computed independently of qdq

int bits_of(T t) {
  switch (static_cast<int32_t>(t)) {
    case 1:
    case 6:
    case 12: return 32;
    case 2:
    case 3:
    case 9:
    case 17:
    case 18:
    case 19:
    case 20:
    case 24: return 8;
    case 4:
    case 5:
    case 10:
    case 16: return 16;
    case 7:
    case 11:
    case 13:
    case 14: return 64;
    case 15: return 128;
    case 21:
    case 22:
    case 23: return 4;
    case 25:
    case 26: return 2;
    default: return 0;  // UNDEFINED, STRING, unknown numbers
  }
}

/// Element count of a shape, or nullopt for a negative dimension or more than INT64_MAX elements.
std::optional<uint64_t> count_of(const std::vector<int64_t>& shape) {
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
  }
  for (int64_t d : shape) {
    if (d == 0) return 0;
  }
  unsigned __int128 n = 1;
  for (int64_t d : shape) {
    n *= static_cast<uint64_t>(d);
    if (n > static_cast<unsigned __int128>(INT64_MAX)) return std::nullopt;
  }
  return static_cast<uint64_t>(n);
}

/// The buffer size ONNX's layout needs, or nullopt if there is none qdq could accept.
std::optional<uint64_t> bytes_of(T type, const std::vector<int64_t>& shape) {
  const int bits = bits_of(type);
  const auto n = count_of(shape);
  if (bits == 0 || !n) return std::nullopt;
  const unsigned __int128 total = (static_cast<unsigned __int128>(*n) * static_cast<unsigned>(bits) + 7) / 8;
  if (total > UINT64_MAX) return std::nullopt;
  return static_cast<uint64_t>(total);
}

// ------------------------------------------------------------------------------------------------
// Buffers

/// A caller-owned input: allocated with exactly `claimed` bytes.
struct Buffer {
  T type = T::kUndefined;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  bool null = false;
  bool consistent = false;  // claimed size == the size the type and shape need, pointer usable

  qdq::TensorView view() const {
    static const uint8_t kEmpty = 0;
    const void* p = null ? nullptr : (bytes.empty() ? &kEmpty : bytes.data());
    return {type, shape, p, bytes.size()};
  }
};

float special_float(Rng& rng) {
  static constexpr uint32_t kBits[] = {0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x3F000000,
                                       0x3FC00000, 0x40200000, 0x42FF0000, 0x7F800000, 0xFF800000,
                                       0x7FC00000, 0xFFC00001, 0x00000001, 0x807FFFFF, 0x7F7FFFFF,
                                       0xFF7FFFFF, 0x43800000, 0x4B000001, 0x3C808081, 0x3B808081};
  const uint64_t r = rng.next();
  if ((r & 3) == 0) return std::bit_cast<float>(kBits[(r >> 2) % std::size(kBits)]);
  if ((r & 3) == 1) return std::bit_cast<float>(static_cast<uint32_t>(r >> 32));
  // a "realistic" value: a multiple of 1/8 in [-512, 512)
  return static_cast<float>(static_cast<int32_t>((r >> 8) % 8192) - 4096) / 8.0f;
}

/// Fills `b` according to a style byte: random bits, plausible values for its type, or zeros.
void fill(Input& in, Buffer& b) {
  const uint8_t style = in.u8();
  Rng rng{in.u64()};
  if (style % 4 == 3) return;  // zeros (float8 zero points must be zero)
  if (style % 4 == 2 && b.type == T::kFloat) {
    for (size_t i = 0; i + 4 <= b.bytes.size(); i += 4) {
      const float f = special_float(rng);
      std::memcpy(b.bytes.data() + i, &f, 4);
    }
    return;
  }
  if (style % 4 == 1 && (b.type == T::kFloat16 || b.type == T::kBFloat16)) {
    // 16-bit floats mostly finite: small exponents
    for (size_t i = 0; i + 2 <= b.bytes.size(); i += 2) {
      const uint64_t r = rng.next();
      uint16_t h = static_cast<uint16_t>(r);
      if (r & (1ull << 40))
        h = static_cast<uint16_t>((h & 0x83FF) |
                                  ((b.type == T::kFloat16 ? 0x3800 : 0x3F00) + ((r >> 20) & 0x3) * 0x0400));
      std::memcpy(b.bytes.data() + i, &h, 2);
    }
    return;
  }
  for (size_t i = 0; i < b.bytes.size(); i += 8) {
    const uint64_t r = rng.next();
    std::memcpy(b.bytes.data() + i, &r, std::min<size_t>(8, b.bytes.size() - i));
  }
}

/// An input buffer for `type` and `shape`, sized honestly or (sometimes) wrongly, then filled.
Buffer make_input(Input& in, T type, std::vector<int64_t> shape) {
  Buffer b;
  b.type = type;
  b.shape = std::move(shape);
  const auto expected = bytes_of(type, b.shape);
  const uint8_t mode = in.u8();
  uint64_t claimed;
  if (expected && *expected <= kMaxInputBytes) {
    if (mode < 232) claimed = *expected;
    else if (mode < 240) claimed = *expected + 1 + mode % 4;
    else if (mode < 248) claimed = *expected > 0 ? *expected - 1 : 1;
    else claimed = in.u8() % 40;
  } else {
    claimed = in.u8() % 40;  // cannot allocate the real size: a small buffer that honestly says so
  }
  b.bytes.assign(static_cast<size_t>(claimed), 0);
  b.null = mode == 231 || (claimed == 0 && mode % 2 == 1);  // 231: a null pointer with a non-zero size
  b.consistent = expected && claimed == *expected && !(b.null && claimed != 0);
  fill(in, b);
  return b;
}

/// A caller-owned output buffer, pre-filled with a pattern so that any write shows.
struct Output {
  T type = T::kUndefined;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  bool null = false;
  bool skip = false;  // too large for the harness to allocate: the call is not made

  qdq::MutableTensorView view() {
    static uint8_t empty_byte = 0;
    void* p = null ? nullptr : (bytes.empty() ? &empty_byte : bytes.data());
    return {type, shape, p, bytes.size()};
  }
  void poison() {
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(0xA5 ^ (i * 31));
  }
  bool poisoned() const {
    for (size_t i = 0; i < bytes.size(); ++i) {
      if (bytes[i] != static_cast<uint8_t>(0xA5 ^ (i * 31))) return false;
    }
    return true;
  }
};

/// The output the harness hands over: usually exactly what *_output said; sometimes wrong on
/// purpose (then `honest` is false and the call must fail). When *_output failed, a guess.
Output make_output(Input& in, const std::optional<qdq::TensorSpec>& spec, T guess_type,
                   const std::vector<int64_t>& guess_shape, bool& honest) {
  Output y;
  y.type = spec ? spec->type : guess_type;
  y.shape = spec ? spec->shape : guess_shape;
  uint64_t size = 0;
  if (spec) {
    size = spec->size_bytes;
  } else if (const auto b = bytes_of(y.type, y.shape)) {
    size = *b;
  }
  honest = spec.has_value();
  const uint8_t mode = in.u8();
  if (mode >= 240) {
    honest = false;
    switch (mode % 5) {
      case 0: y.type = static_cast<T>((static_cast<int32_t>(y.type) + 1) % 28); break;
      case 1: y.shape.push_back(1); break;
      case 2: size += 1; break;
      case 3: size = size > 0 ? size - 1 : 2; break;
      case 4:
        y.null = true;
        if (size == 0) size = 1;
        break;
    }
  }
  if (size > kMaxOutputBytes) {
    y.skip = true;
    return y;
  }
  y.bytes.assign(static_cast<size_t>(size), 0);
  y.poison();
  return y;
}

/// QDQ_FUZZ_TRACE=1 prints each case's outcome (to check that seeds do what they are meant to).
void trace(const std::string& line) {
  static const bool on = std::getenv("QDQ_FUZZ_TRACE") != nullptr;
  if (on) std::fprintf(stderr, "qdq-fuzz: %s\n", line.c_str());
}

bool starts_with(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }

std::string describe_shape(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0) out += ',';  // appended apart: `sep + std::to_string` draws a false GCC 12 -Wrestrict
    out += std::to_string(s[i]);
  }
  return out + "]";
}

// ------------------------------------------------------------------------------------------------
// Running a call several ways

/// A ParallelFor that runs the tasks backwards on the calling thread, and one that uses std::threads.
qdq::ParallelFor backwards_parallel_for() {
  return [](size_t tasks, const std::function<void(size_t)>& body) {
    for (size_t t = tasks; t-- > 0;) body(t);
  };
}
qdq::ParallelFor threads_parallel_for() {
  return [](size_t tasks, const std::function<void(size_t)>& body) {
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t t = next.fetch_add(1); t < tasks; t = next.fetch_add(1)) body(t);
    };
    std::thread helper(work);
    work();
    helper.join();
  };
}

/// The execution variants every successful call is repeated with: the result must not change.
std::vector<qdq::ExecutionOptions> variants(int64_t elements) {
  std::vector<qdq::ExecutionOptions> out;
  qdq::ExecutionOptions scalar;
  scalar.num_threads = 1;
  scalar.force_scalar = true;
  out.push_back(scalar);
  if (elements > kTaskGrain) {
    // One threaded variant per case (which one depends on the element count), to keep cases fast.
    qdq::ExecutionOptions threaded;
    switch (elements % 3) {
      case 0: threaded.num_threads = 2; break;
      case 1:
        threaded.parallel_for = backwards_parallel_for();
        threaded.force_scalar = true;
        break;
      default: threaded.parallel_for = threads_parallel_for(); break;
    }
    out.push_back(threaded);
  }
  return out;
}

/// Float outputs equal up to NaN payloads (any NaN equals any NaN), for the float types `type`.
bool same_up_to_nan(T type, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return false;
  const size_t width = type == T::kFloat ? 4 : (type == T::kFloat16 || type == T::kBFloat16) ? 2 : 0;
  if (width == 0) return a == b;
  for (size_t i = 0; i < a.size(); i += width) {
    uint32_t x = 0, y = 0;
    std::memcpy(&x, a.data() + i, width);
    std::memcpy(&y, b.data() + i, width);
    if (x == y) continue;
    auto is_nan = [&](uint32_t v) {
      if (type == T::kFloat) return (v & 0x7F800000u) == 0x7F800000u && (v & 0x007FFFFFu) != 0;
      if (type == T::kFloat16) return (v & 0x7C00u) == 0x7C00u && (v & 0x03FFu) != 0;
      return (v & 0x7F80u) == 0x7F80u && (v & 0x007Fu) != 0;
    };
    if (!(is_nan(x) && is_nan(y))) return false;
  }
  return true;
}

/// Whether the scale tensor `b` (FLOAT, FLOAT16, BFLOAT16 or FLOAT8E8M0) holds a NaN.
bool holds_nan(const Buffer& b) {
  const size_t width = b.type == T::kFloat ? 4 : (b.type == T::kFloat16 || b.type == T::kBFloat16) ? 2 : 1;
  for (size_t i = 0; i + width <= b.bytes.size(); i += width) {
    uint32_t v = 0;
    std::memcpy(&v, &b.bytes[i], width);  // little endian
    switch (b.type) {
      case T::kFloat:
        if ((v & 0x7F800000u) == 0x7F800000u && (v & 0x007FFFFFu) != 0) return true;
        break;
      case T::kFloat16:
        if ((v & 0x7C00u) == 0x7C00u && (v & 0x03FFu) != 0) return true;
        break;
      case T::kBFloat16:
        if ((v & 0x7F80u) == 0x7F80u && (v & 0x007Fu) != 0) return true;
        break;
      case T::kFloat8E8M0:
        if (v == 0xFFu) return true;
        break;
      default: return false;
    }
  }
  return false;
}

bool is_float8(T t) { return qdq::detail::is_float8(t); }

/// Whether kernels must agree on NaN payloads too: on unless QDQ_FUZZ_EXACT_NAN=0 (the SIMD and
/// scalar DequantizeLinear kernels agree on them since the float8 NaN payload fix, see
/// tests/robustness/regressions/README.md; =0 narrows a new report down to a payload difference).
bool exact_nan() {
  static const bool on = [] {
    const char* env = std::getenv("QDQ_FUZZ_EXACT_NAN");
    return env == nullptr || std::string(env) != "0";
  }();
  return on;
}

std::string hex_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] != b[i]) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "byte %zu: 0x%02X vs 0x%02X (of %zu)", i, a[i], b[i], a.size());
      return buf;
    }
  }
  return "sizes " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
}

/// Padding bits of a packed output's last byte must be zero.
void check_padding(T type, uint64_t elements, const std::vector<uint8_t>& bytes, const char* op) {
  const int bits = bits_of(type);
  if (bits >= 8 || bytes.empty()) return;
  const uint64_t per_byte = static_cast<uint64_t>(8 / bits);
  const uint64_t used = elements % per_byte;
  if (used == 0) return;
  const uint8_t mask = static_cast<uint8_t>(0xFF << (used * static_cast<uint64_t>(bits)));
  QDQ_FUZZ_CHECK((bytes.back() & mask) == 0, std::string(op) + ": padding bits of the last byte are not zero");
}

// ------------------------------------------------------------------------------------------------
// The independent oracle for the float32 / integer combinations

/// Where element k's scale lives, from the shapes alone.
struct Layout {
  enum Kind { kPerTensor, kPerAxis, kBlocked } kind = kPerTensor;
  int64_t axis_len = 1, inner = 1, block = 1, scale_axis_len = 1;
  int64_t param(int64_t k) const {
    switch (kind) {
      case kPerTensor: return 0;
      case kPerAxis: return (k / inner) % axis_len;
      case kBlocked: {
        const int64_t n = k % inner, i = (k / inner) % axis_len, o = k / (inner * axis_len);
        return (o * scale_axis_len + i / block) * inner + n;
      }
    }
    return 0;
  }
};

/// The layout a successful call must have used (only called after qdq accepted it).
Layout layout_of(const std::vector<int64_t>& x, const std::vector<int64_t>& scale, std::optional<int64_t> axis_attr,
                 std::optional<int64_t> block_attr) {
  Layout l;
  const int64_t block = block_attr.value_or(0);
  const auto scale_count = count_of(scale).value_or(0);
  if (block <= 0 && scale.size() <= 1 && scale_count == 1) return l;
  const auto rank = static_cast<int64_t>(x.size());
  int64_t axis = axis_attr.value_or(1);
  if (axis < 0) axis += rank;
  l.axis_len = x[static_cast<size_t>(axis)];
  for (int64_t k = axis + 1; k < rank; ++k) l.inner *= x[static_cast<size_t>(k)];
  if (block > 0) {
    l.kind = Layout::kBlocked;
    l.block = block;
    l.scale_axis_len = scale[static_cast<size_t>(axis)];
  } else {
    l.kind = Layout::kPerAxis;
  }
  return l;
}

/// An integer type the operators read or write (INT64 and UINT32/64 have no operator role).
bool is_integer(T t) {
  const qdq::detail::TypeInfo& info = qdq::detail::type_info(t);
  return info.kind == qdq::detail::TypeKind::kInteger &&
         (qdq::detail::role_since(t, qdq::detail::TypeRole::kQuantizeY) != 0 ||
          qdq::detail::role_since(t, qdq::detail::TypeRole::kDequantizeX) != 0);
}

/// Element k of an integer tensor of up to 32 bits (packed ones low bits first), sign-extended.
int64_t load_int(const std::vector<uint8_t>& b, T t, int64_t k) {
  if (!is_integer(t)) return 0;
  const qdq::detail::TypeInfo& info = qdq::detail::type_info(t);
  const int bits = info.bits;
  uint32_t code = 0;
  if (bits < 8) {
    const int per_byte = 8 / bits;
    code = (b[static_cast<size_t>(k / per_byte)] >> (bits * (k % per_byte))) & ((1u << bits) - 1u);
  } else {
    std::memcpy(&code, b.data() + static_cast<size_t>(k) * static_cast<size_t>(bits / 8),
                static_cast<size_t>(bits / 8));
  }
  const int64_t value = code;
  return info.is_signed && bits < 64 && value >= (int64_t{1} << (bits - 1)) ? value - (int64_t{1} << bits) : value;
}

float load_float(const std::vector<uint8_t>& b, int64_t k) {
  float f;
  std::memcpy(&f, b.data() + 4 * k, 4);
  return f;
}

/// The range of a quantized integer output type; 0..0 for any other type.
void range_of(T t, int64_t& lo, int64_t& hi) {
  const qdq::detail::TypeInfo& info = qdq::detail::type_info(t);
  lo = hi = 0;
  if (info.kind != qdq::detail::TypeKind::kInteger ||
      qdq::detail::role_since(t, qdq::detail::TypeRole::kQuantizeY) == 0)
    return;
  lo = info.is_signed ? -(int64_t{1} << (info.bits - 1)) : 0;
  hi = info.is_signed ? (int64_t{1} << (info.bits - 1)) - 1 : (int64_t{1} << info.bits) - 1;
}

/// Elements checked by the oracles: all of a small tensor, a sample of a large one.
template <class F>
void for_checked_elements(int64_t n, F f) {
  if (n <= 4096) {
    for (int64_t k = 0; k < n; ++k) f(k);
    return;
  }
  for (int64_t k = 0; k < 1024; ++k) f(k);
  for (int64_t k = n - 1024; k < n; ++k) f(k);
  for (int64_t k = 1024; k < n - 1024; k += 97) f(k);
}

void quantize_oracle(const Buffer& x, const Buffer& scale, const Buffer* zp, const qdq::QuantizeLinearAttributes& a,
                     const Output& y) {
  if (x.type != T::kFloat || scale.type != T::kFloat || (a.precision && *a.precision != 0 && *a.precision != 1)) return;
  if (y.type == T::kInt32 || !is_integer(y.type)) return;
  const auto n = static_cast<int64_t>(*count_of(x.shape));
  if (n == 0) return;  // nothing to check, and the other dims may multiply past 2^63
  const Layout l = layout_of(x.shape, scale.shape, a.axis, a.block_size);
  int64_t lo, hi;
  range_of(y.type, lo, hi);
  for_checked_elements(n, [&](int64_t k) {
    const int64_t p = l.param(k);
    const float q = load_float(x.bytes, k) / load_float(scale.bytes, p);
    int64_t v;
    if (std::isnan(q)) {
      v = lo;
    } else {
      double r = std::nearbyint(static_cast<double>(q));
      if (zp) r += static_cast<double>(load_int(zp->bytes, zp->type, p));
      v = static_cast<int64_t>(std::clamp(r, static_cast<double>(lo), static_cast<double>(hi)));
    }
    const int64_t got = load_int(y.bytes, y.type, k);
    QDQ_FUZZ_CHECK(got == v, "QuantizeLinear element " + std::to_string(k) + " of " + qdq::data_type_name(y.type) +
                                 " is " + std::to_string(got) + ", expected " + std::to_string(v) + " (x shape " +
                                 describe_shape(x.shape) + ", scale shape " + describe_shape(scale.shape) + ")");
  });
}

void dequantize_oracle(const Buffer& x, const Buffer& scale, const Buffer* zp, const qdq::DequantizeLinearAttributes& a,
                       const Output& y) {
  if (!is_integer(x.type) || scale.type != T::kFloat || y.type != T::kFloat) return;
  const auto n = static_cast<int64_t>(*count_of(x.shape));
  if (n == 0) return;  // nothing to check, and the other dims may multiply past 2^63
  const Layout l = layout_of(x.shape, scale.shape, a.axis, a.block_size);
  for_checked_elements(n, [&](int64_t k) {
    const int64_t p = l.param(k);
    int64_t d = load_int(x.bytes, x.type, k);
    if (zp) d -= load_int(zp->bytes, zp->type, p);
    const float expected = static_cast<float>(d) * load_float(scale.bytes, p);
    const float got = load_float(y.bytes, k);
    const bool same =
        std::bit_cast<uint32_t>(expected) == std::bit_cast<uint32_t>(got) || (std::isnan(expected) && std::isnan(got));
    QDQ_FUZZ_CHECK(same, "DequantizeLinear element " + std::to_string(k) + " is " + std::to_string(got) +
                             ", expected " + std::to_string(expected) + " (x " + qdq::data_type_name(x.type) +
                             " shape " + describe_shape(x.shape) + ", scale shape " + describe_shape(scale.shape) +
                             ")");
  });
}

// ------------------------------------------------------------------------------------------------
// The three operators

/// The scale (and zero point) shape the harness proposes for x: usually one the spec allows.
std::vector<int64_t> pick_param_shape(Input& in, const std::vector<int64_t>& x, std::optional<int64_t> axis,
                                      std::optional<int64_t> block) {
  const uint8_t mode = in.u8() % 10;
  const auto rank = static_cast<int64_t>(x.size());
  int64_t a = axis.value_or(1);
  if (a < 0 && a >= -rank) a += rank;
  const bool axis_ok = a >= 0 && a < rank;
  switch (mode) {
    case 0: return {};
    case 1: return {1};
    case 2:
    case 3:
      if (axis_ok) return {x[static_cast<size_t>(a)]};
      return {};
    case 4:
    case 5: {
      if (!axis_ok) return {1};
      std::vector<int64_t> s = x;
      const int64_t b = block.value_or(0);
      int64_t& d = s[static_cast<size_t>(a)];
      if (b > 0 && d >= 0 && d <= INT64_MAX - b) d = (d + b - 1) / b;
      if (mode == 5) {
        // Off by one (or not), without overflowing the harness's own arithmetic at ±2^63.
        const int delta = (in.u8() % 3) - 1;
        if ((delta < 0 && d > INT64_MIN) || (delta > 0 && d < INT64_MAX)) d += delta;
      }
      return s;
    }
    case 6: return {1, 1};
    case 7: return x;
    default: return pick_shape(in);
  }
}

void run_quantize(Input& in) {
  qdq::QuantizeLinearAttributes a;
  a.opset = pick_opset(in);
  a.axis = pick_attribute(in, {0, 1, -1, 2, -2, 3, 4, -5});
  a.saturate = pick_attribute(in, {1, 0, 2});
  a.block_size = pick_attribute(in, {1, 2, 3, 4, 16, 32, 0, -2});
  a.output_dtype = pick_attribute(in, {3, 2, 5, 4, 17, 18, 19, 20, 21, 22, 23, 25, 26, 0, 1, 24});
  a.precision = pick_attribute(in, {1, 10, 16, 0, 11, 6});
  const T x_type = pick_type(in, {T::kFloat, T::kFloat, T::kFloat16, T::kBFloat16, T::kInt32});
  const uint8_t scale_choice = in.u8();
  const T scale_type =
      scale_choice < 128 ? x_type : pick_type(in, {T::kFloat, T::kFloat16, T::kBFloat16, T::kInt32, T::kFloat8E8M0});
  const std::vector<int64_t> x_shape = pick_shape(in);
  const std::vector<int64_t> scale_shape = pick_param_shape(in, x_shape, a.axis, a.block_size);
  const uint8_t zp_mode = in.u8();
  const bool has_zp = zp_mode < 160;
  T zp_type = T::kUndefined;
  std::vector<int64_t> zp_shape;
  if (has_zp) {
    zp_type = zp_mode < 64 && a.output_dtype && *a.output_dtype > 0 && *a.output_dtype < 64
                  ? static_cast<T>(*a.output_dtype)
                  : pick_type(in, kQuantizedPicks);
    zp_shape = zp_mode % 8 == 0 ? pick_shape(in) : scale_shape;
  }

  const Buffer x = make_input(in, x_type, x_shape);
  const Buffer scale = make_input(in, scale_type, scale_shape);
  Buffer zp_buffer;
  if (has_zp) zp_buffer = make_input(in, zp_type, zp_shape);
  const Buffer* zp = has_zp ? &zp_buffer : nullptr;
  const bool consistent = x.consistent && scale.consistent && (!zp || zp->consistent);
  const qdq::TensorView xv = x.view(), sv = scale.view();
  const qdq::TensorView zv = zp ? zp->view() : qdq::TensorView{};

  std::optional<qdq::TensorSpec> spec;
  std::string spec_error;
  try {
    spec = qdq::quantize_linear_output(a, xv, sv, zp ? &zv : nullptr);
  } catch (const qdq::Error& e) {
    spec_error = e.what();
    QDQ_FUZZ_CHECK(starts_with(e.what(), "QuantizeLinear"),
                   std::string("message does not name the operator: ") + e.what());
  }
  if (!consistent)
    QDQ_FUZZ_CHECK(!spec, "quantize_linear_output accepted a buffer whose size does not match its shape and type");
  if (spec) {
    QDQ_FUZZ_CHECK(spec->shape == x_shape,
                   "output shape " + describe_shape(spec->shape) + " != x shape " + describe_shape(x_shape));
    const auto b = bytes_of(spec->type, spec->shape);
    QDQ_FUZZ_CHECK(b && *b == spec->size_bytes, "output size_bytes does not match its type and shape");
    if (zp) QDQ_FUZZ_CHECK(spec->type == zp->type, "output type differs from the zero point's");
  }

  bool honest = false;
  Output y = make_output(in, spec, T::kUint8, x_shape, honest);
  if (y.skip) return;
  qdq::ExecutionOptions options;
  options.num_threads = 1;
  bool ok = true;
  try {
    qdq::quantize_linear(a, xv, sv, zp ? &zv : nullptr, y.view(), options);
  } catch (const qdq::Error& e) {
    ok = false;
    trace(std::string("QuantizeLinear error: ") + e.what());
    QDQ_FUZZ_CHECK(y.poisoned(), std::string("quantize_linear wrote its output and then failed: ") + e.what());
    if (!spec)
      QDQ_FUZZ_CHECK(spec_error == e.what(), "quantize_linear and quantize_linear_output fail differently: '" +
                                                 spec_error + "' vs '" + e.what() + "'");
  }
  if (!spec || !honest) {
    QDQ_FUZZ_CHECK(!ok, "quantize_linear accepted an output that quantize_linear_output did not describe");
    return;
  }
  QDQ_FUZZ_CHECK(ok, "quantize_linear failed where quantize_linear_output succeeded");
  const auto n = static_cast<int64_t>(*count_of(x_shape));
  trace("QuantizeLinear ok: " + std::to_string(n) + " elements, x " + qdq::data_type_name(x.type) + " " +
        describe_shape(x_shape) + ", scale " + qdq::data_type_name(scale.type) + " " + describe_shape(scale.shape) +
        ", y " + qdq::data_type_name(y.type));
  check_padding(y.type, static_cast<uint64_t>(n), y.bytes, "QuantizeLinear");
  quantize_oracle(x, scale, zp, a, y);
  for (const qdq::ExecutionOptions& o : variants(n)) {
    Output again = y;
    again.poison();
    qdq::quantize_linear(a, xv, sv, zp ? &zv : nullptr, again.view(), o);
    QDQ_FUZZ_CHECK(again.bytes == y.bytes,
                   "QuantizeLinear differs between kernels/threads (force_scalar " + std::to_string(o.force_scalar) +
                       ", threads " + std::to_string(o.num_threads) + ", parallel_for " +
                       std::to_string(bool(o.parallel_for)) + "): " + hex_diff(y.bytes, again.bytes));
  }
  const int bits = qdq::bit_width(y.type);
  if (bits < 8 && y.type != T::kFloat4E2M1) {
    // The same call with y one value per byte (CodeLayout::kOnePerByte): y's codes as int8/uint8 values,
    // on every kernel and thread count.
    std::vector<uint8_t> expected(static_cast<size_t>(n));
    qdq::detail::unpack_codes(y.bytes.data(), bits, 0, n, expected.data());
    if (qdq::is_signed(y.type)) {
      for (uint8_t& v : expected) v = static_cast<uint8_t>(qdq::detail::sign_extend(v, bits));
    }
    std::vector<qdq::ExecutionOptions> all = variants(n);
    all.emplace_back();
    for (const qdq::ExecutionOptions& o : all) {
      std::vector<uint8_t> values(static_cast<size_t>(n) + 1, 0xA5);
      qdq::quantize_linear(a, xv, sv, zp ? &zv : nullptr,
                           {y.type, x_shape, values.data(), static_cast<size_t>(n), qdq::CodeLayout::kOnePerByte}, o);
      QDQ_FUZZ_CHECK(values[static_cast<size_t>(n)] == 0xA5, "QuantizeLinear one value per byte wrote past y");
      values.pop_back();
      QDQ_FUZZ_CHECK(values == expected, "QuantizeLinear one value per byte differs from packed y (force_scalar " +
                                             std::to_string(o.force_scalar) + ", threads " +
                                             std::to_string(o.num_threads) + "): " + hex_diff(expected, values));
    }
  }
}

void run_dequantize(Input& in) {
  qdq::DequantizeLinearAttributes a;
  a.opset = pick_opset(in);
  a.axis = pick_attribute(in, {0, 1, -1, 2, -2, 3, 4, -5});
  a.block_size = pick_attribute(in, {1, 2, 3, 4, 16, 32, 0, -2});
  a.output_dtype = pick_attribute(in, {1, 10, 16, 0, 2, 24, 11});
  const T x_type = pick_type(in, kDequantizeXPicks);
  const T scale_type = pick_type(in, {T::kFloat, T::kFloat, T::kFloat16, T::kBFloat16, T::kFloat8E8M0});
  const std::vector<int64_t> x_shape = pick_shape(in);
  const std::vector<int64_t> scale_shape = pick_param_shape(in, x_shape, a.axis, a.block_size);
  const uint8_t zp_mode = in.u8();
  const bool has_zp = zp_mode < 160;
  T zp_type = T::kUndefined;
  std::vector<int64_t> zp_shape;
  if (has_zp) {
    zp_type =
        zp_mode < 128 ? x_type : pick_type(in, {T::kUint8, T::kInt8, T::kInt32, T::kFloat8E4M3FN, T::kFloat4E2M1});
    zp_shape = zp_mode % 8 == 0 ? pick_shape(in) : scale_shape;
  }

  const Buffer x = make_input(in, x_type, x_shape);
  const Buffer scale = make_input(in, scale_type, scale_shape);
  Buffer zp_buffer;
  if (has_zp) zp_buffer = make_input(in, zp_type, zp_shape);
  const Buffer* zp = has_zp ? &zp_buffer : nullptr;
  const bool consistent = x.consistent && scale.consistent && (!zp || zp->consistent);
  const qdq::TensorView xv = x.view(), sv = scale.view();
  const qdq::TensorView zv = zp ? zp->view() : qdq::TensorView{};

  std::optional<qdq::TensorSpec> spec;
  std::string spec_error;
  try {
    spec = qdq::dequantize_linear_output(a, xv, sv, zp ? &zv : nullptr);
  } catch (const qdq::Error& e) {
    spec_error = e.what();
    QDQ_FUZZ_CHECK(starts_with(e.what(), "DequantizeLinear"),
                   std::string("message does not name the operator: ") + e.what());
  }
  if (!consistent)
    QDQ_FUZZ_CHECK(!spec, "dequantize_linear_output accepted a buffer whose size does not match its shape and type");
  if (spec) {
    QDQ_FUZZ_CHECK(spec->shape == x_shape,
                   "output shape " + describe_shape(spec->shape) + " != x shape " + describe_shape(x_shape));
    QDQ_FUZZ_CHECK(spec->type == T::kFloat || spec->type == T::kFloat16 || spec->type == T::kBFloat16,
                   "DequantizeLinear output type " + qdq::data_type_name(spec->type));
    const auto b = bytes_of(spec->type, spec->shape);
    QDQ_FUZZ_CHECK(b && *b == spec->size_bytes, "output size_bytes does not match its type and shape");
  }

  bool honest = false;
  Output y = make_output(in, spec, T::kFloat, x_shape, honest);
  if (y.skip) return;
  qdq::ExecutionOptions options;
  options.num_threads = 1;
  bool ok = true;
  try {
    qdq::dequantize_linear(a, xv, sv, zp ? &zv : nullptr, y.view(), options);
  } catch (const qdq::Error& e) {
    ok = false;
    trace(std::string("DequantizeLinear error: ") + e.what());
    QDQ_FUZZ_CHECK(y.poisoned(), std::string("dequantize_linear wrote its output and then failed: ") + e.what());
    if (!spec)
      QDQ_FUZZ_CHECK(spec_error == e.what(), "dequantize_linear and dequantize_linear_output fail differently: '" +
                                                 spec_error + "' vs '" + e.what() + "'");
  }
  if (!spec || !honest) {
    QDQ_FUZZ_CHECK(!ok, "dequantize_linear accepted an output that dequantize_linear_output did not describe");
    return;
  }
  QDQ_FUZZ_CHECK(ok, "dequantize_linear failed where dequantize_linear_output succeeded");
  const auto n = static_cast<int64_t>(*count_of(x_shape));
  trace("DequantizeLinear ok: " + std::to_string(n) + " elements, x " + qdq::data_type_name(x.type) + " " +
        describe_shape(x_shape) + ", scale " + qdq::data_type_name(scale.type) + " " + describe_shape(scale.shape) +
        ", y " + qdq::data_type_name(y.type));
  dequantize_oracle(x, scale, zp, a, y);
  for (const qdq::ExecutionOptions& o : variants(n)) {
    Output again = y;
    again.poison();
    qdq::dequantize_linear(a, xv, sv, zp ? &zv : nullptr, again.view(), o);
    // A float8 NaN times a NaN scale is a NaN with either operand's payload (IEEE 754 leaves it
    // open, and the kernels' operand orders differ; simd_kernels_test.cpp does not compare it
    // either), so such calls compare NaNs without their payloads.
    const bool payload_open = is_float8(x.type) && holds_nan(scale);
    QDQ_FUZZ_CHECK(
        again.bytes == y.bytes || ((!exact_nan() || payload_open) && same_up_to_nan(y.type, y.bytes, again.bytes)),
        "DequantizeLinear differs between kernels/threads (force_scalar " + std::to_string(o.force_scalar) +
            ", threads " + std::to_string(o.num_threads) + ", parallel_for " + std::to_string(bool(o.parallel_for)) +
            "): " + hex_diff(y.bytes, again.bytes));
  }
  const int bits = qdq::bit_width(x.type);
  if (bits < 8) {
    // The same x one code per byte (CodeLayout::kOnePerByte), the bits above each code from a fixed
    // pattern (no input consumed: the corpora keep their meaning): every kernel reads the same elements.
    std::vector<uint8_t> items(static_cast<size_t>(n));
    qdq::detail::unpack_codes(x.bytes.data(), bits, 0, n, items.data());
    for (size_t i = 0; i < items.size(); ++i) items[i] = static_cast<uint8_t>(items[i] | ((i * 0x9Du) << bits));
    const qdq::TensorView one_per_byte{x.type, x_shape, items.data(), items.size(), qdq::CodeLayout::kOnePerByte};
    std::vector<qdq::ExecutionOptions> all = variants(n);
    all.push_back(options);
    for (const qdq::ExecutionOptions& o : all) {
      Output again = y;
      again.poison();
      qdq::dequantize_linear(a, one_per_byte, sv, zp ? &zv : nullptr, again.view(), o);
      const bool payload_open = is_float8(x.type) && holds_nan(scale);
      QDQ_FUZZ_CHECK(
          again.bytes == y.bytes || ((!exact_nan() || payload_open) && same_up_to_nan(y.type, y.bytes, again.bytes)),
          "DequantizeLinear of x one code per byte differs from packed x (force_scalar " +
              std::to_string(o.force_scalar) + ", threads " + std::to_string(o.num_threads) +
              "): " + hex_diff(y.bytes, again.bytes));
    }
  }
}

void run_dynamic(Input& in) {
  const int64_t opset = pick_opset(in);
  const T x_type = pick_type(in, {T::kFloat, T::kFloat, T::kFloat, T::kFloat16});
  const std::vector<int64_t> x_shape = pick_shape(in);
  const Buffer x = make_input(in, x_type, x_shape);
  const auto count = count_of(x_shape);
  const bool valid = x.consistent && x_type == T::kFloat && count && *count > 0 && opset >= 11;

  const uint8_t out_mode = in.u8();
  Output y;
  y.type = out_mode < 240 ? T::kUint8 : pick_type(in, {T::kInt8, T::kFloat});
  y.shape = out_mode < 248 ? x_shape : pick_shape(in);
  uint64_t size = 0;
  if (const auto b = bytes_of(y.type, y.shape)) size = *b;
  if (out_mode == 250) size += 1;
  if (size > kMaxOutputBytes) return;
  y.bytes.assign(static_cast<size_t>(size), 0);
  y.poison();
  const bool honest = y.type == T::kUint8 && y.shape == x_shape;

  qdq::ExecutionOptions options;
  options.num_threads = 1;
  qdq::DynamicQuantizationParameters params;
  bool ok = true;
  try {
    params = qdq::dynamic_quantize_linear(x.view(), y.view(), options, opset);
  } catch (const qdq::Error& e) {
    ok = false;
    trace(std::string("DynamicQuantizeLinear error: ") + e.what());
    QDQ_FUZZ_CHECK(y.poisoned(), std::string("dynamic_quantize_linear wrote its output and then failed: ") + e.what());
    QDQ_FUZZ_CHECK(starts_with(e.what(), "DynamicQuantizeLinear"),
                   std::string("message does not name the operator: ") + e.what());
  }
  if (!valid || !honest || out_mode == 250) {
    QDQ_FUZZ_CHECK(!ok, "dynamic_quantize_linear accepted an invalid call (x " + qdq::data_type_name(x_type) + " " +
                            describe_shape(x_shape) + ", " + std::to_string(x.bytes.size()) + " bytes; y " +
                            qdq::data_type_name(y.type) + " " + describe_shape(y.shape) + ", " +
                            std::to_string(y.bytes.size()) + " bytes; opset " + std::to_string(opset) + ")");
    return;
  }
  QDQ_FUZZ_CHECK(ok, "dynamic_quantize_linear rejected a valid call");
  trace("DynamicQuantizeLinear ok: x " + describe_shape(x_shape));

  // Oracle: dynamic_quantize_linear.md §2 in float32, NaN-propagating min/max.
  const auto n = static_cast<int64_t>(*count);
  float lo = 0.0f, hi = 0.0f;
  bool nan = false;
  for (int64_t k = 0; k < n; ++k) {
    const float v = load_float(x.bytes, k);
    if (std::isnan(v)) nan = true;
    else {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (nan) lo = hi = std::numeric_limits<float>::quiet_NaN();
  const float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  const float zp_f = 0.0f - lo / scale;
  const float zp_c = std::isnan(zp_f) ? 255.0f : std::clamp(zp_f, 0.0f, 255.0f);
  const auto zp = static_cast<uint8_t>(std::nearbyint(zp_c));
  QDQ_FUZZ_CHECK(
      std::bit_cast<uint32_t>(scale) == std::bit_cast<uint32_t>(params.y_scale) ||
          (std::isnan(scale) && std::isnan(params.y_scale)),
      "DynamicQuantizeLinear y_scale " + std::to_string(params.y_scale) + ", expected " + std::to_string(scale));
  QDQ_FUZZ_CHECK(
      zp == params.y_zero_point,
      "DynamicQuantizeLinear y_zero_point " + std::to_string(params.y_zero_point) + ", expected " + std::to_string(zp));
  for_checked_elements(n, [&](int64_t k) {
    const float q = load_float(x.bytes, k) / scale;
    int64_t v = 0;
    if (!std::isnan(q)) v = static_cast<int64_t>(std::clamp(std::nearbyint(static_cast<double>(q)) + zp, 0.0, 255.0));
    QDQ_FUZZ_CHECK(y.bytes[static_cast<size_t>(k)] == v, "DynamicQuantizeLinear y[" + std::to_string(k) +
                                                             "] = " + std::to_string(y.bytes[static_cast<size_t>(k)]) +
                                                             ", expected " + std::to_string(v));
  });
  for (const qdq::ExecutionOptions& o : variants(n)) {
    Output again = y;
    again.poison();
    const qdq::DynamicQuantizationParameters p2 = qdq::dynamic_quantize_linear(x.view(), again.view(), o, opset);
    QDQ_FUZZ_CHECK(again.bytes == y.bytes &&
                       std::bit_cast<uint32_t>(p2.y_scale) == std::bit_cast<uint32_t>(params.y_scale) &&
                       p2.y_zero_point == params.y_zero_point,
                   "DynamicQuantizeLinear differs between kernels/threads: " + hex_diff(y.bytes, again.bytes));
  }
}

}  // namespace

int run_operator_case(const uint8_t* data, size_t size) {
  Input in(data, size);
  switch (in.u8() % 3) {
    case 0: run_quantize(in); break;
    case 1: run_dequantize(in); break;
    default: run_dynamic(in); break;
  }
  return 0;
}
