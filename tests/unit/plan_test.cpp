// The iteration plan: every element's parameter index, walked segment by segment, equals the
// definition (o, i, n) → o·outer_stride + (i / block)·axis_stride + n·inner_stride.
#include <gtest/gtest.h>

#include <algorithm>
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

}  // namespace
}  // namespace qdq::detail
