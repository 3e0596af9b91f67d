// Every example of the specification pack's examples.md through the public API:
//  §2 QuantizeLinear and §3 DequantizeLinear conformance tests (opset 25), §4 DynamicQuantizeLinear
//  (opset 11), §5 the seed examples, §6 the extra facts (qdq column), plus the worked consequences of
//  dequantize_linear.md §5 and dynamic_quantize_linear.md §3 (qdq lines).
// Inputs are built from the tables' encoded payloads (raw_data hex / int32_data bytes) wherever the
// table gives one, so no float literal is transcribed twice.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "test_tensors.hpp"

namespace {

using namespace qdq_test;
using qdq::DequantizeLinearAttributes;
using qdq::QuantizeLinearAttributes;

/// A tensor from a raw_data hex string.
Tensor hex(DataType t, Shape shape, const std::string& h) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    bytes.push_back(static_cast<uint8_t>(std::stoul(h.substr(i, 2), nullptr, 16)));
  EXPECT_EQ(bytes.size(), byte_size(t, numel(shape))) << "test bug: payload size";
  return Tensor(t, std::move(shape), std::move(bytes));
}

/// A tensor from int32_data entries that are whole bytes (float8 codes, packed sub-byte bytes).
Tensor bytes_of(DataType t, Shape shape, const std::vector<int>& entries) {
  std::vector<uint8_t> bytes;
  for (int e : entries) bytes.push_back(static_cast<uint8_t>(e));
  EXPECT_EQ(bytes.size(), byte_size(t, numel(shape))) << "test bug: payload size";
  return Tensor(t, std::move(shape), std::move(bytes));
}

Tensor run_q(const QuantizeLinearAttributes& a, const Tensor& x, const Tensor& s, const Tensor* zp,
             DataType expected_type) {
  const qdq::TensorView zv = zp ? zp->view() : qdq::TensorView{};
  const qdq::TensorSpec spec = qdq::quantize_linear_output(a, x.view(), s.view(), zp ? &zv : nullptr);
  EXPECT_EQ(spec.type, expected_type);
  EXPECT_EQ(spec.shape, x.shape);
  EXPECT_EQ(spec.size_bytes, byte_size(expected_type, x.elements()));
  Tensor y = output(expected_type, x.shape);
  qdq::quantize_linear(a, x.view(), s.view(), zp ? &zv : nullptr, y.mut());
  return y;
}

Tensor run_dq(const DequantizeLinearAttributes& a, const Tensor& x, const Tensor& s, const Tensor* zp,
              DataType expected_type) {
  const qdq::TensorView zv = zp ? zp->view() : qdq::TensorView{};
  const qdq::TensorSpec spec = qdq::dequantize_linear_output(a, x.view(), s.view(), zp ? &zv : nullptr);
  EXPECT_EQ(spec.type, expected_type);
  EXPECT_EQ(spec.shape, x.shape);
  EXPECT_EQ(spec.size_bytes, byte_size(expected_type, x.elements()));
  Tensor y = output(expected_type, x.shape);
  qdq::dequantize_linear(a, x.view(), s.view(), zp ? &zv : nullptr, y.mut());
  return y;
}

std::vector<uint32_t> f32_bits(const std::vector<float>& v) {
  std::vector<uint32_t> out;
  for (float f : v) out.push_back(std::bit_cast<uint32_t>(f));
  return out;
}

std::vector<uint32_t> f32_bits(const Tensor& t) {
  std::vector<uint32_t> out;
  for (uint64_t c : t.codes()) out.push_back(static_cast<uint32_t>(c));
  return out;
}

std::vector<uint64_t> u64(std::initializer_list<uint64_t> v) { return std::vector<uint64_t>(v); }

QuantizeLinearAttributes q_attrs(int64_t opset = 25) {
  QuantizeLinearAttributes a;
  a.opset = opset;
  return a;
}
DequantizeLinearAttributes dq_attrs(int64_t opset = 25) {
  DequantizeLinearAttributes a;
  a.opset = opset;
  return a;
}

// =============================================================================================
// §2 QuantizeLinear conformance tests.

TEST(QuantizeConformance, test_quantizelinear) {
  const Tensor x = hex(DataType::kFloat, {6}, "00000000000000400000404000007a4400007ec300007ac4");
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  const Tensor zp = hex(DataType::kUint8, {}, "80");
  const Tensor y = run_q(q_attrs(), x, s, &zp, DataType::kUint8);
  EXPECT_EQ(y.bytes, hex(DataType::kUint8, {6}, "808182ff0100").bytes);
}

TEST(QuantizeConformance, test_quantizelinear_axis) {
  const Tensor x = hex(DataType::kFloat, {1, 3, 3, 2},
                       "000022c3000020410000c8c2000068430000a0c1000048c2000098c2000000000000000000007c430000004200"
                       "0030c2000075430080f2c3000070c4000087c30080bbc30000ebc3");
  const Tensor s = hex(DataType::kFloat, {3}, "00000040000080400000a040");
  const Tensor zp = hex(DataType::kUint8, {3}, "5418c4");
  const Tensor y = run_q(q_attrs(), x, s, &zp, DataType::kUint8);
  EXPECT_EQ(y.bytes, hex(DataType::kUint8, {1, 3, 3, 2}, "035922c84a3b05181857200df563048e7966").bytes);
}

TEST(QuantizeConformance, test_quantizelinear_blocked_asymmetric) {
  const Tensor x = hex(DataType::kFloat, {3, 4},
                       "0000c04000004041000048420000a0400000803f00000041000080400000a040000000000000a041000020410000"
                       "8040");
  const Tensor s = hex(DataType::kFloat, {3, 2}, "0000c03f0000204000004040cdcc9c403333a340cdccdc40");
  const Tensor zp = hex(DataType::kUint8, {3, 2}, "000101000203");
  auto a = q_attrs();
  a.axis = 1;
  a.block_size = 2;
  const Tensor y = run_q(a, x, s, &zp, DataType::kUint8);
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{4, 8, 21, 3, 1, 4, 1, 1, 2, 6, 4, 4}));
  EXPECT_EQ(y.bytes, hex(DataType::kUint8, {3, 4}, "040815030104010102060404").bytes);
}

