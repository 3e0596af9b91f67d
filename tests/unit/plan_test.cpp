// The iteration plan: every element's parameter index, walked segment by segment, equals the
// definition (o, i, n) → o·outer_stride + (i / block)·axis_stride + n·inner_stride.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "plan.hpp"

namespace qdq::detail {
namespace {

std::vector<int64_t> walk(const Plan& plan, int64_t begin, int64_t end) {
  std::vector<int64_t> index;
  for (int64_t e = begin; e < end;) {
    const Segment s = segment_at(plan, e, end);
    EXPECT_GT(s.count, 0);
    for (int64_t k = 0; k < s.count; ++k) index.push_back(s.param_index + k * s.param_step);
    e += s.count;
  }
  return index;
}

/// The same walk with a SegmentCursor, its segments also cut at every multiple of `chunk` past
/// `begin` (as the kernels cut them at their chunk ends).
std::vector<int64_t> walk_cursor(const Plan& plan, int64_t begin, int64_t end, int64_t chunk) {
  std::vector<int64_t> index;
  SegmentCursor cursor(plan, begin);
  for (int64_t chunk_begin = begin; chunk_begin < end; chunk_begin += chunk) {
    const int64_t chunk_end = std::min(end, chunk_begin + chunk);
    for (int64_t e = chunk_begin; e < chunk_end;) {
      const Segment s = cursor.next(e, chunk_end);
      EXPECT_GT(s.count, 0);
      EXPECT_EQ(s.count, segment_at(plan, e, chunk_end).count);
      for (int64_t k = 0; k < s.count; ++k) index.push_back(s.param_index + k * s.param_step);
      e += s.count;
    }
  }
  return index;
}

std::vector<int64_t> definition(const Plan& plan) {
  std::vector<int64_t> index;
  for (int64_t o = 0; o < plan.outer; ++o)
    for (int64_t i = 0; i < plan.axis_len; ++i)
      for (int64_t n = 0; n < plan.inner; ++n)
        index.push_back(o * plan.param_outer_stride + (i / plan.block) * plan.param_axis_stride +
                        n * plan.param_inner_stride);
  return index;
}

TEST(PlanTest, SegmentsMatchTheDefinitionForEveryGranularityAndSplit) {
  const float scale_storage[64] = {};
  const std::vector<std::vector<int64_t>> shapes = {{7}, {3, 5}, {2, 3, 4}, {5, 1, 3}, {4, 6}};
  for (const auto& shape : shapes) {
    const auto rank = static_cast<int64_t>(shape.size());
    std::vector<float> x(static_cast<size_t>(element_count(shape)));
    TensorView xv{DataType::kFloat, shape, x.data(), x.size() * 4};
    for (int64_t axis = -rank; axis < rank; ++axis) {
      const int64_t a = axis < 0 ? axis + rank : axis;
      for (int64_t block = 0; block <= shape[a] + 1; ++block) {
        std::vector<int64_t> scale_shape;
        if (block == 0) {
          scale_shape = {shape[a]};
        } else {
          scale_shape = shape;
          scale_shape[a] = (shape[a] + block - 1) / block;
        }
        if (element_count(scale_shape) == 1 && block == 0) continue;
        TensorView sv{DataType::kFloat, scale_shape, scale_storage, element_count(scale_shape) * 4};
        QuantizeLinearAttributes attributes;
        attributes.axis = axis;
        if (block > 0) attributes.block_size = block;
        const QuantizeCall call = plan_quantize(attributes, xv, sv, nullptr);
        const std::vector<int64_t> expected = definition(call.plan);
        for (int64_t split = 1; split <= call.plan.elements; ++split) {
          std::vector<int64_t> got = walk(call.plan, 0, split);
          const std::vector<int64_t> rest = walk(call.plan, split, call.plan.elements);
          got.insert(got.end(), rest.begin(), rest.end());
          ASSERT_EQ(got, expected) << shape_to_string(shape) << " axis " << axis << " block " << block << " split "
                                   << split;
          for (int64_t chunk : {1, 2, 3, 4, 7, 1024}) {
            std::vector<int64_t> by_cursor = walk_cursor(call.plan, 0, split, chunk);
            const std::vector<int64_t> cursor_rest = walk_cursor(call.plan, split, call.plan.elements, chunk);
            by_cursor.insert(by_cursor.end(), cursor_rest.begin(), cursor_rest.end());
            ASSERT_EQ(by_cursor, expected) << shape_to_string(shape) << " axis " << axis << " block " << block
                                           << " split " << split << " chunk " << chunk;
          }
        }
      }
    }
  }
}

/// RowTileTasks: over blocked plans along an outer axis with rows past a tile (ragged last blocks,
/// blocks of more rows than a task takes, several outer indices, a ragged last column run), every
/// element is in exactly one task; a task's rows lie in one block, at most RowTileTasks::kRows of
/// them or as many whole rows as the grain holds; its columns are one run of a multiple of
/// RowTileTasks::kColumns (but the last), starting on a multiple of 4; it holds at most the grain
/// or one column run of its rows; and ChunkOrder over it gives exactly its elements, in pieces of
/// at most a tile that start on whole bytes.
TEST(PlanTest, RowTileTasksCoverEveryElementOnce) {
  int64_t checked = 0;
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{70, 1028}, {2, 37, 1032}, {5, 3000}, {3, 2, 4100}, {65, 2048}}) {
    const auto rank = static_cast<int64_t>(shape.size());
    const int64_t inner = shape.back();
    const int64_t axis_len = shape[static_cast<size_t>(rank - 2)];
    std::vector<float> x(static_cast<size_t>(element_count(shape)));
    const TensorView xv{DataType::kFloat, shape, x.data(), x.size() * 4};
    for (const int64_t block : {2, 3, 16, 32, 33, 64}) {
      std::vector<int64_t> scale_shape = shape;
      scale_shape[static_cast<size_t>(rank - 2)] = (axis_len + block - 1) / block;
      std::vector<float> scales(static_cast<size_t>(element_count(scale_shape)));
      const TensorView sv{DataType::kFloat, scale_shape, scales.data(), scales.size() * 4};
      QuantizeLinearAttributes attributes;
      attributes.axis = rank - 2;
      attributes.block_size = block;
      const Plan plan = plan_quantize(attributes, xv, sv, nullptr).plan;
      ASSERT_TRUE(RowTileTasks::applies(plan));
      for (const int64_t grain : {int64_t{32768}, int64_t{4096}, int64_t{1} << 20}) {
        const std::string what =
            shape_to_string(shape) + " block " + std::to_string(block) + " grain " + std::to_string(grain);
        const RowTileTasks tasks(plan, grain);
        std::vector<int> seen(static_cast<size_t>(plan.elements));
        for (int64_t t = 0; t < tasks.count(); ++t) {
          const RowTileTasks::Task task = tasks.task(t);
          const int64_t row = task.begin / inner;
          const int64_t last_row = (task.end - 1) / inner;
          const int64_t rows = last_row - row + 1;
          ASSERT_LE(rows, std::max(RowTileTasks::kRows, grain / inner)) << what << " task " << t;
          ASSERT_EQ(row / axis_len, last_row / axis_len) << what << " task " << t;
          ASSERT_EQ(row % axis_len / block, last_row % axis_len / block) << what << " task " << t;
          ASSERT_EQ(task.begin % inner, task.columns.begin) << what << " task " << t;
          ASSERT_EQ((task.end - 1) % inner + 1, task.columns.end) << what << " task " << t;
          ASSERT_EQ(task.columns.begin % RowTileTasks::kColumns, 0) << what << " task " << t;
          const int64_t run = task.columns.end - task.columns.begin;
          ASSERT_TRUE(run % RowTileTasks::kColumns == 0 || task.columns.end == inner) << what << " task " << t;
          ASSERT_LE(rows * run, std::max(grain, rows * RowTileTasks::kColumns)) << what << " task " << t;
          int64_t covered = 0;
          ChunkOrder order(plan, task.begin, task.end, RowTileTasks::kColumns, task.columns);
          for (int64_t first, last; order.next(first, last);) {
            ASSERT_LT(first, last) << what;
            ASSERT_LE(last - first, RowTileTasks::kColumns) << what;
            ASSERT_EQ(first % 4, 0) << what;
            ASSERT_EQ(first / inner, (last - 1) / inner) << what << " piece at " << first;
            ASSERT_GE(first % inner, task.columns.begin) << what << " piece at " << first;
            ASSERT_LE((last - 1) % inner, task.columns.end - 1) << what << " piece at " << first;
            for (int64_t e = first; e < last; ++e) ++seen[static_cast<size_t>(e)];
            covered += last - first;
          }
          ASSERT_EQ(covered, rows * run) << what << " task " << t;
        }
        for (int64_t e = 0; e < plan.elements; ++e)
          ASSERT_EQ(seen[static_cast<size_t>(e)], 1) << what << " element " << e;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 5 * 6 * 3);
}

/// ChunkOrder with row tiles (a window of whole rows): over ranges of blocked plans along an outer
/// axis that cross blocks of rows (ragged last blocks, several outer indices), every element comes
/// exactly once, in pieces of at most
/// the width that lie in one row and start on a multiple of 4; within a block, a tile's pieces come
/// row by row before the next tile's, each a segment whose parameters step by one; and without row
/// tiles, the plain chunks.
TEST(PlanTest, RowTilesCoverEveryElementOnceTileByTile) {
  const float scale_storage[4 * 3 * 40] = {};
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{7, 40}, {2, 9, 24}, {3, 5, 12}}) {
    const auto rank = static_cast<int64_t>(shape.size());
    const int64_t inner = shape.back();
    std::vector<float> x(static_cast<size_t>(element_count(shape)));
    const TensorView xv{DataType::kFloat, shape, x.data(), x.size() * 4};
    for (const int64_t block : {2, 3, 4}) {
      std::vector<int64_t> scale_shape = shape;
      scale_shape[static_cast<size_t>(rank - 2)] = (shape[static_cast<size_t>(rank - 2)] + block - 1) / block;
      const TensorView sv{DataType::kFloat, scale_shape, scale_storage, element_count(scale_shape) * 4};
      QuantizeLinearAttributes attributes;
      attributes.axis = rank - 2;
      attributes.block_size = block;
      const Plan plan = plan_quantize(attributes, xv, sv, nullptr).plan;
      for (const int64_t width : {4, 8, 12}) {
        for (int64_t begin = 0; begin < plan.elements; begin += 4) {
          for (int64_t end = begin + 1; end <= plan.elements; end += 3) {
            const std::string what = shape_to_string(shape) + " block " + std::to_string(block) + " width " +
                                     std::to_string(width) + " [" + std::to_string(begin) + ", " + std::to_string(end) +
                                     ")";
            // Row tiles over whole rows (the window of every column) where rows pass the width and the
            // range holds two of them; plain chunks elsewhere.
            const bool tiles = inner > width && end - begin >= 2 * inner;
            std::vector<int> seen(static_cast<size_t>(plan.elements));
            int64_t previous_first = -1;
            int64_t previous_row = -1;
            ChunkOrder order(plan, begin, end, width, tiles ? ColumnWindow{0, inner} : ColumnWindow{});
            for (int64_t first, last; order.next(first, last);) {
              ASSERT_LT(first, last) << what;
              ASSERT_LE(last - first, width) << what;
              for (int64_t e = first; e < last; ++e) ++seen[static_cast<size_t>(e)];
              if (!tiles) {
                ASSERT_EQ(first, previous_first < 0 ? begin : previous_first + width) << what;
                previous_first = first;
                continue;
              }
              ASSERT_EQ(first % 4, 0) << what;
              const int64_t row = first / inner;
              ASSERT_EQ((last - 1) / inner, row) << what << " piece at " << first;
              ASSERT_LE(first % inner / width, (last - 1) % inner / width) << what;  // one tile
              const Segment s = segment_at(plan, first, last);
              ASSERT_EQ(s.count, last - first) << what;
              if (previous_first >= 0 && row / plan.axis_len == previous_row / plan.axis_len &&
                  row % plan.axis_len / block == previous_row % plan.axis_len / block) {
                // The same block of rows: the next row in the same tile, or the first row in a later tile.
                const int64_t tile = first % inner / width;
                const int64_t previous_tile = previous_first % inner / width;
                ASSERT_TRUE((tile == previous_tile && row > previous_row) ||
                            (tile > previous_tile && row <= previous_row))
                    << what << " piece at " << first << " after " << previous_first;
              } else if (previous_first >= 0) {
                ASSERT_GT(row, previous_row) << what;  // blocks of rows in order
              }
              previous_first = first;
              previous_row = row;
            }
            for (int64_t e = 0; e < plan.elements; ++e)
              ASSERT_EQ(seen[static_cast<size_t>(e)], e >= begin && e < end ? 1 : 0) << what << " element " << e;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace qdq::detail
