// Validation: one test per rule, asserting that qdq::Error is thrown and that its message names the
// operator and version, the input or attribute, and the key values. Sources: quantize_linear.md §7,
// dequantize_linear.md §9, dynamic_quantize_linear.md §3, policy.md, and the qdq lines of
// quantize_linear.md §5 (shape rules). The exact wording is not fixed: only substrings that any
// sensible message contains are asserted (alternatives where a value may be printed as a name or a
// number).
//
// | rule                                                              | test                                   |
// |-------------------------------------------------------------------|----------------------------------------|
// | opset below 10 (Q/DQ), below 11 (Dynamic)                         | Versions.OpsetTooLow                   |
// | Q x type not allowed (INT8 x; FLOAT16 x at 13)                    | QTypes.XTypeNotAllowed                 |
// | Q float16 y_scale at opset 13                                     | QTypes.Float16ScaleAtOpset13           |
// | Q x and y_scale of different types at 19 / 21                     | QTypes.XAndScaleDifferAt19And21        |
// | Q e8m0 y_scale at 23                                              | QTypes.E8M0ScaleAtOpset23              |
// | Q int32 y_scale with float x at 13                                | QTypes.Int32ScaleAtOpset13             |
// | Q output type not allowed by the version (int2 at 24, int4 at 19, |                                        |
// |   float4 at 21, int16 at 19, float8 at 13)                        | QTypes.OutputTypeNotAllowedByVersion   |
// | Q output type not a quantized type (zero point / output_dtype)    | QTypes.OutputTypeNotQuantized          |
// | Q attribute not defined at the version (axis@10, saturate@13,     |                                        |
// |   block_size@19, output_dtype@19, precision@21)                   | QAttributes.NotDefinedAtVersion        |
// | Q precision not FLOAT/FLOAT16/BFLOAT16                            | QAttributes.PrecisionNotFloat          |
// | Q output_dtype ≠ zero point type                                  | QAttributes.OutputDtypeVsZeroPoint     |
// | Q/DQ axis out of range (per-axis, blocked)                        | Shapes.AxisOutOfRange                  |
// | Q/DQ axis ignored for a one-element scale (policy.md; no error)   | Shapes.AxisIgnoredForOneElementScale   |
// | Q/DQ per-axis length mismatch                                     | Shapes.PerAxisLengthMismatch           |
// | Q/DQ rank ≥ 2 scale without block_size (incl. one element)        | Shapes.Rank2ScaleWithoutBlockSize      |
// | Q/DQ scale of rank ≥ 2 before v21                                 | Shapes.Rank2ScaleBeforeOpset21         |
// | Q/DQ block_size < 0                                               | Shapes.NegativeBlockSize               |
// | Q/DQ blocked scale of another rank (rank 0 included)              | Shapes.BlockedScaleRankMismatch        |
// | Q/DQ blocked scale, other dimension differs                       | Shapes.BlockedScaleDimMismatch         |
// | Q/DQ S != ceil(D/B)                                               | Shapes.BlockCountMismatch              |
// | Q/DQ zero-point shape ≠ scale shape                               | Shapes.ZeroPointShapeMismatch          |
// | Q/DQ 1-D scale (longer than 1) at opset 10                        | Shapes.OneDScaleAtOpset10              |
// | negative dimension in a shape                                     | Shapes.NegativeDimension               |
// | DQ x type not allowed (FLOAT x, int16@19, float8@13, float4@21,   |                                        |
// |   int2@24, int4@19)                                               | DQTypes.XTypeNotAllowed                |
// | DQ float16 x_scale at 13, int32 x_scale, e8m0 x_scale at 23       | DQTypes.ScaleTypeNotAllowed            |
// | DQ attribute not defined (axis@10, block_size@19, output_dtype@21)| DQAttributes.NotDefinedAtVersion       |
// | DQ output_dtype not FLOAT/FLOAT16/BFLOAT16                         | DQAttributes.OutputDtypeNotFloat       |
// | DQ e8m0 x_scale without output_dtype                              | DQAttributes.E8M0ScaleNeedsOutputDtype |
// | DQ integer zero point of another type                             | DQZeroPoint.IntegerTypeMismatch        |
// | DQ float8 zero point not zero (NaN, 0.5, 1.0, FNUZ 0x80)          | DQZeroPoint.Float8NotZero              |
// | DQ float8 / float4 zero point of another type                     | DQZeroPoint.NarrowFloatOfAnotherType   |
// | input buffer byte size ≠ its shape's (x, scale, zero point)       | Buffers.InputByteSizeMismatch          |
// | null data pointer with bytes to read                              | Buffers.NullData                       |
// | unknown element type number                                       | Buffers.UnknownTypeNumber              |
// | one code per byte but DQ's 2/4-bit x; its size; unknown layout    | Buffers.CodesOnePerByteOnlyForDequantizeX |
// | one value per byte but Q's 2/4-bit integer y; its size; layout    |
// Buffers.OutputsOnePerByteOnlyForQuantizeSubByteIntegers | | output type / shape / byte size mismatch |
// Buffers.OutputMismatch                 | | Dynamic: empty x, non-FLOAT x, y not UINT8 / wrong size           |
// Dynamic.InvalidInputs                  | | Dynamic: x buffer size ≠ shape (no 64-bit wrap), null x           |
// Dynamic.InvalidBuffers                 | | element count past 2^63 or byte size past 2^64 (no allocation)    |
// Shapes.CountOrBytesOverflow            | | output_dtype / precision not a type number, or beyond int32       |
// QAttributes.TypeNumbersOutOfRange      | | accepted: E4M3FN/E5M2 zero point −0 (0x80); saturate ≠ 0/1 = on   |
// Accepted.NegativeZeroZeroPointAndSaturate | | model-level rules (non-INT attribute, unknown/duplicate           |
// tests/robustness/hostile_files_test.cpp   | |   attribute, missing x/scale, > 3 inputs, unknown op/domain)      |
// (HostileFiles.MalformedModels)          |
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "test_tensors.hpp"

