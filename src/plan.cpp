// Validation of QuantizeLinear / DequantizeLinear calls against each operator version's rules, and
// the outer × axis × inner plan. Every rule that can fail lives here, so that kernels never see an
// invalid call and nothing is written before all checks have passed.
#include "plan.hpp"

#include "types/integer_types.hpp"
#include "types/type_traits.hpp"

#include <algorithm>
#include <sstream>
#include <string_view>

namespace qdq::detail {
namespace {

using T = DataType;

[[noreturn]] void fail(const OpName& op, const std::string& message) { throw Error(op.str() + ": " + message); }

/// The version → allowed-types table: for each role and operator version, the types of the list
/// (types/data_types.inc) whose since-column for the role is at most that version, in DataType order.
std::string type_list(TypeRole role, int version) {
  std::string out;
  for (const TypeInfo& info : kTypeInfos) {
    if (!allowed_in_role(info.type, role, version)) continue;
    if (!out.empty()) out += ", ";
    out += info.name;
  }
  return out;
}

void require_type(const OpName& op, std::string_view input, T type, TypeRole role) {
  if (!allowed_in_role(type, role, op.version)) {
    fail(op, std::string(input) + " has element type " + data_type_name(type) +
                 ", which this version does not allow (allowed: " + type_list(role, op.version) + ")");
  }
}

/// An int64 attribute value that is an ONNX DataType number (checked before any narrowing cast).
bool is_type_number(int64_t value) { return value >= 1 && value <= kLastDataType; }

/// The division types `precision` may name: the 16- and 32-bit ones (not float64, which only INT32
/// scales select).
bool is_precision_type(T t) { return is_division_type(t) && type_info(t).bits <= 32; }

/// "FLOAT (1), FLOAT16 (10) or BFLOAT16 (16)": the types `precision` may name.
std::string precision_list() {
  std::string out;
  std::string last;
  for (const TypeInfo& info : kTypeInfos) {
    if (!is_precision_type(info.type)) continue;
    if (!last.empty()) out += out.empty() ? last : ", " + last;
    last = std::string(info.name) + " (" + std::to_string(static_cast<int>(info.type)) + ")";
  }
  return out.empty() ? last : out + " or " + last;
}

/// Checks that a view's buffer holds exactly its shape's elements, in a layout the input may have
/// (kOnePerByte only where `one_per_byte_allowed`, and only for 2/4-bit types); returns the element count.
int64_t check_buffer(const OpName& op, const char* input, const TensorView& view, bool one_per_byte_allowed = false) {
  if (!is_known_data_type(static_cast<int32_t>(view.type))) {
    fail(op,
         std::string(input) + " has unknown element type number " + std::to_string(static_cast<int32_t>(view.type)));
  }
  const bool one_per_byte = view.layout == CodeLayout::kOnePerByte;
  if (!one_per_byte && view.layout != CodeLayout::kPacked) {
    fail(op, std::string(input) + " has unknown code layout number " + std::to_string(static_cast<int>(view.layout)));
  }
  if (one_per_byte && !one_per_byte_allowed) {
    fail(op, std::string(input) +
                 " is given one code per byte (CodeLayout::kOnePerByte), which only x of "
                 "DequantizeLinear may be: give it packed");
  }
  if (one_per_byte && bit_width(view.type) >= 8) {
    fail(op, std::string(input) + " of type " + data_type_name(view.type) +
                 " is given one code per byte (CodeLayout::kOnePerByte), which applies only to 2/4-bit types");
  }
  uint64_t count;
  uint64_t bytes;
  try {
    count = element_count(view.shape);
    bytes = one_per_byte ? count : storage_bytes(view.type, count);
  } catch (const Error& e) {
    fail(op, std::string(input) + ": " + e.what());
  }
  if (view.size_bytes != bytes) {
    fail(op, std::string(input) + " of type " + data_type_name(view.type) + " and shape " +
                 shape_to_string(view.shape) + (one_per_byte ? ", one code per byte," : "") + " needs " +
                 std::to_string(bytes) + " bytes, but its buffer has " + std::to_string(view.size_bytes));
  }
  if (bytes != 0 && view.data == nullptr) fail(op, std::string(input) + " has a null data pointer");
  return static_cast<int64_t>(count);
}

/// The operator version a model opset selects.
int select_version(const char* op_name, int64_t opset) {
  if (opset < 10)
    throw Error(std::string(op_name) + ": opset " + std::to_string(opset) + " has no " + op_name +
                " (it starts at opset 10)");
  for (int v : {25, 24, 23, 21, 19, 13}) {
    if (opset >= v) return v;
  }
  return 10;
}

/// Rejects an attribute that the version does not define.
void check_defined(const OpName& op, const char* name, const std::optional<int64_t>& value, int version, int since) {
  if (value && version < since) {
    fail(op, "attribute '" + std::string(name) + "' is not defined before version " + std::to_string(since));
  }
}

/// Resolves the granularity from the scale's shape and builds the plan. Shared by both operators.
Plan make_plan(const OpName& op, int version, std::span<const int64_t> x_shape, const char* scale_name,
               std::span<const int64_t> scale_shape, int64_t axis_attr, int64_t block_size) {
  Plan plan;
  plan.elements = static_cast<int64_t>(element_count(x_shape));
  const int64_t rank = static_cast<int64_t>(x_shape.size());
  const auto scale_rank = static_cast<int64_t>(scale_shape.size());
  const uint64_t scale_elements = element_count(scale_shape);
  auto normalized_axis = [&]() -> int64_t {
    if (axis_attr < -rank || axis_attr >= rank) {
      fail(op, "axis " + std::to_string(axis_attr) + " is out of range [" + std::to_string(-rank) + ", " +
                   std::to_string(rank - 1) + "] for x of rank " + std::to_string(rank) + " (shape " +
                   shape_to_string(x_shape) + ")");
    }
    return axis_attr < 0 ? axis_attr + rank : axis_attr;
  };
  auto set_extents = [&](int64_t axis) {
    if (plan.elements == 0) {
      // Nothing to iterate; the other dimensions may multiply past 2^63, so leave them alone.
      plan.outer = 0;
      plan.axis_len = x_shape[axis];
      plan.inner = 0;
      return;
    }
    plan.outer = 1;
    for (int64_t k = 0; k < axis; ++k) plan.outer *= x_shape[k];
    plan.axis_len = x_shape[axis];
    plan.inner = 1;
    for (int64_t k = axis + 1; k < rank; ++k) plan.inner *= x_shape[k];
  };

  if (block_size > 0) {
    if (scale_rank != rank) {
      fail(op, std::string(scale_name) + " shape " + shape_to_string(scale_shape) + " has rank " +
                   std::to_string(scale_rank) + ", but blocked quantization (block_size " + std::to_string(block_size) +
                   ") needs the rank of x, " + std::to_string(rank) + " (x shape " + shape_to_string(x_shape) + ")");
    }
    const int64_t axis = normalized_axis();
    std::vector<int64_t> expected(x_shape.begin(), x_shape.end());
    expected[axis] = x_shape[axis] / block_size + (x_shape[axis] % block_size != 0 ? 1 : 0);  // ceil, no overflow
    if (!std::equal(expected.begin(), expected.end(), scale_shape.begin(), scale_shape.end())) {
      fail(op, std::string(scale_name) + " shape " + shape_to_string(scale_shape) +
                   " does not match the blocked shape " + shape_to_string(expected) + " for axis " +
                   std::to_string(axis) + ", block_size " + std::to_string(block_size) + " (x shape " +
                   shape_to_string(x_shape) + "; the scale's length along the axis must be ceil(" +
                   std::to_string(x_shape[axis]) + "/" + std::to_string(block_size) + "))");
    }
    set_extents(axis);
    plan.granularity = Granularity::kBlocked;
    plan.block = block_size;
    plan.param_inner_stride = 1;
    plan.param_axis_stride = plan.inner;
    plan.param_outer_stride = expected[axis] * plan.inner;
    return plan;
  }

  if (scale_rank <= 1 && scale_elements == 1) {
    // One element: per-tensor, whatever `axis` says (ONNX Runtime and the reference accept this).
    plan.granularity = Granularity::kPerTensor;
    plan.outer = 1;
    plan.axis_len = 1;
    plan.inner = plan.elements;
    return plan;
  }
  if (scale_rank == 1) {
    if (version < 13) {
      fail(op, std::string(scale_name) + " must be a scalar at this version (per-tensor only), but has shape " +
                   shape_to_string(scale_shape));
    }
    const int64_t axis = normalized_axis();
    if (scale_shape[0] != x_shape[axis]) {
      fail(op, std::string(scale_name) + " shape " + shape_to_string(scale_shape) + " does not match x's dimension " +
                   std::to_string(x_shape[axis]) + " along axis " + std::to_string(axis) + " (x shape " +
                   shape_to_string(x_shape) + "; a per-axis scale has one element per index of the axis)");
    }
    set_extents(axis);
    plan.granularity = Granularity::kPerAxis;
    plan.param_axis_stride = 1;
    return plan;
  }
  if (version < 21) {
    fail(op, std::string(scale_name) + " must be a scalar or 1-D at this version, but has shape " +
                 shape_to_string(scale_shape));
  }
  fail(op, std::string(scale_name) + " has shape " + shape_to_string(scale_shape) +
               ": a scale of rank >= 2 needs block_size > 0 (blocked quantization); without it the scale must be a "
               "scalar or 1-D");
}

/// The zero point must have the scale's shape, except that any one-element (rank 0 or 1) zero point
/// matches a one-element (rank 0 or 1) scale.
void check_zero_point_shape(const OpName& op, const char* zp_name, std::span<const int64_t> zp_shape,
                            const char* scale_name, std::span<const int64_t> scale_shape) {
  if (std::equal(zp_shape.begin(), zp_shape.end(), scale_shape.begin(), scale_shape.end())) return;
  const bool zp_single = zp_shape.size() <= 1 && element_count(zp_shape) == 1;
  const bool scale_single = scale_shape.size() <= 1 && element_count(scale_shape) == 1;
  if (zp_single && scale_single) return;
  fail(op, std::string(zp_name) + " shape " + shape_to_string(zp_shape) + " does not match " + scale_name + " shape " +
               shape_to_string(scale_shape) + " (a zero point must have the scale's shape)");
}

int64_t check_block_size(const OpName& op, const std::optional<int64_t>& block_size) {
  const int64_t b = block_size.value_or(0);
  if (b < 0) fail(op, "block_size " + std::to_string(b) + " is negative (0 = not blocked, > 0 = block length)");
  return b;
}

}  // namespace

Segment segment_at(const Plan& plan, int64_t first, int64_t limit) {
  switch (plan.granularity) {
    case Granularity::kPerTensor: return {limit - first, 0, 0};
    case Granularity::kPerAxis: {
      const int64_t i = (first / plan.inner) % plan.axis_len;
      if (plan.inner == 1) {
        // Axis last: a whole row shares consecutive scales.
        return {std::min(limit - first, plan.axis_len - i), i, 1};
      }
      return {std::min(limit - first, plan.inner - first % plan.inner), i, 0};
    }
    case Granularity::kBlocked: {
      const int64_t n = first % plan.inner;
      const int64_t row = first / plan.inner;  // o·axis_len + i
      const int64_t i = row % plan.axis_len;
      const int64_t o = row / plan.axis_len;
      const int64_t base = o * plan.param_outer_stride + (i / plan.block) * plan.param_axis_stride;
      if (plan.inner == 1) {
        // Axis last: a block of consecutive elements shares one scale.
        const int64_t block_end = std::min((i / plan.block + 1) * plan.block, plan.axis_len);
        return {std::min(limit - first, block_end - i), base, 0};
      }
      return {std::min(limit - first, plan.inner - n), base + n, 1};
    }
  }
  return {limit - first, 0, 0};
}

std::string OpName::str() const { return std::string(name) + "-" + std::to_string(version); }

void check_output(const OpName& op, const MutableTensorView& y, DataType type, std::span<const int64_t> shape,
                  uint64_t bytes) {
  if (y.type != type)
    fail(op, "output y has element type " + data_type_name(y.type) + ", expected " + data_type_name(type));
  if (!std::equal(y.shape.begin(), y.shape.end(), shape.begin(), shape.end())) {
    fail(op, "output y has shape " + shape_to_string(y.shape) + ", expected x's shape " + shape_to_string(shape));
  }
  const bool one_per_byte = y.layout == CodeLayout::kOnePerByte;
  if (!one_per_byte && y.layout != CodeLayout::kPacked) {
    fail(op, "output y has unknown code layout number " + std::to_string(static_cast<int>(y.layout)));
  }
  if (one_per_byte) {
    // One value per byte: QuantizeLinear's 2/4-bit integer outputs only (8-bit kernels, then clamped).
    if (std::string_view(op.name) != "QuantizeLinear" || !is_quantized_integer(type) || bit_width(type) >= 8) {
      fail(op, "output y of type " + data_type_name(type) +
                   " cannot be written one value per byte (CodeLayout::kOnePerByte): only QuantizeLinear's "
                   "INT4, UINT4, INT2 and UINT2 outputs can");
    }
    bytes = static_cast<uint64_t>(element_count(shape));
  }
  if (y.size_bytes != bytes) {
    fail(op, "output y buffer has " + std::to_string(y.size_bytes) + " bytes, expected " + std::to_string(bytes) +
                 (one_per_byte ? " (one value per byte)" : ""));
  }
  if (bytes != 0 && y.data == nullptr) fail(op, "output y has a null data pointer");
}

QuantizeCall plan_quantize(const QuantizeLinearAttributes& a, const TensorView& x, const TensorView& y_scale,
                           const TensorView* y_zero_point) {
  QuantizeCall call;
  call.version = select_version("QuantizeLinear", a.opset);
  const int v = call.version;
  const OpName op{"QuantizeLinear", v};

  check_defined(op, "axis", a.axis, v, 13);
  check_defined(op, "saturate", a.saturate, v, 19);
  check_defined(op, "block_size", a.block_size, v, 21);
  check_defined(op, "output_dtype", a.output_dtype, v, 21);
  check_defined(op, "precision", a.precision, v, 23);

  check_buffer(op, "x", x);
  check_buffer(op, "y_scale", y_scale);
  if (y_zero_point) check_buffer(op, "y_zero_point", *y_zero_point);

  // Input types.
  require_type(op, "x", x.type, TypeRole::kQuantizeX);
  if (v >= 19 && v < 23) {
    if (y_scale.type != x.type) {
      fail(op, "y_scale has element type " + data_type_name(y_scale.type) + " but x has " + data_type_name(x.type) +
                   "; before version 23 they must be the same type");
    }
  } else {
    require_type(op, "y_scale", y_scale.type, TypeRole::kQuantizeScale);
  }

  // Output type: the zero point's type, else output_dtype, else UINT8.
  const int64_t output_dtype = a.output_dtype.value_or(0);
  if (output_dtype != 0 && !is_type_number(output_dtype)) {
    fail(op, "output_dtype " + std::to_string(output_dtype) + " is not an ONNX element type");
  }
  if (y_zero_point) {
    call.y_type = y_zero_point->type;
    if (output_dtype != 0 && static_cast<T>(output_dtype) != y_zero_point->type) {
      fail(op, "output_dtype " + data_type_name(static_cast<T>(output_dtype)) +
                   " does not match y_zero_point's element type " + data_type_name(y_zero_point->type));
    }
  } else {
    call.y_type = output_dtype != 0 ? static_cast<T>(output_dtype) : T::kUint8;
  }
  // The name of the output type's source, built only when the check fails.
  if (!allowed_in_role(call.y_type, TypeRole::kQuantizeY, v)) {
    const std::string output_name = y_zero_point ? std::string("y_zero_point")
                                    : output_dtype != 0
                                        ? "output type y (from output_dtype " + std::to_string(output_dtype) + ")"
                                        : std::string("output type y (default)");
    require_type(op, output_name, call.y_type, TypeRole::kQuantizeY);
  }

  // Division type: `precision`, else the scale's type (float32 for e8m0, float64 for int32).
  const int64_t precision = a.precision.value_or(0);
  if (precision != 0) {
    const auto p = is_type_number(precision) ? static_cast<T>(precision) : T::kUndefined;
    if (!is_precision_type(p)) {
      fail(op, "precision " + std::to_string(precision) + " is not supported: the division can be done in " +
                   precision_list());
    }
    call.division_type = p;
  } else if (y_scale.type == T::kInt32) {
    call.division_type = T::kDouble;
  } else if (y_scale.type == T::kFloat8E8M0) {
    call.division_type = T::kFloat;
  } else {
    call.division_type = y_scale.type;
  }

  call.saturate = a.saturate.value_or(1) != 0;
  const int64_t block_size = check_block_size(op, a.block_size);
  call.plan = make_plan(op, v, x.shape, "y_scale", y_scale.shape, a.axis.value_or(1), block_size);
  if (y_zero_point) {
    check_zero_point_shape(op, "y_zero_point", y_zero_point->shape, "y_scale", y_scale.shape);
    // A float8 zero point only selects the output type: its value is never added.
    if (!is_float8(y_zero_point->type)) {
      call.zero_point_type = y_zero_point->type;
      call.zero_point = y_zero_point->data;
    }
  }
  call.x_type = x.type;
  call.scale_type = y_scale.type;
  call.x = x.data;
  call.scale = y_scale.data;
  call.y_shape = x.shape;
  call.y_bytes = storage_bytes(call.y_type, static_cast<uint64_t>(call.plan.elements));
  return call;
}

DequantizeCall plan_dequantize(const DequantizeLinearAttributes& a, const TensorView& x, const TensorView& x_scale,
                               const TensorView* x_zero_point) {
  DequantizeCall call;
  call.version = select_version("DequantizeLinear", a.opset);
  const int v = call.version;
  const OpName op{"DequantizeLinear", v};

  check_defined(op, "axis", a.axis, v, 13);
  check_defined(op, "block_size", a.block_size, v, 21);
  check_defined(op, "output_dtype", a.output_dtype, v, 23);

  check_buffer(op, "x", x, /*one_per_byte_allowed=*/true);
  check_buffer(op, "x_scale", x_scale);
  if (x_zero_point) check_buffer(op, "x_zero_point", *x_zero_point);

  require_type(op, "x", x.type, TypeRole::kDequantizeX);
  require_type(op, "x_scale", x_scale.type, TypeRole::kDequantizeScale);

  // Output type.
  const int64_t output_dtype = a.output_dtype.value_or(0);
  if (v < 19) {
    call.y_type = T::kFloat;
  } else if (output_dtype != 0) {
    const auto t = is_type_number(output_dtype) ? static_cast<T>(output_dtype) : T::kUndefined;
    if (!allowed_in_role(t, TypeRole::kDequantizeY, v)) {
      const std::string name = t == T::kUndefined ? "not an ONNX element type" : data_type_name(t);
      fail(op, "output_dtype " + std::to_string(output_dtype) + " (" + name + ") is not allowed: y must be one of " +
                   type_list(TypeRole::kDequantizeY, v));
    }
    call.y_type = t;
  } else if (x_scale.type == T::kFloat8E8M0) {
    fail(op,
         "x_scale is FLOAT8E8M0, so output_dtype must be given (FLOAT, FLOAT16 or BFLOAT16): y cannot be FLOAT8E8M0");
  } else {
    call.y_type = x_scale.type;
  }

  const int64_t block_size = check_block_size(op, a.block_size);
  call.plan = make_plan(op, v, x.shape, "x_scale", x_scale.shape, a.axis.value_or(1), block_size);

  if (x_zero_point) {
    if (x_zero_point->type != x.type) {
      fail(op, "x_zero_point has element type " + data_type_name(x_zero_point->type) + " but x has " +
                   data_type_name(x.type) + "; they must be the same type");
    }
    check_zero_point_shape(op, "x_zero_point", x_zero_point->shape, "x_scale", x_scale.shape);
    if (is_float8(x.type)) {
      // A float8 zero point must be zero (±0; FNUZ types have only 0x00) and is not used.
      const auto* codes = static_cast<const uint8_t*>(x_zero_point->data);
      const bool fnuz = !type_info(x.type).negative_zero;
      for (size_t i = 0; i < x_zero_point->size_bytes; ++i) {
        if (codes[i] != 0 && (fnuz || codes[i] != 0x80)) {
          std::ostringstream code;
          code << "0x" << std::hex << std::uppercase << static_cast<int>(codes[i]);
          fail(op, "x_zero_point of type " + data_type_name(x.type) + " must be zero, but element " +
                       std::to_string(i) + " has code " + code.str());
        }
      }
    } else {
      call.zero_point_type = x_zero_point->type;
      call.zero_point = x_zero_point->data;
    }
  }
  call.x_type = x.type;
  call.scale_type = x_scale.type;
  call.x = x.data;
  call.x_one_per_byte = x.layout == CodeLayout::kOnePerByte;
  call.scale = x_scale.data;
  call.y_shape = x.shape;
  call.y_bytes = storage_bytes(call.y_type, static_cast<uint64_t>(call.plan.elements));
  return call;
}

}  // namespace qdq::detail