TEST(QuantizeConformance, test_quantizelinear_blocked_symmetric) {
  const Tensor x = hex(DataType::kFloat, {3, 4},
                       "0000c040000000c1000020c10000a0400000803f00000041000080400000a040000000000000a041000020410000"
                       "8040");
  const Tensor s = hex(DataType::kFloat, {3, 2}, "0000c03f0000204000004040cdcc9c403333a340cdccdc40");
  auto a = q_attrs();
  a.axis = 1;
  a.block_size = 2;
  a.output_dtype = 5;
  const Tensor y = run_q(a, x, s, nullptr, DataType::kInt16);
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{4, -5, -4, 2, 0, 3, 1, 1, 0, 4, 1, 1}));
}

TEST(QuantizeConformance, test_quantizelinear_e4m3fn) {
  const Tensor x = hex(DataType::kFloat, {5}, "000000000000803f000000400050c34700004843");
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  const Tensor zp = bytes_of(DataType::kFloat8E4M3FN, {1}, {0});
  const Tensor y = run_q(q_attrs(), x, s, &zp, DataType::kFloat8E4M3FN);
  EXPECT_EQ(y.codes(), u64({0x00, 0x30, 0x38, 0x7E, 0x6C}));
}

TEST(QuantizeConformance, test_quantizelinear_e5m2) {
  const Tensor x = hex(DataType::kFloat, {5}, "000000000000803f000000400050c34700004843");
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  const Tensor zp = bytes_of(DataType::kFloat8E5M2, {1}, {0});
  const Tensor y = run_q(q_attrs(), x, s, &zp, DataType::kFloat8E5M2);
  EXPECT_EQ(y.codes(), u64({0x00, 0x38, 0x3C, 0x7A, 0x56}));
}

TEST(QuantizeConformance, test_quantizelinear_float4e2m1) {
  const Tensor x = hex(DataType::kFloat, {3, 4},
                       "00000000000020409a9999409a9909410000f0c10000a0c10000c0400000104100000080000020c09a9999c09a99"
                       "09c1");
  const Tensor s = hex(DataType::kFloat, {3}, "000000400000404000008040");
  const Tensor zp = bytes_of(DataType::kFloat4E2M1, {3}, {0, 0});
  auto a = q_attrs();
  a.axis = 0;
  const Tensor y = run_q(a, x, s, &zp, DataType::kFloat4E2M1);
  EXPECT_EQ(y.codes(), u64({0x0, 0x2, 0x4, 0x6, 0xF, 0xF, 0x4, 0x5, 0x0, 0x9, 0xA, 0xC}));
  EXPECT_EQ(y.bytes, bytes_of(DataType::kFloat4E2M1, {3, 4}, {32, 100, 255, 84, 144, 202}).bytes);
}

TEST(QuantizeConformance, test_quantizelinear_int16) {
  const Tensor x = hex(DataType::kFloat, {16},
                       "00000000008000c400004040000040c09a9939409a9939c066664640666646c000fe7d4700ff80c700ff7d4780ff"
                       "80c700007e47000081c700b8884700b888c7");
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  const Tensor zp = hex(DataType::kInt16, {}, "0001");
  const Tensor y = run_q(q_attrs(), x, s, &zp, DataType::kInt16);
  EXPECT_EQ(y.bytes,
            hex(DataType::kInt16, {16}, "0001ffff0201fe000101ff000201fe00ff7f0180ff7f0080ff7f0080ff7f0080").bytes);
}

TEST(QuantizeConformance, test_quantizelinear_int2) {
  const Tensor x = hex(DataType::kFloat, {3, 4},
                       "00000000000020409a9999409a990941000080c0000040c00000803f0000004000000080000020c09a9999c09a99"
                       "09c1");
  const Tensor s = hex(DataType::kFloat, {3}, "000000400000404000008040");
  const Tensor zp = bytes_of(DataType::kInt2, {3}, {0});
  auto a = q_attrs();
  a.axis = 0;
  const Tensor y = run_q(a, x, s, &zp, DataType::kInt2);
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{0, 1, 1, 1, -1, -1, 0, 1, 0, -1, -1, -2}));
  EXPECT_EQ(y.bytes, bytes_of(DataType::kInt2, {3, 4}, {84, 79, 188}).bytes);
}

TEST(QuantizeConformance, test_quantizelinear_int4) {
  const Tensor x = hex(DataType::kFloat, {3, 4},
                       "00000000000020409a9999409a9909410000f0c10000a0c10000c0400000104100004041000070410000804100"
                       "002042");
  const Tensor s = hex(DataType::kFloat, {3}, "000000400000404000008040");
  const Tensor zp = bytes_of(DataType::kInt4, {3}, {17, 1});
  auto a = q_attrs();
  a.axis = 0;
  const Tensor y = run_q(a, x, s, &zp, DataType::kInt4);
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{1, 2, 3, 5, -8, -6, 3, 4, 4, 5, 5, 7}));
  EXPECT_EQ(y.bytes, bytes_of(DataType::kInt4, {3, 4}, {33, 83, 168, 67, 84, 117}).bytes);
}

TEST(QuantizeConformance, test_quantizelinear_uint16) {
  const Tensor x = hex(DataType::kFloat, {12},
                       "00000000000000c300004040000040c09a9939409a9939c066664640666646c00000804700fe7fc700b8884700b8"
                       "88c7");
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  const Tensor zp = hex(DataType::kUint16, {}, "ff7f");
  const Tensor y = run_q(q_attrs(), x, s, &zp, DataType::kUint16);
  EXPECT_EQ(y.bytes, hex(DataType::kUint16, {12}, "ff7fbf7f0180fd7f0080fe7f0180fd7fffff0000ffff0000").bytes);
}

