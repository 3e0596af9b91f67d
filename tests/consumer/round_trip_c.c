/* The C API from C (C11): quantize float32 -> int4, blocked, and dequantize back through qdq.h, with
 * every code and value checked; then every error path (NULL pointers, wrong sizes, bad types, bad
 * attributes, bad struct sizes, a broken parallel-for hook), each of which must return the right
 * status, name the problem in qdq_last_error_message() and leave the output untouched.
 * Exits 0 if all checks pass, 1 otherwise. Built by the consumer tests against an installed qdq. */
#include <qdq/qdq.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(condition)                                                            \
  do {                                                                              \
    if (!(condition)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #condition); \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

/* The status is `expected`, the message contains `needle`, and `size` bytes at `buffer` are all
 * still `fill`. */
static void check_error(int line, qdq_status status, qdq_status expected, const char* needle, const void* buffer,
                        size_t size, unsigned char fill) {
  const char* message = qdq_last_error_message();
  const unsigned char* bytes = (const unsigned char*)buffer;
  size_t i;
  if (status != expected) {
    fprintf(stderr, "line %d: status %s, expected %s (message: %s)\n", line, qdq_status_name(status),
            qdq_status_name(expected), message);
    ++failures;
  }
  if (message == NULL || strstr(message, needle) == NULL) {
    fprintf(stderr, "line %d: message \"%s\" does not contain \"%s\"\n", line, message ? message : "(NULL)", needle);
    ++failures;
  }
  for (i = 0; i < size; ++i) {
    if (bytes[i] != fill) {
      fprintf(stderr, "line %d: output byte %zu was written (0x%02x) by a failing call\n", line, i, bytes[i]);
      ++failures;
      break;
    }
  }
}

#define EXPECT_ERROR(call, expected, needle, buffer, size, fill) \
  check_error(__LINE__, (call), (expected), (needle), (buffer), (size), (fill))

/* A serial parallel-for hook that counts its calls and tasks. */
typedef struct {
  int calls;
  size_t tasks_run;
  size_t skip_task; /* a task number to leave out, or SIZE_MAX */
} hook_state;

static void serial_hook(void* user_data, size_t tasks, qdq_task_function task_function, void* task_context) {
  hook_state* state = (hook_state*)user_data;
  size_t task;
  ++state->calls;
  for (task = 0; task < tasks; ++task) {
    if (task == state->skip_task) continue;
    task_function(task_context, task);
    ++state->tasks_run;
  }
}

static void out_of_range_hook(void* user_data, size_t tasks, qdq_task_function task_function, void* task_context) {
  (void)user_data;
  task_function(task_context, tasks); /* one past the end: qdq must refuse it */
}

int main(void) {
  /* x is 2 x 4, quantized in blocks of 2 along axis 1: y_scale and y_zero_point are 2 x 2. The
   * quotients -6, -2 | 0.25, 3.5 | 2, -8 | -1.5, 400 round half to even (3.5 -> 4, -1.5 -> -2),
   * the zero point is added, and 400 + 3 saturates to INT4's 7. */
  static const float x_values[8] = {-3.0f, -1.0f, 0.5f, 7.0f, 2.0f, -8.0f, -0.375f, 100.0f};
  static const int64_t shape[2] = {2, 4};
  static const int64_t block_shape[2] = {2, 2};
  static const float scale_values[4] = {0.5f, 2.0f, 1.0f, 0.25f};
  /* INT4 zero points {1, -2, 0, 3}, two per byte, first in the low bits. */
  static const uint8_t zero_point_bytes[2] = {0xE1, 0x30};
  /* y = {-5, -1, -2, 2, 2, -8, 1, 7} packed the same way. */
  static const uint8_t y_expected[4] = {0xFB, 0x2E, 0x82, 0x71};
  /* (y - zero point) * scale. */
  static const float z_expected[8] = {-3.0f, -1.0f, 0.0f, 8.0f, 2.0f, -8.0f, -0.5f, 1.0f};

  const qdq_tensor x = {QDQ_TYPE_FLOAT, 2, shape, x_values, sizeof x_values};
  const qdq_tensor scale = {QDQ_TYPE_FLOAT, 2, block_shape, scale_values, sizeof scale_values};
  const qdq_tensor zero_point = {QDQ_TYPE_INT4, 2, block_shape, zero_point_bytes, sizeof zero_point_bytes};

  qdq_quantize_linear_attributes q_attributes;
  qdq_dequantize_linear_attributes dq_attributes;
  qdq_tensor_spec spec;
  uint8_t y[4];
  float z[8];
  size_t i;

  qdq_quantize_linear_attributes_init(&q_attributes);
  q_attributes.present = QDQ_ATTRIBUTE_AXIS | QDQ_ATTRIBUTE_BLOCK_SIZE;
  q_attributes.axis = 1;
  q_attributes.block_size = 2;
  qdq_dequantize_linear_attributes_init(&dq_attributes);
  dq_attributes.present = QDQ_ATTRIBUTE_AXIS | QDQ_ATTRIBUTE_BLOCK_SIZE;
  dq_attributes.axis = -1; /* the same axis, counted from the back */
  dq_attributes.block_size = 2;

  /* --- The round trip. ------------------------------------------------------------------------ */
  spec.struct_size = sizeof spec;
  CHECK(qdq_quantize_linear_output(&q_attributes, &x, &scale, &zero_point, &spec) == QDQ_OK);
  CHECK(spec.type == QDQ_TYPE_INT4 && spec.element_count == 8 && spec.size_bytes == sizeof y);
  CHECK(strcmp(qdq_last_error_message(), "") == 0);
  {
    const qdq_mutable_tensor y_view = {QDQ_TYPE_INT4, 2, shape, y, sizeof y};
    memset(y, 0, sizeof y);
    CHECK(qdq_quantize_linear(&q_attributes, &x, &scale, &zero_point, &y_view, NULL) == QDQ_OK);
    CHECK(memcmp(y, y_expected, sizeof y) == 0);
  }
  {
    const qdq_tensor y_in = {QDQ_TYPE_INT4, 2, shape, y, sizeof y};
    const qdq_mutable_tensor z_view = {QDQ_TYPE_FLOAT, 2, shape, z, sizeof z};
    spec.struct_size = sizeof spec;
    CHECK(qdq_dequantize_linear_output(&dq_attributes, &y_in, &scale, &zero_point, &spec) == QDQ_OK);
    CHECK(spec.type == QDQ_TYPE_FLOAT && spec.element_count == 8 && spec.size_bytes == sizeof z);
    memset(z, 0, sizeof z);
    CHECK(qdq_dequantize_linear(&dq_attributes, &y_in, &scale, &zero_point, &z_view, NULL) == QDQ_OK);
    for (i = 0; i < 8; ++i) {
      if (z[i] != z_expected[i]) {
        fprintf(stderr, "element %zu: z = %g, expected %g\n", i, (double)z[i], (double)z_expected[i]);
        ++failures;
      }
    }
  }

  /* --- A large tensor through the caller's parallel-for hook: the same bytes as qdq's own pool. --- */
  {
    enum { kElements = 200003 }; /* several of qdq's tasks, the last one short */
    const int64_t big_shape[1] = {kElements};
    float* big = (float*)malloc(kElements * sizeof(float));
    uint8_t* own = (uint8_t*)malloc((kElements + 1) / 2);
    uint8_t* hooked = (uint8_t*)malloc((kElements + 1) / 2);
    const float big_scale = 0.125f;
    qdq_quantize_linear_attributes per_tensor;
    qdq_execution_options options;
    hook_state state = {0, 0, SIZE_MAX};
    CHECK(big != NULL && own != NULL && hooked != NULL);
    if (big != NULL && own != NULL && hooked != NULL) {
      const qdq_tensor big_x = {QDQ_TYPE_FLOAT, 1, big_shape, big, kElements * sizeof(float)};
      const qdq_tensor big_s = {QDQ_TYPE_FLOAT, 0, NULL, &big_scale, sizeof big_scale};
      const qdq_mutable_tensor own_y = {QDQ_TYPE_INT4, 1, big_shape, own, (kElements + 1) / 2};
      const qdq_mutable_tensor hooked_y = {QDQ_TYPE_INT4, 1, big_shape, hooked, (kElements + 1) / 2};
      for (i = 0; i < kElements; ++i) big[i] = (float)((int)(i % 97) - 48) * 0.0625f;
      qdq_quantize_linear_attributes_init(&per_tensor);
      per_tensor.present = QDQ_ATTRIBUTE_OUTPUT_DTYPE; /* no zero point: the type comes from here */
      per_tensor.output_dtype = QDQ_TYPE_INT4;
      CHECK(qdq_quantize_linear(&per_tensor, &big_x, &big_s, NULL, &own_y, NULL) == QDQ_OK);
      qdq_execution_options_init(&options);
      options.parallel_for = serial_hook;
      options.parallel_for_user_data = &state;
      memset(hooked, 0, (kElements + 1) / 2);
      CHECK(qdq_quantize_linear(&per_tensor, &big_x, &big_s, NULL, &hooked_y, &options) == QDQ_OK);
      CHECK(state.calls == 1 && state.tasks_run >= 2);
      CHECK(memcmp(own, hooked, (kElements + 1) / 2) == 0);
      /* Element 1: (1 - 48) / 16 / 0.125 = -23.5 -> saturates to -8; element 50: 2 * 0.0625 / 0.125 = 1. */
      CHECK((own[0] >> 4) == 0x8 && (own[25] & 0xF) == 0x1);

      /* A hook that leaves a task out, and one that runs a task that does not exist. */
      state.skip_task = 1;
      EXPECT_ERROR(qdq_quantize_linear(&per_tensor, &big_x, &big_s, NULL, &hooked_y, &options), QDQ_ERROR_INTERNAL,
                   "the parallel_for hook returned after running", "", 0, 0);
      options.parallel_for = out_of_range_hook;
      EXPECT_ERROR(qdq_quantize_linear(&per_tensor, &big_x, &big_s, NULL, &hooked_y, &options), QDQ_ERROR_INTERNAL,
                   "the parallel_for hook ran task", "", 0, 0);
    }
    free(big);
    free(own);
    free(hooked);
  }

  /* --- Errors: each returns its status, names the problem and writes nothing. -------------------- */
  {
    uint8_t out[4];
    float out_f[8];
    const qdq_mutable_tensor y_view = {QDQ_TYPE_INT4, 2, shape, out, sizeof out};
    const qdq_tensor y_in = {QDQ_TYPE_INT4, 2, shape, y_expected, sizeof y_expected};
    const qdq_mutable_tensor z_view = {QDQ_TYPE_FLOAT, 2, shape, out_f, sizeof out_f};
    const qdq_status qdq_invalid = QDQ_ERROR_INVALID_ARGUMENT;
    qdq_tensor bad;
    qdq_mutable_tensor bad_y;
    qdq_quantize_linear_attributes bad_q;
    qdq_dequantize_linear_attributes bad_dq;
    qdq_execution_options options;
    qdq_tensor_spec untouched_spec;
    memset(out, 0xA5, sizeof out);
    memset(out_f, 0xA5, sizeof out_f);

    /* NULL pointers. */
    EXPECT_ERROR(qdq_quantize_linear(NULL, &x, &scale, &zero_point, &y_view, NULL), qdq_invalid,
                 "qdq_quantize_linear: attributes is NULL", out, sizeof out, 0xA5);
    EXPECT_ERROR(qdq_quantize_linear(&q_attributes, NULL, &scale, &zero_point, &y_view, NULL), qdq_invalid, "x is NULL",
                 out, sizeof out, 0xA5);
    EXPECT_ERROR(qdq_quantize_linear(&q_attributes, &x, NULL, &zero_point, &y_view, NULL), qdq_invalid,
                 "y_scale is NULL", out, sizeof out, 0xA5);
    EXPECT_ERROR(qdq_quantize_linear(&q_attributes, &x, &scale, &zero_point, NULL, NULL), qdq_invalid, "y is NULL", out,
                 sizeof out, 0xA5);
    EXPECT_ERROR(qdq_dequantize_linear(&dq_attributes, &y_in, NULL, &zero_point, &z_view, NULL), qdq_invalid,
                 "qdq_dequantize_linear: x_scale is NULL", out_f, sizeof out_f, 0xA5);
    EXPECT_ERROR(qdq_quantize_linear_output(&q_attributes, &x, &scale, &zero_point, NULL), qdq_invalid, "spec is NULL",
                 out, sizeof out, 0xA5);
    EXPECT_ERROR(qdq_dequantize_linear_output(NULL, &y_in, &scale, &zero_point, &spec), qdq_invalid,
                 "attributes is NULL", out, sizeof out, 0xA5);
    bad = x;
    bad.shape = NULL;
    EXPECT_ERROR(qdq_quantize_linear(&q_attributes, &bad, &scale, &zero_point, &y_view, NULL), qdq_invalid,
                 "x has rank 2 but a NULL shape", out, sizeof out, 0xA5);
    bad = x;
    bad.data = NULL;
    EXPECT_ERROR(qdq_quantize_linear(&q_attributes, &bad, &scale, &zero_point, &y_view, NULL), qdq_invalid,
                 "x has a null data pointer", out, sizeof out, 0xA5);
    bad_y = y_view;
    bad_y.data = NULL;
    EXPECT_ERROR(qdq_quantize_linear(&q_attributes, &x, &scale, &zero_point, &bad_y, NULL), qdq_invalid,
                 "output y has a null data pointer", out, sizeof out, 0xA5);

    /* Wrong sizes. */
    bad = x;
    bad.size_bytes = sizeof x_values - 1;
    EXPECT_ERROR(qdq_quantize_linear(&q_attributes, &bad, &scale, &zero_point, &y_view, NULL), qdq_invalid,
                 "x of type FLOAT and shape [2,4] needs 32 bytes, but its buffer has 31", out, sizeof out, 0xA5);
    bad_y = y_view;
    bad_y.size_bytes = 3;
    EXPECT_ERROR(qdq_quantize_linear(&q_attributes, &x, &scale, &zero_point, &bad_y, NULL), qdq_invalid,
                 "output y buffer has 3 bytes, expected 4", out, sizeof out, 0xA5);
    bad_y = y_view;
    bad_y.rank = 1;
    EXPECT_ERROR(qdq_quantize_linear(&q_attributes, &x, &scale, &zero_point, &bad_y, NULL), qdq_invalid,
                 "output y has shape [2], expected x's shape [2,4]", out, sizeof out, 0xA5);

    /* Bad types. */
    bad = x;
    bad.type = 999;
    EXPECT_ERROR(qdq_quantize_linear(&q_attributes, &bad, &scale, &zero_point, &y_view, NULL), qdq_invalid,
                 "x has unknown element type number 999", out, sizeof out, 0xA5);
    bad = scale;
    bad.type = QDQ_TYPE_INT8; /* scales are FLOAT, FLOAT16, BFLOAT16, INT32 or FLOAT8E8M0 */
    bad.size_bytes = 4;
    EXPECT_ERROR(qdq_quantize_linear(&q_attributes, &x, &bad, &zero_point, &y_view, NULL), qdq_invalid,
                 "y_scale has element type INT8, which this version does not allow", out, sizeof out, 0xA5);
    bad_y = y_view;
    bad_y.type = QDQ_TYPE_UINT4;
    EXPECT_ERROR(qdq_quantize_linear(&q_attributes, &x, &scale, &zero_point, &bad_y, NULL), qdq_invalid,
                 "output y has element type UINT4, expected INT4", out, sizeof out, 0xA5);
    bad = y_in;
    bad.type = QDQ_TYPE_STRING;
    EXPECT_ERROR(qdq_dequantize_linear(&dq_attributes, &bad, &scale, &zero_point, &z_view, NULL), qdq_invalid, "STRING",
                 out_f, sizeof out_f, 0xA5);

    /* Bad attributes. */
    bad_q = q_attributes;
    bad_q.block_size = 1; /* y_scale would then be 2 x 4 */
    EXPECT_ERROR(qdq_quantize_linear(&bad_q, &x, &scale, &zero_point, &y_view, NULL), qdq_invalid,
                 "does not match the blocked shape", out, sizeof out, 0xA5);
    bad_q = q_attributes;
    bad_q.axis = 2;
    EXPECT_ERROR(qdq_quantize_linear(&bad_q, &x, &scale, &zero_point, &y_view, NULL), qdq_invalid,
                 "axis 2 is out of range [-2, 1]", out, sizeof out, 0xA5);
    bad_q = q_attributes;
    bad_q.opset = 19; /* block_size arrived in version 21 */
    EXPECT_ERROR(qdq_quantize_linear(&bad_q, &x, &scale, &zero_point, &y_view, NULL), qdq_invalid,
                 "attribute 'block_size' is not defined before version 21", out, sizeof out, 0xA5);
    bad_q = q_attributes;
    bad_q.opset = 9;
    EXPECT_ERROR(qdq_quantize_linear(&bad_q, &x, &scale, &zero_point, &y_view, NULL), qdq_invalid,
                 "opset 9 has no QuantizeLinear", out, sizeof out, 0xA5);
    bad_q = q_attributes;
    bad_q.present |= 1u << 10;
    EXPECT_ERROR(qdq_quantize_linear(&bad_q, &x, &scale, &zero_point, &y_view, NULL), qdq_invalid,
                 "attributes->present has bits 1024 that are no QuantizeLinear attribute", out, sizeof out, 0xA5);
    bad_dq = dq_attributes;
    bad_dq.present |= QDQ_ATTRIBUTE_SATURATE;
    EXPECT_ERROR(qdq_dequantize_linear(&bad_dq, &y_in, &scale, &zero_point, &z_view, NULL), qdq_invalid,
                 "that are no DequantizeLinear attribute", out_f, sizeof out_f, 0xA5);

    /* Struct sizes: too small (e.g. never set), and larger with fields this library does not know. */
    bad_q = q_attributes;
    bad_q.struct_size = 0;
    EXPECT_ERROR(qdq_quantize_linear(&bad_q, &x, &scale, &zero_point, &y_view, NULL), qdq_invalid,
                 "attributes->struct_size is 0, but must be sizeof(qdq_quantize_linear_attributes)", out, sizeof out,
                 0xA5);
    {
      struct {
        qdq_quantize_linear_attributes known;
        int64_t newer_field;
      } newer;
      memset(&newer, 0, sizeof newer);
      newer.known = q_attributes;
      newer.known.struct_size = sizeof newer;
      newer.newer_field = 5;
      EXPECT_ERROR(qdq_quantize_linear(&newer.known, &x, &scale, &zero_point, &y_view, NULL), qdq_invalid,
                   "attributes sets fields that this version of qdq", out, sizeof out, 0xA5);
      newer.newer_field = 0; /* unset: accepted */
      {
        uint8_t y_newer[4] = {0};
        const qdq_mutable_tensor y_newer_view = {QDQ_TYPE_INT4, 2, shape, y_newer, sizeof y_newer};
        CHECK(qdq_quantize_linear(&newer.known, &x, &scale, &zero_point, &y_newer_view, NULL) == QDQ_OK);
        CHECK(memcmp(y_newer, y_expected, sizeof y_newer) == 0);
      }
    }
    qdq_execution_options_init(&options);
    options.struct_size = sizeof options - 1;
    EXPECT_ERROR(qdq_quantize_linear(&q_attributes, &x, &scale, &zero_point, &y_view, &options), qdq_invalid,
                 "options->struct_size is", out, sizeof out, 0xA5);
    qdq_execution_options_init(&options);
    options.num_threads = -1;
    EXPECT_ERROR(qdq_quantize_linear(&q_attributes, &x, &scale, &zero_point, &y_view, &options), qdq_invalid,
                 "options->num_threads is -1", out, sizeof out, 0xA5);
    memset(&untouched_spec, 0xA5, sizeof untouched_spec);
    untouched_spec.struct_size = 1;
    EXPECT_ERROR(qdq_quantize_linear_output(&q_attributes, &x, &scale, &zero_point, &untouched_spec), qdq_invalid,
                 "spec->struct_size is 1", (const unsigned char*)&untouched_spec + sizeof(size_t),
                 sizeof untouched_spec - sizeof(size_t), 0xA5);
    untouched_spec.struct_size = sizeof untouched_spec;
    bad = scale;
    bad.type = QDQ_TYPE_INT8;
    bad.size_bytes = 4;
    EXPECT_ERROR(qdq_quantize_linear_output(&q_attributes, &x, &bad, &zero_point, &untouched_spec), qdq_invalid,
                 "y_scale has element type INT8", (const unsigned char*)&untouched_spec + sizeof(size_t),
                 sizeof untouched_spec - sizeof(size_t), 0xA5);

    /* DynamicQuantizeLinear. */
    {
      float y_scale = 42.0f;
      uint8_t y_zero_point = 42;
      uint8_t q[8];
      const qdq_mutable_tensor q_view = {QDQ_TYPE_UINT8, 2, shape, q, sizeof q};
      const int64_t empty_shape[1] = {0};
      const qdq_tensor empty = {QDQ_TYPE_FLOAT, 1, empty_shape, x_values, 0};
      memset(q, 0xA5, sizeof q);
      EXPECT_ERROR(qdq_dynamic_quantize_linear(11, &x, &q_view, NULL, &y_zero_point, NULL), qdq_invalid,
                   "qdq_dynamic_quantize_linear: y_scale is NULL", q, sizeof q, 0xA5);
      EXPECT_ERROR(qdq_dynamic_quantize_linear(11, &x, &q_view, &y_scale, NULL, NULL), qdq_invalid,
                   "y_zero_point is NULL", q, sizeof q, 0xA5);
      EXPECT_ERROR(qdq_dynamic_quantize_linear(10, &x, &q_view, &y_scale, &y_zero_point, NULL), qdq_invalid,
                   "opset 10 has no DynamicQuantizeLinear", q, sizeof q, 0xA5);
      EXPECT_ERROR(qdq_dynamic_quantize_linear(11, &empty, &q_view, &y_scale, &y_zero_point, NULL), qdq_invalid,
                   "x is empty", q, sizeof q, 0xA5);
      CHECK(y_scale == 42.0f && y_zero_point == 42);
      /* And the working call: range [-8, 100], scale 108 / 255, zero point round(8 / scale) = 19. */
      CHECK(qdq_dynamic_quantize_linear(11, &x, &q_view, &y_scale, &y_zero_point, NULL) == QDQ_OK);
      CHECK(y_scale == 108.0f / 255.0f && y_zero_point == 19);
      CHECK(q[5] == 0 && q[7] == 255);
    }

    /* The helpers. */
    {
      uint64_t bytes = 7;
      int32_t version = 0;
      EXPECT_ERROR(qdq_storage_bytes(QDQ_TYPE_STRING, 3, &bytes), qdq_invalid, "STRING has no fixed storage size",
                   &bytes, 0, 0);
      CHECK(bytes == 7);
      EXPECT_ERROR(qdq_storage_bytes(QDQ_TYPE_INT4, 3, NULL), qdq_invalid, "bytes is NULL", "", 0, 0);
      EXPECT_ERROR(qdq_storage_bytes(77, 3, &bytes), qdq_invalid, "unknown element type number 77", "", 0, 0);
      CHECK(qdq_storage_bytes(QDQ_TYPE_INT4, 3, &bytes) == QDQ_OK && bytes == 2);
      CHECK(qdq_storage_bytes(QDQ_TYPE_INT2, 9, &bytes) == QDQ_OK && bytes == 3);
      EXPECT_ERROR(qdq_quantize_linear_version(9, &version), qdq_invalid, "opset 9", "", 0, 0);
      EXPECT_ERROR(qdq_quantize_linear_version(20, NULL), qdq_invalid, "version is NULL", "", 0, 0);
      CHECK(qdq_quantize_linear_version(20, &version) == QDQ_OK && version == 19);
      CHECK(strcmp(qdq_last_error_message(), "") == 0);
      CHECK(qdq_bit_width(QDQ_TYPE_INT4) == 4 && qdq_bit_width(QDQ_TYPE_BFLOAT16) == 16 && qdq_bit_width(99) == 0);
      CHECK(strcmp(qdq_data_type_name(QDQ_TYPE_FLOAT8E4M3FN), "FLOAT8E4M3FN") == 0);
      CHECK(qdq_data_type_name(99) == NULL);
      CHECK(qdq_data_type_kind(QDQ_TYPE_FLOAT8E8M0) == QDQ_TYPE_KIND_EXPONENT &&
            qdq_data_type_kind(99) == QDQ_TYPE_KIND_OTHER);
      CHECK(qdq_is_signed_type(QDQ_TYPE_INT2) == 1 && qdq_is_signed_type(QDQ_TYPE_UINT4) == 0);
      CHECK(qdq_is_nan_code(QDQ_TYPE_FLOAT8E4M3FN, 0xFF) == 1 && qdq_is_nan_code(QDQ_TYPE_FLOAT8E4M3FN, 0x7E) == 0);
      CHECK(strcmp(qdq_status_name(QDQ_ERROR_OUT_OF_MEMORY), "QDQ_ERROR_OUT_OF_MEMORY") == 0);
      qdq_set_default_num_threads(3);
      CHECK(qdq_default_num_threads() == 3);
      qdq_set_default_num_threads(0);
      CHECK(qdq_default_num_threads() >= 1);
    }
  }

  /* The library's version is well-formed and, where the build says which one it expects, that one. */
  {
    unsigned major = 0, minor = 0, patch = 0;
    CHECK(sscanf(qdq_version(), "%u.%u.%u", &major, &minor, &patch) == 3);
    CHECK(qdq_version_number() == major * 10000u + minor * 100u + patch);
#ifdef QDQ_EXPECTED_VERSION
    CHECK(strcmp(qdq_version(), QDQ_EXPECTED_VERSION) == 0);
#endif
  }

  printf("qdq %s from C: %s\n", qdq_version(), failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
