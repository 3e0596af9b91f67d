// The C API (qdq.h) against the C++ API it wraps: the same bytes for every output type and mode, the
// same checks, statuses and messages at the boundary, per-thread error messages, and the caller's
// parallel-for hook on real threads (also under TSan). The C program tests/consumer/round_trip_c.c
// covers the error paths from C; this file covers what needs C++ to compare against or to run.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "qdq/qdq.h"
#include "qdq/qdq.hpp"

namespace {

using qdq::DataType;

qdq_tensor c_view(DataType type, const std::vector<int64_t>& shape, const void* data, size_t bytes) {
  return {static_cast<int32_t>(type), shape.size(), shape.data(), data, bytes};
}

qdq_mutable_tensor c_output(DataType type, const std::vector<int64_t>& shape, void* data, size_t bytes) {
  return {static_cast<int32_t>(type), shape.size(), shape.data(), data, bytes};
}

std::string last_error() { return qdq_last_error_message(); }

TEST(CApi, TypeNamesAndWidthsMatchCpp) {
  for (int32_t t = 0; t <= 26; ++t) {
    ASSERT_NE(qdq_data_type_name(t), nullptr) << t;
    EXPECT_EQ(qdq_data_type_name(t), qdq::data_type_name(static_cast<DataType>(t)));
    EXPECT_EQ(qdq_bit_width(t), qdq::bit_width(static_cast<DataType>(t)));
    EXPECT_EQ(qdq_data_type_kind(t), static_cast<int32_t>(qdq::type_kind(static_cast<DataType>(t)))) << t;
    EXPECT_EQ(qdq_is_signed_type(t), qdq::is_signed(static_cast<DataType>(t)) ? 1 : 0) << t;
    for (uint64_t code : {0x0ull, 0x7Full, 0x80ull, 0xFFull, 0x7C01ull, 0x7FC00000ull, 0x7FF8000000000000ull}) {
      EXPECT_EQ(qdq_is_nan_code(t, code), qdq::is_nan_code(static_cast<DataType>(t), code) ? 1 : 0) << t << " " << code;
    }
  }
  EXPECT_EQ(qdq_data_type_name(-1), nullptr);
  EXPECT_EQ(qdq_data_type_name(27), nullptr);
  EXPECT_EQ(qdq_bit_width(-5), 0);
  EXPECT_EQ(qdq_data_type_kind(-5), QDQ_TYPE_KIND_OTHER);
  EXPECT_EQ(qdq_data_type_kind(27), QDQ_TYPE_KIND_OTHER);
  EXPECT_EQ(qdq_is_signed_type(-5), 0);
  EXPECT_EQ(qdq_is_nan_code(27, 0xFF), 0);
  EXPECT_EQ(qdq_data_type_kind(QDQ_TYPE_FLOAT4E2M1), QDQ_TYPE_KIND_MINIFLOAT);
  EXPECT_EQ(qdq_is_nan_code(QDQ_TYPE_FLOAT8E8M0, 0xFF), 1);
  EXPECT_EQ(std::string(qdq_version()), qdq::version());
  EXPECT_STREQ(qdq_status_name(99), "unknown qdq_status");
}

TEST(CApi, InitSetsDefaults) {
  qdq_quantize_linear_attributes q;
  std::memset(&q, 0xFF, sizeof q);
  qdq_quantize_linear_attributes_init(&q);
  EXPECT_EQ(q.struct_size, sizeof q);
  EXPECT_EQ(q.opset, 25);
  EXPECT_EQ(q.present, 0u);
  qdq_dequantize_linear_attributes dq;
  std::memset(&dq, 0xFF, sizeof dq);
  qdq_dequantize_linear_attributes_init(&dq);
  EXPECT_EQ(dq.struct_size, sizeof dq);
  EXPECT_EQ(dq.opset, 25);
  EXPECT_EQ(dq.present, 0u);
  qdq_execution_options o;
  std::memset(&o, 0xFF, sizeof o);
  qdq_execution_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof o);
  EXPECT_EQ(o.num_threads, 0);
  EXPECT_EQ(o.force_scalar, 0);
  EXPECT_EQ(o.parallel_for, nullptr);
  EXPECT_EQ(o.parallel_for_user_data, nullptr);
  qdq_quantize_linear_attributes_init(nullptr);  // no effect, no crash
  qdq_dequantize_linear_attributes_init(nullptr);
  qdq_execution_options_init(nullptr);
}