TEST(QuantizeConformance, test_quantizelinear_uint2) {
  const Tensor x = hex(DataType::kFloat, {3, 4},
                       "00000000000020409a9999409a990941000000c0000080bf0000803f00004040000080400000a0400000c0400000"
                       "e040");
  const Tensor s = hex(DataType::kFloat, {3}, "000000400000404000008040");
  const Tensor zp = bytes_of(DataType::kUint2, {3}, {0});
  auto a = q_attrs();
  a.axis = 0;
  const Tensor y = run_q(a, x, s, &zp, DataType::kUint2);
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{0, 1, 2, 3, 0, 0, 0, 1, 1, 1, 2, 2}));
  EXPECT_EQ(y.bytes, bytes_of(DataType::kUint2, {3, 4}, {228, 64, 165}).bytes);
}

TEST(QuantizeConformance, test_quantizelinear_uint4) {
  const Tensor x = hex(DataType::kFloat, {3, 4},
                       "00000000000020409a9999409a9909410000f0c10000a0c10000c0400000104100004041000070410000804100"
                       "002042");
  const Tensor s = hex(DataType::kFloat, {3}, "000000400000404000008040");
  const Tensor zp = bytes_of(DataType::kUint4, {3}, {17, 1});
  auto a = q_attrs();
  a.axis = 0;
  const Tensor y = run_q(a, x, s, &zp, DataType::kUint4);
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{1, 2, 3, 5, 0, 0, 3, 4, 4, 5, 5, 11}));
  EXPECT_EQ(y.bytes, bytes_of(DataType::kUint4, {3, 4}, {33, 83, 0, 67, 84, 181}).bytes);
}

// =============================================================================================
// §3 DequantizeLinear conformance tests.

TEST(DequantizeConformance, test_dequantizelinear) {
  const Tensor x = hex(DataType::kUint8, {4}, "000380ff");
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  const Tensor zp = hex(DataType::kUint8, {}, "80");
  const Tensor y = run_dq(dq_attrs(), x, s, &zp, DataType::kFloat);
  EXPECT_EQ(y.bytes, hex(DataType::kFloat, {4}, "000080c300007ac30000000000007e43").bytes);
}

TEST(DequantizeConformance, test_dequantizelinear_axis) {
  const Tensor x = hex(DataType::kUint8, {1, 3, 3, 2}, "035922c84a3b05181857200df563048e7966");
  const Tensor s = hex(DataType::kFloat, {3}, "00000040000080400000a040");
  const Tensor zp = hex(DataType::kUint8, {3}, "5418c4");
  const Tensor y = run_dq(dq_attrs(), x, s, &zp, DataType::kFloat);
  EXPECT_EQ(y.bytes, hex(DataType::kFloat, {1, 3, 3, 2},
                         "000022c3000020410000c8c2000068430000a0c1000048c2000098c2000000000000000000007c4300000042"
                         "000030c2000075430080f2c3000070c4000087c30080bbc30000ebc3")
                         .bytes);
}

TEST(DequantizeConformance, test_dequantizelinear_blocked) {
  const Tensor x = hex(DataType::kUint8, {1, 4, 3, 2}, "035922c84a3b05181857200d050c0c21412af563048e7966");
  const Tensor s = hex(DataType::kFloat, {1, 2, 3, 2},
                       "0000404000000040000080400000803f00000040000000400000a0400000004000008040000040400000a0400000"
                       "0040");
  const Tensor zp = hex(DataType::kUint8, {1, 2, 3, 2}, "010000010214030204030f02");
  auto a = dq_attrs();
  a.axis = 1;
  a.block_size = 2;
  const Tensor y = run_dq(a, x, s, &zp, DataType::kFloat);
  EXPECT_EQ(f32_bits(y), f32_bits({6,  178, 136, 199, 144, 78, 12,   48,  96, 86,  60,  -14,
                                   10, 20,  32,  90,  250, 80, 1210, 194, 0,  417, 530, 200}));
  EXPECT_EQ(y.bytes, hex(DataType::kFloat, {1, 4, 3, 2},
                         "0000c0400000324300000843000047430000104300009c4200004041000040420000c0420000ac4200007042"
                         "000060c1000020410000a041000000420000b44200007a430000a0420040974400004243000000000080d04300"
                         "80044400004843")
                         .bytes);
}

TEST(DequantizeConformance, test_dequantizelinear_e4m3fn) {
  const Tensor x = bytes_of(DataType::kFloat8E4M3FN, {5}, {0, 48, 56, 126, 237});
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  auto a = dq_attrs();
  a.axis = 0;
  const Tensor y = run_dq(a, x, s, nullptr, DataType::kFloat);
  EXPECT_EQ(y.bytes, hex(DataType::kFloat, {5}, "000000000000803f0000004000006044000050c3").bytes);
}

TEST(DequantizeConformance, test_dequantizelinear_e4m3fn_float16) {
  const Tensor x = bytes_of(DataType::kFloat8E4M3FN, {5}, {0, 48, 56, 126, 237});
  const Tensor s = hex(DataType::kFloat16, {}, "0040");
  auto a = dq_attrs();
  a.axis = 0;
  const Tensor y = run_dq(a, x, s, nullptr, DataType::kFloat16);
  EXPECT_EQ(y.bytes, hex(DataType::kFloat16, {5}, "0000003c0040006380da").bytes);
}

