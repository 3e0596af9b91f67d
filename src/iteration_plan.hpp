// The iteration plan and the validated calls that kernels see: plain data, no validation. Kept apart
// from plan.hpp (the validation) so that an edit to a rule does not rebuild the vectorised kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "kernels/prefetch_policy.hpp"
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
  SegmentCursor(const Plan& plan, int64_t first) : plan_(plan) { seek(first); }

  /// Moves to flat element `first`, wherever it is.
  void seek(int64_t first) {
    const Plan& p = plan_;
    if (p.granularity == Granularity::kPerTensor) return;
    n_ = first % p.inner;
    const int64_t row = first / p.inner;
    i_ = row % p.axis_len;
    o_ = row / p.axis_len;
    j_ = i_ / p.block;
    in_block_ = i_ % p.block;
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

/// Columns [begin, end) of every row: a row-tile task's share of each of its rows (RowTileTasks).
/// Unset (end 0), a task is its flat range.
struct ColumnWindow {
  int64_t begin = 0;
  int64_t end = 0;
  bool set() const { return end > 0; }
};

/// The pieces of elements [begin, end) in the order the kernels' chunk loops take them, each within
/// `width` (a multiple of 4) elements. Plainly, consecutive chunks of `width`. With `columns` set (a
/// row-tile task, RowTileTasks), only those columns of each row, in pieces within one row: for each
/// block of rows, tile by tile (columns [columns.begin + t·width, …)), the tile's piece of each of
/// the range's rows of that block in order, so that consecutive pieces share their parameters. Every
/// element once, either way.
class ChunkOrder {
 public:
  ChunkOrder(const Plan& plan, int64_t begin, int64_t end, int64_t width, ColumnWindow columns = {})
      : plan_(plan), end_(end), width_(width), columns_(columns), at_(begin) {
    if (columns.set()) start_rows(begin / plan.inner);
  }

  /// The next piece, [first, last); false when none is left.
  bool next(int64_t& first, int64_t& last) {
    if (!columns_.set()) {  // plain chunks
      if (at_ >= end_) return false;
      first = at_;
      last = std::min(end_, at_ + width_);
      at_ = last;
      return true;
    }
    const int64_t n = plan_.inner;
    for (;;) {
      if (r_ == rows_end_) {  // the tile's rows are done: the next tile, or the next block's rows
        r_ = row_;
        column_ += width_;
        if (column_ >= columns_.end) {
          if (rows_end_ * n >= end_) return false;
          start_rows(rows_end_);
        }
      }
      first = std::max(at_, r_ * n + column_);
      last = std::min(end_, r_ * n + std::min(columns_.end, column_ + width_));
      ++r_;
      if (first < last) return true;
    }
  }

 private:
  // The range's rows of the block of x's rows that holds `row`: [row_, rows_end_), from the first tile.
  void start_rows(int64_t row) {
    const Plan& p = plan_;
    const int64_t outer_first = row / p.axis_len * p.axis_len;
    const int64_t block_first = outer_first + (row - outer_first) / p.block * p.block;
    const int64_t block_end = std::min(block_first + p.block, outer_first + p.axis_len);
    row_ = row;
    rows_end_ = std::min(block_end, (end_ + p.inner - 1) / p.inner);
    r_ = row;
    column_ = columns_.begin;
  }

  const Plan& plan_;
  int64_t end_;
  int64_t width_;
  ColumnWindow columns_;  // unset: plain chunks
  int64_t at_;            // plainly the next piece's start; with a window, the range's start
  int64_t row_ = 0;
  int64_t rows_end_ = 0;
  int64_t r_ = 0;
  int64_t column_ = 0;
};

/// fn(first, last) for each flat range of a kernel's task: [begin, end) itself, or, for a row-tile
/// task (`columns` set), its columns of each row, row by row.
template <class Fn>
void for_each_task_range(const Plan& plan, int64_t begin, int64_t end, ColumnWindow columns, Fn&& fn) {
  if (!columns.set()) {
    fn(begin, end);
    return;
  }
  ChunkOrder rows(plan, begin, end, plan.inner, columns);
  for (int64_t first, last; rows.next(first, last);) fn(first, last);
}

/// The tasks of a call with blocks along an outer axis ([K, N] blocked along K, ONNX MatMul's weight
/// layout) and rows longer than a tile: each task is up to kRows rows of one block (more where rows
/// are short enough for more to fill the grain) by a run of columns, which the kernels take tile by
/// tile (ChunkOrder), so that a tile's parameters serve every row of the task: the quantize kernel's
/// reciprocals, the dequantize kernel's scales and unpacked zero points, from L1. Flat tasks of a
/// fixed number of elements hold an eighth of a 256 Ki-wide row, which no other row of the task
/// shares. Tasks come block by block, row group by row group, column run by column run; each holds
/// at most `grain` elements or one tile column's worth, and every element is in exactly one. Plain
/// data: nothing allocated.
class RowTileTasks {
 public:
  // 8 rows by 4096 columns (qdq's grain): the loops' L2 requests 4 KiB ahead of float32 x then ask
  // for the same task's next tile, not another task's, which the other thread may run (32 rows by
  // 1024 columns: 2 threads at 64 Mi 0.93x the flat tasks, 1 thread 1.2x), and one reciprocal per 8
  // elements is as good as one per 32.
  static constexpr int64_t kRows = 8;
  static constexpr int64_t kColumns = 1024;  // the SIMD kernels' chunk: a tile's column run

  /// Blocked with blocks of two rows or more, rows longer than kColumns, and a multiple of 4 long,
  /// so that every task's piece of a row starts on a whole byte of 2/4-bit data.
  static bool applies(const Plan& plan) {
    return plan.granularity == Granularity::kBlocked && plan.block > 1 && plan.inner > kColumns && plan.inner % 4 == 0;
  }

  RowTileTasks(const Plan& plan, int64_t grain) : plan_(plan) {
    rows_ = std::min(plan.block, std::max(kRows, grain / plan.inner));  // rows of 2048: 16 whole ones
    columns_ = std::max(kColumns, grain / rows_ / kColumns * kColumns);
    tiles_ = (plan.inner + columns_ - 1) / columns_;
    const int64_t blocks = (plan.axis_len + plan.block - 1) / plan.block;
    groups_per_block_ = (plan.block + rows_ - 1) / rows_;
    const int64_t last_block_rows = plan.axis_len - (blocks - 1) * plan.block;
    groups_per_outer_ = (blocks - 1) * groups_per_block_ + (last_block_rows + rows_ - 1) / rows_;
  }

  int64_t count() const { return plan_.outer * groups_per_outer_ * tiles_; }

  struct Task {
    int64_t begin;  // the flat range from the tile's first element to its last
    int64_t end;
    ColumnWindow columns;  // and its columns of each row
  };

  /// Task `index` (< count()).
  Task task(int64_t index) const {
    const Plan& p = plan_;
    const int64_t tile = index % tiles_;
    const int64_t group = index / tiles_ % groups_per_outer_;
    const int64_t outer = index / tiles_ / groups_per_outer_;
    const int64_t block = group / groups_per_block_;
    const int64_t first_in_block = group % groups_per_block_ * rows_;
    const int64_t rows = std::min(rows_, std::min(p.block, p.axis_len - block * p.block) - first_in_block);
    const int64_t row = outer * p.axis_len + block * p.block + first_in_block;
    const ColumnWindow columns{tile * columns_, std::min(p.inner, (tile + 1) * columns_)};
    return {row * p.inner + columns.begin, (row + rows - 1) * p.inner + columns.end, columns};
  }

 private:
  const Plan& plan_;
  int64_t rows_;
  int64_t columns_;
  int64_t tiles_;
  int64_t groups_per_block_;
  int64_t groups_per_outer_;
};

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
  // Set per task for row-tile tasks (RowTileTasks): a kernel then takes only these columns of each
  // row of its [begin, end).
  ColumnWindow columns;
  // The requests for x's lines ahead where x is 1 MiB or more (line_requests, once per call: the
  // loops may run once per row).
  LineRequests x_requests = LineRequests::kL1AndL2;
};

/// Everything a QuantizeLinear kernel needs, validated.
struct QuantizeCall : KernelCall {
  DataType division_type = DataType::kFloat;  // kFloat, kFloat16, kBFloat16 or kDouble
  bool saturate = true;
};

/// Everything a DequantizeLinear kernel needs, validated.
struct DequantizeCall : KernelCall {
  // 2/4-bit x given one code per byte, in its low bits (CodeLayout::kOnePerByte): x element i is
  // byte i of x, masked to the type's bits, instead of packed.
  bool x_one_per_byte = false;
};

}  // namespace qdq::detail
