// Where a kernel's scales and zero points come from: broadcast per segment, expanded per element of
// a chunk (ExpandedParams), or read in place (InPlaceParams); and the plan shapes that pick them.
//
// Included once per Highway target (foreach_target.h), hence the toggle guard instead of #pragma once.
#if defined(QDQ_SIMD_PARAMS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QDQ_SIMD_PARAMS_INL_H_
#undef QDQ_SIMD_PARAMS_INL_H_
#else
#define QDQ_SIMD_PARAMS_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "hwy/highway.h"
#include "iteration_plan.hpp"
#include "kernels/simd/convert-inl.h"
#include "kernels/simd/load_store-inl.h"
#include "kernels/simd/pack-inl.h"
#include "kernels/simd/vectors-inl.h"
#include "types/type_traits.hpp"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS

/// Calls fn(TypeTraits<S>{}) for the scale type S of a call (IsVectorScaleType; the choosers take no
/// other): loops over scales then branch on the type once, not per vector.
template <class Fn>
HWY_INLINE void WithScaleType(DataType type, Fn&& fn) {
  visit_type(type, [&](auto traits) {
    if constexpr (IsVectorScaleType(decltype(traits)::value)) fn(traits);
  });
}

// ---------------------------------------------------------------------------------------------
// Expanded parameters. Chunks cut into many segments (blocks along the last axis, per-axis along
// the last axis, blocked along other axes) first get one scale and one zero point per element,
// then one flat loop runs over the chunk: a separate loop per 32-element block would leave the
// divider and the pipelines idle between blocks.

/// Per-element scales (divisors, for QuantizeLinear) and zero points of a chunk's elements, with a
/// vector of room past kChunk so that fills may write whole vectors.
struct ExpandedParams {
  static constexpr int64_t kSize = kChunk + HWY_MAX_BYTES / 4;
  HWY_ALIGN float scale[kSize];
  HWY_ALIGN int32_t zero_point[kSize];      // integer types
  HWY_ALIGN float float_zero_point[kSize];  // FLOAT4E2M1
};

/// Segments at least this long whose parameters step by one read them in place rather than
/// expanding them (a segment that covers a whole chunk always does): a copy into ExpandedParams
/// costs as much as the loop that reads it.
constexpr int64_t kInPlaceMin = 256;

/// Calls in_place(position, segment) for the segments at the start of [chunk, chunk_end) that read
/// float32 parameters in place (see kInPlaceMin), moving the cursor past them; returns where the
/// rest of the chunk, to be expanded, starts.
template <class InPlace>
HWY_INLINE int64_t InPlaceSegments(SegmentCursor& cursor, bool float32_scales, int64_t chunk, int64_t chunk_end,
                                   InPlace&& in_place) {
  int64_t position = chunk;
  while (float32_scales && position < chunk_end) {
    const Segment s = cursor.peek(position, chunk_end);
    if (s.param_step != 1 || (s.count < kInPlaceMin && s.count != chunk_end - chunk)) break;
    cursor.next(position, chunk_end);
    in_place(position, s);
    position += s.count;
  }
  return position;
}

/// Zero-point codes for calls without zero points, read in place like real ones.
HWY_ALIGN constexpr uint8_t kZeroCodes[2 * kChunk] = {};

/// The parameters of a segment whose float32 scales and zero points (of `kBits` bits, sign-extended
/// when kSigned) step by one from `param` on, read in place: scales and 8/16-bit zero points where
/// they are, 2/4-bit zero points unpacked once (at most kChunk; or already unpacked by the caller,
/// `unpacked`, as UnpackCodes does), zeros where zero_point is null. The accessors give the n-lane
/// vector at segment element k, as the loops take them.
template <int kBits, bool kSigned>
class InPlaceParams {
 public:
  InPlaceParams(const void* scale, const void* zero_point, int64_t param, int64_t count,
                const uint8_t* unpacked = nullptr)
      : scale_(static_cast<const float*>(scale) + param) {
    if (zero_point == nullptr) {
      zero_point_ = kZeroCodes;
    } else if constexpr (kBits >= 8) {
      zero_point_ = zero_point;
      zero_point_index_ = param;
    } else if (unpacked != nullptr) {
      zero_point_ = unpacked;
    } else {
      UnpackCodes<kBits, kSigned>(static_cast<const uint8_t*>(zero_point), param, count, codes_);
      zero_point_ = codes_;
    }
  }
  InPlaceParams(const InPlaceParams&) = delete;
  InPlaceParams& operator=(const InPlaceParams&) = delete;

