// The C API (include/qdq/qdq.h): a thin layer over the C++ API. Every entry point checks the
// pointers and struct sizes that C++ cannot see, converts to the C++ views, and catches every
// exception at the boundary, turning it into a status and this thread's last-error message.
#include <array>
#include <atomic>
#include <cstring>
#include <exception>
#include <functional>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "qdq/qdq.h"
#include "qdq/qdq.hpp"
#include "types/type_traits.hpp"

namespace {

using qdq::DataType;

// The C enum is ONNX's numbering, and so is the C++ one: one check per line of the type list.
static_assert(QDQ_TYPE_UNDEFINED == static_cast<int>(DataType::kUndefined));
#define QDQ_DATA_TYPE(E, NAME, ...) static_assert(QDQ_TYPE_##NAME == static_cast<int>(DataType::E));
#include "types/data_types.inc"
#undef QDQ_DATA_TYPE
constexpr int kLastType = qdq::detail::kLastDataType;

// The C name of each kind; no default, so that -Wswitch asks for the C name of a new kind.
constexpr qdq_type_kind c_type_kind(qdq::TypeKind kind) {
  switch (kind) {
    case qdq::TypeKind::kOther: return QDQ_TYPE_KIND_OTHER;
    case qdq::TypeKind::kInteger: return QDQ_TYPE_KIND_INTEGER;
    case qdq::TypeKind::kFloat: return QDQ_TYPE_KIND_FLOAT;
    case qdq::TypeKind::kMiniFloat: return QDQ_TYPE_KIND_MINIFLOAT;
    case qdq::TypeKind::kExponent: return QDQ_TYPE_KIND_EXPONENT;
  }
  return QDQ_TYPE_KIND_OTHER;
}
static_assert(c_type_kind(qdq::TypeKind::kExponent) == static_cast<int>(qdq::TypeKind::kExponent) &&
                  c_type_kind(qdq::TypeKind::kMiniFloat) == static_cast<int>(qdq::TypeKind::kMiniFloat) &&
                  c_type_kind(qdq::TypeKind::kFloat) == static_cast<int>(qdq::TypeKind::kFloat) &&
                  c_type_kind(qdq::TypeKind::kInteger) == static_cast<int>(qdq::TypeKind::kInteger),
              "qdq_type_kind numbers its kinds as qdq::TypeKind does");

constexpr uint64_t kQuantizeAttributeBits = QDQ_ATTRIBUTE_AXIS | QDQ_ATTRIBUTE_SATURATE | QDQ_ATTRIBUTE_BLOCK_SIZE |
                                            QDQ_ATTRIBUTE_OUTPUT_DTYPE | QDQ_ATTRIBUTE_PRECISION;
constexpr uint64_t kDequantizeAttributeBits =
    QDQ_ATTRIBUTE_AXIS | QDQ_ATTRIBUTE_BLOCK_SIZE | QDQ_ATTRIBUTE_OUTPUT_DTYPE;

// A struct_size beyond this is not a size of any version of qdq's structs but an unset field; reading
// that far would run off the caller's struct.
constexpr size_t kMaxStructSize = 4096;

// The last error on this thread. The string keeps its capacity between errors; `t_message` points
// at it, at "" after a success, or at a static text when even the message could not be allocated.
thread_local std::string t_message_text;
thread_local const char* t_message = "";

// A failure of the caller's parallel-for hook rather than of the arguments.
class HookError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

qdq_status record(qdq_status status, const char* function, const char* what) noexcept {
  try {
    t_message_text.assign(function).append(": ").append(what);
    t_message = t_message_text.c_str();
  } catch (...) {
    t_message = "qdq: out of memory while recording an error message";
  }
  return status;
}

// Runs `body`, mapping every exception to a status and message that name `function`.
template <class Body>
qdq_status guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    t_message = "";
    return QDQ_OK;
  } catch (const qdq::Error& e) {
    return record(QDQ_ERROR_INVALID_ARGUMENT, function, e.what());
  } catch (const std::bad_alloc&) {
    return record(QDQ_ERROR_OUT_OF_MEMORY, function, "out of memory");
  } catch (const std::exception& e) {
    return record(QDQ_ERROR_INTERNAL, function, e.what());
  } catch (...) {
    return record(QDQ_ERROR_INTERNAL, function, "an exception that is not a std::exception");
  }
}

