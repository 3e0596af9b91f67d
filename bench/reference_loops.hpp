// The machine's limits that `qdq bench` sets each case against, measured in the same run: streaming
// loops that only move a case's bytes (with normal and with non-temporal stores), and in-cache
// "ceiling" loops that do the least arithmetic a quantize or dequantize needs, without exactness.
// Highway, compiled for the x86 targets and dispatched to the best one the CPU runs (headers only).
#pragma once

#include <cstdint>
#include <string>

namespace qdq::bench {

/// Reads `in_bytes` from `in` and writes `out_bytes` to `out` (ratios 1/16..16, both multiples of
/// 64·ratio; both pointers 64-byte aligned), with non-temporal stores and a closing fence when
/// `non_temporal`. Allocates nothing; runs on the calling thread.
void stream_range(const uint8_t* in, uint64_t in_bytes, uint8_t* out, uint64_t out_bytes, bool non_temporal);

/// The reading reference: loads each of `bytes` bytes from `in` (a multiple of 4 vectors of the
/// target, 64-byte aligned) once and returns their XOR folded to 64 bits, so the loads stay;
/// `prefetch` asks for each line ahead as the kernels do. Allocates nothing; runs on the calling thread.
uint64_t read_range(const uint8_t* in, uint64_t bytes, bool prefetch);

/// The inexact quantize ceiling: y = saturate(NearestInt(x · inverse_scale) + zero_point) as int8
/// for n elements (n a multiple of 64), multiplying by the reciprocal instead of dividing. Allocates
/// nothing; runs on the calling thread.
void ceiling_quantize_int8(const float* x, int8_t* y, int64_t n, float inverse_scale, int32_t zero_point);

/// The dequantize ceiling: y = float(x) · scale + offset (one convert and one fma) for n uint8
/// elements (n a multiple of 64). Allocates nothing; runs on the calling thread.
void ceiling_dequantize_uint8(const uint8_t* x, float* y, int64_t n, float scale, float offset);

/// The Highway target the loops above run on here (e.g. "AVX3"). Allocates nothing.
std::string reference_target();

/// Makes the loops above run on the target named `name` (as reference_target() names them; "" = the
/// best this CPU runs) and returns true, or returns false, changing nothing, where the bench has no
/// loops compiled for it. The caller checks that the CPU runs it (qdq::set_simd_target does). Not
/// to be called while the loops run.
bool use_reference_target(const std::string& name);

}  // namespace qdq::bench