// Every integer and float8/float4 output type, per-tensor with a zero point, through both APIs.
TEST(CApi, QuantizeAndDequantizeMatchCpp) {
  const std::vector<int64_t> shape = {3, 5};
  std::vector<float> x(15);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<float>(i) - 7.0f) * 0.37f;
  const float scale = 0.25f;
  const std::vector<int64_t> scalar;
  for (DataType type :
       {DataType::kInt2, DataType::kUint2, DataType::kInt4, DataType::kUint4, DataType::kInt8, DataType::kUint8,
        DataType::kInt16, DataType::kUint16, DataType::kFloat8E4M3FN, DataType::kFloat8E5M2, DataType::kFloat4E2M1}) {
    SCOPED_TRACE(qdq::data_type_name(type));
    const size_t bytes = qdq::storage_bytes(type, x.size());
    const std::vector<uint8_t> zero_point(qdq::storage_bytes(type, 1), 0);
    qdq::QuantizeLinearAttributes cpp_attributes;
    const qdq::TensorView zp{type, {}, zero_point.data(), zero_point.size()};
    std::vector<uint8_t> expected(bytes);
    qdq::quantize_linear(cpp_attributes, {DataType::kFloat, shape, x.data(), x.size() * 4},
                         {DataType::kFloat, {}, &scale, 4}, &zp, {type, shape, expected.data(), bytes});

    qdq_quantize_linear_attributes attributes;
    qdq_quantize_linear_attributes_init(&attributes);
    const qdq_tensor c_x = c_view(DataType::kFloat, shape, x.data(), x.size() * 4);
    const qdq_tensor c_scale = c_view(DataType::kFloat, scalar, &scale, 4);
    const qdq_tensor c_zp = c_view(type, scalar, zero_point.data(), zero_point.size());
    qdq_tensor_spec spec{sizeof(qdq_tensor_spec), 0, 0, 0};
    ASSERT_EQ(qdq_quantize_linear_output(&attributes, &c_x, &c_scale, &c_zp, &spec), QDQ_OK) << last_error();
    EXPECT_EQ(spec.type, static_cast<int32_t>(type));
    EXPECT_EQ(spec.element_count, x.size());
    EXPECT_EQ(spec.size_bytes, bytes);
    std::vector<uint8_t> y(bytes, 0xA5);
    const qdq_mutable_tensor c_y = c_output(type, shape, y.data(), bytes);
    ASSERT_EQ(qdq_quantize_linear(&attributes, &c_x, &c_scale, &c_zp, &c_y, nullptr), QDQ_OK) << last_error();
    EXPECT_EQ(y, expected);

    std::vector<float> z_expected(x.size());
    qdq::dequantize_linear({}, {type, shape, y.data(), bytes}, {DataType::kFloat, {}, &scale, 4}, &zp,
                           {DataType::kFloat, shape, z_expected.data(), x.size() * 4});
    qdq_dequantize_linear_attributes dq_attributes;
    qdq_dequantize_linear_attributes_init(&dq_attributes);
    const qdq_tensor c_y_in = c_view(type, shape, y.data(), bytes);
    std::vector<float> z(x.size(), -1.0f);
    const qdq_mutable_tensor c_z = c_output(DataType::kFloat, shape, z.data(), z.size() * 4);
    ASSERT_EQ(qdq_dequantize_linear(&dq_attributes, &c_y_in, &c_scale, &c_zp, &c_z, nullptr), QDQ_OK) << last_error();
    EXPECT_EQ(std::memcmp(z.data(), z_expected.data(), z.size() * 4), 0);
  }
}

// The C layer passes qdq::Error's message on, prefixed by the function's name, and writes nothing.
TEST(CApi, ErrorsCarryTheCppMessage) {
  const std::vector<int64_t> shape = {4};
  const float x[4] = {1, 2, 3, 4};
  const int8_t int8_scale = 1;
  qdq::QuantizeLinearAttributes cpp_attributes;
  std::string cpp_message;
  try {
    qdq::quantize_linear_output(cpp_attributes, {DataType::kFloat, shape, x, 16}, {DataType::kInt8, {}, &int8_scale, 1},
                                nullptr);
  } catch (const qdq::Error& e) {
    cpp_message = e.what();
  }
  ASSERT_FALSE(cpp_message.empty());

  qdq_quantize_linear_attributes attributes;
  qdq_quantize_linear_attributes_init(&attributes);
  const qdq_tensor c_x = c_view(DataType::kFloat, shape, x, 16);
  const qdq_tensor c_scale = c_view(DataType::kInt8, {}, &int8_scale, 1);
  qdq_tensor_spec spec{sizeof(qdq_tensor_spec), 77, 77, 77};
  EXPECT_EQ(qdq_quantize_linear_output(&attributes, &c_x, &c_scale, nullptr, &spec), QDQ_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "qdq_quantize_linear_output: " + cpp_message);
  EXPECT_EQ(spec.type, 77);
  EXPECT_EQ(spec.element_count, 77u);
  EXPECT_EQ(spec.size_bytes, 77u);

  // A success clears the message.
  int32_t version = 0;
  EXPECT_EQ(qdq_quantize_linear_version(13, &version), QDQ_OK);
  EXPECT_EQ(version, 13);
  EXPECT_EQ(last_error(), "");
}