[[noreturn]] void invalid(const std::string& what) { throw qdq::Error(what); }

void require_not_null(const void* pointer, const char* name) {
  if (pointer == nullptr) invalid(std::string(name) + " is NULL");
}

// Whether the bytes of a caller's struct beyond this library's version of it are read as fields that
// must be unset (an input), or are left alone (an output that qdq fills in).
enum class Direction { kInput, kOutput };

// A copy of a caller's versioned struct. Fields a newer header added beyond what this library knows
// must be zero (unset) in an input; an older, shorter struct is not yet possible, every field being
// version 1.
template <class Struct>
Struct read_struct(const Struct* caller, const char* name, const char* type_name,
                   Direction direction = Direction::kInput) {
  require_not_null(caller, name);
  const size_t size = caller->struct_size;
  if (size < sizeof(Struct) || size > kMaxStructSize) {
    invalid(std::string(name) + "->struct_size is " + std::to_string(size) + ", but must be sizeof(" + type_name +
            ") = " + std::to_string(sizeof(Struct)) + " (" + type_name + "_init sets it)");
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(caller);
  for (size_t i = sizeof(Struct); direction == Direction::kInput && i < size; ++i) {
    if (bytes[i] != 0) {
      invalid(std::string(name) + " sets fields that this version of qdq (" + std::string(qdq::version()) +
              ") does not know: byte " + std::to_string(i) + " of its " + std::to_string(size) + " is not zero");
    }
  }
  Struct copy;
  std::memcpy(&copy, caller, sizeof(Struct));
  return copy;
}

void check_present(uint64_t present, uint64_t allowed, const char* name, const char* op) {
  if ((present & ~allowed) != 0) {
    invalid(std::string(name) + "->present has bits " + std::to_string(present & ~allowed) + " that are no " + op +
            " attribute (allowed: the QDQ_ATTRIBUTE_* bits " + std::to_string(allowed) + ")");
  }
}

std::optional<int64_t> attribute(uint64_t present, uint64_t bit, int64_t value) {
  return (present & bit) != 0 ? std::optional<int64_t>(value) : std::nullopt;
}

qdq::QuantizeLinearAttributes quantize_attributes(const qdq_quantize_linear_attributes* caller) {
  const auto a = read_struct(caller, "attributes", "qdq_quantize_linear_attributes");
  check_present(a.present, kQuantizeAttributeBits, "attributes", "QuantizeLinear");
  qdq::QuantizeLinearAttributes out;
  out.opset = a.opset;
  out.axis = attribute(a.present, QDQ_ATTRIBUTE_AXIS, a.axis);
  out.saturate = attribute(a.present, QDQ_ATTRIBUTE_SATURATE, a.saturate);
  out.block_size = attribute(a.present, QDQ_ATTRIBUTE_BLOCK_SIZE, a.block_size);
  out.output_dtype = attribute(a.present, QDQ_ATTRIBUTE_OUTPUT_DTYPE, a.output_dtype);
  out.precision = attribute(a.present, QDQ_ATTRIBUTE_PRECISION, a.precision);
  return out;
}

qdq::DequantizeLinearAttributes dequantize_attributes(const qdq_dequantize_linear_attributes* caller) {
  const auto a = read_struct(caller, "attributes", "qdq_dequantize_linear_attributes");
  check_present(a.present, kDequantizeAttributeBits, "attributes", "DequantizeLinear");
  qdq::DequantizeLinearAttributes out;
  out.opset = a.opset;
  out.axis = attribute(a.present, QDQ_ATTRIBUTE_AXIS, a.axis);
  out.block_size = attribute(a.present, QDQ_ATTRIBUTE_BLOCK_SIZE, a.block_size);
  out.output_dtype = attribute(a.present, QDQ_ATTRIBUTE_OUTPUT_DTYPE, a.output_dtype);
  return out;
}

std::span<const int64_t> shape_of(size_t rank, const int64_t* shape, const char* name) {
  if (rank > 0 && shape == nullptr)
    invalid(std::string(name) + " has rank " + std::to_string(rank) + " but a NULL shape");
  return rank == 0 ? std::span<const int64_t>() : std::span<const int64_t>(shape, rank);
}

// The C++ library checks the type number, the byte size against type and shape, and the data pointer.
qdq::TensorView view_of(const qdq_tensor* t, const char* name) {
  require_not_null(t, name);
  return {static_cast<DataType>(t->type), shape_of(t->rank, t->shape, name), t->data, t->size_bytes};
}

qdq::MutableTensorView view_of(const qdq_mutable_tensor* t, const char* name) {
  require_not_null(t, name);
  return {static_cast<DataType>(t->type), shape_of(t->rank, t->shape, name), t->data, t->size_bytes};
}

// One call's tasks handed to the caller's hook. qdq_task_function cannot throw into the caller's C
// code, so the first exception of a task is kept here and rethrown once the hook has returned.
struct HookedTasks {
  const std::function<void(size_t)>* body;
  size_t tasks;
  std::atomic<size_t> finished{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error = nullptr;

  void fail(std::exception_ptr e) noexcept {
    if (!failed.exchange(true)) error = std::move(e);
  }
};

void run_hooked_task(void* context, size_t task) noexcept {
  auto& run = *static_cast<HookedTasks*>(context);
  try {
    if (task >= run.tasks) {
      throw HookError("the parallel_for hook ran task " + std::to_string(task) + ", but there are only " +
                      std::to_string(run.tasks) + " tasks");
    }
    // After a failure the call's result is an error anyway: skip the rest of the work.
    if (!run.failed.load(std::memory_order_relaxed)) (*run.body)(task);
    run.finished.fetch_add(1, std::memory_order_relaxed);
  } catch (...) {
    run.fail(std::current_exception());
  }
}

qdq::ExecutionOptions execution_options(const qdq_execution_options* caller) {
  qdq::ExecutionOptions out;
  if (caller == nullptr) return out;
  const auto o = read_struct(caller, "options", "qdq_execution_options");
  if (o.num_threads < 0) invalid("options->num_threads is " + std::to_string(o.num_threads) + ", but must be >= 0");
  out.num_threads = o.num_threads;
  out.force_scalar = o.force_scalar != 0;
  if (o.parallel_for != nullptr) {
    out.parallel_for = [hook = o.parallel_for, user_data = o.parallel_for_user_data](
                           size_t tasks, const std::function<void(size_t)>& body) {
      HookedTasks run{&body, tasks};
      hook(user_data, tasks, &run_hooked_task, &run);
      // The hook has returned after every task it ran: their writes to `run` happen before this.
      if (run.error) std::rethrow_exception(run.error);
      const size_t finished = run.finished.load(std::memory_order_relaxed);
      if (finished != tasks) {
        throw HookError("the parallel_for hook returned after running " + std::to_string(finished) + " of " +
                        std::to_string(tasks) + " tasks; it must run every task once before returning");
      }
    };
  }
  return out;
}

void write_spec(const qdq::TensorSpec& spec, qdq_tensor_spec* out) {
  qdq_tensor_spec result = read_struct(out, "spec", "qdq_tensor_spec", Direction::kOutput);
  result.type = static_cast<int32_t>(spec.type);
  result.element_count = qdq::element_count(spec.shape);
  result.size_bytes = spec.size_bytes;
  std::memcpy(out, &result, sizeof result);
}

}  // namespace

extern "C" {

void qdq_quantize_linear_attributes_init(qdq_quantize_linear_attributes* attributes) {
  if (attributes == nullptr) return;
  *attributes = qdq_quantize_linear_attributes{};
  attributes->struct_size = sizeof *attributes;
  attributes->opset = qdq::QuantizeLinearAttributes{}.opset;
}

void qdq_dequantize_linear_attributes_init(qdq_dequantize_linear_attributes* attributes) {
  if (attributes == nullptr) return;
  *attributes = qdq_dequantize_linear_attributes{};
  attributes->struct_size = sizeof *attributes;
  attributes->opset = qdq::DequantizeLinearAttributes{}.opset;
}

void qdq_execution_options_init(qdq_execution_options* options) {
  if (options == nullptr) return;
  *options = qdq_execution_options{};
  options->struct_size = sizeof *options;
}

const char* qdq_last_error_message(void) { return t_message; }

// An int32_t, not qdq_status: a C caller may pass any number, which in C++ would be outside the
// enum's range (undefined behaviour).
const char* qdq_status_name(int32_t status) {
  switch (status) {
    case QDQ_OK: return "QDQ_OK";
    case QDQ_ERROR_INVALID_ARGUMENT: return "QDQ_ERROR_INVALID_ARGUMENT";
    case QDQ_ERROR_OUT_OF_MEMORY: return "QDQ_ERROR_OUT_OF_MEMORY";
    case QDQ_ERROR_INTERNAL: return "QDQ_ERROR_INTERNAL";
  }
  return "unknown qdq_status";
}

const char* qdq_version(void) {
  // version() views a string literal, so it is NUL-terminated.
  return qdq::version().data();
}

uint32_t qdq_version_number(void) { return QDQ_VERSION_MAJOR * 10000u + QDQ_VERSION_MINOR * 100u + QDQ_VERSION_PATCH; }

void qdq_set_default_num_threads(int32_t threads) { qdq::set_default_num_threads(threads); }

int32_t qdq_default_num_threads(void) { return qdq::default_num_threads(); }

const char* qdq_data_type_name(int32_t type) {
  if (type < 0 || type > kLastType) return nullptr;
  try {
    static const std::array<std::string, kLastType + 1> names = [] {
      std::array<std::string, kLastType + 1> out;
      for (int i = 0; i <= kLastType; ++i) out[static_cast<size_t>(i)] = qdq::data_type_name(static_cast<DataType>(i));
      return out;
    }();
    return names[static_cast<size_t>(type)].c_str();
  } catch (...) {
    return nullptr;  // the table could not be allocated; the next call tries again
  }
}

int32_t qdq_bit_width(int32_t type) {
  return qdq::is_known_data_type(type) ? qdq::bit_width(static_cast<DataType>(type)) : 0;
}

int32_t qdq_data_type_kind(int32_t type) {
  return qdq::is_known_data_type(type) ? c_type_kind(qdq::type_kind(static_cast<DataType>(type))) : QDQ_TYPE_KIND_OTHER;
}

int32_t qdq_is_signed_type(int32_t type) {
  return qdq::is_known_data_type(type) && qdq::is_signed(static_cast<DataType>(type)) ? 1 : 0;
}

int32_t qdq_is_nan_code(int32_t type, uint64_t code) {
  return qdq::is_known_data_type(type) && qdq::is_nan_code(static_cast<DataType>(type), code) ? 1 : 0;
}

qdq_status qdq_storage_bytes(int32_t type, uint64_t elements, uint64_t* bytes) {
  return guarded("qdq_storage_bytes", [&] {
    require_not_null(bytes, "bytes");
    if (!qdq::is_known_data_type(type)) invalid("unknown element type number " + std::to_string(type));
    *bytes = qdq::storage_bytes(static_cast<DataType>(type), elements);
  });
}

qdq_status qdq_quantize_linear_version(int64_t opset, int32_t* version) {
  return guarded("qdq_quantize_linear_version", [&] {
    require_not_null(version, "version");
    *version = qdq::quantize_linear_version(opset);
  });
}

qdq_status qdq_quantize_linear_output(const qdq_quantize_linear_attributes* attributes, const qdq_tensor* x,
                                      const qdq_tensor* y_scale, const qdq_tensor* y_zero_point,
                                      qdq_tensor_spec* spec) {
  return guarded("qdq_quantize_linear_output", [&] {
    const qdq::QuantizeLinearAttributes a = quantize_attributes(attributes);
    const qdq::TensorView x_view = view_of(x, "x");
    const qdq::TensorView scale_view = view_of(y_scale, "y_scale");
    const qdq::TensorView zero_point_view = y_zero_point ? view_of(y_zero_point, "y_zero_point") : qdq::TensorView{};
    read_struct(spec, "spec", "qdq_tensor_spec", Direction::kOutput);
    write_spec(qdq::quantize_linear_output(a, x_view, scale_view, y_zero_point ? &zero_point_view : nullptr), spec);
  });
}

qdq_status qdq_quantize_linear(const qdq_quantize_linear_attributes* attributes, const qdq_tensor* x,
                               const qdq_tensor* y_scale, const qdq_tensor* y_zero_point, const qdq_mutable_tensor* y,
                               const qdq_execution_options* options) {
  return guarded("qdq_quantize_linear", [&] {
    const qdq::QuantizeLinearAttributes a = quantize_attributes(attributes);
    const qdq::TensorView x_view = view_of(x, "x");
    const qdq::TensorView scale_view = view_of(y_scale, "y_scale");
    const qdq::TensorView zero_point_view = y_zero_point ? view_of(y_zero_point, "y_zero_point") : qdq::TensorView{};
    const qdq::MutableTensorView y_view = view_of(y, "y");
    const qdq::ExecutionOptions o = execution_options(options);
    qdq::quantize_linear(a, x_view, scale_view, y_zero_point ? &zero_point_view : nullptr, y_view, o);
  });
}

qdq_status qdq_dequantize_linear_output(const qdq_dequantize_linear_attributes* attributes, const qdq_tensor* x,
                                        const qdq_tensor* x_scale, const qdq_tensor* x_zero_point,
                                        qdq_tensor_spec* spec) {
  return guarded("qdq_dequantize_linear_output", [&] {
    const qdq::DequantizeLinearAttributes a = dequantize_attributes(attributes);
    const qdq::TensorView x_view = view_of(x, "x");
    const qdq::TensorView scale_view = view_of(x_scale, "x_scale");
    const qdq::TensorView zero_point_view = x_zero_point ? view_of(x_zero_point, "x_zero_point") : qdq::TensorView{};
    read_struct(spec, "spec", "qdq_tensor_spec", Direction::kOutput);
    write_spec(qdq::dequantize_linear_output(a, x_view, scale_view, x_zero_point ? &zero_point_view : nullptr), spec);
  });
}

qdq_status qdq_dequantize_linear(const qdq_dequantize_linear_attributes* attributes, const qdq_tensor* x,
                                 const qdq_tensor* x_scale, const qdq_tensor* x_zero_point, const qdq_mutable_tensor* y,
                                 const qdq_execution_options* options) {
  return guarded("qdq_dequantize_linear", [&] {
    const qdq::DequantizeLinearAttributes a = dequantize_attributes(attributes);
    const qdq::TensorView x_view = view_of(x, "x");
    const qdq::TensorView scale_view = view_of(x_scale, "x_scale");
    const qdq::TensorView zero_point_view = x_zero_point ? view_of(x_zero_point, "x_zero_point") : qdq::TensorView{};
    const qdq::MutableTensorView y_view = view_of(y, "y");
    const qdq::ExecutionOptions o = execution_options(options);
    qdq::dequantize_linear(a, x_view, scale_view, x_zero_point ? &zero_point_view : nullptr, y_view, o);
  });
}

qdq_status qdq_dynamic_quantize_linear(int64_t opset, const qdq_tensor* x, const qdq_mutable_tensor* y, float* y_scale,
                                       uint8_t* y_zero_point, const qdq_execution_options* options) {
  return guarded("qdq_dynamic_quantize_linear", [&] {
    const qdq::TensorView x_view = view_of(x, "x");
    const qdq::MutableTensorView y_view = view_of(y, "y");
    require_not_null(y_scale, "y_scale");
    require_not_null(y_zero_point, "y_zero_point");
    const qdq::ExecutionOptions o = execution_options(options);
    const qdq::DynamicQuantizationParameters parameters = qdq::dynamic_quantize_linear(x_view, y_view, o, opset);
    *y_scale = parameters.y_scale;
    *y_zero_point = parameters.y_zero_point;
  });
}

qdq_status qdq_run_tasks(size_t tasks, qdq_task_function task_function, void* task_context,
                         const qdq_execution_options* options) {
  return guarded("qdq_run_tasks", [&] {
    if (tasks == 0) return;
    if (task_function == nullptr) invalid("task_function is NULL");
    qdq::run_tasks(
        tasks, [&](size_t task) { task_function(task_context, task); }, execution_options(options));
  });
}

}  // extern "C"
