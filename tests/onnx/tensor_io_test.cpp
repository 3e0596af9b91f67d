// TensorProto reading and writing: round trips of every element type in both storages, the byte
// layouts of packing.md, and every rejected malformation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "onnx_subset.pb.h"
#include "qdq_onnx.hpp"

namespace {

using qdq::DataType;
using qdq::onnx::Tensor;
namespace fs = std::filesystem;

const DataType kAllTypes[] = {
    DataType::kFloat,          DataType::kUint8,        DataType::kInt8,           DataType::kUint16,
    DataType::kInt16,          DataType::kInt32,        DataType::kInt64,          DataType::kBool,
    DataType::kFloat16,        DataType::kDouble,       DataType::kUint32,         DataType::kUint64,
    DataType::kBFloat16,       DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2,
    DataType::kFloat8E5M2FNUZ, DataType::kUint4,        DataType::kInt4,           DataType::kFloat4E2M1,
    DataType::kFloat8E8M0,     DataType::kUint2,        DataType::kInt2,
};

// A tensor of random codes in canonical form (sub-byte padding zero, BOOL 0/1).
Tensor random_tensor(DataType type, std::vector<int64_t> shape, std::mt19937& rng) {
  Tensor t = qdq::onnx::make_tensor(type, std::move(shape), "t");
  for (uint8_t& b : t.data) b = static_cast<uint8_t>(rng());
  if (type == DataType::kBool) {
    for (uint8_t& b : t.data) b &= 1;
  }
  // Re-derive the canonical padding by round-tripping through the element codes.
  const int bits = qdq::bit_width(type);
  if (bits < 8 && !t.data.empty()) {
    const uint64_t n = qdq::element_count(t.shape);
    const uint64_t per_byte = static_cast<uint64_t>(8 / bits);
    if (n % per_byte != 0) t.data.back() &= static_cast<uint8_t>((1u << ((n % per_byte) * bits)) - 1u);
  }
  return t;
}

void expect_same(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(a.name, b.name);
}

std::string serialize(const onnx::TensorProto& proto) {
  std::string out;
  EXPECT_TRUE(proto.SerializeToString(&out));
  return out;
}

// Expects parse_tensor to fail with a message that starts with the name given and contains `needle`.
void expect_rejected(const std::string& bytes, const std::string& needle) {
  try {
    qdq::onnx::parse_tensor(bytes, "case.pb");
    ADD_FAILURE() << "accepted; expected an error containing '" << needle << "'";
  } catch (const qdq::Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("case.pb: ", 0), 0u) << message;
    EXPECT_NE(message.find(needle), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(TensorRoundTrip, EveryTypeBothStoragesManyShapes) {
  std::mt19937 rng(12345);
  const std::vector<std::vector<int64_t>> shapes = {{},  {0},    {1},       {2},       {3}, {5},
                                                    {7}, {3, 7}, {2, 3, 1}, {4, 0, 2}, {33}};
  for (DataType type : kAllTypes) {
    for (const auto& shape : shapes) {
      for (bool typed : {false, true}) {
        SCOPED_TRACE(qdq::data_type_name(type) + " " + qdq::shape_to_string(shape) + (typed ? " typed" : " raw"));
        const Tensor original = random_tensor(type, shape, rng);
        const std::string bytes = qdq::onnx::serialize_tensor(original, typed);
        const Tensor back = qdq::onnx::parse_tensor(bytes, "roundtrip");
        expect_same(back, original);
        // Which storage was used is visible in the message.
        onnx::TensorProto proto;
        ASSERT_TRUE(proto.ParseFromString(bytes));
        EXPECT_EQ(proto.has_raw_data(), !typed);
        EXPECT_EQ(proto.data_type(), static_cast<int32_t>(type));
      }
    }
  }
}

TEST(TensorRoundTrip, TypedFieldsFollowPackingTable) {
  auto stored = [](const Tensor& t) {
    onnx::TensorProto proto;
    EXPECT_TRUE(proto.ParseFromString(qdq::onnx::serialize_tensor(t, true)));
    return proto;
  };
  Tensor f = qdq::onnx::make_tensor(DataType::kFloat, {2});
  EXPECT_EQ(stored(f).float_data_size(), 2);
  Tensor d = qdq::onnx::make_tensor(DataType::kDouble, {2});
  EXPECT_EQ(stored(d).double_data_size(), 2);
  Tensor i64 = qdq::onnx::make_tensor(DataType::kInt64, {2});
  EXPECT_EQ(stored(i64).int64_data_size(), 2);
  Tensor u32 = qdq::onnx::make_tensor(DataType::kUint32, {3});
  EXPECT_EQ(stored(u32).uint64_data_size(), 3);
  // INT8 stores the plain signed value; FLOAT16 the unsigned bit pattern (packing.md §2).
  Tensor i8 = qdq::onnx::make_tensor(DataType::kInt8, {1});
  i8.data[0] = 0xFB;
  EXPECT_EQ(stored(i8).int32_data(0), -5);
  Tensor h = qdq::onnx::make_tensor(DataType::kFloat16, {1});
  h.data = {0x00, 0xC0};  // -2.0
  EXPECT_EQ(stored(h).int32_data(0), 49152);
  Tensor i16 = qdq::onnx::make_tensor(DataType::kInt16, {1});
  i16.data = {0xFB, 0xFF};
  EXPECT_EQ(stored(i16).int32_data(0), -5);
  // Packed types: one entry per byte.
  Tensor i4 = qdq::onnx::make_tensor(DataType::kInt4, {5});
  i4.data = {0x10, 0xC7, 0x08};
  const onnx::TensorProto p4 = stored(i4);
  ASSERT_EQ(p4.int32_data_size(), 3);
  EXPECT_EQ(p4.int32_data(1), 199);
  Tensor u2 = qdq::onnx::make_tensor(DataType::kUint2, {12});
  EXPECT_EQ(stored(u2).int32_data_size(), 3);
}

TEST(TensorRoundTrip, NanPayloadsAndNegativeZeroSurviveTypedStorage) {
  Tensor f = qdq::onnx::make_tensor(DataType::kFloat, {3});
  const uint32_t codes[] = {0x7F800001u /* signalling NaN */, 0xFFC12345u, 0x80000000u};
  std::memcpy(f.data.data(), codes, sizeof codes);
  expect_same(qdq::onnx::parse_tensor(qdq::onnx::serialize_tensor(f, true), "x"), f);
  Tensor d = qdq::onnx::make_tensor(DataType::kDouble, {1});
  const uint64_t nan = 0x7FF0000000000001ull;
  std::memcpy(d.data.data(), &nan, 8);
  expect_same(qdq::onnx::parse_tensor(qdq::onnx::serialize_tensor(d, true), "x"), d);
}

TEST(TensorRead, AnnotatedBytesFromPackingMd) {
  // test_dequantizelinear_int4 input_0.pb.
  const std::string int4("\x08\x05\x10\x16\x2a\x04\x10\xc7\x01\x08\x42\x01\x78", 13);
  const Tensor t = qdq::onnx::parse_tensor(int4, "int4");
  EXPECT_EQ(t.type, DataType::kInt4);
  EXPECT_EQ(t.shape, std::vector<int64_t>{5});
  EXPECT_EQ(t.data, (std::vector<uint8_t>{0x10, 0xC7, 0x08}));
  EXPECT_EQ(t.name, "x");
  const uint64_t codes[] = {0x0, 0x1, 0x7, 0xC, 0x8};
  for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(qdq::onnx::element_code(t, i), codes[i]);
  EXPECT_EQ(qdq::onnx::format_element(t.type, qdq::onnx::element_code(t, 3)), "-4 (0xc)");
  // test_dequantizelinear input_1.pb: a rank-0 FLOAT in raw_data.
  const std::string scalar("\x10\x01\x42\x07x_scale\x4a\x04\x00\x00\x00\x40", 17);
  const Tensor s = qdq::onnx::parse_tensor(scalar, "scalar");
  EXPECT_TRUE(s.shape.empty());
  float v;
  std::memcpy(&v, s.data.data(), 4);
  EXPECT_EQ(v, 2.0f);
  // Our raw_data writer produces the same bytes (fields in number order).
  EXPECT_EQ(qdq::onnx::serialize_tensor(s), scalar);
}

TEST(TensorRead, PaddingIsClearedAndEightBitTypedEntriesTakeTheLowBits) {
  onnx::TensorProto proto;
  proto.add_dims(3);
  proto.set_data_type(static_cast<int32_t>(DataType::kUint4));
  proto.set_raw_data(std::string("\x21\xF3", 2));  // padding nibble 0xF
  EXPECT_EQ(qdq::onnx::parse_tensor(serialize(proto), "p").data, (std::vector<uint8_t>{0x21, 0x03}));

  onnx::TensorProto i8;
  i8.add_dims(2);
  i8.set_data_type(static_cast<int32_t>(DataType::kInt8));
  i8.add_int32_data(-5);
  i8.add_int32_data(0x17F);
  EXPECT_EQ(qdq::onnx::parse_tensor(serialize(i8), "p").data, (std::vector<uint8_t>{0xFB, 0x7F}));
}

TEST(TensorRead, AllConformanceFilesParseAndReserializeIdentically) {
  size_t files = 0;
  for (const auto& test : fs::directory_iterator(QDQ_ONNX_NODE_TESTS)) {
    for (const auto& file : fs::directory_iterator(test.path() / "test_data_set_0")) {
      SCOPED_TRACE(file.path().string());
      const Tensor t = qdq::onnx::read_tensor_file(file.path().string());
      expect_same(qdq::onnx::parse_tensor(qdq::onnx::serialize_tensor(t, false), "raw"), t);
      expect_same(qdq::onnx::parse_tensor(qdq::onnx::serialize_tensor(t, true), "typed"), t);
      ++files;
    }
  }
  EXPECT_GE(files, 100u);
}

// --- malformed tensors --------------------------------------------------------------------------

onnx::TensorProto float_tensor(std::vector<int64_t> dims, size_t raw_bytes) {
  onnx::TensorProto proto;
  for (int64_t d : dims) proto.add_dims(d);
  proto.set_data_type(1);
  proto.set_raw_data(std::string(raw_bytes, '\0'));
  return proto;
}

TEST(TensorReject, CorruptOrTruncatedProtobuf) {
  const std::string good = serialize(float_tensor({4}, 16));
  expect_rejected(good.substr(0, good.size() - 3), "corrupt or truncated");
  expect_rejected(std::string("\xff\xff\xff\xff", 4), "corrupt or truncated");
  expect_rejected(std::string("\x0a\x05\x01", 3), "corrupt or truncated");  // dims as a too-long packed run
}

TEST(TensorReject, RawDataLengthMismatch) {
  expect_rejected(serialize(float_tensor({4}, 15)), "raw_data has 15 bytes, but FLOAT [4] needs 16");
  expect_rejected(serialize(float_tensor({}, 0)), "raw_data has 0 bytes");
  onnx::TensorProto p;
  p.add_dims(5);
  p.set_data_type(static_cast<int32_t>(DataType::kInt4));
  p.set_raw_data(std::string(4, '\0'));  // needs ceil(5/2) = 3
  expect_rejected(serialize(p), "needs 3");
}

TEST(TensorReject, TypedEntryCountMismatch) {
  onnx::TensorProto p;
  p.add_dims(5);
  p.set_data_type(static_cast<int32_t>(DataType::kInt4));
  for (int k = 0; k < 5; ++k) p.add_int32_data(0);  // one per element instead of one per byte
  expect_rejected(serialize(p), "needs 3 int32_data entries, the tensor has 5");
  onnx::TensorProto f;
  f.add_dims(2);
  f.set_data_type(1);
  f.add_float_data(1.0f);
  expect_rejected(serialize(f), "needs 2 float_data entries, the tensor has 1");
  onnx::TensorProto empty;
  empty.add_dims(2);
  empty.set_data_type(1);
  expect_rejected(serialize(empty),
                  "has no data (neither raw_data nor float_data), but FLOAT [2] needs 2 float_data entries");
}

TEST(TensorReject, ElementsInTheWrongTypedField) {
  onnx::TensorProto p;
  p.add_dims(1);
  p.set_data_type(static_cast<int32_t>(DataType::kInt8));
  p.add_float_data(1.0f);
  expect_rejected(serialize(p), "float_data holds 1 entries, but INT8 elements belong in int32_data");
}

TEST(TensorReject, NegativeDims) { expect_rejected(serialize(float_tensor({2, -3}, 0)), "negative dimension -3"); }

TEST(TensorReject, CountsOverflowing64Bits) {
  expect_rejected(serialize(float_tensor({int64_t{1} << 62, 4}, 0)), "2^63 elements");
  expect_rejected(serialize(float_tensor({int64_t{1} << 61, 2}, 0)), "overflow a 64-bit byte size");
  expect_rejected(serialize(float_tensor({INT64_MAX, INT64_MAX, INT64_MAX}, 0)), "2^63 elements");
}

TEST(TensorReject, UnknownOrUnsupportedDataType) {
  onnx::TensorProto p = float_tensor({1}, 4);
  p.set_data_type(99);
  expect_rejected(serialize(p), "unknown data_type 99");
  p.set_data_type(0);
  expect_rejected(serialize(p), "UNDEFINED");
  p.clear_data_type();
  expect_rejected(serialize(p), "data_type is missing");
  p.set_data_type(static_cast<int32_t>(DataType::kString));
  expect_rejected(serialize(p), "STRING is not supported");
  p.set_data_type(-1);
  expect_rejected(serialize(p), "unknown data_type -1");
}

TEST(TensorReject, SegmentAndExternalData) {
  onnx::TensorProto p = float_tensor({1}, 4);
  p.mutable_segment()->set_begin(0);
  expect_rejected(serialize(p), "segment");
  onnx::TensorProto e = float_tensor({1}, 4);
  e.set_data_location(1);
  expect_rejected(serialize(e), "external data");
  onnx::TensorProto x = float_tensor({1}, 4);
  auto* entry = x.add_external_data();
  entry->set_key("location");
  entry->set_value("weights.bin");
  expect_rejected(serialize(x), "external data");
}

TEST(TensorReject, SerializeChecksTheBufferSize) {
  Tensor t = qdq::onnx::make_tensor(DataType::kFloat, {2});
  t.data.pop_back();
  EXPECT_THROW(qdq::onnx::serialize_tensor(t), qdq::Error);
  EXPECT_THROW(qdq::onnx::make_tensor(DataType::kFloat, {-1}), qdq::Error);
}

// --- files ----------------------------------------------------------------------------------------

class TensorFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("qdq_onnx_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {})); }
  fs::path dir_;
};

TEST_F(TensorFiles, WriteThenReadLeavesOnlyTheFile) {
  std::mt19937 rng(7);
  const Tensor t = random_tensor(DataType::kInt2, {3, 3}, rng);
  const std::string path = (dir_ / "output_0.pb").string();
  qdq::onnx::write_tensor_file(path, t);
  expect_same(qdq::onnx::read_tensor_file(path), t);
  EXPECT_EQ(entries(), 1u);  // no temporary left behind
  // Overwriting replaces the file.
  const Tensor u = random_tensor(DataType::kFloat, {2}, rng);
  qdq::onnx::write_tensor_file(path, u);
  expect_same(qdq::onnx::read_tensor_file(path), u);
  EXPECT_EQ(entries(), 1u);
}

TEST_F(TensorFiles, FailedWriteLeavesNothing) {
  Tensor bad = qdq::onnx::make_tensor(DataType::kFloat, {2});
  bad.data.resize(3);
  Tensor good = qdq::onnx::make_tensor(DataType::kFloat, {2});
  const std::string a = (dir_ / "output_0.pb").string();
  const std::string b = (dir_ / "output_1.pb").string();
  EXPECT_THROW(qdq::onnx::write_tensor_files({{a, &good}, {b, &bad}}), qdq::Error);
  EXPECT_EQ(entries(), 0u);
  try {
    qdq::onnx::write_tensor_file((dir_ / "missing" / "x.pb").string(), good);
    ADD_FAILURE() << "wrote into a folder that does not exist";
  } catch (const qdq::Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing/x.pb"), std::string::npos) << e.what();
  }
  EXPECT_EQ(entries(), 0u);
}

TEST_F(TensorFiles, MissingAndCorruptFilesNameTheFile) {
  const std::string missing = (dir_ / "nope.pb").string();
  try {
    qdq::onnx::read_tensor_file(missing);
    ADD_FAILURE();
  } catch (const qdq::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(missing + ": cannot open", 0), 0u) << e.what();
  }
  const std::string corrupt = (dir_ / "corrupt.pb").string();
  std::ofstream(corrupt, std::ios::binary) << std::string("\x4a\x10\x01", 3);
  try {
    qdq::onnx::read_tensor_file(corrupt);
    ADD_FAILURE();
  } catch (const qdq::Error& e) {
    EXPECT_EQ(std::string(e.what()), corrupt + ": not a valid serialized TensorProto (corrupt or truncated protobuf)");
  }
}

// --- comparison -----------------------------------------------------------------------------------

TEST(Compare, NanEqualsAnyNanButZerosDiffer) {
  Tensor a = qdq::onnx::make_tensor(DataType::kFloat8E4M3FN, {3});
  Tensor b = a;
  a.data = {0x7F, 0x00, 0x38};
  b.data = {0xFF, 0x00, 0x38};
  EXPECT_FALSE(qdq::onnx::compare_tensors(a, b, "output_0"));
  b.data[1] = 0x80;
  const auto diff = qdq::onnx::compare_tensors(a, b, "output_0");
  ASSERT_TRUE(diff);
  EXPECT_EQ(*diff, "output_0[1] = 0 (0x0), expected -0 (0x80) (1 of 3 elements differ)");

  Tensor f = qdq::onnx::make_tensor(DataType::kFloat, {1});
  Tensor g = f;
  const uint32_t qnan = 0x7FC00000u, other = 0xFFC00001u;
  std::memcpy(f.data.data(), &qnan, 4);
  std::memcpy(g.data.data(), &other, 4);
  EXPECT_FALSE(qdq::onnx::compare_tensors(f, g, "y"));
  // E4M3FNUZ: 0x80 is the only NaN, 0x7F is 240.
  Tensor u = qdq::onnx::make_tensor(DataType::kFloat8E4M3FNUZ, {1});
  Tensor v = u;
  u.data = {0x80};
  v.data = {0x7F};
  EXPECT_EQ(*qdq::onnx::compare_tensors(u, v, "y"), "y[0] = nan (0x80), expected 240 (0x7f)");
}

TEST(Compare, TypeShapeAndReadableValues) {
  Tensor a = qdq::onnx::make_tensor(DataType::kFloat16, {2});
  Tensor b = qdq::onnx::make_tensor(DataType::kFloat, {2});
  EXPECT_EQ(*qdq::onnx::compare_tensors(a, b, "output_0"), "output_0 is FLOAT16 [2], expected FLOAT [2]");
  Tensor i4 = qdq::onnx::make_tensor(DataType::kInt4, {3});
  Tensor j4 = i4;
  i4.data = {0x80, 0x07};  // 0, -8, 7
  j4.data = {0x70, 0x07};  // 0, 7, 7
  EXPECT_EQ(*qdq::onnx::compare_tensors(i4, j4, "o"), "o[1] = -8 (0x8), expected 7 (0x7) (1 of 3 elements differ)");
  EXPECT_EQ(qdq::onnx::format_element(DataType::kFloat4E2M1, 0xF), "-6 (0xf)");
  EXPECT_EQ(qdq::onnx::format_element(DataType::kFloat8E8M0, 0x7E), "0.5 (0x7e)");
  EXPECT_EQ(qdq::onnx::format_element(DataType::kFloat8E5M2, 0xFC), "-inf (0xfc)");
  EXPECT_EQ(qdq::onnx::format_element(DataType::kFloat, 0x3F8CCCCDu), "1.1 (0x3f8ccccd)");
  EXPECT_EQ(qdq::onnx::format_element(DataType::kBFloat16, 0xC000), "-2 (0xc000)");
  EXPECT_EQ(qdq::onnx::format_element(DataType::kUint8, 255), "255 (0xff)");
  EXPECT_EQ(qdq::onnx::format_element(DataType::kInt32, 0xFFFFFFFBu), "-5");
}

}  // namespace
