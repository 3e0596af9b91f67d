// The iteration plan and the validated calls that kernels see: plain data, no validation. Kept apart
// from plan.hpp (the validation) so that an edit to a rule does not rebuild the vectorised kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "qdq/types.hpp"

namespace qdq::detail {

enum class Granularity { kPerTensor, kPerAxis, kBlocked };

/// The outer × axis × inner view of a tensor and where its scale/zero point live.
/// Element (o, i, n) — o < outer, i < axis_len, n < inner — is flat index (o·axis_len + i)·inner + n
/// and uses parameter index o·param_outer_stride + (i / block)·param_axis_stride + n·param_inner_stride.
struct Plan {
  Granularity granularity = Granularity::kPerTensor;
  int64_t elements = 0;
  int64_t outer = 1;
  int64_t axis_len = 1;
  int64_t inner = 1;
  int64_t block = 1;  // block_size for blocked, 1 otherwise
  int64_t param_outer_stride = 0;
  int64_t param_axis_stride = 0;
  int64_t param_inner_stride = 0;
};

/// A maximal run of consecutive elements whose parameter index is constant (step 0) or grows by one
/// per element (step 1): the unit every kernel works on.
struct Segment {
  int64_t count;
  int64_t param_index;
  int param_step;
};

/// The segment that starts at flat element `first` and ends no later than `limit`.
Segment segment_at(const Plan& plan, int64_t first, int64_t limit);

/// The segments from a flat element onwards, in order: what repeated segment_at calls return, but
/// with the divisions done once at construction and each next segment found by counting — short
/// segments (blocks of 32 along the last axis) would otherwise pay three 64-bit divisions each.
class SegmentCursor {
 public:
  SegmentCursor(const Plan& plan, int64_t first) : plan_(plan) {
    if (plan.granularity == Granularity::kPerTensor) return;
    n_ = first % plan.inner;
    const int64_t row = first / plan.inner;
    i_ = row % plan.axis_len;
    o_ = row / plan.axis_len;
    j_ = i_ / plan.block;
    in_block_ = i_ % plan.block;
  }

  /// The segment at the current element, cut at `limit` (exclusive, flat); moves past it.
#if defined(__GNUC__)
  [[gnu::always_inline]]
#endif
  Segment
  next(int64_t first, int64_t limit) {
    const Segment s = peek(first, limit);
    if (plan_.granularity != Granularity::kPerTensor) advance(s.count);
    return s;
  }

  /// The segment next() would return, without moving.
#if defined(__GNUC__)
  [[gnu::always_inline]]
#endif
  Segment
  peek(int64_t first, int64_t limit) const {
    const Plan& p = plan_;
    Segment s{limit - first, 0, 0};
    switch (p.granularity) {
      case Granularity::kPerTensor: return s;
      case Granularity::kPerAxis:
        if (p.inner == 1) {
          s = {std::min(limit - first, p.axis_len - i_), i_, 1};
        } else {
          s = {std::min(limit - first, p.inner - n_), i_, 0};
        }
        break;
      case Granularity::kBlocked: {
        const int64_t base = o_ * p.param_outer_stride + j_ * p.param_axis_stride;
        if (p.inner == 1) {
          s = {std::min(limit - first, std::min(p.block - in_block_, p.axis_len - i_)), base, 0};
        } else {
          s = {std::min(limit - first, p.inner - n_), base + n_, 1};
        }
        break;
      }
    }
    return s;
  }

 private:
  // Moves `count` elements on; a segment never crosses the end of an inner run (inner > 1) or of a
  // block or row (inner == 1), so at most one boundary is reached.
#if defined(__GNUC__)
  [[gnu::always_inline]]
#endif
  void
  advance(int64_t count) {
    const Plan& p = plan_;
    int64_t rows = 0;
    if (p.inner == 1) {
      rows = count;
    } else {
      n_ += count;
      if (n_ == p.inner) {
        n_ = 0;
        rows = 1;
      }
    }
    if (rows == 0) return;
    i_ += rows;
    in_block_ += rows;
    if (i_ == p.axis_len) {
      i_ = 0;
      ++o_;
      j_ = 0;
      in_block_ = 0;
    } else if (in_block_ == p.block) {
      ++j_;
      in_block_ = 0;
    }
  }

  const Plan& plan_;
  int64_t n_ = 0;         // index in the inner run
  int64_t i_ = 0;         // index along the axis
  int64_t o_ = 0;         // outer index
  int64_t j_ = 0;         // block along the axis (i_ / block)
  int64_t in_block_ = 0;  // i_ % block
};

/// Walks the elements [begin, end) segment by segment, in pieces of at most `piece` elements:
/// fn(first, count, param_index, param_step) for each piece, in order.
template <class Fn>
void for_each_piece(const Plan& plan, int64_t begin, int64_t end, int64_t piece, Fn&& fn) {
  SegmentCursor cursor(plan, begin);
  for (int64_t position = begin; position < end;) {
    const Segment segment = cursor.next(position, end);
    for (int64_t done = 0; done < segment.count; done += piece) {
      const int64_t count = segment.count - done < piece ? segment.count - done : piece;
      fn(position + done, count, segment.param_index + done * segment.param_step, segment.param_step);
    }
    position += segment.count;
  }
}

/// What every kernel call has, validated: the inputs, their types and the iteration plan.
struct KernelCall {
  int version = 25;
  DataType x_type = DataType::kUndefined;
  DataType scale_type = DataType::kUndefined;
  DataType zero_point_type = DataType::kUndefined;  // kUndefined: absent (or, dequantizing float8, not used)
  DataType y_type = DataType::kUndefined;
  Plan plan;
  const void* x = nullptr;
  const void* scale = nullptr;
  const void* zero_point = nullptr;
  std::span<const int64_t> y_shape;  // x's shape (the caller's storage; valid during the call)
  uint64_t y_bytes = 0;
};

/// Everything a QuantizeLinear kernel needs, validated.
struct QuantizeCall : KernelCall {
  DataType division_type = DataType::kFloat;  // kFloat, kFloat16, kBFloat16 or kDouble
  bool saturate = true;
};

/// Everything a DequantizeLinear kernel needs, validated.
struct DequantizeCall : KernelCall {};

}  // namespace qdq::detail
