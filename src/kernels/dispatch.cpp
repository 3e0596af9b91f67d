// Kernel selection, done once per call: the vectorised kernel for this CPU where one covers the
// call's type combination, else the scalar reference.
#include "kernels/kernels.hpp"

#include <cstring>
#include <string>
#include <string_view>

#include "kernels/prefetch_policy.hpp"
#include "kernels/simd/quotient_route.hpp"
#include "kernels/simd/simd_kernels.hpp"
#include "kernels/simd/staged_stores.hpp"
#include "kernels/store_policy.hpp"
#include "parallel.hpp"
#include "qdq/qdq.hpp"

namespace qdq::detail {
namespace {

/// Whether a call runs the vectorised kernels rather than the scalar ones: not forced scalar, and
/// this CPU runs a SIMD target (none without QDQ_SIMD).
bool runs_vectorised(bool force_scalar) { return !force_scalar && simd::best_target() != 0; }

}  // namespace

QuantizeKernel select_quantize_kernel(const QuantizeCall& call, bool force_scalar, uint64_t store_bytes) {
#if defined(QDQ_HAVE_SIMD)
  if (runs_vectorised(force_scalar)) {
    prepare_line_requests(ReadingLoop::kQuantize,
                          storage_bytes(call.x_type, static_cast<uint64_t>(call.plan.elements)));
    if (const QuantizeKernel kernel =
            simd::quantize_kernel_for_target(simd::best_target(), call, choose_store_mode(store_bytes)))
      return kernel;
  }
#else
  (void)call;
  (void)force_scalar;
  (void)store_bytes;
#endif
  return &quantize_scalar;
}

bool quantize_shares_row_reciprocals(const QuantizeCall& call, bool force_scalar) {
#if defined(QDQ_HAVE_SIMD)
  // The types first: the route is measured at its first use, which other calls need not pay for.
  if (!runs_vectorised(force_scalar) ||
      !simd::shares_row_reciprocals(call.division_type, call.scale_type, call.y_type, true))
    return false;
  return simd::quotient_route(simd::best_target(), simd::reciprocal_kind(call.y_type, call.zero_point != nullptr)) ==
         simd::QuotientRoute::kReciprocal;
#else
  (void)call;
  (void)force_scalar;
  return false;
#endif
}

DequantizeKernel select_dequantize_kernel(const DequantizeCall& call, bool force_scalar, uint64_t store_bytes) {
#if defined(QDQ_HAVE_SIMD)
  if (runs_vectorised(force_scalar)) {
    // Only x of a byte or more per element is read in place (2/4-bit x is unpacked in cache first).
    const auto elements = static_cast<uint64_t>(call.plan.elements);
    const uint64_t x_bytes = storage_bytes(call.x_type, elements);
    if (x_bytes >= elements) prepare_line_requests(ReadingLoop::kDequantize, x_bytes);
    // Measured here, before any task runs, rather than by the first task that needs it.
    if (call.plan.granularity == Granularity::kBlocked && call.y_type == DataType::kFloat)
      simd::stages_misaligned_output(simd::best_target());
    if (const DequantizeKernel kernel =
            simd::dequantize_kernel_for_target(simd::best_target(), call, choose_store_mode(store_bytes)))
      return kernel;
  }
#else
  (void)call;
  (void)force_scalar;
  (void)store_bytes;
#endif
  return &dequantize_scalar;
}

RangeKernel select_range_kernel(bool force_scalar, uint64_t x_bytes) {
#if defined(QDQ_HAVE_SIMD)
  if (runs_vectorised(force_scalar)) {
    prepare_line_requests(ReadingLoop::kRange, x_bytes);
    if (const RangeKernel kernel = simd::range_kernel_for_target(simd::best_target())) return kernel;
  }
#else
  (void)force_scalar;
  (void)x_bytes;
#endif
  return &range_scalar;
}

#if !defined(QDQ_HAVE_SIMD)
// Built without the SIMD kernels (QDQ_SIMD=OFF): no targets, so callers and tests fall back.
namespace simd {
const std::vector<Target>& available_targets() {
  static const std::vector<Target> none;
  return none;
}
int64_t best_target() { return 0; }
QuantizeKernel quantize_kernel_for_target(int64_t, const QuantizeCall&, StoreMode) { return nullptr; }
DequantizeKernel dequantize_kernel_for_target(int64_t, const DequantizeCall&, StoreMode) { return nullptr; }
RangeKernel range_kernel_for_target(int64_t) { return nullptr; }
void fill_lines(int64_t, uint8_t* dst, size_t bytes, StoreMode) { std::memset(dst, 0x5A, bytes); }
void widen_lines(int64_t, const uint8_t*, uint8_t* dst, size_t dst_bytes, StoreMode) { std::memset(dst, 0, dst_bytes); }
std::vector<Target> compiled_targets() { return {}; }
void set_target(int64_t) {}
void force_quotient_route(QuotientRoute) {}
QuotientRoute forced_quotient_route() { return QuotientRoute::kAuto; }
QuotientRoute quotient_route(int64_t, ReciprocalKind) { return QuotientRoute::kDivide; }
const char* quotient_route_name(QuotientRoute) { return "division"; }
const char* quotient_route_description(int64_t, DataType, DataType) { return "division"; }
void force_staged_stores(StagedStores) {}
StagedStores forced_staged_stores() { return StagedStores::kAuto; }
bool stages_misaligned_output(int64_t) { return false; }
bool markstein_quotients(int64_t, float, const float*, float*, int64_t, bool) { return false; }
}  // namespace simd
#endif

}  // namespace qdq::detail

