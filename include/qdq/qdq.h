/* qdq's C API: ONNX QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear through a C ABI. */
/**
 * \file
 * qdq's C API: the operators of <qdq/qdq.hpp> for C and for languages that bind to C.
 *
 * A C11 header that needs nothing else: no C++ compiler, no other qdq header. It is a thin layer over
 * the C++ API, with the same semantics, validation and results bit for bit (docs/using-qdq-from-c.md).
 *
 * Conventions:
 *  - Functions that can fail return a ::qdq_status; on failure they write nothing to any output
 *    (tensor buffer, size query result, scale, zero point) and qdq_last_error_message() names the
 *    problem. No C++ exception ever crosses this interface and no bad argument aborts the process.
 *  - Element types are ONNX's TensorProto.DataType numbers (::qdq_data_type).
 *  - The attribute, option and spec structs begin with `struct_size`, which the caller sets to
 *    `sizeof(the struct)` as its own header declares it: fields added in later versions go at the
 *    end, so a library newer than the caller's header treats the missing fields as unset, and an
 *    older library rejects a newer field that is set (nonzero). Set the structs up with the
 *    qdq_*_init() functions, which also set `struct_size`.
 *  - Every function is thread-safe; calls on different threads run independently. An operator call
 *    needs up to about 56 KiB of stack on each thread that runs its tasks (see qdq.hpp).
 */
#ifndef QDQ_QDQ_H_
#define QDQ_QDQ_H_

#include <stddef.h>
#include <stdint.h>

/**
 * \def QDQ_C_API
 * Marks a declaration of the C API as exported from a shared libqdq (dllexport/dllimport on Windows
 * when QDQ_SHARED is defined, default visibility elsewhere).
 */
#if defined(_WIN32)
#if defined(QDQ_SHARED) && defined(QDQ_BUILDING)
#define QDQ_C_API __declspec(dllexport)
#elif defined(QDQ_SHARED)
#define QDQ_C_API __declspec(dllimport)
#else
#define QDQ_C_API
#endif
#elif defined(__GNUC__)
#define QDQ_C_API __attribute__((visibility("default")))
#else
#define QDQ_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** What a call returned. Every value other than ::QDQ_OK comes with qdq_last_error_message(). */
typedef enum qdq_status {
  /** Success. */
  QDQ_OK = 0,
  /** A bad argument: a NULL pointer, a wrong struct or buffer size, an unknown or disallowed
      element type, a bad attribute or shape; anything the operator's rules reject. */
  QDQ_ERROR_INVALID_ARGUMENT = 1,
  /** Memory for a call's (small, fixed) bookkeeping could not be allocated. */
  QDQ_ERROR_OUT_OF_MEMORY = 2,
  /** A failure that is not the arguments' fault, e.g. a parallel-for hook that did not run every
      task. */
  QDQ_ERROR_INTERNAL = 3
} qdq_status;