  /// Reciprocals of the segment's scales for PerVectorReciprocals routes, segment element k at k.
  void SetReciprocals(const float* reciprocal) { reciprocal_ = reciprocal; }

  VF Scale(int64_t k, size_t n) const { return LoadPartial(DF(), scale_ + k, n); }
  VF Reciprocal(int64_t k, size_t n) const { return LoadPartial(DF(), reciprocal_ + k, n); }
  VI ZeroPoint(int64_t k, size_t n) const { return LoadInt<kBits, kSigned>(zero_point_, zero_point_index_ + k, n); }
  VF FloatZeroPoint(int64_t k, size_t n) const {
    return DecodeF<Float4E2M1Format>(LoadCodes(static_cast<const uint8_t*>(zero_point_) + k, n));
  }

 private:
  const float* scale_;
  const float* reciprocal_ = nullptr;
  const void* zero_point_ = nullptr;
  int64_t zero_point_index_ = 0;
  HWY_ALIGN uint8_t codes_[kBits < 8 ? kChunk : 1];
};

/// One scale (a divisor, for QuantizeLinear) and zero point for a whole run, in registers: the
/// parameters of per-tensor calls, long per-axis runs and uniform blocks.
struct BroadcastParams {
  VF scale;
  VI zero_point;
  VF float_zero_point;
  VF Scale(int64_t, size_t) const { return scale; }
  VI ZeroPoint(int64_t, size_t) const { return zero_point; }
  VF FloatZeroPoint(int64_t, size_t) const { return float_zero_point; }
};

/// Parameters expanded per element (ExpandParams), element k of the run at index k.
struct ExpandedView {
  const ExpandedParams& e;
  VF Scale(int64_t k, size_t) const { return hn::Load(DF(), e.scale + k); }
  VI ZeroPoint(int64_t k, size_t) const { return hn::Load(DI(), e.zero_point + k); }
  VF FloatZeroPoint(int64_t k, size_t) const { return hn::Load(DF(), e.float_zero_point + k); }
};

/// Whether a plan is blocked along the last axis (inner == 1) with blocks that tile every row
/// (D a multiple of B) and hold whole groups (B a multiple of `group`), its scales of shape
/// [..., D / B]: then element e uses parameter e / B.
inline bool UniformBlocks(const Plan& plan, int64_t group) {
  return plan.granularity == Granularity::kBlocked && plan.inner == 1 && plan.axis_len % plan.block == 0 &&
         plan.block % group == 0 && plan.param_axis_stride == 1 &&
         plan.param_outer_stride == plan.axis_len / plan.block;
}

/// The longest blocks, in vectors, that the flat loop serves. Measured on Zen 3 (AVX2, one thread,
/// 64 Ki elements, docs/performance.md): against a loop per block, the flat loop runs blocks of 4
/// vectors 1.5-1.7x (quantize) and 1.2-1.4x (dequantize) as fast, blocks of 8 vectors 1.2x and
/// 1.0-1.16x, 16 vectors evenly and 32 vectors 0.85x: a broadcast per vector costs more than a
/// loop's setup once a block holds a few groups.
constexpr int64_t kMaxFlatBlockVectors = 8;