namespace {

using namespace qdq_test;
using qdq::DequantizeLinearAttributes;
using qdq::QuantizeLinearAttributes;
using qdq::TensorView;
using Groups = std::vector<std::vector<std::string>>;

QuantizeLinearAttributes qa(int64_t opset) {
  QuantizeLinearAttributes a;
  a.opset = opset;
  return a;
}
DequantizeLinearAttributes dqa(int64_t opset) {
  DequantizeLinearAttributes a;
  a.opset = opset;
  return a;
}

/// Expects QuantizeLinear to reject the call, both in quantize_linear_output and in quantize_linear
/// (with an output buffer of the shape of x and type `y_type`, which must stay untouched).
void q_rejects(const QuantizeLinearAttributes& a, const Tensor& x, const Tensor& s, const Tensor* zp,
               const Groups& groups, const std::string& what, DataType y_type = DataType::kUint8) {
  const qdq::TensorView zv = zp ? zp->view() : qdq::TensorView{};
  expect_error([&] { qdq::quantize_linear_output(a, x.view(), s.view(), zp ? &zv : nullptr); }, groups,
               what + " (output)");
  Tensor y = output(y_type, x.shape, 0x5A);
  const std::vector<uint8_t> before = y.bytes;
  expect_error([&] { qdq::quantize_linear(a, x.view(), s.view(), zp ? &zv : nullptr, y.mut()); }, groups, what);
  EXPECT_EQ(y.bytes, before) << what << ": output written before an error";
}

void dq_rejects(const DequantizeLinearAttributes& a, const Tensor& x, const Tensor& s, const Tensor* zp,
                const Groups& groups, const std::string& what, DataType y_type = DataType::kFloat) {
  const qdq::TensorView zv = zp ? zp->view() : qdq::TensorView{};
  expect_error([&] { qdq::dequantize_linear_output(a, x.view(), s.view(), zp ? &zv : nullptr); }, groups,
               what + " (output)");
  Tensor y = output(y_type, x.shape, 0x5A);
  const std::vector<uint8_t> before = y.bytes;
  expect_error([&] { qdq::dequantize_linear(a, x.view(), s.view(), zp ? &zv : nullptr, y.mut()); }, groups, what);
  EXPECT_EQ(y.bytes, before) << what << ": output written before an error";
}

const Tensor& X23() {
  static const Tensor t = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  return t;
}
const Tensor& S1() {
  static const Tensor t = scalar_f32(1);
  return t;
}

// =============================================================================================

TEST(Versions, OpsetTooLow) {
  expect_error([] { qdq::quantize_linear_version(9); }, {{"opset"}, {"9"}}, "quantize_linear_version(9)");
  EXPECT_EQ(qdq::quantize_linear_version(10), 10);
  EXPECT_EQ(qdq::quantize_linear_version(12), 10);
  EXPECT_EQ(qdq::quantize_linear_version(18), 13);
  EXPECT_EQ(qdq::quantize_linear_version(20), 19);
  EXPECT_EQ(qdq::quantize_linear_version(22), 21);
  EXPECT_EQ(qdq::quantize_linear_version(23), 23);
  EXPECT_EQ(qdq::quantize_linear_version(24), 24);
  EXPECT_EQ(qdq::quantize_linear_version(26), 25);
  q_rejects(qa(9), X23(), S1(), nullptr, {{"QuantizeLinear"}, {"opset"}, {"9"}}, "Q opset 9");
  dq_rejects(dqa(9), from_ints(DataType::kUint8, {2}, {1, 2}), S1(), nullptr, {{"DequantizeLinear"}, {"opset"}, {"9"}},
             "DQ opset 9");
  const Tensor x = f32({2}, {1, 2});
  Tensor y = output(DataType::kUint8, {2});
  expect_error([&] { qdq::dynamic_quantize_linear(x.view(), y.mut(), {}, 10); },
               {{"DynamicQuantizeLinear"}, {"opset"}, {"10"}}, "Dynamic opset 10");
}

// =============================================================================================
// QuantizeLinear types per version.

TEST(QTypes, XTypeNotAllowed) {
  q_rejects(qa(25), from_ints(DataType::kInt8, {2}, {1, 2}), S1(), nullptr, {{"QuantizeLinear-25"}, {"x"}, {"INT8"}},
            "Q INT8 x");
  const Tensor xh = from_codes(DataType::kFloat16, {2}, {0x3C00, 0x4000});
  q_rejects(qa(13), xh, S1(), nullptr, {{"QuantizeLinear-13"}, {"x"}, {"FLOAT16"}}, "Q FLOAT16 x at 13");
}

TEST(QTypes, Float16ScaleAtOpset13) {
  const Tensor s = from_codes(DataType::kFloat16, {}, {0x3C00});
  q_rejects(qa(13), X23(), s, nullptr, {{"QuantizeLinear-13"}, {"y_scale"}, {"FLOAT16"}}, "Q FLOAT16 scale at 13");
  // Opset 18 selects version 13 too.
  q_rejects(qa(18), X23(), s, nullptr, {{"QuantizeLinear-13"}, {"y_scale"}, {"FLOAT16"}},
            "Q FLOAT16 scale at opset 18");
}

TEST(QTypes, XAndScaleDifferAt19And21) {
  const Tensor sh = from_codes(DataType::kFloat16, {}, {0x3C00});
  q_rejects(qa(19), X23(), sh, nullptr, {{"QuantizeLinear-19"}, {"y_scale"}, {"FLOAT16"}, {"FLOAT"}},
            "Q x FLOAT, scale FLOAT16 at 19");
  const Tensor sb = from_codes(DataType::kBFloat16, {}, {0x3F80});
  q_rejects(qa(22), X23(), sb, nullptr, {{"QuantizeLinear-21"}, {"y_scale"}, {"BFLOAT16"}, {"FLOAT"}},
            "Q x FLOAT, scale BFLOAT16 at opset 22 (v21)");
  const Tensor xi = from_ints(DataType::kInt32, {2}, {1, 2});
  q_rejects(qa(21), xi, S1(), nullptr, {{"QuantizeLinear-21"}, {"y_scale"}, {"INT32"}, {"FLOAT"}},
            "Q x INT32, scale FLOAT at 21");
  // The same types are fine at 23.
  EXPECT_NO_THROW(qdq::quantize_linear_output(qa(23), X23().view(), sh.view(), nullptr));
}

TEST(QTypes, E8M0ScaleAtOpset23) {
  const Tensor s = from_codes(DataType::kFloat8E8M0, {}, {0x7F});
  q_rejects(qa(23), X23(), s, nullptr, {{"QuantizeLinear-23"}, {"y_scale"}, {"FLOAT8E8M0"}}, "Q e8m0 scale at 23");
  EXPECT_NO_THROW(qdq::quantize_linear_output(qa(24), X23().view(), s.view(), nullptr));
}

TEST(QTypes, Int32ScaleAtOpset13) {
  const Tensor s = from_ints(DataType::kInt32, {}, {2});
  q_rejects(qa(13), X23(), s, nullptr, {{"QuantizeLinear-13"}, {"y_scale"}, {"INT32"}}, "Q INT32 scale at 13");
}

TEST(QTypes, OutputTypeNotAllowedByVersion) {
  struct Case {
    int64_t opset;
    DataType type;
    const char* op;
  };
  const Case cases[] = {
      {24, DataType::kInt2, "QuantizeLinear-24"},       {24, DataType::kUint2, "QuantizeLinear-24"},
      {19, DataType::kInt4, "QuantizeLinear-19"},       {19, DataType::kInt16, "QuantizeLinear-19"},
      {21, DataType::kFloat4E2M1, "QuantizeLinear-21"}, {13, DataType::kFloat8E4M3FN, "QuantizeLinear-13"},
      {10, DataType::kUint16, "QuantizeLinear-10"}};
  for (const Case& c : cases) {
    const std::string name = qdq::data_type_name(c.type);
    // Through the zero point's type.
    const Tensor zp = from_codes(c.type, {}, {0});
    q_rejects(qa(c.opset), X23(), S1(), &zp, {{c.op}, {name}},
              "Q zero point " + name + " at " + std::to_string(c.opset));
    // Through output_dtype (where the version has it).
    if (c.opset >= 21) {
      auto a = qa(c.opset);
      a.output_dtype = static_cast<int64_t>(c.type);
      q_rejects(a, X23(), S1(), nullptr, {{c.op}, {name, std::to_string(static_cast<int>(c.type))}},
                "Q output_dtype " + name + " at " + std::to_string(c.opset));
    }
  }
}

TEST(QTypes, OutputTypeNotQuantized) {
  const Tensor zp = scalar_f32(0);
  q_rejects(qa(25), X23(), S1(), &zp, {{"QuantizeLinear-25"}, {"y_zero_point"}, {"FLOAT"}}, "Q FLOAT zero point");
  const Tensor zp32 = from_ints(DataType::kInt32, {}, {0});
  q_rejects(qa(25), X23(), S1(), &zp32, {{"QuantizeLinear-25"}, {"y_zero_point"}, {"INT32"}}, "Q INT32 zero point");
  auto a = qa(25);
  a.output_dtype = static_cast<int64_t>(DataType::kFloat);
  q_rejects(a, X23(), S1(), nullptr, {{"QuantizeLinear-25"}, {"output_dtype"}, {"FLOAT", "1"}}, "Q output_dtype FLOAT");
  a.output_dtype = static_cast<int64_t>(DataType::kFloat8E8M0);
  q_rejects(a, X23(), S1(), nullptr, {{"QuantizeLinear-25"}, {"output_dtype"}, {"FLOAT8E8M0", "24"}},
            "Q output_dtype E8M0");
  a.output_dtype = 99;
  q_rejects(a, X23(), S1(), nullptr, {{"QuantizeLinear-25"}, {"output_dtype"}, {"99"}}, "Q output_dtype 99");
}

// =============================================================================================
// QuantizeLinear attributes.

TEST(QAttributes, NotDefinedAtVersion) {
  {
    auto a = qa(10);
    a.axis = 0;
    q_rejects(a, X23(), S1(), nullptr, {{"QuantizeLinear-10"}, {"axis"}}, "Q axis at 10");
  }
  {
    auto a = qa(13);
    a.saturate = 1;
    q_rejects(a, X23(), S1(), nullptr, {{"QuantizeLinear-13"}, {"saturate"}}, "Q saturate at 13");
  }
  {
    auto a = qa(19);
    a.block_size = 2;
    q_rejects(a, X23(), S1(), nullptr, {{"QuantizeLinear-19"}, {"block_size"}}, "Q block_size at 19");
  }
  {
    auto a = qa(19);
    a.output_dtype = static_cast<int64_t>(DataType::kUint8);
    q_rejects(a, X23(), S1(), nullptr, {{"QuantizeLinear-19"}, {"output_dtype"}}, "Q output_dtype at 19");
  }
  {
    auto a = qa(21);
    a.precision = static_cast<int64_t>(DataType::kFloat);
    q_rejects(a, X23(), S1(), nullptr, {{"QuantizeLinear-21"}, {"precision"}}, "Q precision at 21");
  }
  // Each becomes valid at its version.
  auto a = qa(23);
  a.axis = 0;
  a.saturate = 0;
  a.block_size = 0;
  a.output_dtype = static_cast<int64_t>(DataType::kInt8);
  a.precision = static_cast<int64_t>(DataType::kFloat16);
  EXPECT_NO_THROW(qdq::quantize_linear_output(a, X23().view(), S1().view(), nullptr));
}

TEST(QAttributes, PrecisionNotFloat) {
  for (DataType p : {DataType::kInt8, DataType::kDouble, DataType::kInt32, DataType::kFloat8E4M3FN}) {
    auto a = qa(25);
    a.precision = static_cast<int64_t>(p);
    const std::string name = qdq::data_type_name(p);
    q_rejects(a, X23(), S1(), nullptr,
              {{"QuantizeLinear-25"}, {"precision"}, {name, std::to_string(static_cast<int>(p))}},
              "Q precision " + name);
  }
  auto a = qa(25);
  a.precision = 99;
  q_rejects(a, X23(), S1(), nullptr, {{"QuantizeLinear-25"}, {"precision"}, {"99"}}, "Q precision 99");
  for (DataType p : {DataType::kFloat, DataType::kFloat16, DataType::kBFloat16}) {
    a.precision = static_cast<int64_t>(p);
    EXPECT_NO_THROW(qdq::quantize_linear_output(a, X23().view(), S1().view(), nullptr));
  }
}

TEST(QAttributes, OutputDtypeVsZeroPoint) {
  const Tensor zp = from_ints(DataType::kUint8, {}, {0});
  auto a = qa(25);
  a.output_dtype = static_cast<int64_t>(DataType::kInt8);
  q_rejects(a, X23(), S1(), &zp, {{"QuantizeLinear-25"}, {"output_dtype"}, {"y_zero_point"}, {"INT8", "3"}, {"UINT8"}},
            "Q output_dtype INT8 vs zero point UINT8");
  const Tensor zf8 = from_codes(DataType::kFloat8E5M2, {}, {0});
  a.output_dtype = static_cast<int64_t>(DataType::kFloat8E4M3FN);
  q_rejects(a, X23(), S1(), &zf8, {{"QuantizeLinear-25"}, {"output_dtype"}, {"FLOAT8E4M3FN", "17"}, {"FLOAT8E5M2"}},
            "Q output_dtype E4M3FN vs zero point E5M2");
  // Equal types are fine.
  a.output_dtype = static_cast<int64_t>(DataType::kUint8);
  const auto zv = zp.view();
  EXPECT_NO_THROW(qdq::quantize_linear_output(a, X23().view(), S1().view(), &zv));
}

// =============================================================================================
// Shapes (both operators).

TEST(Shapes, AxisOutOfRange) {
  const Tensor s3 = f32({3}, {1, 2, 3});
  for (int64_t axis : {9, -9}) {
    auto a = qa(25);
    a.axis = axis;
    q_rejects(a, X23(), s3, nullptr, {{"QuantizeLinear-25"}, {"axis"}, {std::to_string(axis)}},
              "Q per-axis axis " + std::to_string(axis));
    auto d = dqa(25);
    d.axis = axis;
    dq_rejects(d, from_ints(DataType::kUint8, {2, 3}, {1, 2, 3, 4, 5, 6}), s3, nullptr,
               {{"DequantizeLinear-25"}, {"axis"}, {std::to_string(axis)}}, "DQ per-axis axis " + std::to_string(axis));
  }
  // Blocked.
  auto a = qa(25);
  a.axis = 7;
  a.block_size = 2;
  q_rejects(a, X23(), f32({2, 2}, {1, 1, 1, 1}), nullptr, {{"QuantizeLinear-25"}, {"axis"}, {"7"}}, "Q blocked axis 7");
  // Rank-1 x with a per-axis scale and the default axis 1.
  dq_rejects(dqa(25), from_ints(DataType::kUint8, {3}, {1, 2, 3}), s3, nullptr,
             {{"DequantizeLinear-25"}, {"axis"}, {"1"}}, "DQ rank-1 x, default axis");
}

// policy.md: a scale with one element (rank 0 or 1) is per-tensor whatever `axis` is; axis is not
// range-checked. (quantize_linear.md §7's qdq line "from v21, axis out of range when r >= 2, even
// with a per-tensor scale" contradicts this; policy.md overrides the other files.)
TEST(Shapes, AxisIgnoredForOneElementScale) {
  for (int64_t opset : {13, 19, 21, 25}) {
    for (int64_t axis : {9, -9, 1}) {
      auto a = qa(opset);
      a.axis = axis;
      EXPECT_NO_THROW(qdq::quantize_linear_output(a, X23().view(), S1().view(), nullptr)) << opset << " " << axis;
      EXPECT_NO_THROW(qdq::quantize_linear_output(a, X23().view(), f32({1}, {2}).view(), nullptr))
          << opset << " " << axis;
      auto d = dqa(opset);
      d.axis = axis;
      EXPECT_NO_THROW(qdq::dequantize_linear_output(d, from_ints(DataType::kUint8, {2, 3}, {1, 2, 3, 4, 5, 6}).view(),
                                                    S1().view(), nullptr))
          << opset << " " << axis;
    }
  }
}

TEST(Shapes, PerAxisLengthMismatch) {
  const Tensor s4 = f32({4}, {1, 2, 3, 4});
  q_rejects(qa(25), X23(), s4, nullptr, {{"QuantizeLinear-25"}, {"y_scale"}, {"[4]"}, {"3"}},
            "Q per-axis length 4 vs 3");
  dq_rejects(dqa(13), from_ints(DataType::kUint8, {2, 3}, {1, 2, 3, 4, 5, 6}), s4, nullptr,
             {{"DequantizeLinear-13"}, {"x_scale"}, {"[4]"}, {"3"}}, "DQ per-axis length 4 vs 3");
  // A length-L scale on an axis of length 1 is an error too (no NumPy broadcasting).
  auto a = qa(25);
  a.axis = 0;
  q_rejects(a, f32({1, 3}, {1, 2, 3}), f32({2}, {1, 2}), nullptr, {{"QuantizeLinear-25"}, {"y_scale"}, {"[2]"}},
            "Q per-axis length 2 vs 1");
}

TEST(Shapes, Rank2ScaleWithoutBlockSize) {
  const Tensor x24 = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  q_rejects(qa(25), x24, f32({2, 4}, {1, 1, 1, 1, 1, 1, 1, 1}), nullptr,
            {{"QuantizeLinear-25"}, {"y_scale"}, {"[2,4]"}, {"block_size"}}, "Q rank-2 scale without block_size");
  // One element of rank 2 is per-tensor only as a blocked scale.
  q_rejects(qa(25), x24, f32({1, 1}, {1}), nullptr, {{"QuantizeLinear-25"}, {"y_scale"}, {"[1,1]"}},
            "Q [1,1] scale without block_size");
  dq_rejects(dqa(25), from_ints(DataType::kUint8, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}),
             f32({2, 4}, {1, 1, 1, 1, 1, 1, 1, 1}), nullptr,
             {{"DequantizeLinear-25"}, {"x_scale"}, {"[2,4]"}, {"block_size"}}, "DQ rank-2 scale without block_size");
}