/** Element types, numbered as ONNX's TensorProto.DataType (the same numbers as qdq::DataType). */
typedef enum qdq_data_type {
  QDQ_TYPE_UNDEFINED = 0,       /**< No type. */
  QDQ_TYPE_FLOAT = 1,           /**< float32. */
  QDQ_TYPE_UINT8 = 2,           /**< uint8. */
  QDQ_TYPE_INT8 = 3,            /**< int8. */
  QDQ_TYPE_UINT16 = 4,          /**< uint16. */
  QDQ_TYPE_INT16 = 5,           /**< int16. */
  QDQ_TYPE_INT32 = 6,           /**< int32. */
  QDQ_TYPE_INT64 = 7,           /**< int64. */
  QDQ_TYPE_STRING = 8,          /**< string (no fixed size; never valid here). */
  QDQ_TYPE_BOOL = 9,            /**< bool. */
  QDQ_TYPE_FLOAT16 = 10,        /**< IEEE float16. */
  QDQ_TYPE_DOUBLE = 11,         /**< float64. */
  QDQ_TYPE_UINT32 = 12,         /**< uint32. */
  QDQ_TYPE_UINT64 = 13,         /**< uint64. */
  QDQ_TYPE_COMPLEX64 = 14,      /**< complex64. */
  QDQ_TYPE_COMPLEX128 = 15,     /**< complex128. */
  QDQ_TYPE_BFLOAT16 = 16,       /**< bfloat16. */
  QDQ_TYPE_FLOAT8E4M3FN = 17,   /**< float8 e4m3, finite and NaN. */
  QDQ_TYPE_FLOAT8E4M3FNUZ = 18, /**< float8 e4m3, finite, NaN, no negative zero. */
  QDQ_TYPE_FLOAT8E5M2 = 19,     /**< float8 e5m2. */
  QDQ_TYPE_FLOAT8E5M2FNUZ = 20, /**< float8 e5m2, finite, NaN, no negative zero. */
  QDQ_TYPE_UINT4 = 21,          /**< uint4, two per byte, first element in the low bits. */
  QDQ_TYPE_INT4 = 22,           /**< int4, two per byte, first element in the low bits. */
  QDQ_TYPE_FLOAT4E2M1 = 23,     /**< float4 e2m1, two per byte, first element in the low bits. */
  QDQ_TYPE_FLOAT8E8M0 = 24,     /**< float8 e8m0 (exponent only). */
  QDQ_TYPE_UINT2 = 25,          /**< uint2, four per byte, first element in the low bits. */
  QDQ_TYPE_INT2 = 26            /**< int2, four per byte, first element in the low bits. */
} qdq_data_type;

/** What the codes of an element type mean (qdq_data_type_kind()); the same numbers as qdq::TypeKind. */
typedef enum qdq_type_kind {
  QDQ_TYPE_KIND_OTHER = 0,     /**< No number the operators use: UNDEFINED, STRING, BOOL, COMPLEX*. */
  QDQ_TYPE_KIND_INTEGER = 1,   /**< Two's complement or unsigned integers, INT2 to UINT64. */
  QDQ_TYPE_KIND_FLOAT = 2,     /**< IEEE float32 and float64. */
  QDQ_TYPE_KIND_MINIFLOAT = 3, /**< FLOAT16, BFLOAT16, the float8 formats, FLOAT4E2M1. */
  QDQ_TYPE_KIND_EXPONENT = 4   /**< FLOAT8E8M0: a biased power of two. */
} qdq_type_kind;

/**
 * A read-only view of a caller-owned tensor in ONNX's layout (row-major; sub-byte types packed,
 * first element in the low bits; multi-byte elements little-endian). The view owns nothing. A dense
 * tensor needs nothing more, so this struct has no `struct_size` and will not change.
 */
typedef struct qdq_tensor {
  int32_t type;         /**< Element type: a ::qdq_data_type number. */
  size_t rank;          /**< Number of dimensions; 0 = a scalar (one element). */
  const int64_t* shape; /**< `rank` dimensions, row-major; may be NULL when `rank` is 0. */
  const void* data;     /**< The first byte of the elements. */
  size_t size_bytes;    /**< Bytes at `data`: exactly what the type and shape occupy. */
} qdq_tensor;

/** A writable view of a caller-owned output buffer; the same rules as ::qdq_tensor. */
typedef struct qdq_mutable_tensor {
  int32_t type;         /**< Element type: a ::qdq_data_type number. */
  size_t rank;          /**< Number of dimensions; 0 = a scalar (one element). */
  const int64_t* shape; /**< `rank` dimensions, row-major; may be NULL when `rank` is 0. */
  void* data;           /**< The first byte of the output buffer. */
  size_t size_bytes;    /**< Bytes at `data`: exactly what the type and shape occupy. */
} qdq_mutable_tensor;

/** What an operator will produce. Its shape is always the shape of the input `x`. */
typedef struct qdq_tensor_spec {
  size_t struct_size;     /**< Set by the caller: sizeof(qdq_tensor_spec). qdq fills in the fields
                               it knows and leaves any later ones alone. */
  int32_t type;           /**< Element type of the output, a ::qdq_data_type number. */
  uint64_t element_count; /**< Elements of the output (those of `x`). */
  uint64_t size_bytes;    /**< Bytes the caller allocates for the output. */
} qdq_tensor_spec;