TEST(DequantizeConformance, test_dequantizelinear_e4m3fn_zero_point) {
  const Tensor x = bytes_of(DataType::kFloat8E4M3FN, {5}, {0, 48, 56, 126, 237});
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  const Tensor zp = bytes_of(DataType::kFloat8E4M3FN, {1}, {0});
  auto a = dq_attrs();
  a.axis = 0;
  const Tensor y = run_dq(a, x, s, &zp, DataType::kFloat);
  EXPECT_EQ(y.bytes, hex(DataType::kFloat, {5}, "000000000000803f0000004000006044000050c3").bytes);
}

TEST(DequantizeConformance, test_dequantizelinear_e5m2) {
  const Tensor x = bytes_of(DataType::kFloat8E5M2, {5}, {0, 56, 60, 122, 214});
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  auto a = dq_attrs();
  a.axis = 0;
  const Tensor y = run_dq(a, x, s, nullptr, DataType::kFloat);
  EXPECT_EQ(y.bytes, hex(DataType::kFloat, {5}, "000000000000803f000000400000c047000040c3").bytes);
}

TEST(DequantizeConformance, test_dequantizelinear_float4e2m1) {
  const Tensor x = bytes_of(DataType::kFloat4E2M1, {5}, {32, 58, 14});
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  const Tensor zp = bytes_of(DataType::kFloat4E2M1, {1}, {0});
  auto a = dq_attrs();
  a.axis = 0;
  const Tensor y = run_dq(a, x, s, &zp, DataType::kFloat);
  EXPECT_EQ(y.bytes, hex(DataType::kFloat, {5}, "0000000000000040000000c000004040000000c1").bytes);
}

TEST(DequantizeConformance, test_dequantizelinear_int16) {
  const Tensor x = hex(DataType::kInt16, {4}, "d4fee2fffffbf604");
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  const Tensor zp = hex(DataType::kInt16, {}, "00fc");
  const Tensor y = run_dq(dq_attrs(), x, s, &zp, DataType::kFloat);
  EXPECT_EQ(y.bytes, hex(DataType::kFloat, {4}, "0000b5440080f844000000c000608f45").bytes);
}

TEST(DequantizeConformance, test_dequantizelinear_int2) {
  const Tensor x = bytes_of(DataType::kInt2, {4}, {180});
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  const Tensor zp = bytes_of(DataType::kInt2, {1}, {1});
  auto a = dq_attrs();
  a.axis = 0;
  const Tensor y = run_dq(a, x, s, &zp, DataType::kFloat);
  EXPECT_EQ(y.bytes, hex(DataType::kFloat, {4}, "000000c000000000000080c00000c0c0").bytes);
}

TEST(DequantizeConformance, test_dequantizelinear_int4) {
  const Tensor x = bytes_of(DataType::kInt4, {5}, {16, 199, 8});
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  const Tensor zp = bytes_of(DataType::kInt4, {1}, {1});
  auto a = dq_attrs();
  a.axis = 0;
  const Tensor y = run_dq(a, x, s, &zp, DataType::kFloat);
  EXPECT_EQ(y.bytes, hex(DataType::kFloat, {5}, "000000c00000000000004041000020c1000090c1").bytes);
}

TEST(DequantizeConformance, test_dequantizelinear_uint16) {
  const Tensor x = hex(DataType::kUint16, {4}, "307518790080e880");
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  const Tensor zp = hex(DataType::kUint16, {}, "ff7f");
  const Tensor y = run_dq(dq_attrs(), x, s, &zp, DataType::kFloat);
  EXPECT_EQ(y.bytes, hex(DataType::kFloat, {4}, "00f0acc500e05cc5000000400000e943").bytes);
}

TEST(DequantizeConformance, test_dequantizelinear_uint2) {
  const Tensor x = bytes_of(DataType::kUint2, {4}, {228});
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  const Tensor zp = bytes_of(DataType::kUint2, {1}, {1});
  auto a = dq_attrs();
  a.axis = 0;
  const Tensor y = run_dq(a, x, s, &zp, DataType::kFloat);
  EXPECT_EQ(y.bytes, hex(DataType::kFloat, {4}, "000000c0000000000000004000008040").bytes);
}

TEST(DequantizeConformance, test_dequantizelinear_uint4) {
  const Tensor x = bytes_of(DataType::kUint4, {5}, {16, 167, 15});
  const Tensor s = hex(DataType::kFloat, {}, "00000040");
  const Tensor zp = bytes_of(DataType::kUint4, {1}, {1});
  auto a = dq_attrs();
  a.axis = 0;
  const Tensor y = run_dq(a, x, s, &zp, DataType::kFloat);
  EXPECT_EQ(y.bytes, hex(DataType::kFloat, {5}, "000000c00000000000004041000090410000e041").bytes);
}

// =============================================================================================
// §4 DynamicQuantizeLinear conformance tests (the *_expanded variants have the same data).

struct DynResult {
  Tensor y;
  qdq::DynamicQuantizationParameters p;
};

DynResult run_dyn(const Tensor& x) {
  DynResult r{output(DataType::kUint8, x.shape), {}};
  r.p = qdq::dynamic_quantize_linear(x.view(), r.y.mut());
  return r;
}

TEST(DynamicConformance, test_dynamicquantizelinear) {
  const Tensor x = hex(DataType::kFloat, {6}, "0000000000000040000040c0000020c01f85ab3f0000003f");
  const DynResult r = run_dyn(x);
  EXPECT_EQ(r.y.bytes, hex(DataType::kUint8, {6}, "99ff001addb3").bytes);
  EXPECT_EQ(bits_of(r.p.y_scale), 0x3CA0A0A1u);
  EXPECT_EQ(r.p.y_zero_point, 153);
}

TEST(DynamicConformance, test_dynamicquantizelinear_max_adjusted) {
  const Tensor x = hex(DataType::kFloat, {6}, "000080bf666606c06666a6bf000020c08fc255c0000080c0");
  const DynResult r = run_dyn(x);
  EXPECT_EQ(r.y.bytes, hex(DataType::kUint8, {6}, "bf79ac602a00").bytes);
  EXPECT_EQ(bits_of(r.p.y_scale), 0x3C808081u);
  EXPECT_EQ(r.p.y_zero_point, 255);
}