// A caller compiled against a newer qdq.h, whose structs have grown, runs with this library.
TEST(CApi, NewerStructs) {
  const std::vector<int64_t> shape = {2};
  const float x[2] = {1.5f, -2.5f};
  const float scale = 1.0f;
  struct NewerAttributes {
    qdq_quantize_linear_attributes known;
    int64_t newer_field;
  } attributes;
  std::memset(&attributes, 0, sizeof attributes);
  qdq_quantize_linear_attributes_init(&attributes.known);
  attributes.known.struct_size = sizeof attributes;
  struct NewerSpec {
    qdq_tensor_spec known;
    uint64_t newer_field;
  } spec;
  std::memset(&spec, 0, sizeof spec);
  spec.known.struct_size = sizeof spec;
  spec.newer_field = 12345;  // an output field qdq does not know: left alone
  const qdq_tensor c_x = c_view(DataType::kFloat, shape, x, 8);
  const qdq_tensor c_scale = c_view(DataType::kFloat, {}, &scale, 4);
  ASSERT_EQ(qdq_quantize_linear_output(&attributes.known, &c_x, &c_scale, nullptr, &spec.known), QDQ_OK)
      << last_error();
  EXPECT_EQ(spec.known.type, QDQ_TYPE_UINT8);
  EXPECT_EQ(spec.known.size_bytes, 2u);
  EXPECT_EQ(spec.newer_field, 12345u);
  attributes.newer_field = 1;  // an input field qdq does not know, set: refused, not ignored
  spec.known.size_bytes = 99;
  EXPECT_EQ(qdq_quantize_linear_output(&attributes.known, &c_x, &c_scale, nullptr, &spec.known),
            QDQ_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("attributes sets fields that this version of qdq"), std::string::npos) << last_error();
  EXPECT_EQ(spec.known.size_bytes, 99u);
}

TEST(CApi, ErrorMessagesArePerThread) {
  qdq_quantize_linear_attributes attributes;
  qdq_quantize_linear_attributes_init(&attributes);
  EXPECT_EQ(qdq_quantize_linear(&attributes, nullptr, nullptr, nullptr, nullptr, nullptr), QDQ_ERROR_INVALID_ARGUMENT);
  const std::string here = last_error();
  EXPECT_EQ(here, "qdq_quantize_linear: x is NULL");
  std::string there;
  std::thread other([&] {
    there = last_error();  // nothing failed on this thread yet
    int32_t version;
    qdq_quantize_linear_version(3, &version);
  });
  other.join();
  EXPECT_EQ(there, "");
  EXPECT_EQ(last_error(), here);
}

// A thread-pool-like hook: tasks taken from a shared counter by four threads.
struct PoolHook {
  std::atomic<int> calls{0};
  std::atomic<size_t> tasks_run{0};