/// log2 of the block of a UniformBlocks plan whose blocks are a power of two of whole vectors of
/// `lanes`, at most `max_block` elements, or -1. Blocks of one to eight vectors (the LLM weight
/// layout: blocks of 32 are two vectors at AVX3, four at AVX2) are too short for a loop per block;
/// VectorBlockParams serves them in one flat loop (kMaxFlatBlockVectors).
inline int VectorBlockShift(const Plan& plan, int64_t lanes, int64_t max_block) {
  const int64_t block = plan.block;
  if (!UniformBlocks(plan, lanes) || block > max_block || (block & (block - 1)) != 0) return -1;
  int shift = 0;
  while ((int64_t{1} << shift) < block) ++shift;
  return shift;
}

/// The whole blocks of a task [begin, end) of a plan with blocks of `block` elements: [lo, hi), from
/// the first block boundary at or after begin (at most end) to the last one at or before end (at
/// least lo), shortened to whole groups of `granule` elements (a multiple of the block). The kernels
/// run a whole-block path on [lo, hi) and the general path on either side.
struct WholeBlocks {
  int64_t lo;
  int64_t hi;
};

inline WholeBlocks WholeBlocksOf(int64_t begin, int64_t end, int64_t block, int64_t granule) {
  const int64_t lo = std::min(end, (begin + block - 1) / block * block);
  return {lo, lo + std::max<int64_t>(0, end / block * block - lo) / granule * granule};
}

/// Elements per piece of a path that fills parameter arrays of kChunk blocks of `block` elements per
/// piece: as many whole blocks as the arrays hold, or, where a stage or a code buffer of kChunk
/// elements bounds the piece (`bounded`), as many as fit in kChunk; part of a block longer than that.
/// A piece's fixed cost (the parameter passes and the calls around them) is then paid once per many
/// blocks where nothing bounds it: it was a tenth of an MXFP4 piece of 32 blocks.
inline int64_t BlockPieceSpan(int64_t block, bool bounded) {
  if (block > kChunk) return kChunk;
  return bounded ? kChunk / block * block : kChunk * block;
}

/// One parameter per block of 2^shift elements (VectorBlockShift: whole vectors), run element k in
/// block k >> shift: each vector lies in one block and broadcasts that block's entry into a register,
/// with no per-element parameters. The arrays hold the blocks of one piece (PieceSpan).
struct VectorBlockParams {
  static constexpr int64_t kBlocks = kChunk / 4;                 // a chunk's blocks of >= 4 elements
  static constexpr int64_t kSize = kBlocks + HWY_MAX_BYTES / 4;  // and a vector of room
  /// Elements per piece for blocks of 2^shift elements: as many blocks as the arrays hold, or kChunk
  /// elements where a stage or a code buffer of kChunk elements bounds the piece (as BlockPieceSpan).
  static int64_t PieceSpan(int shift, bool bounded) { return bounded ? kChunk : kBlocks << shift; }
  HWY_ALIGN float scale[kSize];
  HWY_ALIGN int32_t zero_point[kSize];      // integer types
  HWY_ALIGN float float_zero_point[kSize];  // FLOAT4E2M1
  HWY_ALIGN float reciprocal[kSize];        // RN(1/scale), for PerVectorReciprocals routes
  int shift = 0;
  VF Scale(int64_t k, size_t) const { return hn::Set(DF(), scale[k >> shift]); }
  VF Reciprocal(int64_t k, size_t) const { return hn::Set(DF(), reciprocal[k >> shift]); }
  VI ZeroPoint(int64_t k, size_t) const { return hn::Set(DI(), zero_point[k >> shift]); }
  VF FloatZeroPoint(int64_t k, size_t) const { return hn::Set(DF(), float_zero_point[k >> shift]); }
};