TEST(Shapes, Rank2ScaleBeforeOpset21) {
  q_rejects(qa(19), X23(), f32({1, 1}, {1}), nullptr, {{"QuantizeLinear-19"}, {"y_scale"}, {"[1,1]"}},
            "Q [1,1] scale at 19");
  dq_rejects(dqa(13), from_ints(DataType::kUint8, {2, 3}, {1, 2, 3, 4, 5, 6}), f32({2, 3}, {1, 1, 1, 1, 1, 1}), nullptr,
             {{"DequantizeLinear-13"}, {"x_scale"}, {"[2,3]"}}, "DQ [2,3] scale at 13");
}

TEST(Shapes, NegativeBlockSize) {
  auto a = qa(25);
  a.block_size = -1;
  q_rejects(a, X23(), S1(), nullptr, {{"QuantizeLinear-25"}, {"block_size"}, {"-1"}}, "Q block_size -1");
  auto d = dqa(21);
  d.block_size = -3;
  dq_rejects(d, from_ints(DataType::kUint8, {2, 3}, {1, 2, 3, 4, 5, 6}), S1(), nullptr,
             {{"DequantizeLinear-21"}, {"block_size"}, {"-3"}}, "DQ block_size -3");
}

TEST(Shapes, BlockedScaleRankMismatch) {
  auto a = qa(25);
  a.axis = 1;
  a.block_size = 2;
  const Tensor x24 = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  q_rejects(a, x24, f32({2}, {1, 1}), nullptr, {{"QuantizeLinear-25"}, {"y_scale"}, {"[2]"}, {"rank"}},
            "Q blocked rank-1 scale, rank-2 x");
  // A rank-0 scale with block_size is an error too (policy.md).
  q_rejects(a, x24, S1(), nullptr, {{"QuantizeLinear-25"}, {"y_scale"}, {"block_size"}}, "Q blocked rank-0 scale");
  auto d = dqa(25);
  d.axis = 1;
  d.block_size = 2;
  dq_rejects(d, from_ints(DataType::kUint8, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), f32({2, 2, 1}, {1, 1, 1, 1}), nullptr,
             {{"DequantizeLinear-25"}, {"x_scale"}, {"[2,2,1]"}, {"rank"}}, "DQ blocked rank-3 scale, rank-2 x");
}