TEST(DynamicConformance, test_dynamicquantizelinear_min_adjusted) {
  const Tensor x = hex(DataType::kFloat, {3, 4},
                       "0000803f666606406666a63f000020408fc25540000080400000c03f666626409a99794000008040000040407b14"
                       "1640");
  const DynResult r = run_dyn(x);
  EXPECT_EQ(r.y.bytes, hex(DataType::kUint8, {3, 4}, "4086539fd5ff60a6f9ffbf95").bytes);
  EXPECT_EQ(bits_of(r.p.y_scale), 0x3C808081u);
  EXPECT_EQ(r.p.y_zero_point, 0);
}

// =============================================================================================
// §5 seed examples (DequantizeLinear-25.rst).

TEST(SeedExamples, test_cc_dequantizelinear) {
  const Tensor x = from_ints(DataType::kUint8, {4}, {0, 3, 128, 255});
  const Tensor y = run_dq(dq_attrs(), x, scalar_f32(2), nullptr, DataType::kFloat);
  EXPECT_EQ(f32_bits(y), f32_bits({0, 6, 256, 510}));
}

TEST(SeedExamples, test_cc_dequantizelinear_axis_no_zero_point) {
  const Tensor x = from_ints(DataType::kUint8, {1, 3, 3, 2},
                             {3, 89, 34, 200, 74, 59, 5, 24, 24, 87, 32, 13, 245, 99, 4, 142, 121, 102});
  auto a = dq_attrs();
  a.axis = 1;
  const Tensor y = run_dq(a, x, f32({3}, {2, 4, 5}), nullptr, DataType::kFloat);
  EXPECT_EQ(f32_bits(y), f32_bits({6, 178, 68, 400, 148, 118, 20, 96, 96, 348, 128, 52, 1225, 495, 20, 710, 605, 510}));
}

TEST(SeedExamples, test_cc_dequantizelinear_int8) {
  const Tensor x = from_ints(DataType::kInt8, {4}, {-10, -9, 0, 127});
  const Tensor zp = from_ints(DataType::kInt8, {}, {-10});
  const Tensor y = run_dq(dq_attrs(), x, scalar_f32(2), &zp, DataType::kFloat);
  EXPECT_EQ(f32_bits(y), f32_bits({0, 2, 20, 274}));
}

// =============================================================================================
// §6 extra facts, qdq column.

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(ExtraFacts, SpecialsAndTiesToInt8) {
  const Tensor x =
      f32({14}, {kNaN, -kNaN, kInf, -kInf, 3e9f, -3e9f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 127.5f, 128.5f});
  const Tensor zp = from_ints(DataType::kInt8, {}, {0});
  const Tensor y = run_q(q_attrs(), x, scalar_f32(1), &zp, DataType::kInt8);
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{-128, -128, 127, -128, 127, -128, 0, 2, 2, 0, -2, -2, 127, 127}));
}

TEST(ExtraFacts, SpecialsAndTiesToUint8ZeroPoint10) {
  const Tensor x =
      f32({14}, {kNaN, -kNaN, kInf, -kInf, 3e9f, -3e9f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 127.5f, 128.5f});
  const Tensor zp = from_ints(DataType::kUint8, {}, {10});
  const Tensor y = run_q(q_attrs(), x, scalar_f32(1), &zp, DataType::kUint8);
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{0, 0, 255, 0, 255, 0, 10, 12, 12, 10, 8, 8, 138, 138}));
}

TEST(ExtraFacts, Float16XFloatScaleDividesInFloat32) {
  const Tensor x = from_codes(DataType::kFloat16, {1}, {0x55A0});  // 90.0
  const Tensor y = run_q(q_attrs(), x, scalar_f32(0.7f), nullptr, DataType::kUint8);
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{129}));
}

TEST(ExtraFacts, FloatXFloat16ScaleDividesInFloat16) {
  const Tensor s = from_codes(DataType::kFloat16, {}, {0x399A});  // 0.7001953125
  const Tensor y = run_q(q_attrs(), f32({1}, {90.0f}), s, nullptr, DataType::kUint8);
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{128}));
}

TEST(ExtraFacts, Int32ScaleToFloat8RoundsOnce) {
  const Tensor x = from_ints(DataType::kInt32, {1}, {285212673});
  const Tensor s = from_ints(DataType::kInt32, {}, {268435456});
  auto a = q_attrs();
  a.output_dtype = static_cast<int64_t>(DataType::kFloat8E4M3FN);
  const Tensor y = run_q(a, x, s, nullptr, DataType::kFloat8E4M3FN);
  EXPECT_EQ(y.codes(), u64({0x39}));
}

TEST(ExtraFacts, FnuzInfinityWithSaturationIsNaN) {
  const Tensor x = f32({3}, {kInf, -kInf, 1e30f});
  const Tensor zp = from_codes(DataType::kFloat8E4M3FNUZ, {}, {0});
  const Tensor y = run_q(q_attrs(), x, scalar_f32(1e-10f), &zp, DataType::kFloat8E4M3FNUZ);
  EXPECT_EQ(y.codes(), u64({0x80, 0x80, 0x80}));
}

TEST(ExtraFacts, NaNToFloat4IsSix) {
  auto a = q_attrs();
  a.output_dtype = static_cast<int64_t>(DataType::kFloat4E2M1);
  const Tensor y = run_q(a, f32({2}, {kNaN, -kNaN}), scalar_f32(1), nullptr, DataType::kFloat4E2M1);
  EXPECT_EQ(y.codes(), u64({0x7, 0x7}));
  EXPECT_EQ(y.bytes, std::vector<uint8_t>{0x77});
}