namespace qdq {

const char* quantize_division_route(DataType y_type) { return quantize_division_route(y_type, DataType::kFloat); }

const char* quantize_division_route(DataType y_type, DataType division_type) {
  const int64_t target = detail::simd::best_target();
  if (target == 0) return "division";
  return detail::simd::quotient_route_description(target, division_type, y_type);
}

const char* output_stores(uint64_t output_bytes) {
  // As a call with default options chooses: only the vectorised kernels stream.
  const bool streams = detail::runs_vectorised(detail::resolve_force_scalar(ExecutionOptions{})) &&
                       detail::choose_store_mode(output_bytes) == detail::StoreMode::kStream;
  return streams ? "non-temporal" : "normal";
}

const char* x_line_requests(std::string_view loop, DataType x_type, uint64_t elements) {
  detail::ReadingLoop kind;
  if (loop == "quantize") {
    kind = detail::ReadingLoop::kQuantize;
  } else if (loop == "dequantize") {
    kind = detail::ReadingLoop::kDequantize;
  } else if (loop == "range") {
    kind = detail::ReadingLoop::kRange;
  } else {
    throw Error("x_line_requests: loop '" + std::string(loop) + "' is not quantize, dequantize or range");
  }
  if (!detail::runs_vectorised(detail::resolve_force_scalar(ExecutionOptions{}))) return "none";
  const uint64_t x_bytes = storage_bytes(x_type, elements);
  // As the loops choose (kernels/simd/vectors-inl.h, LineAheadFor).
  if (kind == detail::ReadingLoop::kDequantize && x_bytes < elements) return "none";
  detail::prepare_line_requests(kind, x_bytes);
  if (x_bytes < detail::kLineRequestsFromBytes) return kind == detail::ReadingLoop::kDequantize ? "none" : "L1";
  return detail::line_requests_name(detail::line_requests(kind, x_bytes));
}

void set_simd_target(std::string_view target) {
  if (target.empty()) {
    detail::simd::set_target(0);
    return;
  }
  std::string compiled;
  for (const detail::simd::Target& t : detail::simd::compiled_targets()) {
    if (t.name != target) {
      compiled += (compiled.empty() ? "" : ", ") + t.name;
      continue;
    }
    for (const detail::simd::Target& runnable : detail::simd::available_targets()) {
      if (runnable.bit == t.bit) {
        detail::simd::set_target(t.bit);
        return;
      }
    }
    throw Error("SIMD target " + std::string(target) + " is compiled into qdq but this CPU cannot run it");
  }
  throw Error("SIMD target " + std::string(target) +
              " is not compiled into qdq (compiled: " + (compiled.empty() ? std::string("none") : compiled) + ")");
}

std::string simd_target() {
  const int64_t target = detail::simd::best_target();
  for (const detail::simd::Target& t : detail::simd::available_targets()) {
    if (t.bit == target) return t.name;
  }
  return "";
}

}  // namespace qdq