/** Bits of qdq_quantize_linear_attributes::present and qdq_dequantize_linear_attributes::present:
    which attributes are set. An attribute whose bit is clear takes ONNX's default. */
enum qdq_attribute_bits {
  QDQ_ATTRIBUTE_AXIS = 1u << 0,         /**< `axis` is set. */
  QDQ_ATTRIBUTE_SATURATE = 1u << 1,     /**< `saturate` is set (QuantizeLinear only). */
  QDQ_ATTRIBUTE_BLOCK_SIZE = 1u << 2,   /**< `block_size` is set. */
  QDQ_ATTRIBUTE_OUTPUT_DTYPE = 1u << 3, /**< `output_dtype` is set. */
  QDQ_ATTRIBUTE_PRECISION = 1u << 4     /**< `precision` is set (QuantizeLinear only). */
};

/**
 * QuantizeLinear's attributes. `opset` is the model's ai.onnx opset (>= 10); qdq runs the operator
 * version it selects (10, 13, 19, 21, 23, 24 or 25). An attribute is set by storing its value and
 * its bit in `present`; one set that the version does not define is an error (e.g. `axis` at opset
 * 10). A struct that is all zeros except `struct_size` and `opset` means every attribute at its default.
 */
typedef struct qdq_quantize_linear_attributes {
  size_t struct_size;   /**< sizeof(qdq_quantize_linear_attributes). */
  int64_t opset;        /**< The model's ai.onnx opset (>= 10); qdq_*_init sets 25. */
  uint64_t present;     /**< ::qdq_attribute_bits of the attributes that are set. */
  int64_t axis;         /**< default 1; negative counts from the back (v13+). */
  int64_t saturate;     /**< default 1; float8 outputs only (v19+). */
  int64_t block_size;   /**< default 0 = not blocked (v21+). */
  int64_t output_dtype; /**< default 0 = from the zero point, else UINT8 (v21+). */
  int64_t precision;    /**< default 0 = the type of y_scale (v23+). */
} qdq_quantize_linear_attributes;

/** DequantizeLinear's attributes; the same conventions as ::qdq_quantize_linear_attributes. */
typedef struct qdq_dequantize_linear_attributes {
  size_t struct_size;   /**< sizeof(qdq_dequantize_linear_attributes). */
  int64_t opset;        /**< The model's ai.onnx opset (>= 10); qdq_*_init sets 25. */
  uint64_t present;     /**< ::qdq_attribute_bits of the attributes that are set. */
  int64_t axis;         /**< default 1 (v13+). */
  int64_t block_size;   /**< default 0 (v21+). */
  int64_t output_dtype; /**< default 0 = the type of x_scale (v23+). */
} qdq_dequantize_linear_attributes;

/** One task of a parallel-for: qdq's function that the hook calls with `task_context` and each task
    number. It never fails and returns nothing; errors are reported by the qdq call that started it. */
typedef void (*qdq_task_function)(void* task_context, size_t task);

/**
 * A caller's parallel-for: call `task_function(task_context, task)` exactly once for every task in
 * [0, tasks), in any order and on any threads, and return when all have returned. qdq's results
 * never depend on how the tasks are spread. `user_data` is qdq_execution_options::parallel_for_user_data.
 */
typedef void (*qdq_parallel_for_function)(void* user_data, size_t tasks, qdq_task_function task_function,
                                          void* task_context);