TEST(ExtraFacts, Opset10PerTensor) {
  const Tensor zp = from_ints(DataType::kUint8, {}, {1});
  const Tensor y = run_q(q_attrs(10), f32({2}, {1.0f, 2.6f}), scalar_f32(2), &zp, DataType::kUint8);
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{1, 2}));
}

TEST(ExtraFacts, Opset13PerAxis) {
  const Tensor zp = from_ints(DataType::kUint8, {2}, {1, 0});
  const Tensor y = run_q(q_attrs(13), f32({2, 2}, {1, 2.6f, 3, 4}), f32({2}, {2, 1}), &zp, DataType::kUint8);
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{1, 3, 3, 4}));
}

TEST(ExtraFacts, Float8ZeroPointValueIgnoredInQuantize) {
  const Tensor zp = from_codes(DataType::kFloat8E4M3FN, {}, {0x38});  // 1.0
  const Tensor y = run_q(q_attrs(), f32({2}, {0, 1}), scalar_f32(1), &zp, DataType::kFloat8E4M3FN);
  EXPECT_EQ(y.codes(), u64({0x00, 0x38}));
}

TEST(ExtraFacts, Float4ZeroPointAddedInFloat32) {
  const Tensor zp = from_codes(DataType::kFloat4E2M1, {}, {0x2});  // 1.0
  const Tensor y = run_q(q_attrs(), f32({4}, {0, 1, 4, -1.25f}), scalar_f32(1), &zp, DataType::kFloat4E2M1);
  EXPECT_EQ(y.codes(), u64({0x2, 0x4, 0x6, 0x8}));
}

TEST(ExtraFacts, BlockedLastBlockShorter) {
  auto a = q_attrs();
  a.axis = 1;
  a.block_size = 2;
  const Tensor x = f32({2, 5}, {0, 3, 6, 9, 12, 15, 18, 21, 24, 27});
  const Tensor s = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor y = run_q(a, x, s, nullptr, DataType::kUint8);
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{0, 3, 3, 4, 4, 4, 4, 4, 5, 4}));
}

TEST(ExtraFacts, BlockedWithScalarZeroPointIsAnError) {
  auto a = q_attrs();
  a.axis = 1;
  a.block_size = 2;
  const Tensor x = f32({2, 5}, {0, 3, 6, 9, 12, 15, 18, 21, 24, 27});
  const Tensor s = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor zp = from_ints(DataType::kUint8, {}, {3});
  Tensor y = output(DataType::kUint8, {2, 5});
  const auto zv = zp.view();
  expect_error([&] { qdq::quantize_linear(a, x.view(), s.view(), &zv, y.mut()); },
               {{"QuantizeLinear-25"}, {"y_zero_point"}, {"y_scale"}, {"[]"}, {"[2,3]"}});
}

// The §6 row "Q, x FLOAT of shape [2, 4], scale of shape [1], zero point of shape [1], axis 1 →
// error: a shape-[1] scale needs D[axis] = 1" (and the matching sentence of quantize_linear.md §5)
// contradicts policy.md: "a scale with one element (rank 0 or 1), any axis → per-tensor; axis is
// ignored, not range-checked". policy.md overrides the other files, so qdq must treat it as
// per-tensor — asserted here.
TEST(ExtraFacts, ShapeOneScaleOnLongAxisIsPerTensorByPolicy) {
  auto a = q_attrs();
  a.axis = 1;
  const Tensor x = f32({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  const Tensor s = f32({1}, {2});
  const Tensor zp = from_ints(DataType::kUint8, {1}, {10});
  const Tensor y = run_q(a, x, s, &zp, DataType::kUint8);
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{10, 10, 11, 12, 12, 12, 13, 14}));
  // And with an axis out of range (ignored for a one-element scale, not range-checked).
  a.axis = 7;
  const Tensor y2 = run_q(a, x, s, &zp, DataType::kUint8);
  EXPECT_EQ(y2.ints(), y.ints());
  // The same for DequantizeLinear.
  auto da = dq_attrs();
  da.axis = 1;
  const Tensor dzp = from_ints(DataType::kUint8, {1}, {10});
  const Tensor dy =
      run_dq(da, from_ints(DataType::kUint8, {2, 4}, {10, 11, 12, 13, 14, 15, 16, 17}), s, &dzp, DataType::kFloat);
  EXPECT_EQ(f32_bits(dy), f32_bits({0, 2, 4, 6, 8, 10, 12, 14}));
}

TEST(ExtraFacts, DequantizeUint8FloatScaleToFloat16) {
  auto a = dq_attrs();
  a.output_dtype = static_cast<int64_t>(DataType::kFloat16);
  const Tensor y =
      run_dq(a, from_ints(DataType::kUint8, {3}, {1, 3, 255}), scalar_f32(0.1f), nullptr, DataType::kFloat16);
  EXPECT_EQ(y.codes(), u64({0x2E66, 0x34CD, 0x4E60}));
}

TEST(ExtraFacts, DequantizeUint8Float16Scale) {
  const Tensor s = from_codes(DataType::kFloat16, {}, {0x2E66});  // float16 0.1
  const Tensor y = run_dq(dq_attrs(), from_ints(DataType::kUint8, {3}, {1, 3, 255}), s, nullptr, DataType::kFloat16);
  EXPECT_EQ(y.codes(), u64({0x2E66, 0x34CC, 0x4E60}));
}

TEST(ExtraFacts, DequantizeUint8BFloat16Scale) {
  const Tensor s = from_codes(DataType::kBFloat16, {}, {0x3DCD});  // bfloat16 0.1
  const Tensor y = run_dq(dq_attrs(), from_ints(DataType::kUint8, {3}, {1, 3, 255}), s, nullptr, DataType::kBFloat16);
  EXPECT_EQ(y.codes(), u64({0x3DCD, 0x3E9A, 0x41CC}));
}