TEST(Shapes, BlockedScaleDimMismatch) {
  auto a = qa(25);
  a.axis = 1;
  a.block_size = 2;
  const Tensor x24 = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  q_rejects(a, x24, f32({3, 2}, {1, 1, 1, 1, 1, 1}), nullptr,
            {{"QuantizeLinear-25"}, {"y_scale"}, {"[3,2]"}, {"[2,2]"}}, "Q blocked scale [3,2] for x [2,4]");
}

TEST(Shapes, BlockCountMismatch) {
  const Tensor x25 = f32({2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  auto a = qa(25);
  a.axis = 1;
  a.block_size = 2;
  // S must be ceil(5/2) = 3.
  q_rejects(a, x25, f32({2, 2}, {1, 1, 1, 1}), nullptr, {{"QuantizeLinear-25"}, {"y_scale"}, {"[2,2]"}, {"[2,3]"}},
            "Q blocked S=2, D=5, B=2");
  q_rejects(a, x25, f32({2, 4}, {1, 1, 1, 1, 1, 1, 1, 1}), nullptr,
            {{"QuantizeLinear-25"}, {"y_scale"}, {"[2,4]"}, {"[2,3]"}},
            "Q blocked S=4, D=5, B=2 (trailing scales unused)");
  // B = 4 needs S = 2; a scale with S = 3 is accepted by the reference but not by qdq.
  a.block_size = 4;
  q_rejects(a, x25, f32({2, 3}, {1, 1, 1, 1, 1, 1}), nullptr,
            {{"QuantizeLinear-25"}, {"y_scale"}, {"[2,3]"}, {"[2,2]"}}, "Q blocked S=3, D=5, B=4");
  auto d = dqa(25);
  d.axis = 0;
  d.block_size = 3;
  dq_rejects(d, from_ints(DataType::kUint8, {7, 1}, {1, 2, 3, 4, 5, 6, 7}), f32({2, 1}, {1, 1}), nullptr,
             {{"DequantizeLinear-25"}, {"x_scale"}, {"[2,1]"}, {"[3,1]"}}, "DQ blocked S=2, D=7, B=3");
}

TEST(Shapes, ZeroPointShapeMismatch) {
  const Tensor s3 = f32({3}, {1, 2, 3});
  const Tensor zp0 = from_ints(DataType::kUint8, {}, {1});
  q_rejects(qa(25), X23(), s3, &zp0, {{"QuantizeLinear-25"}, {"y_zero_point"}, {"y_scale"}, {"[]"}, {"[3]"}},
            "Q per-axis scale, scalar zero point");
  const Tensor zp13 = from_ints(DataType::kUint8, {1, 3}, {1, 1, 1});
  q_rejects(qa(25), X23(), s3, &zp13, {{"QuantizeLinear-25"}, {"y_zero_point"}, {"[1,3]"}, {"[3]"}},
            "Q per-axis scale [3], zero point [1,3]");
  const Tensor zp2 = from_ints(DataType::kUint8, {2}, {1, 1});
  q_rejects(qa(25), X23(), S1(), &zp2, {{"QuantizeLinear-25"}, {"y_zero_point"}, {"[2]"}, {"[]"}},
            "Q scalar scale, zero point [2]");
  dq_rejects(dqa(25), from_ints(DataType::kUint8, {2, 3}, {1, 2, 3, 4, 5, 6}), s3, &zp0,
             {{"DequantizeLinear-25"}, {"x_zero_point"}, {"x_scale"}, {"[]"}, {"[3]"}},
             "DQ per-axis scale, scalar zero point");
  // One-element pairs of rank 0 / 1 match each other.
  const Tensor zp1 = from_ints(DataType::kUint8, {1}, {1});
  const auto z1 = zp1.view();
  const auto z0 = zp0.view();
  EXPECT_NO_THROW(qdq::quantize_linear_output(qa(25), X23().view(), S1().view(), &z1));
  EXPECT_NO_THROW(qdq::quantize_linear_output(qa(25), X23().view(), f32({1}, {1}).view(), &z0));
}

TEST(Shapes, OneDScaleAtOpset10) {
  const Tensor s3 = f32({3}, {1, 2, 3});
  q_rejects(qa(10), X23(), s3, nullptr, {{"QuantizeLinear-10"}, {"y_scale"}, {"[3]"}}, "Q 1-D scale at 10");
  q_rejects(qa(12), X23(), s3, nullptr, {{"QuantizeLinear-10"}, {"y_scale"}, {"[3]"}}, "Q 1-D scale at opset 12 (v10)");
  dq_rejects(dqa(10), from_ints(DataType::kUint8, {2, 3}, {1, 2, 3, 4, 5, 6}), s3, nullptr,
             {{"DequantizeLinear-10"}, {"x_scale"}, {"[3]"}}, "DQ 1-D scale at 10");
  // A one-element 1-D scale is per-tensor, fine at 10.
  EXPECT_NO_THROW(qdq::quantize_linear_output(qa(10), X23().view(), f32({1}, {2}).view(), nullptr));
}

TEST(Shapes, NegativeDimension) {
  const Shape bad{2, -3};
  const std::vector<uint8_t> bytes(24, 0);
  const qdq::TensorView x{DataType::kFloat, bad, bytes.data(), bytes.size()};
  expect_error([&] { qdq::quantize_linear_output(qa(25), x, S1().view(), nullptr); },
               {{"QuantizeLinear-25"}, {"x"}, {"-3"}}, "Q negative dimension");
}

// =============================================================================================
// DequantizeLinear types and attributes.

TEST(DQTypes, XTypeNotAllowed) {
  dq_rejects(dqa(25), f32({2}, {1, 2}), S1(), nullptr, {{"DequantizeLinear-25"}, {"x"}, {"FLOAT"}}, "DQ FLOAT x");
  struct Case {
    int64_t opset;
    DataType type;
    const char* op;
  };
  const Case cases[] = {
      {19, DataType::kInt16, "DequantizeLinear-19"},        {19, DataType::kInt4, "DequantizeLinear-19"},
      {13, DataType::kFloat8E4M3FN, "DequantizeLinear-13"}, {21, DataType::kFloat4E2M1, "DequantizeLinear-21"},
      {24, DataType::kInt2, "DequantizeLinear-24"},         {24, DataType::kUint2, "DequantizeLinear-24"},
      {10, DataType::kUint16, "DequantizeLinear-10"}};
  for (const Case& c : cases) {
    const std::string name = qdq::data_type_name(c.type);
    dq_rejects(dqa(c.opset), from_codes(c.type, {2}, {0, 1}), S1(), nullptr, {{c.op}, {"x"}, {name}},
               "DQ x " + name + " at " + std::to_string(c.opset));
  }
}

TEST(DQTypes, ScaleTypeNotAllowed) {
  const Tensor x = from_ints(DataType::kUint8, {2}, {1, 2});
  dq_rejects(dqa(13), x, from_codes(DataType::kFloat16, {}, {0x3C00}), nullptr,
             {{"DequantizeLinear-13"}, {"x_scale"}, {"FLOAT16"}}, "DQ FLOAT16 scale at 13");
  dq_rejects(dqa(25), x, from_ints(DataType::kInt32, {}, {2}), nullptr,
             {{"DequantizeLinear-25"}, {"x_scale"}, {"INT32"}}, "DQ INT32 scale");
  auto d = dqa(23);
  d.output_dtype = static_cast<int64_t>(DataType::kFloat);
  dq_rejects(d, x, from_codes(DataType::kFloat8E8M0, {}, {0x7F}), nullptr,
             {{"DequantizeLinear-23"}, {"x_scale"}, {"FLOAT8E8M0"}}, "DQ e8m0 scale at 23");
  d.opset = 24;
  EXPECT_NO_THROW(
      qdq::dequantize_linear_output(d, x.view(), from_codes(DataType::kFloat8E8M0, {}, {0x7F}).view(), nullptr));
}

TEST(DQAttributes, NotDefinedAtVersion) {
  const Tensor x = from_ints(DataType::kUint8, {2, 3}, {1, 2, 3, 4, 5, 6});
  {
    auto d = dqa(10);
    d.axis = 1;
    dq_rejects(d, x, S1(), nullptr, {{"DequantizeLinear-10"}, {"axis"}}, "DQ axis at 10");
  }
  {
    auto d = dqa(19);
    d.block_size = 1;
    dq_rejects(d, x, S1(), nullptr, {{"DequantizeLinear-19"}, {"block_size"}}, "DQ block_size at 19");
  }
  {
    auto d = dqa(21);
    d.output_dtype = static_cast<int64_t>(DataType::kFloat);
    dq_rejects(d, x, S1(), nullptr, {{"DequantizeLinear-21"}, {"output_dtype"}}, "DQ output_dtype at 21");
  }
  {
    auto d = dqa(22);
    d.output_dtype = static_cast<int64_t>(DataType::kFloat);
    dq_rejects(d, x, S1(), nullptr, {{"DequantizeLinear-21"}, {"output_dtype"}}, "DQ output_dtype at opset 22 (v21)");
  }
}

TEST(DQAttributes, OutputDtypeNotFloat) {
  const Tensor x = from_ints(DataType::kUint8, {2}, {1, 2});
  for (DataType t : {DataType::kInt8, DataType::kDouble, DataType::kFloat8E4M3FN, DataType::kFloat8E8M0}) {
    auto d = dqa(25);
    d.output_dtype = static_cast<int64_t>(t);
    const std::string name = qdq::data_type_name(t);
    dq_rejects(d, x, S1(), nullptr,
               {{"DequantizeLinear-25"}, {"output_dtype"}, {name, std::to_string(static_cast<int>(t))}},
               "DQ output_dtype " + name);
  }
}

TEST(DQAttributes, E8M0ScaleNeedsOutputDtype) {
  const Tensor x = from_ints(DataType::kUint8, {2}, {1, 2});
  dq_rejects(dqa(25), x, from_codes(DataType::kFloat8E8M0, {}, {0x81}), nullptr,
             {{"DequantizeLinear-25"}, {"output_dtype"}, {"FLOAT8E8M0"}}, "DQ e8m0 scale without output_dtype");
  dq_rejects(dqa(24), x, from_codes(DataType::kFloat8E8M0, {2}, {0x81, 0x80}), nullptr,
             {{"DequantizeLinear-24"}, {"output_dtype"}, {"FLOAT8E8M0"}}, "DQ e8m0 scale without output_dtype at 24");
}

// =============================================================================================
// DequantizeLinear zero points.

TEST(DQZeroPoint, IntegerTypeMismatch) {
  const Tensor x = from_ints(DataType::kInt8, {2}, {1, 2});
  const Tensor zp = from_ints(DataType::kUint8, {}, {1});
  dq_rejects(dqa(25), x, S1(), &zp, {{"DequantizeLinear-25"}, {"x_zero_point"}, {"UINT8"}, {"INT8"}},
             "DQ INT8 x, UINT8 zp");
  const Tensor x4 = from_ints(DataType::kInt4, {2}, {1, 2});
  const Tensor zp2 = from_ints(DataType::kInt2, {}, {1});
  dq_rejects(dqa(25), x4, S1(), &zp2, {{"DequantizeLinear-25"}, {"x_zero_point"}, {"INT2"}, {"INT4"}},
             "DQ INT4 x, INT2 zp");
}

TEST(DQZeroPoint, Float8NotZero) {
  struct Case {
    DataType type;
    uint64_t code;
    const char* what;
  };
  const Case cases[] = {{DataType::kFloat8E4M3FN, 0x7F, "E4M3FN NaN"},
                        {DataType::kFloat8E4M3FN, 0x30, "E4M3FN 0.5"},
                        {DataType::kFloat8E4M3FN, 0x38, "E4M3FN 1.0"},
                        {DataType::kFloat8E4M3FN, 0xB8, "E4M3FN -1.0"},
                        {DataType::kFloat8E4M3FN, 0x01, "E4M3FN min subnormal"},
                        {DataType::kFloat8E5M2, 0x7E, "E5M2 NaN"},
                        {DataType::kFloat8E5M2, 0x7C, "E5M2 inf"},
                        {DataType::kFloat8E4M3FNUZ, 0x80, "E4M3FNUZ NaN"},
                        {DataType::kFloat8E5M2FNUZ, 0x80, "E5M2FNUZ NaN"},
                        {DataType::kFloat8E5M2FNUZ, 0x3C, "E5M2FNUZ 0.5"}};
  for (const Case& c : cases) {
    const Tensor x = from_codes(c.type, {2}, {0x01, 0x02});
    const Tensor zp = from_codes(c.type, {}, {c.code});
    dq_rejects(dqa(25), x, S1(), &zp, {{"DequantizeLinear-25"}, {"x_zero_point"}, {"zero"}},
               std::string("DQ zp ") + c.what);
  }
  // A per-axis zero point with one bad element (the last).
  const Tensor x = from_codes(DataType::kFloat8E4M3FN, {2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor zp = from_codes(DataType::kFloat8E4M3FN, {3}, {0x00, 0x80, 0x30});
  dq_rejects(dqa(25), x, f32({3}, {1, 2, 3}), &zp, {{"DequantizeLinear-25"}, {"x_zero_point"}, {"zero"}},
             "DQ per-axis zp, last element 0.5");
}

TEST(DQZeroPoint, NarrowFloatOfAnotherType) {
  const Tensor x8 = from_codes(DataType::kFloat8E4M3FN, {2}, {0x38, 0x40});
  const Tensor z8 = from_codes(DataType::kFloat8E5M2, {}, {0x00});
  dq_rejects(dqa(25), x8, S1(), &z8, {{"DequantizeLinear-25"}, {"x_zero_point"}, {"FLOAT8E5M2"}, {"FLOAT8E4M3FN"}},
             "DQ E4M3FN x, E5M2 zp");
  const Tensor zu8 = from_ints(DataType::kUint8, {}, {0});
  dq_rejects(dqa(25), x8, S1(), &zu8, {{"DequantizeLinear-25"}, {"x_zero_point"}, {"UINT8"}, {"FLOAT8E4M3FN"}},
             "DQ E4M3FN x, UINT8 zp");
  const Tensor x4 = from_codes(DataType::kFloat4E2M1, {2}, {0x2, 0x4});
  const Tensor zu4 = from_ints(DataType::kUint4, {}, {0});
  dq_rejects(dqa(25), x4, S1(), &zu4, {{"DequantizeLinear-25"}, {"x_zero_point"}, {"UINT4"}, {"FLOAT4E2M1"}},
             "DQ FLOAT4E2M1 x, UINT4 zp");
  const Tensor zf8 = from_codes(DataType::kFloat8E4M3FN, {}, {0x00});
  dq_rejects(dqa(25), x4, S1(), &zf8, {{"DequantizeLinear-25"}, {"x_zero_point"}, {"FLOAT8E4M3FN"}, {"FLOAT4E2M1"}},
             "DQ FLOAT4E2M1 x, E4M3FN zp");
}

// =============================================================================================
// Buffers.

TEST(Buffers, InputByteSizeMismatch) {
  {
    Tensor x = X23();
    x.bytes.resize(20);
    q_rejects(qa(25), x, S1(), nullptr, {{"QuantizeLinear-25"}, {"x"}, {"24"}, {"20"}}, "Q x 20 bytes for [2,3] FLOAT");
  }
  {
    Tensor s = S1();
    s.bytes.resize(8);
    q_rejects(qa(25), X23(), s, nullptr, {{"QuantizeLinear-25"}, {"y_scale"}, {"4"}, {"8"}}, "Q y_scale 8 bytes");
  }
  {
    Tensor zp = from_ints(DataType::kUint8, {}, {0});
    zp.bytes.resize(2);
    q_rejects(qa(25), X23(), S1(), &zp, {{"QuantizeLinear-25"}, {"y_zero_point"}, {"1"}, {"2"}},
              "Q zero point 2 bytes");
  }
  {
    // Packed: 5 INT4 elements need 3 bytes.
    Tensor x = from_ints(DataType::kInt4, {5}, {1, 2, 3, 4, 5});
    x.bytes.resize(5);
    dq_rejects(dqa(25), x, S1(), nullptr, {{"DequantizeLinear-25"}, {"x"}, {"3"}, {"5"}},
               "DQ INT4 x 5 bytes for 5 elements");
  }
  {
    Tensor x = from_ints(DataType::kUint2, {5}, {1, 2, 3, 0, 1});
    x.bytes.resize(1);
    dq_rejects(dqa(25), x, S1(), nullptr, {{"DequantizeLinear-25"}, {"x"}, {"2"}, {"1"}},
               "DQ UINT2 x 1 byte for 5 elements");
  }
}

TEST(Buffers, NullData) {
  const qdq::TensorView x{DataType::kFloat, X23().shape, nullptr, 24};
  expect_error([&] { qdq::quantize_linear_output(qa(25), x, S1().view(), nullptr); },
               {{"QuantizeLinear-25"}, {"x"}, {"null"}}, "Q null x");
  Tensor y = output(DataType::kUint8, {2, 3});
  const qdq::MutableTensorView ny{DataType::kUint8, y.shape, nullptr, 6};
  expect_error([&] { qdq::quantize_linear(qa(25), X23().view(), S1().view(), nullptr, ny); },
               {{"QuantizeLinear-25"}, {"y"}, {"null"}}, "Q null y");
  // Empty tensors may have a null pointer.
  const Shape empty{0, 3};
  const qdq::TensorView ex{DataType::kFloat, empty, nullptr, 0};
  const qdq::MutableTensorView ey{DataType::kUint8, empty, nullptr, 0};
  EXPECT_NO_THROW(qdq::quantize_linear(qa(25), ex, S1().view(), nullptr, ey));
}

TEST(Buffers, UnknownTypeNumber) {
  Tensor x = X23();
  x.type = static_cast<DataType>(99);
  q_rejects(qa(25), x, S1(), nullptr, {{"QuantizeLinear-25"}, {"x"}, {"99"}}, "Q x type 99");
}

TEST(Buffers, CodesOnePerByteOnlyForDequantizeX) {
  using qdq::CodeLayout;
  const std::vector<uint8_t> items = {1, 2, 0xF3, 4, 5};  // five INT4 codes one per byte
  const Shape five{5};
  const qdq::TensorView x{DataType::kInt4, five, items.data(), 5, CodeLayout::kOnePerByte};
  std::vector<float> y(5, -1.0f);
  const qdq::MutableTensorView yv{DataType::kFloat, five, y.data(), 20};
  qdq::dequantize_linear(dqa(25), x, S1().view(), nullptr, yv);
  EXPECT_EQ(y, (std::vector<float>{1, 2, 3, 4, 5}));
  // A zero point, a scale, QuantizeLinear's x or DynamicQuantizeLinear's x one per byte.
  const std::vector<uint8_t> zp_item = {1};
  const qdq::TensorView zp{DataType::kInt4, {}, zp_item.data(), 1, CodeLayout::kOnePerByte};
  expect_error([&] { qdq::dequantize_linear(dqa(25), x, S1().view(), &zp, yv); },
               {{"DequantizeLinear-25"}, {"x_zero_point"}, {"one code per byte"}}, "DQ zero point one per byte");
  qdq::TensorView s = S1().view();
  s.layout = CodeLayout::kOnePerByte;
  expect_error([&] { qdq::dequantize_linear_output(dqa(25), x, s, nullptr); },
               {{"DequantizeLinear-25"}, {"x_scale"}, {"one code per byte"}}, "DQ scale one per byte");
  qdq::TensorView qx = X23().view();
  qx.layout = CodeLayout::kOnePerByte;
  expect_error([&] { qdq::quantize_linear_output(qa(25), qx, S1().view(), nullptr); },
               {{"QuantizeLinear-25"}, {"x"}, {"one code per byte"}}, "Q x one per byte");
  std::vector<uint8_t> dy(6, 0x33);
  expect_error(
      [&] {
        qdq::dynamic_quantize_linear(qx, {DataType::kUint8, X23().shape, dy.data(), 6});
      },
      {{"DynamicQuantizeLinear"}, {"x"}, {"packed"}}, "Dynamic x one per byte");
  EXPECT_EQ(dy, std::vector<uint8_t>(6, 0x33));
  // 8-bit x, a buffer of the packed size, an unknown layout number.
  Tensor x8 = from_ints(DataType::kInt8, {5}, {1, 2, 3, 4, 5});
  qdq::TensorView x8v = x8.view();
  x8v.layout = CodeLayout::kOnePerByte;
  expect_error([&] { qdq::dequantize_linear_output(dqa(25), x8v, S1().view(), nullptr); },
               {{"DequantizeLinear-25"}, {"x"}, {"INT8"}, {"2/4-bit"}}, "DQ INT8 x one per byte");
  const qdq::TensorView short_x{DataType::kInt4, five, items.data(), 3, CodeLayout::kOnePerByte};
  expect_error([&] { qdq::dequantize_linear(dqa(25), short_x, S1().view(), nullptr, yv); },
               {{"DequantizeLinear-25"}, {"x"}, {"one code per byte"}, {"5"}, {"3"}}, "DQ x one per byte, 3 bytes");
  const qdq::TensorView odd_x{DataType::kInt4, five, items.data(), 5, static_cast<CodeLayout>(7)};
  expect_error([&] { qdq::dequantize_linear(dqa(25), odd_x, S1().view(), nullptr, yv); },
               {{"DequantizeLinear-25"}, {"x"}, {"layout"}, {"7"}}, "DQ x layout 7");
  EXPECT_EQ(y, (std::vector<float>{1, 2, 3, 4, 5}));
}

TEST(Buffers, OutputsOnePerByteOnlyForQuantizeSubByteIntegers) {
  using qdq::CodeLayout;
  const Tensor x = f32({5}, {-9, -1, 0, 3, 9});
  const Shape five{5};
  QuantizeLinearAttributes a = qa(25);
  a.output_dtype = static_cast<int64_t>(DataType::kInt4);
  std::vector<uint8_t> values(5, 0x33);
  qdq::quantize_linear(a, x.view(), S1().view(), nullptr,
                       {DataType::kInt4, five, values.data(), 5, CodeLayout::kOnePerByte});
  EXPECT_EQ(values, (std::vector<uint8_t>{0xF8, 0xFF, 0, 3, 7}));  // int8 values, saturated to [-8, 7]
  // 8-bit and float4 outputs, DequantizeLinear's and DynamicQuantizeLinear's, a wrong size, a bad layout.
  std::vector<uint8_t> untouched(5, 0x33);
  a.output_dtype = static_cast<int64_t>(DataType::kUint8);
  expect_error(
      [&] {
        qdq::quantize_linear(a, x.view(), S1().view(), nullptr,
                             {DataType::kUint8, five, untouched.data(), 5, CodeLayout::kOnePerByte});
      },
      {{"QuantizeLinear-25"}, {"UINT8"}, {"one value per byte"}}, "Q UINT8 y one per byte");
  a.output_dtype = static_cast<int64_t>(DataType::kFloat4E2M1);
  expect_error(
      [&] {
        qdq::quantize_linear(a, x.view(), S1().view(), nullptr,
                             {DataType::kFloat4E2M1, five, untouched.data(), 5, CodeLayout::kOnePerByte});
      },
      {{"QuantizeLinear-25"}, {"FLOAT4E2M1"}, {"one value per byte"}}, "Q FLOAT4E2M1 y one per byte");
  a.output_dtype = static_cast<int64_t>(DataType::kUint2);
  expect_error(
      [&] {
        qdq::quantize_linear(a, x.view(), S1().view(), nullptr,
                             {DataType::kUint2, five, untouched.data(), 2, CodeLayout::kOnePerByte});
      },
      {{"QuantizeLinear-25"}, {"2 bytes"}, {"expected 5"}}, "Q UINT2 y one per byte, 2 bytes");
  expect_error(
      [&] {
        qdq::quantize_linear(a, x.view(), S1().view(), nullptr,
                             {DataType::kUint2, five, untouched.data(), 5, static_cast<CodeLayout>(9)});
      },
      {{"QuantizeLinear-25"}, {"layout"}, {"9"}}, "Q y layout 9");
  const std::vector<uint8_t> codes = {1, 2, 3, 4, 5};
  std::vector<float> y(5, -1.0f);
  expect_error(
      [&] {
        qdq::dequantize_linear(dqa(25), {DataType::kUint4, five, codes.data(), 3}, S1().view(), nullptr,
                               {DataType::kFloat, five, y.data(), 20, CodeLayout::kOnePerByte});
      },
      {{"DequantizeLinear-25"}, {"FLOAT"}, {"one value per byte"}}, "DQ y one per byte");
  expect_error(
      [&] {
        qdq::dynamic_quantize_linear(x.view(), {DataType::kUint8, five, untouched.data(), 5, CodeLayout::kOnePerByte});
      },
      {{"DynamicQuantizeLinear"}, {"one value per byte"}}, "Dynamic y one per byte");
  EXPECT_EQ(untouched, std::vector<uint8_t>(5, 0x33));
  EXPECT_EQ(y, std::vector<float>(5, -1.0f));
}

TEST(Buffers, OutputMismatch) {
  {
    Tensor y = output(DataType::kInt8, {2, 3}, 0x11);
    expect_error([&] { qdq::quantize_linear(qa(25), X23().view(), S1().view(), nullptr, y.mut()); },
                 {{"QuantizeLinear-25"}, {"y"}, {"INT8"}, {"UINT8"}}, "Q y INT8 for UINT8");
    EXPECT_EQ(y.bytes, std::vector<uint8_t>(6, 0x11));
  }
  {
    Tensor y = output(DataType::kUint8, {3, 2}, 0x11);
    expect_error([&] { qdq::quantize_linear(qa(25), X23().view(), S1().view(), nullptr, y.mut()); },
                 {{"QuantizeLinear-25"}, {"y"}, {"[3,2]"}, {"[2,3]"}}, "Q y shape [3,2] for [2,3]");
    EXPECT_EQ(y.bytes, std::vector<uint8_t>(6, 0x11));
  }
  {
    Tensor y = output(DataType::kUint8, {2, 3}, 0x11);
    y.bytes.resize(5);
    expect_error([&] { qdq::quantize_linear(qa(25), X23().view(), S1().view(), nullptr, y.mut()); },
                 {{"QuantizeLinear-25"}, {"y"}, {"5"}, {"6"}}, "Q y 5 bytes for 6");
    EXPECT_EQ(y.bytes, std::vector<uint8_t>(5, 0x11));
  }
  {
    const Tensor x = from_ints(DataType::kUint8, {2, 3}, {1, 2, 3, 4, 5, 6});
    Tensor y = output(DataType::kFloat16, {2, 3}, 0x11);
    expect_error([&] { qdq::dequantize_linear(dqa(25), x.view(), S1().view(), nullptr, y.mut()); },
                 {{"DequantizeLinear-25"}, {"y"}, {"FLOAT16"}, {"FLOAT"}}, "DQ y FLOAT16 for FLOAT");
    EXPECT_EQ(y.bytes, std::vector<uint8_t>(12, 0x11));
    Tensor y2 = output(DataType::kFloat, {6}, 0x11);
    expect_error([&] { qdq::dequantize_linear(dqa(25), x.view(), S1().view(), nullptr, y2.mut()); },
                 {{"DequantizeLinear-25"}, {"y"}, {"[6]"}, {"[2,3]"}}, "DQ y shape [6] for [2,3]");
    EXPECT_EQ(y2.bytes, std::vector<uint8_t>(24, 0x11));
  }
}

// =============================================================================================
// DynamicQuantizeLinear.

TEST(Dynamic, InvalidInputs) {
  {
    const Tensor x = f32({0, 3}, {});
    Tensor y = output(DataType::kUint8, {0, 3});
    expect_error([&] { qdq::dynamic_quantize_linear(x.view(), y.mut()); },
                 {{"DynamicQuantizeLinear"}, {"x"}, {"empty"}}, "Dynamic empty x");
  }
  {
    const Tensor x = from_codes(DataType::kFloat16, {2}, {0x3C00, 0x4000});
    Tensor y = output(DataType::kUint8, {2}, 0x11);
    expect_error([&] { qdq::dynamic_quantize_linear(x.view(), y.mut()); },
                 {{"DynamicQuantizeLinear"}, {"x"}, {"FLOAT16"}}, "Dynamic FLOAT16 x");
    EXPECT_EQ(y.bytes, std::vector<uint8_t>(2, 0x11));
  }
  {
    const Tensor x = from_ints(DataType::kInt32, {2}, {1, 2});
    Tensor y = output(DataType::kUint8, {2});
    expect_error([&] { qdq::dynamic_quantize_linear(x.view(), y.mut()); },
                 {{"DynamicQuantizeLinear"}, {"x"}, {"INT32"}}, "Dynamic INT32 x");
  }
  {
    const Tensor x = f32({2}, {1, 2});
    Tensor y = output(DataType::kInt8, {2}, 0x11);
    expect_error([&] { qdq::dynamic_quantize_linear(x.view(), y.mut()); }, {{"DynamicQuantizeLinear"}, {"y"}, {"INT8"}},
                 "Dynamic INT8 y");
    EXPECT_EQ(y.bytes, std::vector<uint8_t>(2, 0x11));
    Tensor y3 = output(DataType::kUint8, {3}, 0x11);
    expect_error([&] { qdq::dynamic_quantize_linear(x.view(), y3.mut()); },
                 {{"DynamicQuantizeLinear"}, {"y"}, {"[3]"}, {"[2]"}}, "Dynamic y shape [3] for [2]");
    EXPECT_EQ(y3.bytes, std::vector<uint8_t>(3, 0x11));
  }
  {
    Tensor x = f32({2}, {1, 2});
    x.bytes.resize(4);
    Tensor y = output(DataType::kUint8, {2});
    expect_error([&] { qdq::dynamic_quantize_linear(x.view(), y.mut()); },
                 {{"DynamicQuantizeLinear"}, {"x"}, {"8"}, {"4"}}, "Dynamic x 4 bytes for 2 floats");
  }
}

// =============================================================================================
// Sizes, type numbers and what is accepted.

TEST(Dynamic, InvalidBuffers) {
  const int64_t huge[1] = {(int64_t{1} << 62) + 1};  // 4·(2^62 + 1) wraps to 4 in 64 bits
  float x = 1.0f;
  std::vector<uint8_t> y(8, 0x33);
  expect_error(
      [&] {
        qdq::dynamic_quantize_linear({DataType::kFloat, huge, &x, 4}, {DataType::kUint8, huge, y.data(), y.size()});
      },
      {{"DynamicQuantizeLinear"}, {"x"}, {"overflow", "bytes"}}, "Dynamic x bytes overflow");
  const int64_t two[1] = {2};
  expect_error(
      [&] {
        qdq::dynamic_quantize_linear({DataType::kFloat, two, &x, 4}, {DataType::kUint8, two, y.data(), 2});
      },
      {{"DynamicQuantizeLinear"}, {"x"}, {"8"}, {"4"}}, "Dynamic x buffer too small");
  expect_error(
      [&] {
        qdq::dynamic_quantize_linear({DataType::kFloat, two, nullptr, 8}, {DataType::kUint8, two, y.data(), 2});
      },
      {{"DynamicQuantizeLinear"}, {"x"}, {"null"}}, "Dynamic null x");
  EXPECT_EQ(y, std::vector<uint8_t>(8, 0x33));
}

TEST(Shapes, CountOrBytesOverflow) {
  float storage = 0.0f;
  const int64_t too_many[2] = {int64_t{1} << 40, int64_t{1} << 40};  // 2^80 elements
  const int64_t too_big[1] = {int64_t{1} << 62};                     // 2^62 floats = 2^64 bytes
  const TensorView scale{DataType::kFloat, {}, &storage, 4};
  for (const auto& shape : {std::span<const int64_t>(too_many), std::span<const int64_t>(too_big)}) {
    const TensorView x{DataType::kFloat, shape, &storage, 4};
    expect_error([&] { qdq::quantize_linear_output(qa(25), x, scale, nullptr); },
                 {{"QuantizeLinear-25"}, {"x"}, {"2^6"}}, "Q " + qdq::shape_to_string(shape));
    const TensorView xq{DataType::kUint8, shape, &storage, 4};
    expect_error([&] { qdq::dequantize_linear_output(dqa(25), xq, scale, nullptr); },
                 {{"DequantizeLinear-25"}, {"x"}, {"2^63", "bytes"}}, "DQ " + qdq::shape_to_string(shape));
  }
}

TEST(QAttributes, TypeNumbersOutOfRange) {
  for (const int64_t bad : {int64_t{27}, int64_t{-1}, (int64_t{1} << 32) + 2}) {
    auto a = qa(25);
    a.output_dtype = bad;
    q_rejects(a, X23(), S1(), nullptr, {{"QuantizeLinear-25"}, {"output_dtype"}, {std::to_string(bad)}},
              "Q output_dtype " + std::to_string(bad));
    auto p = qa(25);
    p.precision = bad == 27 ? (int64_t{1} << 32) + 1 : bad;
    q_rejects(p, X23(), S1(), nullptr, {{"QuantizeLinear-25"}, {"precision"}},
              "Q precision " + std::to_string(*p.precision));
    auto d = dqa(25);
    d.output_dtype = bad == 27 ? (int64_t{1} << 32) + 10 : bad;
    dq_rejects(d, from_ints(DataType::kUint8, {2}, {1, 2}), S1(), nullptr, {{"DequantizeLinear-25"}, {"output_dtype"}},
               "DQ output_dtype " + std::to_string(*d.output_dtype));
  }
}

TEST(Accepted, NegativeZeroZeroPointAndSaturate) {
  // A float8 zero point of −0 (0x80) is zero for E4M3FN and E5M2, which have −0.
  for (const DataType t : {DataType::kFloat8E4M3FN, DataType::kFloat8E5M2}) {
    const Tensor x = from_codes(t, {2}, {0x38, 0xC0});
    const Tensor zp = from_codes(t, {}, {0x80});
    Tensor y = output(DataType::kFloat, {2});
    const qdq::TensorView zv = zp.view();
    qdq::dequantize_linear(dqa(25), x.view(), S1().view(), &zv, y.mut());
    const Tensor direct_zp = from_codes(t, {}, {0x00});
    Tensor y0 = output(DataType::kFloat, {2});
    const qdq::TensorView zv0 = direct_zp.view();
    qdq::dequantize_linear(dqa(25), x.view(), S1().view(), &zv0, y0.mut());
    EXPECT_EQ(y.bytes, y0.bytes) << qdq::data_type_name(t);
  }
  // saturate is an INT attribute; like the reference (a Python truth test), any non-zero value saturates.
  const Tensor x = f32({1}, {1e6f});
  for (const int64_t saturate : {int64_t{1}, int64_t{2}, int64_t{-1}}) {
    auto a = qa(25);
    a.saturate = saturate;
    a.output_dtype = static_cast<int64_t>(DataType::kFloat8E4M3FN);
    Tensor y = output(DataType::kFloat8E4M3FN, {1});
    qdq::quantize_linear(a, x.view(), S1().view(), nullptr, y.mut());
    EXPECT_EQ(y.bytes[0], 0x7E) << "saturate " << saturate;
  }
}

}  // namespace