  static void run(void* user_data, size_t tasks, qdq_task_function task, void* context) {
    auto& self = *static_cast<PoolHook*>(user_data);
    self.calls.fetch_add(1);
    std::atomic<size_t> next{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (size_t i; (i = next.fetch_add(1)) < tasks;) {
          task(context, i);
          self.tasks_run.fetch_add(1);
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
};

TEST(CApi, ParallelForHookGivesTheSameBytes) {
  const std::vector<int64_t> shape = {3, 70001};  // several tasks of qdq's, per-axis on axis 0
  std::vector<float> x(3 * 70001);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 301) - 150) * 0.01f;
  const std::vector<int64_t> axis_shape = {3};
  const float scales[3] = {0.01f, 0.02f, 0.005f};
  const uint8_t zero_points[3] = {128, 100, 3};
  qdq_quantize_linear_attributes attributes;
  qdq_quantize_linear_attributes_init(&attributes);
  attributes.present = QDQ_ATTRIBUTE_AXIS;
  attributes.axis = 0;
  const qdq_tensor c_x = c_view(DataType::kFloat, shape, x.data(), x.size() * 4);
  const qdq_tensor c_scale = c_view(DataType::kFloat, axis_shape, scales, sizeof scales);
  const qdq_tensor c_zp = c_view(DataType::kUint8, axis_shape, zero_points, sizeof zero_points);

  std::vector<uint8_t> single(x.size()), hooked(x.size());
  qdq_execution_options options;
  qdq_execution_options_init(&options);
  options.num_threads = 1;
  const qdq_mutable_tensor c_single = c_output(DataType::kUint8, shape, single.data(), single.size());
  ASSERT_EQ(qdq_quantize_linear(&attributes, &c_x, &c_scale, &c_zp, &c_single, &options), QDQ_OK) << last_error();

  PoolHook hook;
  options.parallel_for = &PoolHook::run;
  options.parallel_for_user_data = &hook;
  const qdq_mutable_tensor c_hooked = c_output(DataType::kUint8, shape, hooked.data(), hooked.size());
  ASSERT_EQ(qdq_quantize_linear(&attributes, &c_x, &c_scale, &c_zp, &c_hooked, &options), QDQ_OK) << last_error();
  EXPECT_EQ(hook.calls.load(), 1);
  EXPECT_GE(hook.tasks_run.load(), 2u);
  EXPECT_EQ(single, hooked);

  // Dequantize and DynamicQuantizeLinear through the hook as well.
  qdq_dequantize_linear_attributes dq_attributes;
  qdq_dequantize_linear_attributes_init(&dq_attributes);
  dq_attributes.present = QDQ_ATTRIBUTE_AXIS;
  dq_attributes.axis = 0;
  const qdq_tensor c_q = c_view(DataType::kUint8, shape, single.data(), single.size());
  std::vector<float> z_single(x.size()), z_hooked(x.size());
  const qdq_mutable_tensor c_z_single = c_output(DataType::kFloat, shape, z_single.data(), x.size() * 4);
  const qdq_mutable_tensor c_z_hooked = c_output(DataType::kFloat, shape, z_hooked.data(), x.size() * 4);
  ASSERT_EQ(qdq_dequantize_linear(&dq_attributes, &c_q, &c_scale, &c_zp, &c_z_single, nullptr), QDQ_OK);
  ASSERT_EQ(qdq_dequantize_linear(&dq_attributes, &c_q, &c_scale, &c_zp, &c_z_hooked, &options), QDQ_OK);
  EXPECT_EQ(std::memcmp(z_single.data(), z_hooked.data(), x.size() * 4), 0);
  EXPECT_EQ(hook.calls.load(), 2);

  float scale_single = 0, scale_hooked = 0;
  uint8_t zp_single = 0, zp_hooked = 0;
  ASSERT_EQ(qdq_dynamic_quantize_linear(11, &c_x, &c_single, &scale_single, &zp_single, nullptr), QDQ_OK);
  ASSERT_EQ(qdq_dynamic_quantize_linear(11, &c_x, &c_hooked, &scale_hooked, &zp_hooked, &options), QDQ_OK);
  EXPECT_EQ(scale_single, scale_hooked);
  EXPECT_EQ(zp_single, zp_hooked);
  EXPECT_EQ(single, hooked);
  EXPECT_EQ(hook.calls.load(), 4);  // two passes
  const qdq::DynamicQuantizationParameters cpp = qdq::dynamic_quantize_linear(
      {DataType::kFloat, shape, x.data(), x.size() * 4}, {DataType::kUint8, shape, hooked.data(), hooked.size()});
  EXPECT_EQ(cpp.y_scale, scale_single);
  EXPECT_EQ(cpp.y_zero_point, zp_single);
}

// A hook that runs no task, and one that runs a task twice: reported, not ignored.
void no_tasks(void*, size_t, qdq_task_function, void*) {}
void first_task_twice(void*, size_t tasks, qdq_task_function task, void* context) {
  for (size_t i = 0; i < tasks; ++i) task(context, i);
  task(context, 0);
}

TEST(CApi, BrokenHooksAreReported) {
  const std::vector<int64_t> shape = {100000};
  std::vector<float> x(100000, 1.0f);
  const float scale = 1.0f;
  std::vector<uint8_t> y(100000);
  qdq_quantize_linear_attributes attributes;
  qdq_quantize_linear_attributes_init(&attributes);
  const qdq_tensor c_x = c_view(DataType::kFloat, shape, x.data(), x.size() * 4);
  const qdq_tensor c_scale = c_view(DataType::kFloat, {}, &scale, 4);
  const qdq_mutable_tensor c_y = c_output(DataType::kUint8, shape, y.data(), y.size());
  qdq_execution_options options;
  qdq_execution_options_init(&options);
  options.parallel_for = &no_tasks;
  EXPECT_EQ(qdq_quantize_linear(&attributes, &c_x, &c_scale, nullptr, &c_y, &options), QDQ_ERROR_INTERNAL);
  EXPECT_EQ(last_error(),
            "qdq_quantize_linear: the parallel_for hook returned after running 0 of 4 tasks; it must "
            "run every task once before returning");
  options.parallel_for = &first_task_twice;
  EXPECT_EQ(qdq_quantize_linear(&attributes, &c_x, &c_scale, nullptr, &c_y, &options), QDQ_ERROR_INTERNAL);
  EXPECT_NE(last_error().find("running 5 of 4 tasks"), std::string::npos) << last_error();
}

TEST(CApi, ExecutionOptionsAreChecked) {
  const std::vector<int64_t> shape = {2};
  const float x[2] = {1, 2};
  const float scale = 1.0f;
  uint8_t y[2] = {7, 7};
  qdq_quantize_linear_attributes attributes;
  qdq_quantize_linear_attributes_init(&attributes);
  const qdq_tensor c_x = c_view(DataType::kFloat, shape, x, 8);
  const qdq_tensor c_scale = c_view(DataType::kFloat, {}, &scale, 4);
  const qdq_mutable_tensor c_y = c_output(DataType::kUint8, shape, y, 2);
  qdq_execution_options options;
  qdq_execution_options_init(&options);
  options.struct_size = 1 << 20;  // garbage, not a size: rejected without reading that far
  EXPECT_EQ(qdq_quantize_linear(&attributes, &c_x, &c_scale, nullptr, &c_y, &options), QDQ_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("options->struct_size is 1048576"), std::string::npos) << last_error();
  EXPECT_EQ(y[0], 7);
  qdq_execution_options_init(&options);
  options.force_scalar = 1;
  options.num_threads = 3;
  EXPECT_EQ(qdq_quantize_linear(&attributes, &c_x, &c_scale, nullptr, &c_y, &options), QDQ_OK) << last_error();
  EXPECT_EQ(y[0], 1);
  EXPECT_EQ(y[1], 2);
}

TEST(CApi, DefaultThreads) {
  qdq_set_default_num_threads(5);
  EXPECT_EQ(qdq_default_num_threads(), 5);
  EXPECT_EQ(qdq::default_num_threads(), 5);
  qdq_set_default_num_threads(-2);  // like 0: back to QDQ_NUM_THREADS or the hardware threads
  EXPECT_GE(qdq_default_num_threads(), 1);
  EXPECT_EQ(qdq_default_num_threads(), qdq::default_num_threads());
  qdq_set_default_num_threads(0);
}

void count_task(void* context, size_t task) { static_cast<std::atomic<int>*>(context)[task].fetch_add(1); }

TEST(CApi, RunTasksRunsEachTaskOnceAndChecksItsArguments) {
  std::atomic<int> runs[9] = {};
  qdq_execution_options options;
  qdq_execution_options_init(&options);
  options.num_threads = 2;
  ASSERT_EQ(qdq_run_tasks(9, &count_task, runs, &options), QDQ_OK) << last_error();
  ASSERT_EQ(qdq_run_tasks(9, &count_task, runs, nullptr), QDQ_OK) << last_error();
  for (const auto& r : runs) EXPECT_EQ(r.load(), 2);
  EXPECT_EQ(qdq_run_tasks(0, nullptr, nullptr, nullptr), QDQ_OK);
  EXPECT_EQ(qdq_run_tasks(3, nullptr, nullptr, nullptr), QDQ_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "qdq_run_tasks: task_function is NULL");
  options.parallel_for = &no_tasks;
  EXPECT_EQ(qdq_run_tasks(3, &count_task, runs, &options), QDQ_ERROR_INTERNAL);
  EXPECT_NE(last_error().find("running 0 of 3 tasks"), std::string::npos) << last_error();
}

}  // namespace