TEST(ExtraFacts, DequantizeE8M0ScaleToFloat) {
  auto a = dq_attrs();
  a.output_dtype = static_cast<int64_t>(DataType::kFloat);
  const Tensor s = from_codes(DataType::kFloat8E8M0, {}, {0x81});
  const Tensor y = run_dq(a, from_ints(DataType::kUint8, {3}, {1, 2, 3}), s, nullptr, DataType::kFloat);
  EXPECT_EQ(f32_bits(y), f32_bits({4, 8, 12}));
}

TEST(ExtraFacts, DequantizeE8M0ScaleWithoutOutputDtypeIsAnError) {
  const Tensor s = from_codes(DataType::kFloat8E8M0, {}, {0x81});
  const Tensor x = from_ints(DataType::kUint8, {3}, {1, 2, 3});
  expect_error([&] { qdq::dequantize_linear_output(dq_attrs(), x.view(), s.view(), nullptr); },
               {{"DequantizeLinear-25"}, {"output_dtype"}, {"FLOAT8E8M0"}});
}

TEST(ExtraFacts, DequantizeE8M0TinyScaleToBFloat16) {
  auto a = dq_attrs();
  a.output_dtype = static_cast<int64_t>(DataType::kBFloat16);
  const Tensor s = from_codes(DataType::kFloat8E8M0, {}, {0x00});
  const Tensor y = run_dq(a, from_ints(DataType::kUint8, {2}, {1, 255}), s, nullptr, DataType::kBFloat16);
  EXPECT_EQ(y.codes(), u64({0x0040, 0x03FF}));
}

TEST(ExtraFacts, DequantizeInt32RoundsToFloat32) {
  const Tensor x = from_ints(DataType::kInt32, {3}, {16777217, -2147483648LL, 2147483647});
  const Tensor y = run_dq(dq_attrs(), x, scalar_f32(1), nullptr, DataType::kFloat);
  EXPECT_EQ(f32_bits(y), f32_bits({16777216.0f, -2147483648.0f, 2147483648.0f}));
}

TEST(ExtraFacts, DequantizeInt32ZeroPointExactDifference) {
  const Tensor x = from_ints(DataType::kInt32, {1}, {16777219});
  const Tensor zp = from_ints(DataType::kInt32, {}, {2});
  const Tensor y = run_dq(dq_attrs(), x, scalar_f32(1), &zp, DataType::kFloat);
  EXPECT_EQ(f32_bits(y), f32_bits({16777216.0f}));
}

TEST(ExtraFacts, DequantizeRank1PerAxisNeedsAxis0) {
  const Tensor x = from_ints(DataType::kUint8, {3}, {1, 2, 3});
  const Tensor s = f32({3}, {1, 2, 3});
  auto a = dq_attrs();
  a.axis = 0;
  const Tensor y = run_dq(a, x, s, nullptr, DataType::kFloat);
  EXPECT_EQ(f32_bits(y), f32_bits({1, 4, 9}));
  a.axis = -1;
  EXPECT_EQ(f32_bits(run_dq(a, x, s, nullptr, DataType::kFloat)), f32_bits({1, 4, 9}));
  expect_error([&] { qdq::dequantize_linear_output(dq_attrs(), x.view(), s.view(), nullptr); },
               {{"DequantizeLinear-25"}, {"axis"}, {"1"}});
}

TEST(ExtraFacts, DequantizeFloat8NonZeroZeroPointIsAnError) {
  const Tensor x = from_codes(DataType::kFloat8E4M3FN, {2}, {0x38, 0xC0});  // [1, -2]
  // 1.0, −1.0, 0.5 and NaN: all rejected (the reference only rejects the first two).
  for (uint64_t code : {0x38u, 0xB8u, 0x30u, 0x7Fu, 0xFFu}) {
    const Tensor zp = from_codes(DataType::kFloat8E4M3FN, {}, {code});
    const auto zv = zp.view();
    Tensor y = output(DataType::kFloat, {2});
    expect_error([&] { qdq::dequantize_linear(dq_attrs(), x.view(), scalar_f32(2).view(), &zv, y.mut()); },
                 {{"DequantizeLinear-25"}, {"x_zero_point"}, {"zero"}}, "zero point code " + std::to_string(code));
  }
  // ±0 pass and are not subtracted.
  for (uint64_t code : {0x00u, 0x80u}) {
    const Tensor zp = from_codes(DataType::kFloat8E4M3FN, {}, {code});
    const Tensor y = run_dq(dq_attrs(), x, scalar_f32(2), &zp, DataType::kFloat);
    EXPECT_EQ(f32_bits(y), f32_bits({2, -4}));
  }
}

TEST(ExtraFacts, DequantizeFloat4ZeroPointSubtracted) {
  const Tensor x = from_codes(DataType::kFloat4E2M1, {2}, {0x2, 0xC});  // [1, -2]
  const Tensor zp = from_codes(DataType::kFloat4E2M1, {}, {0x2});       // 1.0
  const Tensor y = run_dq(dq_attrs(), x, scalar_f32(2), &zp, DataType::kFloat);
  EXPECT_EQ(f32_bits(y), f32_bits({0, -6}));
}

TEST(ExtraFacts, DequantizeZeroPointTypeMismatch) {
  const Tensor x = from_ints(DataType::kInt8, {2}, {1, 2});
  const Tensor zp = from_ints(DataType::kUint8, {}, {1});
  const auto zv = zp.view();
  expect_error([&] { qdq::dequantize_linear_output(dq_attrs(), x.view(), scalar_f32(2).view(), &zv); },
               {{"DequantizeLinear-25"}, {"x_zero_point"}, {"UINT8"}, {"INT8"}});
}