/// VectorBlockParams for blocks of kVectors = 2 vectors, or of 4 and more, whose loop steps of four
/// vectors (from element 0) hold two whole blocks or lie in one: the loop calls BeginStep(k) at each
/// step (element k), which broadcasts the step's one or two blocks' parameters once, and the step's
/// vectors read the registers (the step's vector at element k + v·Lanes, v a constant, uses the
/// first block's for v < kVectors).
template <int kVectors>
struct StepBlockParams {
  static_assert(kVectors == 2 || kVectors == 4);
  const VectorBlockParams& blocks;
  mutable int64_t step = 0;
  mutable VF scale[2];
  mutable VI zero_point[2];
  mutable VF float_zero_point[2];
  mutable VF reciprocal[2];
  void BeginStep(int64_t k) const {
    step = k;
    for (int g = 0; g < 4 / kVectors; ++g) {
      const int64_t at = k + g * kVectors * static_cast<int64_t>(hn::Lanes(DF()));
      scale[g] = blocks.Scale(at, 0);
      zero_point[g] = blocks.ZeroPoint(at, 0);
      float_zero_point[g] = blocks.FloatZeroPoint(at, 0);
      reciprocal[g] = blocks.Reciprocal(at, 0);
    }
  }
  size_t Group(int64_t k) const {
    return kVectors == 4 ? 0 : static_cast<size_t>(k - step >= 2 * static_cast<int64_t>(hn::Lanes(DF())));
  }
  VF Scale(int64_t k, size_t) const { return scale[Group(k)]; }
  VI ZeroPoint(int64_t k, size_t) const { return zero_point[Group(k)]; }
  VF FloatZeroPoint(int64_t k, size_t) const { return float_zero_point[Group(k)]; }
  VF Reciprocal(int64_t k, size_t) const { return reciprocal[Group(k)]; }
};

/// Fills `e` for elements [chunk, chunk_end), walking the segments with `cursor`: the scales and,
/// as the type needs, integer or float zero points. load(first, count, scale, zero_point,
/// float_zero_point) stores parameters [first, first + count) at those pointers, whole vectors.
/// Step-1 segments load straight into place; runs of step-0 segments with consecutive parameters
/// (blocks along the last axis, short per-axis runs) load theirs a vector at a time, then broadcast
/// each over its segment.
template <bool kIntegerZeroPoint, bool kFloatZeroPoint, class Load>
HWY_INLINE void ExpandParams(SegmentCursor& cursor, int64_t chunk, int64_t chunk_end, ExpandedParams& e, Load&& load) {
  const DF df;
  const DI di;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int32_t counts[kChunk];
  int64_t params[kChunk];
  bool stepped[kChunk];
  int64_t segments = 0;
  for (int64_t position = chunk; position < chunk_end; ++segments) {
    const Segment s = cursor.next(position, chunk_end);
    counts[segments] = static_cast<int32_t>(s.count);
    params[segments] = s.param_index;
    stepped[segments] = s.param_step != 0;
    position += s.count;
  }
  HWY_ALIGN ExpandedParams run;
  int64_t at = 0;
  for (int64_t k = 0; k < segments;) {
    if (stepped[k]) {
      load(params[k], counts[k], e.scale + at, e.zero_point + at, e.float_zero_point + at);
      at += counts[k];
      ++k;
      continue;
    }
    int64_t r = k + 1;
    while (r < segments && !stepped[r] && params[r] == params[r - 1] + 1) ++r;
    load(params[k], r - k, run.scale, run.zero_point, run.float_zero_point);
    for (int64_t j = k; j < r; ++j) {
      const VF scale = hn::Set(df, run.scale[j - k]);
      VI zp = hn::Zero(di);
      VF zpf = hn::Zero(df);
      if constexpr (kIntegerZeroPoint) zp = hn::Set(di, run.zero_point[j - k]);
      if constexpr (kFloatZeroPoint) zpf = hn::Set(df, run.float_zero_point[j - k]);
      // Whole vectors, the last one possibly past the segment (the next segment overwrites it).
      for (int64_t q = 0; q < counts[j]; q += lanes) {
        hn::StoreU(scale, df, e.scale + at + q);
        if constexpr (kIntegerZeroPoint) hn::StoreU(zp, di, e.zero_point + at + q);
        if constexpr (kFloatZeroPoint) hn::StoreU(zpf, df, e.float_zero_point + at + q);
      }
      at += counts[j];
    }
    k = r;
  }
}

#endif  // QDQ_SIMD_HAS_KERNELS
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#endif  // QDQ_SIMD_PARAMS_INL_H_