/** How a call runs. Passing NULL instead means qdq_execution_options_init()'s defaults. */
typedef struct qdq_execution_options {
  size_t struct_size; /**< sizeof(qdq_execution_options). */
  /** Threads to use: 0 = the process default (qdq_set_default_num_threads(), else QDQ_NUM_THREADS,
      read once per process, else the hardware threads); 1 = the calling thread only. Not used with
      `parallel_for`. */
  int32_t num_threads;
  /** Nonzero: use the scalar reference kernels even where a vectorised one exists (also
      QDQ_FORCE_SCALAR=1 in the environment, read once per process). */
  int32_t force_scalar;
  /** If not NULL, qdq hands its tasks (fixed-size pieces of the tensor) to this instead of its own
      thread pool; a call small enough for one task runs on the calling thread without it. */
  qdq_parallel_for_function parallel_for;
  /** Passed to `parallel_for` as its first argument. */
  void* parallel_for_user_data;
} qdq_execution_options;

/** Sets every field of `attributes` to its default: struct_size, opset 25, no attribute set.
    Does nothing if `attributes` is NULL. No allocation; thread-safe. */
QDQ_C_API void qdq_quantize_linear_attributes_init(qdq_quantize_linear_attributes* attributes);

/** Sets every field of `attributes` to its default: struct_size, opset 25, no attribute set.
    Does nothing if `attributes` is NULL. No allocation; thread-safe. */
QDQ_C_API void qdq_dequantize_linear_attributes_init(qdq_dequantize_linear_attributes* attributes);

/** Sets `options` to the defaults (struct_size, process-default threads, qdq's own pool). Does
    nothing if `options` is NULL. No allocation; thread-safe. */
QDQ_C_API void qdq_execution_options_init(qdq_execution_options* options);

/** The message of the last call on this thread that failed, naming the function and the problem;
    "" after a call that succeeded. Valid until the next qdq call on this thread. Never NULL. */
QDQ_C_API const char* qdq_last_error_message(void);

/** The name of a status ("QDQ_ERROR_INVALID_ARGUMENT"); "unknown qdq_status" for other values.
    A static string; thread-safe. */
QDQ_C_API const char* qdq_status_name(int32_t status);

/** The library's version, "MAJOR.MINOR.PATCH": a static string. Thread-safe. */
QDQ_C_API const char* qdq_version(void);

/** The library's version as one number, MAJOR * 10000 + MINOR * 100 + PATCH. Thread-safe. */
QDQ_C_API uint32_t qdq_version_number(void);

/** Sets the process-wide thread count used when qdq_execution_options::num_threads is 0; 0 (or a
    negative value) restores the QDQ_NUM_THREADS / hardware default. Thread-safe. */
QDQ_C_API void qdq_set_default_num_threads(int32_t threads);

/** The thread count a call with num_threads = 0 would use now. Thread-safe. */
QDQ_C_API int32_t qdq_default_num_threads(void);

/** ONNX's upper-case name of a type ("FLOAT8E4M3FN"); NULL for a number ONNX does not define.
    A static string; thread-safe. */
QDQ_C_API const char* qdq_data_type_name(int32_t type);

/** Storage bits of one element of `type`: 2, 4, 8, 16, 32 or 64; 0 for STRING, UNDEFINED and
    unknown numbers. Thread-safe. */
QDQ_C_API int32_t qdq_bit_width(int32_t type);

/** The kind of `type`'s codes, a ::qdq_type_kind number; QDQ_TYPE_KIND_OTHER for unknown numbers.
    Thread-safe. */
QDQ_C_API int32_t qdq_data_type_kind(int32_t type);

/** 1 if `type` has negative values (the INT types, every float type except FLOAT8E8M0, COMPLEX*),
    else 0 (also for unknown numbers). Thread-safe. */
QDQ_C_API int32_t qdq_is_signed_type(int32_t type);

/** 1 if `code`, an element's bit pattern (bits above the type's width ignored), is a NaN of `type`,
    else 0 (integers, FLOAT4E2M1 and unknown numbers have none). Thread-safe. */
QDQ_C_API int32_t qdq_is_nan_code(int32_t type, uint64_t code);

/** Stores in `*bytes` how many bytes `elements` elements of `type` occupy in ONNX's layout (sub-byte
    types packed, the last byte padded). Fails for a type without a fixed size or on overflow.
    No allocation beyond an error message; thread-safe. */
