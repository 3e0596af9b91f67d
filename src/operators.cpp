// The public operator entry points: validate (plan), choose the kernel once, run it over the plan's
// tasks. Nothing is written before validation has passed.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/prefetch_policy.hpp"
#include "parallel.hpp"
#include "plan.hpp"
#include "qdq/qdq.hpp"
#include "types/integer_types.hpp"
#include "types/packing_bulk.hpp"

namespace qdq {

namespace {

/// Runs `kernel` over the call's tasks: row-tile tasks (RowTileTasks) where `row_tiles` and they
/// apply, flat ranges of kTaskGrain elsewhere. `work` is parallel_ranges' bytes moved. After each
/// task's kernel, on the same thread, after_task(begin, end, columns) with the task's elements.
template <class Call, class Kernel, class AfterTask>
void run_tasks(const Call& call, Kernel kernel, void* y, const ExecutionOptions& options, uint64_t work, bool row_tiles,
               const AfterTask& after_task) {
  const auto* const id = reinterpret_cast<const void*>(kernel);
  if (row_tiles && detail::RowTileTasks::applies(call.plan)) {
    const detail::RowTileTasks tiles(call.plan, detail::kTaskGrain);
    detail::parallel_tasks(
        tiles.count(), call.plan.elements, options,
        [&](int64_t index) {
          const detail::RowTileTasks::Task task = tiles.task(index);
          Call tile_call = call;
          tile_call.columns = task.columns;
          kernel(tile_call, y, task.begin, task.end);
          after_task(task.begin, task.end, task.columns);
        },
        work, id);
    return;
  }
  detail::parallel_ranges(
      call.plan.elements, options,
      [&](int64_t begin, int64_t end) {
        kernel(call, y, begin, end);
        after_task(begin, end, detail::ColumnWindow{});
      },
      work, id);
}

template <class Call, class Kernel>
void run_tasks(const Call& call, Kernel kernel, void* y, const ExecutionOptions& options, uint64_t work,
               bool row_tiles) {
  run_tasks(call, kernel, y, options, work, row_tiles, [](int64_t, int64_t, detail::ColumnWindow) {});
}

/// The shortest rows (elements) of blocks along an outer axis for which a quantize kernel that
/// divides runs row-tile tasks.
constexpr int64_t kLongRows = 32768;

/// Clamps `count` int8 (Signed) or uint8 values in place to the range of the `Bits`-bit integer type,
/// with constant bounds, which compilers vectorise.
template <int Bits, bool Signed>
void clamp_to_bits(uint8_t* values, int64_t count) {
  if constexpr (Signed) {
    constexpr auto kLo = static_cast<int8_t>(-(1 << (Bits - 1)));
    constexpr auto kHi = static_cast<int8_t>((1 << (Bits - 1)) - 1);
    auto* const v = reinterpret_cast<int8_t*>(values);
    for (int64_t i = 0; i < count; ++i) v[i] = std::min(std::max(v[i], kLo), kHi);
  } else {
    constexpr auto kHi = static_cast<uint8_t>((1 << Bits) - 1);
    for (int64_t i = 0; i < count; ++i) values[i] = std::min(values[i], kHi);
  }
}

// The clamp and the zero point's unpacking are also compiled for AVX2 and picked at run time: the
// baseline (SSE2) has no byte minimum and maximum for int8, and its emulation took 3.5 us per 64 Ki
// values, a third of the call.
#if defined(__x86_64__) && defined(__ELF__) && !defined(QDQ_NO_TARGET_CLONES) && \
    ((defined(__clang__) && __clang_major__ >= 14) || (!defined(__clang__) && defined(__GNUC__)))
#define QDQ_CLAMP_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define QDQ_CLAMP_CLONES
#endif

/// unpack_all_codes (a zero point's values, one per byte), compiled as the clamp is.
QDQ_CLAMP_CLONES void unpack_values(const uint8_t* packed, int bits, int64_t count, bool is_signed, uint8_t* values) {
  detail::unpack_all_codes(packed, bits, count, is_signed, values);
}

/// clamp_to_bits for a 4- or 2-bit type.
QDQ_CLAMP_CLONES void clamp_to_narrow_range(uint8_t* values, int64_t count, int bits, bool is_signed) {
  if (bits == 4) {
    is_signed ? clamp_to_bits<4, true>(values, count) : clamp_to_bits<4, false>(values, count);
  } else {
    is_signed ? clamp_to_bits<2, true>(values, count) : clamp_to_bits<2, false>(values, count);
  }
}

/// Turns a validated QuantizeLinear call to a 2/4-bit integer y into the same call to the 8-bit type
/// of y's signedness, for y written one value per byte; returns the storage of its zero point's
/// values (unpacked to bytes). Each task's values are then clamped to the narrow range (clamp_task):
/// saturating round(x / s) + zero_point to int8's range and then to int4's is saturating it to
/// int4's, a NaN's minimum included, so the values are y's.
std::vector<uint8_t> make_byte_twin(detail::QuantizeCall& call, const TensorView* y_zero_point) {
  const int bits = bit_width(call.y_type);
  const bool is_signed = detail::is_signed_quantized_integer(call.y_type);
  const DataType byte_type = is_signed ? DataType::kInt8 : DataType::kUint8;
  std::vector<uint8_t> zero_point_values;
  if (call.zero_point != nullptr) {
    const auto n = static_cast<int64_t>(element_count(y_zero_point->shape));
    zero_point_values.resize(static_cast<size_t>(n) + 1);  // +1: never a null pointer
    unpack_values(static_cast<const uint8_t*>(call.zero_point), bits, n, is_signed, zero_point_values.data());
    call.zero_point = zero_point_values.data();
    call.zero_point_type = byte_type;
  }
  call.y_type = byte_type;
  call.y_bytes = static_cast<uint64_t>(call.plan.elements);
  return zero_point_values;
}

/// Clamps the values one task of a byte twin wrote (elements [begin, end); for a row-tile task only
/// its columns of each row) to the range of the `bits`-bit type.
void clamp_task(uint8_t* values, int64_t inner, int bits, bool is_signed, int64_t begin, int64_t end,
                detail::ColumnWindow columns) {
  if (!columns.set()) {
    clamp_to_narrow_range(values + begin, end - begin, bits, is_signed);
    return;
  }
  for (int64_t row = begin / inner; row * inner < end; ++row) {
    const int64_t from = std::max(begin, row * inner + columns.begin);
    const int64_t to = std::min(end, row * inner + columns.end);
    if (to > from) clamp_to_narrow_range(values + from, to - from, bits, is_signed);
  }
}

}  // namespace

int quantize_linear_version(int64_t opset) {
  if (opset < 10)
    throw Error("opset " + std::to_string(opset) + " has no QuantizeLinear/DequantizeLinear (they start at opset 10)");
  for (int v : {25, 24, 23, 21, 19, 13}) {
    if (opset >= v) return v;
  }
  return 10;
}

TensorSpec quantize_linear_output(const QuantizeLinearAttributes& attributes, const TensorView& x,
                                  const TensorView& y_scale, const TensorView* y_zero_point) {
  detail::QuantizeCall call = detail::plan_quantize(attributes, x, y_scale, y_zero_point);
  return {call.y_type, std::vector<int64_t>(call.y_shape.begin(), call.y_shape.end()), call.y_bytes};
}

void quantize_linear(const QuantizeLinearAttributes& attributes, const TensorView& x, const TensorView& y_scale,
                     const TensorView* y_zero_point, const MutableTensorView& y, const ExecutionOptions& options) {
  detail::QuantizeCall call = detail::plan_quantize(attributes, x, y_scale, y_zero_point);
  detail::check_output(detail::OpName{"QuantizeLinear", call.version}, y, call.y_type, call.y_shape, call.y_bytes);
  // y one value per byte: the 8-bit twin with normal stores (each task's clamp reads its values back).
  const bool one_per_byte = y.layout == CodeLayout::kOnePerByte;
  const int narrow_bits = bit_width(call.y_type);
  const bool narrow_signed = detail::is_signed_quantized_integer(call.y_type);
  const std::vector<uint8_t> twin_zero_point =
      one_per_byte ? make_byte_twin(call, y_zero_point) : std::vector<uint8_t>();
  const bool force_scalar = detail::resolve_force_scalar(options);
  const detail::QuantizeKernel kernel = detail::select_quantize_kernel(
      call, force_scalar, one_per_byte ? 0 : std::max(call.y_bytes, options.whole_output_bytes));
  call.x_requests = detail::line_requests(detail::ReadingLoop::kQuantize, x.size_bytes);
  // Blocks along an outer axis go tile by tile where the kernel shares a tile's reciprocals between
  // its rows. Where it divides (float8, whose check on the code lost in that order; integers with
  // 16-bit scales or division, the scalar kernel, a target that measured the division faster), tiles
  // pay only where a row of scales is too long to stay cached between the rows that read it
  // (docs/performance.md: 1.01-1.16x from rows of 32 Ki elements on, 0.88x at 4-8 Ki even at 64 Mi).
  const bool long_rows =
      (detail::is_quantized_integer(call.y_type) || detail::is_float8(call.y_type)) && call.plan.inner >= kLongRows;
  const bool row_tiles = long_rows || detail::quantize_shares_row_reciprocals(call, force_scalar);
  auto* const values = static_cast<uint8_t*>(y.data);
  run_tasks(call, kernel, y.data, options, 2 * detail::bytes_moved(call.x_type, call.y_type, call.plan.elements),
            row_tiles, [&](int64_t begin, int64_t end, detail::ColumnWindow columns) {
              if (one_per_byte) clamp_task(values, call.plan.inner, narrow_bits, narrow_signed, begin, end, columns);
            });
}

TensorSpec dequantize_linear_output(const DequantizeLinearAttributes& attributes, const TensorView& x,
                                    const TensorView& x_scale, const TensorView* x_zero_point) {
  detail::DequantizeCall call = detail::plan_dequantize(attributes, x, x_scale, x_zero_point);
  return {call.y_type, std::vector<int64_t>(call.y_shape.begin(), call.y_shape.end()), call.y_bytes};
}

void dequantize_linear(const DequantizeLinearAttributes& attributes, const TensorView& x, const TensorView& x_scale,
                       const TensorView* x_zero_point, const MutableTensorView& y, const ExecutionOptions& options) {
  detail::DequantizeCall call = detail::plan_dequantize(attributes, x, x_scale, x_zero_point);
  detail::check_output(detail::OpName{"DequantizeLinear", call.version}, y, call.y_type, call.y_shape, call.y_bytes);
  const detail::DequantizeKernel kernel = detail::select_dequantize_kernel(
      call, detail::resolve_force_scalar(options), std::max(call.y_bytes, options.whole_output_bytes));
  call.x_requests = detail::line_requests(detail::ReadingLoop::kDequantize, x.size_bytes);
  // Blocks along an outer axis go tile by tile for 2/4-bit x, so that a tile's scales and unpacked
  // zero points serve its rows from L1 (8-bit float8 x lost 14 % in the cache in that order).
  run_tasks(call, kernel, y.data, options,
            x.size_bytes + detail::bytes_moved(DataType::kUndefined, call.y_type, call.plan.elements),
            bit_width(call.x_type) < 8);
}

DynamicQuantizationParameters dynamic_quantize_linear(const TensorView& x, const MutableTensorView& y,
                                                      const ExecutionOptions& options, int64_t opset) {
  const std::string op = "DynamicQuantizeLinear-11";
  if (opset < 11)
    throw Error(op + ": opset " + std::to_string(opset) + " has no DynamicQuantizeLinear (it starts at opset 11)");
  if (x.type != DataType::kFloat)
    throw Error(op + ": x has element type " + data_type_name(x.type) + ", but must be FLOAT");
  if (x.layout != CodeLayout::kPacked)
    throw Error(op + ": x is given in code layout " + std::to_string(static_cast<int>(x.layout)) +
                ", but must be packed (CodeLayout::kPacked)");
  uint64_t count;
  try {
    count = element_count(x.shape);
  } catch (const Error& e) {
    throw Error(op + ": x: " + e.what());
  }
  uint64_t x_bytes;
  try {
    x_bytes = storage_bytes(DataType::kFloat, count);
  } catch (const Error& e) {
    throw Error(op + ": x: " + e.what());
  }
  if (x.size_bytes != x_bytes) {
    throw Error(op + ": x of shape " + shape_to_string(x.shape) + " needs " + std::to_string(x_bytes) +
                " bytes, but its buffer has " + std::to_string(x.size_bytes));
  }
  if (count == 0)
    throw Error(op + ": x is empty (shape " + shape_to_string(x.shape) +
                "); its range, and so the scale, is undefined");
  if (x.data == nullptr) throw Error(op + ": x has a null data pointer");
  detail::check_output(detail::OpName{"DynamicQuantizeLinear", 11}, y, DataType::kUint8, x.shape, count);

  const auto* data = static_cast<const float*>(x.data);
  const auto elements = static_cast<int64_t>(count);
  // Pass 1: the range, one partial result per fixed task. Task k reads the chunk k from the end, so
  // that the chunks read last, which pass 2 reads first, are still in the cache when it starts: at
  // sizes beyond the last-level cache, two forward passes would find none of x there. NaN, minimum
  // and maximum combine exactly in any order.
  const int64_t tasks = (elements + detail::kTaskGrain - 1) / detail::kTaskGrain;
  std::vector<detail::FloatRange> partial(static_cast<size_t>(tasks));
  const detail::RangeKernel range = detail::select_range_kernel(detail::resolve_force_scalar(options), x_bytes);
  detail::parallel_ranges(
      elements, options,
      [&](int64_t begin, int64_t) {
        const int64_t chunk = tasks - 1 - begin / detail::kTaskGrain;
        const int64_t first = chunk * detail::kTaskGrain;
        partial[static_cast<size_t>(chunk)] =
            range(data, first, std::min(elements, first + detail::kTaskGrain), elements);
      },
      count * 4, reinterpret_cast<const void*>(range));
  detail::FloatRange all;
  for (const detail::FloatRange& r : partial) {
    all.nan = all.nan || r.nan;
    all.lo = std::min(all.lo, r.lo);
    all.hi = std::max(all.hi, r.hi);
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float lo = all.nan ? nan : all.lo;
  const float hi = all.nan ? nan : all.hi;

  // The scale and zero point, in float32 exactly as the reference computes them.
  DynamicQuantizationParameters params;
  params.y_scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
  const float zero_point = 0.0f - lo / params.y_scale;
  const float clamped = std::isnan(zero_point) ? 255.0f : std::clamp(zero_point, 0.0f, 255.0f);
  params.y_zero_point = static_cast<uint8_t>(std::nearbyint(clamped));

  // Pass 2: QuantizeLinear (opset 10 rules) with that scale and zero point.
  const int64_t scalar_shape[1] = {1};
  QuantizeLinearAttributes attributes;
  attributes.opset = 10;
  const TensorView scale_view{DataType::kFloat, {}, &params.y_scale, 4};
  const TensorView zero_point_view{DataType::kUint8, std::span<const int64_t>(scalar_shape, 1), &params.y_zero_point,
                                   1};
  quantize_linear(attributes, x, scale_view, &zero_point_view, y, options);
  return params;
}

}  // namespace qdq