TEST(ExtraFacts, DynamicAllZero) {
  const DynResult r = run_dyn(f32({4}, {0, 0, 0, 0}));
  EXPECT_EQ(r.y.ints(), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(bits_of(r.p.y_scale), 0x3B808081u);
  EXPECT_EQ(r.p.y_zero_point, 0);
  const DynResult neg = run_dyn(f32({2}, {-0.0f, 0.0f}));
  EXPECT_EQ(bits_of(neg.p.y_scale), 0x3B808081u);
  EXPECT_EQ(neg.p.y_zero_point, 0);
}

TEST(ExtraFacts, DynamicSmallRange) {
  const DynResult r = run_dyn(f32({2}, {-0.5f, 1.0f}));
  EXPECT_EQ(r.y.ints(), (std::vector<int64_t>{0, 255}));
  EXPECT_EQ(bits_of(r.p.y_scale), 0x3BC0C0C1u);
  EXPECT_EQ(r.p.y_zero_point, 85);
}

TEST(ExtraFacts, DynamicWithNaN) {
  const DynResult r = run_dyn(f32({3}, {1, kNaN, -2}));
  EXPECT_EQ(r.y.ints(), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_TRUE(std::isnan(r.p.y_scale));
  EXPECT_EQ(r.p.y_zero_point, 255);
}

TEST(ExtraFacts, DynamicWithMinusInf) {
  const DynResult r = run_dyn(f32({2}, {1, -kInf}));
  EXPECT_EQ(r.y.ints(), (std::vector<int64_t>{255, 0}));
  EXPECT_EQ(r.p.y_scale, kInf);
  EXPECT_EQ(r.p.y_zero_point, 255);
}

TEST(ExtraFacts, DynamicEmptyIsAnError) {
  const Tensor x = f32({0}, {});
  Tensor y = output(DataType::kUint8, {0});
  expect_error([&] { qdq::dynamic_quantize_linear(x.view(), y.mut()); }, {{"DynamicQuantizeLinear"}, {"empty"}});
}

// dynamic_quantize_linear.md §3 (qdq lines).
TEST(DynamicEdgeCases, PlusInfinity) {
  const DynResult r = run_dyn(f32({3}, {1, kInf, -2}));
  EXPECT_EQ(r.p.y_scale, kInf);
  EXPECT_EQ(r.p.y_zero_point, 0);
  EXPECT_EQ(r.y.ints(), (std::vector<int64_t>{0, 0, 0}));
}

TEST(DynamicEdgeCases, NaNWinsOverInfinities) {
  const DynResult r = run_dyn(f32({4}, {kInf, -kInf, kNaN, 3}));
  EXPECT_TRUE(std::isnan(r.p.y_scale));
  EXPECT_EQ(r.p.y_zero_point, 255);
  EXPECT_EQ(r.y.ints(), (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(DynamicEdgeCases, MinusInfinityFiniteAndInfiniteElements) {
  const DynResult r = run_dyn(f32({4}, {-kInf, 2, -3, kInf}));
  // +inf and −inf together: range inf − (−inf) = inf → scale inf; zp = 0 − (−inf/inf) = NaN → 255.
  EXPECT_EQ(r.p.y_scale, kInf);
  EXPECT_EQ(r.p.y_zero_point, 255);
  EXPECT_EQ(r.y.ints(), (std::vector<int64_t>{0, 255, 255, 0}));
}

TEST(DynamicEdgeCases, ScaleUnderflowsToZero) {
  const DynResult r = run_dyn(f32({1}, {1e-45f}));
  EXPECT_EQ(r.p.y_scale, 0.0f);
  EXPECT_EQ(r.p.y_zero_point, 255);
  EXPECT_EQ(r.y.ints(), (std::vector<int64_t>{255}));
}

TEST(DynamicEdgeCases, SingleElements) {
  const DynResult pos = run_dyn(f32({1}, {5}));
  EXPECT_EQ(pos.p.y_scale, 5.0f / 255.0f);
  EXPECT_EQ(pos.p.y_zero_point, 0);
  EXPECT_EQ(pos.y.ints(), (std::vector<int64_t>{255}));
  const DynResult neg = run_dyn(f32({}, {-5}));
  EXPECT_EQ(neg.p.y_scale, 5.0f / 255.0f);
  EXPECT_EQ(neg.p.y_zero_point, 255);
  EXPECT_EQ(neg.y.ints(), (std::vector<int64_t>{0}));
}

// dequantize_linear.md §5 consequences.
TEST(DequantizeConsequences, Float16OverflowAndE8M0NaN) {
  const Tensor s = from_codes(DataType::kFloat16, {}, {0x63D0});  // float16 1000
  const Tensor y = run_dq(dq_attrs(), from_ints(DataType::kUint8, {1}, {255}), s, nullptr, DataType::kFloat16);
  EXPECT_EQ(y.codes(), u64({0x7C00}));
  auto a = dq_attrs();
  a.output_dtype = static_cast<int64_t>(DataType::kFloat);
  const Tensor nan_scale = from_codes(DataType::kFloat8E8M0, {}, {0xFF});
  const Tensor yn = run_dq(a, from_ints(DataType::kUint8, {2}, {0, 7}), nan_scale, nullptr, DataType::kFloat);
  for (float v : yn.floats()) EXPECT_TRUE(std::isnan(v));
}

TEST(DequantizeConsequences, Float8SpecialCodes) {
  // E5M2 ±inf decode to ±inf and are multiplied; NaN codes give NaN; −0 gives −0 · s.
  const Tensor x = from_codes(DataType::kFloat8E5M2, {4}, {0x7C, 0xFC, 0x7E, 0x80});
  const Tensor y = run_dq(dq_attrs(), x, scalar_f32(2), nullptr, DataType::kFloat);
  const auto v = y.floats();
  EXPECT_EQ(v[0], kInf);
  EXPECT_EQ(v[1], -kInf);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(bits_of(v[3]), 0x80000000u);
}

}  // namespace