QDQ_C_API qdq_status qdq_storage_bytes(int32_t type, uint64_t elements, uint64_t* bytes);

/** Stores in `*version` the QuantizeLinear/DequantizeLinear version (10, 13, 19, 21, 23, 24, 25)
    that a model's opset selects; fails for an opset below 10. Thread-safe. */
QDQ_C_API qdq_status qdq_quantize_linear_version(int64_t opset, int32_t* version);

/** Validates a QuantizeLinear node and stores its output's type, element count and byte size in
    `*spec`. `y_zero_point` may be NULL (absent). Allocates only a few small temporaries;
    single-threaded. */
QDQ_C_API qdq_status qdq_quantize_linear_output(const qdq_quantize_linear_attributes* attributes, const qdq_tensor* x,
                                                const qdq_tensor* y_scale, const qdq_tensor* y_zero_point,
                                                qdq_tensor_spec* spec);

/** Computes QuantizeLinear: y = saturate(round_half_even(x / y_scale) + y_zero_point), per-tensor,
    per-axis or blocked as the scale's shape says. `y` must match qdq_quantize_linear_output exactly
    (type, shape, byte size). Validates everything before writing; on error leaves `y` untouched.
    `options` may be NULL. Allocates nothing proportional to the tensor; threads as `options` say,
    with results independent of the thread count. */
QDQ_C_API qdq_status qdq_quantize_linear(const qdq_quantize_linear_attributes* attributes, const qdq_tensor* x,
                                         const qdq_tensor* y_scale, const qdq_tensor* y_zero_point,
                                         const qdq_mutable_tensor* y, const qdq_execution_options* options);

/** Validates a DequantizeLinear node and stores its output's type, element count and byte size in
    `*spec`. `x_zero_point` may be NULL (absent). Allocates only a few small temporaries;
    single-threaded. */
QDQ_C_API qdq_status qdq_dequantize_linear_output(const qdq_dequantize_linear_attributes* attributes,
                                                  const qdq_tensor* x, const qdq_tensor* x_scale,
                                                  const qdq_tensor* x_zero_point, qdq_tensor_spec* spec);

/** Computes DequantizeLinear: y = (x - x_zero_point) * x_scale, the difference exact, the product in
    float32 and rounded once to the output type. The same validation, allocation and threading
    contract as qdq_quantize_linear. */
QDQ_C_API qdq_status qdq_dequantize_linear(const qdq_dequantize_linear_attributes* attributes, const qdq_tensor* x,
                                           const qdq_tensor* x_scale, const qdq_tensor* x_zero_point,
                                           const qdq_mutable_tensor* y, const qdq_execution_options* options);

/** Computes DynamicQuantizeLinear (opset >= 11): the uint8 scale and zero point covering
    [min(0, min x), max(0, max x)], stored in `*y_scale` and `*y_zero_point`, and y = QuantizeLinear(x)
    with them. `x` must be FLOAT with at least one element, `y` UINT8 of x's shape. Writes nothing on
    error. `options` may be NULL. Allocates nothing proportional to the tensor; threads as `options`
    say (two passes), deterministic for any thread count. */
QDQ_C_API qdq_status qdq_dynamic_quantize_linear(int64_t opset, const qdq_tensor* x, const qdq_mutable_tensor* y,
                                                 float* y_scale, uint8_t* y_zero_point,
                                                 const qdq_execution_options* options);

/** Calls task_function(task_context, task) once for every task in [0, tasks) on qdq's thread pool,
    the calling thread taking part (or on options->parallel_for), and returns when all have returned:
    for a caller's own work around qdq's calls, which task_function may make (each runs on its task's
    thread). `options` may be NULL. Fails only on bad arguments (task_function NULL with tasks > 0,
    bad options) or a parallel_for hook that breaks its contract. Allocates nothing; thread-safe. */
QDQ_C_API qdq_status qdq_run_tasks(size_t tasks, qdq_task_function task_function, void* task_context,
                                   const qdq_execution_options* options);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* QDQ_QDQ_H_ */
