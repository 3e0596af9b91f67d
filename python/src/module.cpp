// _qdq — the compiled half of the qdq Python package (python/qdq/__init__.py is the public API).
//
// This layer speaks in (numpy array, ONNX DataType number) pairs; the Python layer maps numpy and
// ml_dtypes dtypes and qdq.CodeArray to and from them. Array conventions, one element per array item:
//   * types numpy has (float32, float16, int8, ...): the array's own dtype, passed without a copy when
//     C-contiguous;
//   * BFLOAT16: 16-bit codes; the 8-bit float types: 8-bit codes;
//   * UINT4, UINT2, FLOAT4E2M1: one code per byte (0..15 / 0..3), in an unsigned 8-bit array;
//   * INT4, INT2: one value per byte, either sign-extended in a signed 8-bit array (-8..7 / -2..1, as
//     ml_dtypes stores them) or as the two's complement code in an unsigned 8-bit array (0..15 / 0..3).
// Sub-byte inputs are checked and packed into ONNX's layout with the library's pack_all_codes (one
// read of the items, in L1-sized chunks), sub-byte outputs unpacked with unpack_all_codes (INT4/INT2
// sign-extended into int8 in the same pass), both compiled for AVX-512 and AVX2 too: vectorised
// passes at memory speed; src/types/packing.hpp is the one place that knows the layout. ml_dtypes
// sub-byte arrays are read as they are (the low bits of each byte); DequantizeLinear's x in that form
// goes to the library as it is (qdq::CodeLayout::kOnePerByte), with no pass here. A tensor may also be given as a
// (uint8 array of ONNX's packed bytes, shape) tuple and QuantizeLinear's result returned packed.
// Outputs are new arrays in these conventions (sub-byte signed types as int8), their memory and the
// packing scratch from BlockPool, which keeps freed large blocks for the next call (no page faults in
// a loop that drops its results). Sub-byte integers skip the packed layout where the 8-bit kernels
// give the same values: dequantized as int8/uint8 when given as values (INT4/INT2 two's complement
// codes in a uint8 CodeArray sign-extended into int8 first), quantized one value per byte by the
// library (quantize_as_byte_integers). qdq::Error becomes ValueError with the library's message. The GIL
// is released while the library computes.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#if __has_include(<sys/mman.h>)
#include <sys/mman.h>  // madvise
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "qdq/qdq.hpp"
#include "types/packing.hpp"
#include "types/packing_bulk.hpp"
#include "types/type_traits.hpp"

#ifdef QDQ_PYTHON_WITH_ONNX
#include "qdq_onnx.hpp"

void register_quantize_model(pybind11::module_& m);  // quantize_model.cpp
#endif

namespace py = pybind11;

namespace {

using qdq::DataType;

// Bytes one array item occupies for `type`: 1 for the sub-byte types (one code per byte).
size_t item_bytes(DataType type) {
  const int bits = qdq::bit_width(type);
  if (bits == 0) throw qdq::Error("element type " + qdq::data_type_name(type) + " has no fixed storage size");
  return bits < 8 ? 1 : static_cast<size_t>(bits / 8);
}

bool is_sub_byte(DataType type) { return qdq::bit_width(type) > 0 && qdq::bit_width(type) < 8; }

/// Whether `type`'s codes, one per byte, are signed integers (INT4, INT2), from the type queries.
bool is_signed_sub_byte(DataType type) {
  return qdq::bit_width(type) < 8 && qdq::type_kind(type) == qdq::TypeKind::kInteger && qdq::is_signed(type);
}

// Passes over fewer items than this keep the GIL: they take about as long as releasing and taking
// it back.
constexpr uint64_t kReleaseGilItems = uint64_t{1} << 18;

// Operator calls on fewer elements than this keep the GIL while the library computes: releasing and
// retaking it costs ~340 instructions (callgrind), a few percent of a call of a few thousand elements
// and under 1% of one of 64 Ki, which other Python threads may then overlap.
constexpr uint64_t kReleaseGilElements = uint64_t{1} << 16;

// Releases the GIL for its scope where `release` (py::gil_scoped_release without pybind11's
// bookkeeping, and conditional); the library's exceptions pass through it with the GIL retaken.
class GilRelease {
 public:
  explicit GilRelease(bool release) : state_(release ? PyEval_SaveThread() : nullptr) {}
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;
  ~GilRelease() {
    if (state_ != nullptr) PyEval_RestoreThread(state_);
  }

 private:
  PyThreadState* state_;
};

/// The NumPy dtype that holds one element (or, for packed and narrow float types, one code) of
/// `type`, from the type list: floats with a NumPy type as themselves, integers as the integer of
/// their width (packed ones one per int8/uint8), other narrow codes as the unsigned integer of theirs.
py::dtype storage_dtype(DataType type) {
  // py::dtype::of<T>() is NumPy's cached descriptor (no parsing per call), so each kind maps onto one.
  using qdq::detail::TypeKind;
  const qdq::detail::TypeInfo& info = qdq::detail::type_info(type);
  const int bits = info.bits < 8 ? 8 : info.bits;
  const auto integer = [](int width, bool is_signed) -> py::dtype {
    switch (width) {
      case 8: return is_signed ? py::dtype::of<int8_t>() : py::dtype::of<uint8_t>();
      case 16: return is_signed ? py::dtype::of<int16_t>() : py::dtype::of<uint16_t>();
      case 32: return is_signed ? py::dtype::of<int32_t>() : py::dtype::of<uint32_t>();
      default: return is_signed ? py::dtype::of<int64_t>() : py::dtype::of<uint64_t>();
    }
  };
  switch (info.kind) {
    case TypeKind::kFloat: return bits == 32 ? py::dtype::of<float>() : py::dtype::of<double>();
    case TypeKind::kMiniFloat:
      if (type == DataType::kFloat16) {  // the one narrow float NumPy has (NPY_HALF = 23)
        PyObject* half = py::detail::npy_api::get().PyArray_DescrFromType_(23);
        if (half == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::dtype>(half);
      }
      return integer(bits, false);
    case TypeKind::kExponent: return integer(bits, false);
    case TypeKind::kInteger: return integer(bits, info.is_signed);
    case TypeKind::kOther:
      if (type == DataType::kBool) return py::dtype::of<bool>();
      break;
  }
  throw qdq::Error("element type " + qdq::data_type_name(type) + " is not supported by the Python module");
}

// The dtypes operator results of types NumPy lacks are made with (set_result_dtypes: ml_dtypes'
// dtypes, whose items hold the codes as this module's conventions do), so the Python layer need not
// view every result again; storage_dtype() where none is set. Set at import, read with the GIL held.
std::vector<py::object>& result_dtypes() {
  static auto* dtypes = new std::vector<py::object>(32);  // never destroyed: outlives the interpreter's teardown
  return *dtypes;
}

py::dtype result_dtype(DataType type) {
  const auto index = static_cast<size_t>(type);
  if (index < result_dtypes().size() && result_dtypes()[index]) {
    return py::reinterpret_borrow<py::dtype>(result_dtypes()[index]);
  }
  return storage_dtype(type);
}

DataType to_type(int64_t value) {
  if (!qdq::is_known_data_type(static_cast<int32_t>(value))) {
    throw qdq::Error("unknown ONNX element type number " + std::to_string(value));
  }
  return static_cast<DataType>(value);
}

std::vector<int64_t> shape_of(const py::array& a) { return std::vector<int64_t>(a.shape(), a.shape() + a.ndim()); }

// An input's dimensions, copied from its array (whose own may change once the GIL is released) into
// inline storage for the usual ranks: no heap allocation (and free) per input view.
// Not copyable or movable: views point into it.
class Dims {
 public:
  static constexpr size_t kInline = 8;
  Dims() = default;
  Dims(const Dims&) = delete;
  Dims& operator=(const Dims&) = delete;

  template <typename Int>
  void assign(const Int* dims, size_t rank) {
    size_ = rank;
    if (rank <= kInline) {
      std::copy(dims, dims + rank, inline_);
      data_ = inline_;
    } else {
      heap_.assign(dims, dims + rank);
      data_ = heap_.data();
    }
  }
  std::span<const int64_t> span() const { return {data_, size_}; }
  operator std::span<const int64_t>() const { return span(); }  // NOLINT: used as a view's shape
  std::vector<int64_t> vector() const { return {data_, data_ + size_}; }

 private:
  int64_t inline_[kInline] = {};
  std::vector<int64_t> heap_;
  const int64_t* data_ = inline_;
  size_t size_ = 0;
};

// The passes over one-code-per-byte arrays are compiled for AVX-512 and AVX2 as well as the baseline,
// chosen at load time (GCC/Clang function multiversioning): the module is built for the baseline
// x86-64 target, where these loops run at a fraction of memory speed.
#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#define QDQ_PY_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define QDQ_PY_VECTOR_CLONES
#endif
// The passes' loops are inline functions of types/packing_bulk.hpp; a call the compiler declines to
// inline would run the baseline code. flatten inlines every call into the clone.
#if defined(__GNUC__) || defined(__clang__)
#define QDQ_PY_FLATTEN __attribute__((flatten))
#else
#define QDQ_PY_FLATTEN
#endif

// Whether any of `count` items is not a `Bits`-bit value (Signed) or code, without early exit. An
// item is out of range when item + offset has a bit at or above `Bits`, so the OR of all of them
// has one too: the loop is a load, an add and an OR per vector, into four vectors' worth of
// independent accumulators (one would chain every OR on the last, a cycle each).
template <int Bits, bool Signed>
inline bool any_out_of_range(const uint8_t* items, uint64_t count) {
  constexpr uint8_t kOffset = Signed ? static_cast<uint8_t>(1u << (Bits - 1)) : 0;
  constexpr uint64_t kLanes = 128;
  uint8_t lanes[kLanes] = {};
  uint64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (uint64_t j = 0; j < kLanes; ++j) lanes[j] |= static_cast<uint8_t>(items[i + j] + kOffset);
  }
  uint8_t all = 0;
  for (; i < count; ++i) all |= static_cast<uint8_t>(items[i] + kOffset);
  for (uint8_t lane : lanes) all |= lane;
  return (all >> Bits) != 0;
}

// Packs `count` items (one code per byte) into ONNX's layout at `packed`, checking first, if `check`,
// that each is a `bits`-bit value (`signed_items`) or code. Works in chunks that stay in L1, each
// checked and then packed, so the items are read from memory once. Returns false, with `packed`
// partly written, at the first chunk that holds a bad item.
QDQ_PY_VECTOR_CLONES QDQ_PY_FLATTEN bool check_and_pack(const uint8_t* items, uint64_t count, int bits,
                                                        bool signed_items, bool check, uint8_t* packed) {
  constexpr uint64_t kChunk = 16384;  // a multiple of 4: every chunk starts on a packed byte
  for (uint64_t start = 0; start < count; start += kChunk) {
    const uint64_t n = std::min(kChunk, count - start);
    const uint8_t* chunk = items + start;
    if (check) {
      const bool bad =
          bits == 4 ? (signed_items ? any_out_of_range<4, true>(chunk, n) : any_out_of_range<4, false>(chunk, n))
                    : (signed_items ? any_out_of_range<2, true>(chunk, n) : any_out_of_range<2, false>(chunk, n));
      if (bad) return false;
    }
    qdq::detail::pack_all_codes(chunk, bits, static_cast<int64_t>(n), packed + start * static_cast<uint64_t>(bits) / 8);
  }
  return true;
}

// Whether every one of `count` bytes, read as int8 (Signed) or uint8, is a `Bits`-bit value: then the
// bytes are an int8/uint8 tensor of the same values (what DequantizeLinear reads of a sub-byte
// integer tensor). An ml_dtypes int4 array fails where it keeps a negative value's code in the low
// bits only (0x0F for -1); a qdq result or a CodeArray passes. Checked in chunks, so that such an
// array (whose first chunk almost always holds a negative value) costs a chunk, not a pass.
QDQ_PY_VECTOR_CLONES QDQ_PY_FLATTEN bool items_are_values(const uint8_t* items, uint64_t count, int bits,
                                                          bool signed_values) {
  constexpr uint64_t kChunk = 4096;
  for (uint64_t start = 0; start < count; start += kChunk) {
    const uint64_t n = std::min(kChunk, count - start);
    const uint8_t* chunk = items + start;
    const bool bad = bits == 4
                         ? (signed_values ? any_out_of_range<4, true>(chunk, n) : any_out_of_range<4, false>(chunk, n))
                         : (signed_values ? any_out_of_range<2, true>(chunk, n) : any_out_of_range<2, false>(chunk, n));
    if (bad) return false;
  }
  return true;
}

// Sign-extends `count` two's complement codes of a signed `Bits`-bit type, one per byte in its low
// bits, into int8 values. Returns whether no byte held more than a code (only the low bits are read
// either way), for the callers that must refuse such bytes.
template <int Bits>
bool sign_extend_codes_of(const uint8_t* codes, uint64_t count, int8_t* values) {
  constexpr uint8_t kMask = (1u << Bits) - 1;
  constexpr uint8_t kSign = 1u << (Bits - 1);
  uint8_t high = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t c = codes[i];
    high |= c & static_cast<uint8_t>(~kMask);
    values[i] = static_cast<int8_t>(static_cast<uint8_t>(((c & kMask) ^ kSign) - kSign));
  }
  return high == 0;
}

// sign_extend_codes_of for INT4 (bits 4) or INT2 (bits 2), compiled for the vector targets.
QDQ_PY_VECTOR_CLONES QDQ_PY_FLATTEN bool sign_extend_codes(const uint8_t* codes, uint64_t count, int bits,
                                                           int8_t* values) {
  return bits == 4 ? sign_extend_codes_of<4>(codes, count, values) : sign_extend_codes_of<2>(codes, count, values);
}

// unpack_all_codes, compiled for the vector targets.
QDQ_PY_VECTOR_CLONES QDQ_PY_FLATTEN void unpack_codes(const uint8_t* packed, int bits, uint64_t count, bool sign_extend,
                                                      uint8_t* items) {
  qdq::detail::unpack_all_codes(packed, bits, static_cast<int64_t>(count), sign_extend, items);
}

// Throws ValueError naming the first item of `items` that is not a `bits`-bit value/code (called
// once check_and_pack has found one: only a bad array pays for locating it).
[[noreturn]] void throw_bad_sub_byte_item(const uint8_t* items, uint64_t count, int bits, bool signed_items,
                                          DataType type, const char* what) {
  const int lo = signed_items ? -(1 << (bits - 1)) : 0;
  const int hi = signed_items ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
  for (uint64_t i = 0; i < count; ++i) {
    const int v = signed_items ? static_cast<int>(static_cast<int8_t>(items[i])) : static_cast<int>(items[i]);
    if (v < lo || v > hi) {
      throw py::value_error(std::string(what) + ": element " + std::to_string(i) + " is " + std::to_string(v) +
                            ", not a " + qdq::data_type_name(type) + (signed_items ? " value (" : " code (") +
                            std::to_string(lo) + ".." + std::to_string(hi) + ")");
    }
  }
  throw py::value_error(std::string(what) + ": a " + qdq::data_type_name(type) + " element is out of range");
}

// Runs piece(begin, end) -> bool over [0, count) in pieces of 256 Ki items, one task each on the
// library's threads (a pass over a whole tensor between the library's calls, which would otherwise
// read it on this thread alone); under two pieces, one call on this thread. True when every piece
// returned true; after a false one the pieces not yet started are skipped. Pieces are a multiple of
// 8 items long, so each starts on a byte of a packed 2/4-bit tensor.
template <class Piece>
bool all_pieces(uint64_t count, const Piece& piece) {
  constexpr uint64_t kPieceItems = uint64_t{1} << 18;
  if (count < 2 * kPieceItems) return piece(uint64_t{0}, count);
  std::atomic<bool> all{true};
  qdq::run_tasks(static_cast<size_t>((count + kPieceItems - 1) / kPieceItems), [&](size_t task) {
    if (!all.load(std::memory_order_relaxed)) return;
    const uint64_t begin = task * kPieceItems;
    if (!piece(begin, std::min(count, begin + kPieceItems))) all.store(false, std::memory_order_relaxed);
  });
  return all.load();
}

// all_pieces with the GIL released (call with it held), or, for fewer items than releasing and taking
// it back is worth (a zero point, a small tensor), one call on this thread with the GIL kept.
template <class Piece>
bool all_pieces_without_gil(uint64_t count, const Piece& piece) {
  if (count < kReleaseGilItems) return piece(uint64_t{0}, count);
  py::gil_scoped_release release;
  return all_pieces(count, piece);
}

// Large result and scratch blocks, kept for reuse after they are freed. A fresh result of tens of
// MiB costs page faults (the kernel zero-fills every page before qdq writes it) that take about as
// long as the operator itself, and glibc hands blocks of 32 MiB or more back to the system on every
// free, so a loop that calls an operator and drops the result would fault in a whole new output each
// time. Blocks of at least kMinPooled bytes are 2 MiB-aligned and advised for transparent huge pages
// (as NumPy does for its own large arrays: 4 KiB faults cost several times more), and when freed
// they are kept, up to kMaxKept blocks and limit_ bytes together (the ones given back last), for a
// later request of about their size. Smaller blocks are plain heap memory (glibc reuses those itself). Thread-safe.
class BlockPool {
 public:
  static constexpr size_t kMinPooled = size_t{1} << 20;
  static constexpr size_t kHugePage = size_t{2} << 20;
  static constexpr size_t kMaxKept = 8;
  static constexpr size_t kDefaultLimit = size_t{256} << 20;

  // Never destroyed: capsules of arrays that outlive the module may give blocks back at exit.
  static BlockPool& instance() {
    static BlockPool* pool = new BlockPool;
    return *pool;
  }

  // A block of at least `bytes` bytes (uninitialised, 64-byte aligned); *capacity receives what give()
  // must be passed back. Throws std::bad_alloc when memory is exhausted.
  void* take(size_t bytes, size_t* capacity) {
    if (bytes < kMinPooled) {
      *capacity = bytes;
      return ::operator new (std::max<size_t>(bytes, 1), std::align_val_t{64});
    }
    const size_t want = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // The smallest kept block that fits without wasting more than a quarter of it.
      size_t best = kept_.size();
      for (size_t i = 0; i < kept_.size(); ++i) {
        const size_t c = kept_[i].capacity;
        if (c >= want && c - want <= c / 4 && (best == kept_.size() || c < kept_[best].capacity)) best = i;
      }
      if (best != kept_.size()) {
        const Kept k = kept_[best];
        kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(best));
        kept_bytes_ -= k.capacity;
        *capacity = k.capacity;
        return k.data;
      }
    }
    void* p = std::aligned_alloc(kHugePage, want);
    if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    madvise(p, want, MADV_HUGEPAGE);  // advice only: without huge pages the block works the same
#endif
    *capacity = want;
    return p;
  }

  // Returns a block from take(); kept for reuse, making room by freeing the blocks given back longest
  // ago (the sizes a loop asks for now are those it gave back last), or freed if the limit is smaller.
  void give(void* p, size_t capacity) {
    if (capacity < kMinPooled) {
      ::operator delete (p, std::align_val_t{64});
      return;
    }
    std::vector<Kept> freed;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (capacity <= limit_) {
        size_t oldest = 0;
        while (kept_.size() - oldest >= kMaxKept || kept_bytes_ + capacity > limit_) {
          kept_bytes_ -= kept_[oldest].capacity;
          freed.push_back(kept_[oldest++]);
        }
        kept_.erase(kept_.begin(), kept_.begin() + static_cast<std::ptrdiff_t>(oldest));
        kept_.push_back({p, capacity});
        kept_bytes_ += capacity;
        p = nullptr;
      }
    }
    for (const Kept& k : freed) std::free(k.data);
    std::free(p);
  }

  // Sets the most bytes kept for reuse (0: none) and frees kept blocks beyond it; returns the old limit.
  size_t set_limit(size_t bytes) {
    std::vector<Kept> freed;
    size_t old;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      old = limit_;
      limit_ = bytes;
      while (kept_bytes_ > limit_) {
        freed.push_back(kept_.back());
        kept_bytes_ -= kept_.back().capacity;
        kept_.pop_back();
      }
    }
    for (const Kept& k : freed) std::free(k.data);
    return old;
  }

  size_t kept_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return kept_bytes_;
  }

 private:
  struct Kept {
    void* data;
    size_t capacity;
  };
  std::mutex mutex_;
  std::vector<Kept> kept_;
  size_t kept_bytes_ = 0;
  size_t limit_ = kDefaultLimit;
};

// Bytes of uninitialised scratch memory from the pool: the packing passes write every byte, so no
// zero-fill (and no page touched twice) before they do.
class Buffer {
 public:
  explicit Buffer(size_t n = 0) {
    if (n) data_ = static_cast<uint8_t*>(BlockPool::instance().take(n, &capacity_));
  }
  Buffer(Buffer&& other) noexcept : data_(std::exchange(other.data_, nullptr)), capacity_(other.capacity_) {}
  Buffer& operator=(Buffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(capacity_, other.capacity_);
    return *this;
  }
  ~Buffer() {
    if (data_) BlockPool::instance().give(data_, capacity_);
  }
  uint8_t* get() const { return data_; }

 private:
  uint8_t* data_ = nullptr;
  size_t capacity_ = 0;
};

// Results smaller than this are NumPy's own memory: its allocator is cheaper than a capsule-owned
// block. Larger ones are 64-byte aligned (NumPy aligns to 16 bytes): the kernels' vector stores then
// never straddle two cache lines, which at 64 Ki float32 results made a call ~1.3x slower.
constexpr size_t kMinAlignedResult = size_t{16} << 10;

// A new writeable C-contiguous ndarray of `dtype` and `dims` over `data` (owned by `base`, whose
// reference it takes), or over memory NumPy allocates (data null). What py::array's constructor does,
// without its strides vector and container copies (a tenth of a small call's instructions).
py::array new_c_array(const py::dtype& dtype, std::span<const int64_t> dims, void* data, py::object base) {
  const auto& api = py::detail::npy_api::get();
  std::vector<Py_intptr_t> converted;  // only where NumPy's dimension type is not int64_t
  Py_intptr_t* dim_data;
  if constexpr (std::is_same_v<Py_intptr_t, int64_t>) {
    dim_data = const_cast<Py_intptr_t*>(dims.data());  // NumPy copies them
  } else {
    converted.assign(dims.begin(), dims.end());
    dim_data = converted.data();
  }
  PyObject* array = api.PyArray_NewFromDescr_(
      api.PyArray_Type_, dtype.inc_ref().ptr(), static_cast<int>(dims.size()), dim_data, nullptr, data,
      data != nullptr ? py::detail::npy_api::NPY_ARRAY_WRITEABLE_ : 0, nullptr);  // steals the dtype
  if (array == nullptr) throw py::error_already_set();
  auto result = py::reinterpret_steal<py::array>(array);
  if (data != nullptr && api.PyArray_SetBaseObject_(array, base.release().ptr()) != 0) {  // steals base
    throw py::error_already_set();
  }
  return result;
}

// A new C-contiguous array of `dtype` and `dims` whose memory comes from the pool (64-byte aligned)
// and goes back to it when the array and every view of it are gone (below kMinAlignedResult, NumPy's
// own memory). Call with the GIL held.
py::array pooled_array(const py::dtype& dtype, std::span<const int64_t> dims) {
  size_t bytes = static_cast<size_t>(dtype.itemsize());
  for (int64_t d : dims) bytes *= static_cast<size_t>(d);
  if (bytes < kMinAlignedResult) return new_c_array(dtype, dims, nullptr, py::object());
  struct Owned {
    void* data;
    size_t capacity;
  };
  auto* owned = new Owned{nullptr, 0};
  try {
    owned->data = BlockPool::instance().take(bytes, &owned->capacity);
  } catch (...) {
    delete owned;
    throw;
  }
  py::capsule base(owned, [](void* p) {
    auto* o = static_cast<Owned*>(p);
    BlockPool::instance().give(o->data, o->capacity);
    delete o;
  });
  return new_c_array(dtype, dims, owned->data, std::move(base));
}

// A null py::array, to be assigned later. py::array's default constructor makes a new empty NumPy
// array (a third of a small call's instructions went to four of them, made and freed unused).
py::array no_array() { return py::reinterpret_steal<py::array>(py::handle()); }

// An input tensor: a borrowed view of a numpy array, or of a packed copy for sub-byte types.
// Built with the GIL held; the view stays valid while `array` (kept here) lives.
//   `source` is a numpy array in the module's conventions (module comment), an ml_dtypes sub-byte
//   array (numpy kind 'V': the low bits of each byte are the code, as ml_dtypes stores it), or a
//   tuple (uint8 array of ONNX's packed bytes, shape) for a tensor given as its raw_data.
struct Input {
  py::array array = no_array();  // keeps the buffer alive
  Dims shape;
  Buffer packed;    // sub-byte types given unpacked only
  Buffer extended;  // INT4/INT2 codes as int8 values (as_sign_extended_bytes)
  qdq::TensorView view;

  // Sub-byte items given one per byte, when packing is deferred (see below); else null.
  const uint8_t* items = nullptr;
  bool signed_items = false;
  bool check_items = false;

  // defer_packing: for sub-byte items given one per byte, leave the packing to the caller, who packs
  // in chunks (ChunkPlan) or calls pack_whole(). Until then `view` is valid for validation only:
  // its data points at the items, which the *_output functions do not read.
  Input(const py::object& source, DataType type, const char* what, bool defer_packing = false) : what_(what) {
    if (py::isinstance<py::tuple>(source)) {
      init_packed(py::cast<py::tuple>(source), type, what);
      return;
    }
    array = py::reinterpret_borrow<py::array>(source);
    if (!py::isinstance<py::array>(source)) throw py::type_error(std::string(what) + ": expected a NumPy array");
    shape.assign(array.shape(), static_cast<size_t>(array.ndim()));
    if (!(array.flags() & py::array::c_style)) {
      throw py::type_error(std::string(what) + ": the array must be C-contiguous");
    }
    const size_t itemsize = static_cast<size_t>(array.itemsize());
    if (itemsize != item_bytes(type)) {
      throw py::type_error(std::string(what) + ": an array of " + std::to_string(itemsize) +
                           "-byte items cannot hold " + qdq::data_type_name(type) + " elements (" +
                           std::to_string(item_bytes(type)) + " byte(s) each)");
    }
    const uint64_t count = qdq::element_count(shape);
    view.type = type;
    view.shape = shape;
    if (!is_sub_byte(type)) {
      view.data = array.data();
      view.size_bytes = count * itemsize;
      return;
    }
    // One code per byte -> ONNX's packed layout, checking every value is representable.
    const char kind = array.dtype().kind();
    const bool signed_items = kind == 'i';
    if (signed_items && !is_signed_sub_byte(type)) {
      throw py::type_error(std::string(what) + ": " + qdq::data_type_name(type) +
                           " codes must be given in an unsigned 8-bit array");
    }
    items = static_cast<const uint8_t*>(array.data());
    this->signed_items = signed_items;
    check_items = kind != 'V';
    view.data = items;
    view.size_bytes = qdq::storage_bytes(type, count);
    if (!defer_packing) pack_whole();
  }

  // Packs deferred items into a buffer of the whole tensor (call with the GIL held).
  void pack_whole() {
    if (items == nullptr) return;
    const uint64_t count = qdq::element_count(shape);
    const int bits = qdq::bit_width(view.type);
    packed = Buffer(view.size_bytes + 1);  // +1: never a zero-size buffer
    const auto pack = [&](uint64_t begin, uint64_t end) {
      return check_and_pack(items + begin, end - begin, bits, signed_items, check_items,
                            packed.get() + begin * static_cast<uint64_t>(bits) / 8);
    };
    if (!all_pieces_without_gil(count, pack)) throw_bad_item();
    view.data = packed.get();
    items = nullptr;
  }

  // For deferred items of int4, uint4, int2 or uint2 that are all values in 8-bit form (sign-extended
  // int8 for the signed types, uint8 codes for the unsigned ones, as qdq's results and CodeArrays hold
  // them): the same tensor as int8/uint8, read in place, with no packing pass nor packed buffer.
  // nullopt for other types, two's complement codes of signed types in uint8 items, and arrays
  // holding any other byte (left to pack_whole, which reports or masks them); the view is unchanged.
  std::optional<qdq::TensorView> as_byte_integers() const {
    if (!may_be_byte_integers()) return std::nullopt;
    const bool signed_type = is_signed_sub_byte(view.type);
    const uint64_t count = qdq::element_count(shape);
    const auto are_values = [&](uint64_t begin, uint64_t end) {
      return items_are_values(items + begin, end - begin, qdq::bit_width(view.type), signed_type);
    };
    if (!all_pieces_without_gil(count, are_values)) return std::nullopt;
    return qdq::TensorView{signed_type ? DataType::kInt8 : DataType::kUint8, shape, items, count};
  }

  // Whether the items are deferred two's complement codes of INT4/INT2, one per byte in the low bits
  // (an ml_dtypes array, or codes in a uint8 array): their bytes are not the values wherever a value
  // is negative, which in real data is at once.
  bool holds_signed_codes() const { return items != nullptr && is_signed_sub_byte(view.type) && !signed_items; }

  // For holds_signed_codes(): the same tensor as int8 values, sign-extended into a buffer of a byte per
  // element (`extended`), which the 8-bit kernel reads with no packing and no unpacking. nullopt for
  // other items, and where a uint8 array holds a byte beyond the codes (left to pack_whole, which
  // names it). The view is unchanged. Call with the GIL held.
  std::optional<qdq::TensorView> as_sign_extended_bytes() {
    if (!holds_signed_codes()) return std::nullopt;
    const uint64_t count = qdq::element_count(shape);
    const int bits = qdq::bit_width(view.type);
    extended = Buffer(count + 1);  // +1: never a zero-size buffer
    int8_t* const values = reinterpret_cast<int8_t*>(extended.get());
    const auto extend = [&](uint64_t begin, uint64_t end) {
      return sign_extend_codes(items + begin, end - begin, bits, values + begin) || !check_items;
    };
    if (!all_pieces_without_gil(count, extend)) return std::nullopt;
    return qdq::TensorView{DataType::kInt8, shape, extended.get(), count};
  }

  // as_byte_integers(), else (codes that are not all values: ml_dtypes' own layout wherever a value is
  // negative, which the check finds in its first piece) as_sign_extended_bytes(). Call with the GIL held.
  std::optional<qdq::TensorView> as_8_bit_integers() {
    if (std::optional<qdq::TensorView> values = as_byte_integers()) return values;
    return as_sign_extended_bytes();
  }

  // Whether as_byte_integers() can succeed: deferred items of the integer sub-byte types, in a form
  // whose bytes can be the values.
  bool may_be_byte_integers() const {
    if (items == nullptr || view.type == DataType::kFloat4E2M1) return false;
    return !(is_signed_sub_byte(view.type) && check_items && !signed_items);
  }

  [[noreturn]] void throw_bad_item() const {
    throw_bad_sub_byte_item(static_cast<const uint8_t*>(array.data()), qdq::element_count(shape),
                            qdq::bit_width(view.type), signed_items, view.type, what_);
  }

 private:
  void init_packed(const py::tuple& t, DataType type, const char* what) {
    if (t.size() != 2) throw py::type_error(std::string(what) + ": a packed tensor is (bytes, shape)");
    array = py::array::ensure(t[0]);
    if (!array || array.itemsize() != 1 || !(array.flags() & py::array::c_style)) {
      throw py::type_error(std::string(what) + ": packed bytes must be a C-contiguous 8-bit array");
    }
    const auto dims = py::cast<std::vector<int64_t>>(t[1]);
    shape.assign(dims.data(), dims.size());
    for (int64_t d : dims) {
      if (d < 0) throw py::value_error(std::string(what) + ": negative dimension " + std::to_string(d));
    }
    const uint64_t count = qdq::element_count(shape);
    const uint64_t bytes = qdq::storage_bytes(type, count);
    if (static_cast<uint64_t>(array.size()) != bytes) {
      throw py::value_error(std::string(what) + ": " + std::to_string(count) + " " + qdq::data_type_name(type) +
                            " elements take " + std::to_string(bytes) + " packed bytes, got " +
                            std::to_string(array.size()));
    }
    view.type = type;
    view.shape = shape;
    view.data = array.data();
    view.size_bytes = bytes;
  }

  const char* what_;
};

// An output tensor: a numpy array in this module's conventions (new, or the caller's `out`), written
// directly for types of 8 bits or more, through a packed buffer for sub-byte types; or, with
// `packed_result`, a new 1-D uint8 array of ONNX's packed bytes (raw_data) written by the library.
struct Output {
  DataType type;
  std::span<const int64_t> shape;  // the spec's, which the caller keeps while this lives
  py::array array = no_array();
  uint8_t* items = nullptr;  // array's buffer, taken while the GIL is held
  Buffer packed;
  bool unpack = false;
  qdq::MutableTensorView view;

  // out: None, or (array in this module's conventions, the type number the caller means it to hold).
  Output(const qdq::TensorSpec& spec, const py::object& out, bool packed_result) : type(spec.type), shape(spec.shape) {
    view.type = type;
    view.shape = shape;
    view.size_bytes = spec.size_bytes;
    if (packed_result) {
      if (!out.is_none()) throw py::type_error("out= and packed=True cannot be combined");
      const int64_t bytes[1] = {static_cast<int64_t>(spec.size_bytes)};
      array = pooled_array(py::dtype::of<uint8_t>(), bytes);
      view.data = array.mutable_data();
      return;
    }
    if (!out.is_none()) {
      const auto given = py::cast<py::tuple>(out);
      const auto out_type = static_cast<DataType>(py::cast<int64_t>(given[1]));
      if (out_type != type) {
        throw py::type_error("out: the result is " + qdq::data_type_name(type) + ", out holds " +
                             qdq::data_type_name(out_type));
      }
      if (!py::isinstance<py::array>(given[0])) throw py::type_error("out: expected a NumPy array");
      array = py::reinterpret_borrow<py::array>(given[0]);
      check_out(array);
    } else {
      array = pooled_array(result_dtype(type), shape);
    }
    items = static_cast<uint8_t*>(array.mutable_data());
    unpack = is_sub_byte(type);
    view.data = items;  // sub-byte types: for validation only, until prepare_whole() or a call in chunks
  }

  // Makes `view` the buffer a whole-tensor call writes: for sub-byte types a packed buffer that
  // finish() unpacks (a call in chunks brings its own). Thread-safe; needs no GIL.
  void prepare_whole() {
    if (!unpack || packed.get() != nullptr) return;
    packed = Buffer(view.size_bytes + 1);
    view.data = packed.get();
  }

  // Call without the GIL, after the library has written `view`.
  void finish() {
    if (!unpack) return;
    finish_unpack(packed.get(), type, qdq::element_count(shape), items);
  }

  static void finish_unpack(const uint8_t* packed_data, DataType type, uint64_t count, uint8_t* items) {
    const auto bits = static_cast<uint64_t>(qdq::bit_width(type));
    all_pieces(count, [&](uint64_t begin, uint64_t end) {
      unpack_codes(packed_data + begin * bits / 8, static_cast<int>(bits), end - begin, is_signed_sub_byte(type),
                   items + begin);
      return true;
    });
  }

 private:
  void check_out(const py::array& a) const {
    const py::dtype want = storage_dtype(type);
    if (!a.dtype().is(want) && !(a.dtype().kind() == want.kind() && a.itemsize() == want.itemsize())) {
      throw py::type_error("out: expected an array of " + py::cast<std::string>(want.attr("name")) + " items for " +
                           qdq::data_type_name(type) + ", got " + py::cast<std::string>(a.dtype().attr("name")));
    }
    const std::span<const int64_t> given(reinterpret_cast<const int64_t*>(a.shape()), static_cast<size_t>(a.ndim()));
    static_assert(sizeof(py::ssize_t) == sizeof(int64_t));
    if (!std::equal(given.begin(), given.end(), shape.begin(), shape.end())) {
      // Appended piece by piece: `separator + std::to_string(d)` made GCC 12 report a false
      // -Wstringop-overflow in that operator+.
      const auto join = [](std::span<const int64_t> dims) {
        std::string text;
        for (int64_t d : dims) {
          if (!text.empty()) text += ", ";
          text += std::to_string(d);
        }
        return text;
      };
      throw py::value_error("out: the result has shape [" + join(shape) + "], out has [" + join(shape_of(a)) + "]");
    }
    if (!(a.flags() & py::array::c_style) || !a.writeable()) {
      throw py::type_error("out: the array must be C-contiguous and writeable");
    }
  }
};

// A call split along the first dimension into chunks of rows, so that the sub-byte tensor's packed
// bytes go through a chunk-sized buffer that stays in cache between the library's kernel and the
// pack or unpack pass, instead of through a whole-tensor buffer written to and read back from memory.
// Each chunk is a complete operator call on a slice of x (rows [r0, r1)), of y, and of the scale and
// zero point where they vary along the first dimension; the elements are computed exactly as in one
// call. step == 0: no split (too small, or slices that would not start on a byte).
struct ChunkPlan {
  enum class Scale { kWhole, kRows, kBlocks };  // the scale for rows [r0, r1): all, its rows r0..r1, or r0/b..
  ChunkPlan() = default;

  int64_t rows = 0;
  int64_t step = 0;        // rows per chunk
  uint64_t row_elems = 0;  // elements of x per row
  Scale scale = Scale::kWhole;
  int64_t block = 1;
  uint64_t scale_row_elems = 0;  // elements of the scale per row of it

  // x: the validated input; sub_byte_bits: the bits of the tensor packed or unpacked per chunk;
  // threads: the threads the call may use.
  ChunkPlan(const qdq::TensorView& x, const qdq::TensorView& s, const qdq::TensorView* zp,
            std::optional<int64_t> axis_attribute, std::optional<int64_t> block_size, int sub_byte_bits, int threads) {
    // At most 256 Ki elements per chunk, one chunk per task: its packed bytes and codes (<= 384 KiB)
    // stay in the L2 of the core that runs it. With several threads, down to 32 Ki elements (the
    // library's own task grain), so that a call of 64 Ki elements and more has a chunk per thread.
    // Without that, the 8-bit kernel that this layer runs for a sub-byte type can stay on one thread,
    // since its time alone is short, and this layer's pass over the codes always does; the library's
    // sub-byte kernel for the same call, which `qdq bench` times, takes two (at 64 Ki on the 2-core
    // Intel machine the Python call read 1.7-2.5x the library's there, against 1.2x on one thread).
    constexpr uint64_t kChunkElems = uint64_t{1} << 18;
    constexpr uint64_t kMinChunkElems = uint64_t{1} << 15;
    const auto rank = static_cast<int64_t>(x.shape.size());
    const uint64_t count = qdq::element_count(x.shape);
    const uint64_t chunk_elems =
        threads > 1
            ? std::clamp<uint64_t>((count + static_cast<uint64_t>(threads) - 1) / static_cast<uint64_t>(threads),
                                   kMinChunkElems, kChunkElems)
            : kChunkElems;
    if (rank == 0 || x.shape[0] < 2 || count < 2 * chunk_elems) return;
    rows = x.shape[0];
    row_elems = count / static_cast<uint64_t>(rows);
    int64_t axis = axis_attribute.value_or(1);
    if (axis < 0) axis += rank;
    const uint64_t scale_count = qdq::element_count(s.shape);
    if (scale_count == 1) {
      scale = Scale::kWhole;
    } else if (block_size.value_or(0) > 0) {
      if (s.shape.empty()) return;
      scale = axis == 0 ? Scale::kBlocks : Scale::kRows;
      block = axis == 0 ? *block_size : 1;
      if (axis != 0 && s.shape[0] != rows) return;
      scale_row_elems = scale_count / static_cast<uint64_t>(s.shape[0]);
    } else if (axis == 0) {
      if (s.shape.size() != 1 || s.shape[0] != rows) return;
      scale = Scale::kRows;
      scale_row_elems = 1;
    } else {
      scale = Scale::kWhole;
    }
    const auto zp_bits = static_cast<uint64_t>(zp != nullptr && scale != Scale::kWhole ? qdq::bit_width(zp->type) : 8);
    // Every chunk (k rows, k a multiple of the block) starts on a byte of the packed tensor and of
    // a sub-byte zero point: at most 8 tries, as 8 blocks of rows always do.
    const auto aligned = [&](int64_t k) {
      const auto zp_rows = static_cast<uint64_t>(scale == Scale::kBlocks ? k / block : k);
      return static_cast<uint64_t>(k) * row_elems * static_cast<uint64_t>(sub_byte_bits) % 8 == 0 &&
             zp_rows * scale_row_elems * zp_bits % 8 == 0;
    };
    int64_t k = std::max<int64_t>(1, static_cast<int64_t>(chunk_elems / row_elems));
    k = (k + block - 1) / block * block;
    for (int i = 0; i < 8 && !aligned(k); ++i) k += block;
    if (!aligned(k) || k >= rows) return;
    step = k;
  }

  // Rows [a, b) of the scale or zero point that chunk rows [r0, r1) use.
  std::pair<int64_t, int64_t> scale_rows(int64_t r0, int64_t r1) const {
    if (scale == Scale::kRows) return {r0, r1};
    return {r0 / block, (r1 + block - 1) / block};
  }
};

// Rows [r0, r1) of a tensor of rows of `row_elems` elements (a ChunkPlan guarantees a byte start).
struct RowSlice {
  std::vector<int64_t> shape;
  uint8_t* data = nullptr;
  size_t size_bytes = 0;

  RowSlice(qdq::DataType type, std::span<const int64_t> full_shape, const void* base, int64_t r0, int64_t r1,
           uint64_t row_elems)
      : shape(full_shape.begin(), full_shape.end()) {
    if (!shape.empty()) shape[0] = r1 - r0;
    const auto bits = static_cast<uint64_t>(qdq::bit_width(type));
    data = const_cast<uint8_t*>(static_cast<const uint8_t*>(base)) + static_cast<uint64_t>(r0) * row_elems * bits / 8;
    size_bytes = qdq::storage_bytes(type, static_cast<uint64_t>(r1 - r0) * row_elems);
  }
  qdq::TensorView view(qdq::DataType type) const { return {type, shape, data, size_bytes}; }
};

// The scale (or zero point) view for chunk rows [r0, r1).
qdq::TensorView scale_slice(const ChunkPlan& plan, const qdq::TensorView& s, int64_t r0, int64_t r1,
                            std::optional<RowSlice>& storage) {
  if (plan.scale == ChunkPlan::Scale::kWhole) return s;
  const auto [a, b] = plan.scale_rows(r0, r1);
  storage.emplace(s.type, s.shape, s.data, a, b, plan.scale_row_elems);
  return storage->view(s.type);
}

// The QuantizeLinear operands of chunk rows [r0, r1): x's rows, and the scale's and zero point's
// rows where they vary along the first dimension. The views point into this object.
struct QuantizeChunk {
  RowSlice x;
  uint64_t elements;
  std::optional<RowSlice> scale_rows, zero_point_rows;
  qdq::TensorView scale;
  std::optional<qdq::TensorView> zero_point;

  QuantizeChunk(const ChunkPlan& plan, const qdq::TensorView& x_view, const qdq::TensorView& s,
                const qdq::TensorView* zp, int64_t r0, int64_t r1)
      : x(x_view.type, x_view.shape, x_view.data, r0, r1, plan.row_elems),
        elements(static_cast<uint64_t>(r1 - r0) * plan.row_elems),
        scale(scale_slice(plan, s, r0, r1, scale_rows)) {
    if (zp) zero_point = scale_slice(plan, *zp, r0, r1, zero_point_rows);
  }
  QuantizeChunk(const QuantizeChunk&) = delete;
  QuantizeChunk& operator=(const QuantizeChunk&) = delete;
  const qdq::TensorView* zero_point_or_null() const { return zero_point ? &*zero_point : nullptr; }
};

// A chunk's own call, on the thread of the task running it. whole_output_bytes: for a call that
// writes one chunk of a result straight into it, the result's bytes, so the kernel stores as the
// whole call would (non-temporal past the caches, where that measured faster); 0 for a chunk that
// is read back while in cache.
qdq::ExecutionOptions chunk_options(uint64_t whole_output_bytes = 0) {
  qdq::ExecutionOptions options;
  options.num_threads = 1;
  options.whole_output_bytes = whole_output_bytes;
  return options;
}

// Runs chunk(r0, r1) for every chunk of rows of `plan`, one task each on the library's threads, so
// that this layer's pass over a chunk (clamping, unpacking, checking) runs on the thread that just
// computed it, while that chunk is in its cache, and in parallel with the other chunks.
template <class Chunk>
void for_each_chunk(const ChunkPlan& plan, const Chunk& chunk) {
  const auto chunks = static_cast<size_t>((plan.rows + plan.step - 1) / plan.step);
  qdq::run_tasks(chunks, [&](size_t task) {
    const int64_t r0 = static_cast<int64_t>(task) * plan.step;
    chunk(r0, std::min(plan.rows, r0 + plan.step));
  });
}

// Scratch of at least `bytes` for the chunk the calling thread runs, kept for its next chunk (a fresh
// block of this size per chunk would be mapped and page-faulted each time).
uint8_t* chunk_scratch(size_t bytes) {
  thread_local std::unique_ptr<uint8_t[]> data;
  thread_local size_t size = 0;
  if (size < bytes) {
    data.reset();  // the old block first, and a size of 0 should the new one fail to allocate
    size = 0;
    data.reset(new uint8_t[bytes]);
    size = bytes;
  }
  return data.get();
}

// attributes: a dict name -> int of the attributes to set; others stay absent.
template <typename Attributes>
void set_attribute(Attributes& attrs, const std::string& name, int64_t value, const char* op);

template <>
void set_attribute(qdq::QuantizeLinearAttributes& attrs, const std::string& name, int64_t value, const char* op) {
  if (name == "axis") attrs.axis = value;
  else if (name == "saturate") attrs.saturate = value;
  else if (name == "block_size") attrs.block_size = value;
  else if (name == "output_dtype") attrs.output_dtype = value;
  else if (name == "precision") attrs.precision = value;
  else throw py::type_error(std::string(op) + " has no attribute '" + name + "'");
}

template <>
void set_attribute(qdq::DequantizeLinearAttributes& attrs, const std::string& name, int64_t value, const char* op) {
  if (name == "axis") attrs.axis = value;
  else if (name == "block_size") attrs.block_size = value;
  else if (name == "output_dtype") attrs.output_dtype = value;
  else throw py::type_error(std::string(op) + " has no attribute '" + name + "'");
}

template <typename Attributes>
Attributes make_attributes(const py::dict& attributes, int64_t opset, const char* op) {
  Attributes attrs;
  attrs.opset = opset;
  for (const auto& item : attributes) {
    set_attribute(attrs, py::cast<std::string>(item.first), py::cast<int64_t>(item.second), op);
  }
  return attrs;
}

// An operator's result: the array (new, or the caller's out=) and the ONNX type it holds.
struct Result {
  py::array array;
  DataType type;
  py::tuple tuple() const { return py::make_tuple(array, static_cast<int>(type)); }
};

// QuantizeLinear to int4, uint4, int2 or uint2 with the result one value per byte (validated
// already, `zi` deferred): the library writes the values straight into the result
// (qdq::CodeLayout::kOnePerByte: its 8-bit kernels, each task clamped to the narrow range in cache,
// on its own threads), with no packing by the kernel and no unpacking here.
Result quantize_as_byte_integers(const qdq::QuantizeLinearAttributes& attrs, const Input& xi, const Input& si,
                                 std::optional<Input>& zi, Output& y) {
  if (zi) zi->pack_whole();
  const uint64_t count = qdq::element_count(y.shape);
  const qdq::MutableTensorView values{y.type, y.shape, y.items, count, qdq::CodeLayout::kOnePerByte};
  {
    const GilRelease gil(count >= kReleaseGilElements);
    qdq::quantize_linear(attrs, xi.view, si.view, zi ? &zi->view : nullptr, values);
  }
  return {std::move(y.array), y.type};
}

// QuantizeLinear on arrays in this module's conventions; out: None or (array, type number). The
// attributes come parsed (from the dict of quantize_linear or the fast path's arguments).
Result quantize_linear_with(const qdq::QuantizeLinearAttributes& attrs, const py::object& x, int64_t x_type,
                            const py::object& scale, int64_t scale_type, const py::object& zero_point,
                            int64_t zero_point_type, const py::object& out, bool packed) {
  Input xi(x, to_type(x_type), "x");
  Input si(scale, to_type(scale_type), "scale");
  std::optional<Input> zi;
  if (!zero_point.is_none()) zi.emplace(zero_point, to_type(zero_point_type), "zero_point", /*defer_packing=*/true);
  const qdq::TensorView* zv = zi ? &zi->view : nullptr;
  // Validated with the types the caller gave (the operator version's type rules apply to those).
  const qdq::TensorSpec spec = qdq::quantize_linear_output(attrs, xi.view, si.view, zv);
  Output y(spec, out, packed);
  if (y.unpack && y.type != DataType::kFloat4E2M1) return quantize_as_byte_integers(attrs, xi, si, zi, y);
  if (zi) zi->pack_whole();
  const ChunkPlan plan = y.unpack ? ChunkPlan(xi.view, si.view, zv, attrs.axis, attrs.block_size,
                                              qdq::bit_width(y.type), qdq::default_num_threads())
                                  : ChunkPlan();
  {
    const GilRelease gil(qdq::element_count(xi.shape) >= kReleaseGilElements);
    if (plan.step == 0) {
      y.prepare_whole();
      qdq::quantize_linear(attrs, xi.view, si.view, zv, y.view);
      y.finish();
    } else {  // the kernel writes each chunk's packed bytes to scratch, unpacked from there while in cache
      const int bits = qdq::bit_width(y.type);
      const size_t scratch_bytes = qdq::storage_bytes(y.type, static_cast<uint64_t>(plan.step) * plan.row_elems) + 1;
      for_each_chunk(plan, [&](int64_t r0, int64_t r1) {
        const QuantizeChunk c(plan, xi.view, si.view, zv, r0, r1);
        uint8_t* const packed = chunk_scratch(scratch_bytes);
        const qdq::MutableTensorView yv{y.type, c.x.shape, packed, qdq::storage_bytes(y.type, c.elements)};
        qdq::quantize_linear(attrs, c.x.view(xi.view.type), c.scale, c.zero_point_or_null(), yv, chunk_options());
        unpack_codes(packed, bits, c.elements, is_signed_sub_byte(y.type),
                     y.items + static_cast<uint64_t>(r0) * plan.row_elems);
      });
    }
  }
  return {std::move(y.array), y.type};
}

// DequantizeLinear on arrays in this module's conventions, as quantize_linear_with.
Result dequantize_linear_with(const qdq::DequantizeLinearAttributes& attrs, const py::object& x, int64_t x_type,
                              const py::object& scale, int64_t scale_type, const py::object& zero_point,
                              int64_t zero_point_type, const py::object& out) {
  Input xi(x, to_type(x_type), "x", /*defer_packing=*/true);
  Input si(scale, to_type(scale_type), "scale");
  std::optional<Input> zi;
  if (!zero_point.is_none()) zi.emplace(zero_point, to_type(zero_point_type), "zero_point", /*defer_packing=*/true);
  const qdq::TensorView* zv = zi ? &zi->view : nullptr;
  // Validated with the types the caller gave (the operator version's type rules apply to those).
  const qdq::TensorSpec spec = qdq::dequantize_linear_output(attrs, xi.view, si.view, zv);
  if (xi.items != nullptr && !xi.check_items) {
    // An ml_dtypes sub-byte array (the low bits of each byte are the code): the library reads it in
    // place, one code per byte, as fast as packed codes; no pass of this layer over x.
    if (zi) zi->pack_whole();
    const qdq::TensorView x_items{xi.view.type, xi.view.shape, xi.items, qdq::element_count(xi.shape),
                                  qdq::CodeLayout::kOnePerByte};
    Output y(spec, out, false);
    {
      const GilRelease gil(x_items.size_bytes >= kReleaseGilElements);
      qdq::dequantize_linear(attrs, x_items, si.view, zi ? &zi->view : nullptr, y.view);
    }
    return {std::move(y.array), y.type};
  }
  // Into the caller's out=, x is checked whole before anything is written; a new result may be
  // abandoned half-written when a later chunk holds a bad item, so x is checked chunk by chunk.
  const ChunkPlan plan = xi.items && out.is_none() ? ChunkPlan(xi.view, si.view, zv, attrs.axis, attrs.block_size,
                                                               qdq::bit_width(xi.view.type), qdq::default_num_threads())
                                                   : ChunkPlan();
  if (plan.step == 0) {
    // Sub-byte integers given as 8-bit values (and their zero point likewise, or none) are the
    // same operator call on int8/uint8 tensors: (x - zero_point) * scale of the same integers,
    // rounded once. Read in place, they skip the packing pass and its buffer, most of the cost
    // beyond the kernel for a tensor that fits in cache. (Large calls do the same chunk by chunk
    // below, each chunk checked while it is in cache.)
    std::optional<qdq::TensorView> x8 = xi.as_8_bit_integers();
    std::optional<qdq::TensorView> z8;
    if (x8 && zi) z8 = zi->as_8_bit_integers();
    if (x8 && (!zi || z8)) {
      Output y(spec, out, false);
      {
        const GilRelease gil(x8->size_bytes >= kReleaseGilElements);
        qdq::dequantize_linear(attrs, *x8, si.view, z8 ? &*z8 : nullptr, y.view);
      }
      return {std::move(y.array), y.type};
    }
    xi.pack_whole();
  }
  // In chunks, one task each: each chunk is first read in place as int8/uint8 (with the zero point
  // in that form too) and then checked, while its items are in cache, to hold only 8-bit values; a
  // chunk that does not (ml_dtypes' own layout, or a bad item, found there) is packed into scratch
  // and computed again over the rows it wrote, and the chunks started after that are packed straight
  // away. Checked after the kernel, not before: a check before it would read each chunk from memory
  // once more. Two's complement codes of INT4/INT2 (ml_dtypes' own arrays, uint8 CodeArrays) are not
  // values wherever a value is negative: where a chunk fails the check (or, for uint8 items, from the
  // start) chunks are sign-extended into scratch instead, for the same 8-bit kernel.
  enum ChunkMode : int { kInPlace, kSignExtended, kPacked };
  std::optional<qdq::TensorView> z8;
  const bool x_codes = xi.holds_signed_codes();
  const bool bytes_possible =
      plan.step != 0 && (x_codes || xi.may_be_byte_integers()) && (!zi || (z8 = zi->as_8_bit_integers()).has_value());
  if (zi) zi->pack_whole();
  Output y(spec, out, false);
  // ml_dtypes' own layout shows in the first few items of real data: such x starts sign-extended, so
  // that its first chunks (one per thread) are not computed twice.
  constexpr uint64_t kProbeItems = 4096;
  const bool starts_as_codes =
      x_codes && (!xi.may_be_byte_integers() ||
                  !items_are_values(xi.items, std::min<uint64_t>(kProbeItems, qdq::element_count(xi.shape)),
                                    qdq::bit_width(xi.view.type), true));
  std::atomic<int> chunk_mode{!bytes_possible ? kPacked : starts_as_codes ? kSignExtended : kInPlace};
  std::atomic<bool> bad_item{false};
  {
    const GilRelease gil(qdq::element_count(xi.shape) >= kReleaseGilElements);
    if (plan.step == 0) {
      y.prepare_whole();
      qdq::dequantize_linear(attrs, xi.view, si.view, zv, y.view);
      y.finish();
    } else {
      const DataType xt = xi.view.type;
      const int bits = qdq::bit_width(xt);
      const uint64_t chunk_elements = static_cast<uint64_t>(plan.step) * plan.row_elems;
      const size_t scratch_bytes = (x_codes ? chunk_elements : qdq::storage_bytes(xt, chunk_elements)) + 1;
      const bool signed_type = is_signed_sub_byte(xt);
      for_each_chunk(plan, [&](int64_t r0, int64_t r1) {
        if (bad_item.load(std::memory_order_relaxed)) return;  // the call fails: skip the rest
        const uint64_t n = static_cast<uint64_t>(r1 - r0) * plan.row_elems;
        const uint8_t* chunk_items = xi.items + static_cast<uint64_t>(r0) * plan.row_elems;
        const RowSlice ys(y.type, y.view.shape, y.view.data, r0, r1, plan.row_elems);
        const qdq::MutableTensorView yv{y.type, ys.shape, ys.data, ys.size_bytes};
        std::optional<RowSlice> ss, zs;
        const qdq::TensorView sv = scale_slice(plan, si.view, r0, r1, ss);
        qdq::TensorView zslice;
        int mode = chunk_mode.load(std::memory_order_relaxed);
        if (zv && mode != kPacked) zslice = scale_slice(plan, *z8, r0, r1, zs);  // both 8-bit modes' zero points
        if (mode == kInPlace) {
          const qdq::TensorView xv{signed_type ? DataType::kInt8 : DataType::kUint8, ys.shape, chunk_items, n};
          qdq::dequantize_linear(attrs, xv, sv, zv ? &zslice : nullptr, yv, chunk_options(spec.size_bytes));
          if (items_are_values(chunk_items, n, bits, signed_type)) return;
          mode = x_codes ? kSignExtended : kPacked;
          chunk_mode.store(mode, std::memory_order_relaxed);
        }
        if (mode == kSignExtended) {
          auto* const values = reinterpret_cast<int8_t*>(chunk_scratch(scratch_bytes));
          if (sign_extend_codes(chunk_items, n, bits, values) || !xi.check_items) {
            const qdq::TensorView xv{DataType::kInt8, ys.shape, values, n};
            qdq::dequantize_linear(attrs, xv, sv, zv ? &zslice : nullptr, yv, chunk_options(spec.size_bytes));
            return;
          }
          // A uint8 array's byte beyond the codes: the packing pass below names it.
        }
        uint8_t* const packed = chunk_scratch(scratch_bytes);
        if (!check_and_pack(chunk_items, n, bits, xi.signed_items, xi.check_items, packed)) {
          bad_item.store(true, std::memory_order_relaxed);
          return;
        }
        if (zv) zslice = scale_slice(plan, *zv, r0, r1, zs);
        const qdq::TensorView xv{xt, ys.shape, packed, qdq::storage_bytes(xt, n)};
        qdq::dequantize_linear(attrs, xv, sv, zv ? &zslice : nullptr, yv, chunk_options(spec.size_bytes));
      });
    }
  }
  if (bad_item) xi.throw_bad_item();
  return {std::move(y.array), y.type};
}

py::tuple quantize_linear(const py::object& x, int64_t x_type, const py::object& scale, int64_t scale_type,
                          const py::object& zero_point, int64_t zero_point_type, const py::dict& attributes,
                          int64_t opset, const py::object& out, bool packed) {
  const auto attrs = make_attributes<qdq::QuantizeLinearAttributes>(attributes, opset, "QuantizeLinear");
  return quantize_linear_with(attrs, x, x_type, scale, scale_type, zero_point, zero_point_type, out, packed).tuple();
}

py::tuple dequantize_linear(const py::object& x, int64_t x_type, const py::object& scale, int64_t scale_type,
                            const py::object& zero_point, int64_t zero_point_type, const py::dict& attributes,
                            int64_t opset, const py::object& out) {
  const auto attrs = make_attributes<qdq::DequantizeLinearAttributes>(attributes, opset, "DequantizeLinear");
  return dequantize_linear_with(attrs, x, x_type, scale, scale_type, zero_point, zero_point_type, out).tuple();
}

// Median seconds of one call of the library's operator alone, as `qdq bench` times it: the tensors
// prepared once (sub-byte ones packed, a packed result buffer), then `samples` samples of `calls`
// calls on the calling thread's view of qdq's pool. For scripts/bench_python.py, which alternates it
// with the Python call to compare the two under the same machine load. Allocates the tensors once.
double time_library_call(bool quantize, const py::object& x, int64_t x_type, const py::object& scale,
                         int64_t scale_type, const py::object& zero_point, int64_t zero_point_type,
                         const py::dict& attributes, int64_t opset, int64_t calls, int64_t samples) {
  Input xi(x, to_type(x_type), "x");
  Input si(scale, to_type(scale_type), "scale");
  std::optional<Input> zi;
  if (!zero_point.is_none()) zi.emplace(zero_point, to_type(zero_point_type), "zero_point");
  const qdq::TensorView* zv = zi ? &zi->view : nullptr;
  const auto qa = make_attributes<qdq::QuantizeLinearAttributes>(attributes, opset, "QuantizeLinear");
  const auto da = quantize ? qdq::DequantizeLinearAttributes{}
                           : make_attributes<qdq::DequantizeLinearAttributes>(attributes, opset, "DequantizeLinear");
  const qdq::TensorSpec spec = quantize ? qdq::quantize_linear_output(qa, xi.view, si.view, zv)
                                        : qdq::dequantize_linear_output(da, xi.view, si.view, zv);
  Output y(spec, py::none(), /*packed_result=*/true);
  std::vector<double> seconds;
  {
    py::gil_scoped_release release;
    for (int64_t r = 0; r < std::max<int64_t>(1, samples); ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < calls; ++i) {
        if (quantize) {
          qdq::quantize_linear(qa, xi.view, si.view, zv, y.view);
        } else {
          qdq::dequantize_linear(da, xi.view, si.view, zv, y.view);
        }
      }
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                        static_cast<double>(std::max<int64_t>(1, calls)));
    }
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

py::tuple dynamic_quantize_linear(const py::object& x, int64_t x_type, int64_t opset, const py::object& out) {
  Input xi(x, to_type(x_type), "x");
  qdq::TensorSpec spec;
  spec.type = DataType::kUint8;
  spec.shape = xi.shape.vector();
  spec.size_bytes = qdq::element_count(xi.shape);
  Output y(spec, out, false);
  qdq::DynamicQuantizationParameters params;
  {
    const GilRelease gil(spec.size_bytes >= kReleaseGilElements);
    y.prepare_whole();
    params = qdq::dynamic_quantize_linear(xi.view, y.view, qdq::ExecutionOptions{}, opset);
  }
  return py::make_tuple(y.array, params.y_scale, params.y_zero_point);
}

// The ONNX raw_data bytes of a tensor (module conventions or ml_dtypes sub-byte array in, 1-D uint8 out).
py::array pack(const py::object& array, int64_t type) {
  Input in(array, to_type(type), "array");
  py::array bytes(py::dtype("uint8"), std::vector<py::ssize_t>{static_cast<py::ssize_t>(in.view.size_bytes)});
  const auto* src = static_cast<const uint8_t*>(in.view.data);
  std::copy(src, src + in.view.size_bytes, static_cast<uint8_t*>(bytes.mutable_data()));
  return bytes;
}

// A tensor of `shape` from its ONNX raw_data bytes, in the module's conventions.
py::array unpack(const py::object& bytes, int64_t type, const std::vector<int64_t>& shape) {
  const DataType t = to_type(type);
  Input in(py::make_tuple(bytes, shape), t, "bytes");
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::array result(storage_dtype(t), dims);
  const uint64_t count = qdq::element_count(shape);
  auto* items = static_cast<uint8_t*>(result.mutable_data());
  py::gil_scoped_release release;
  if (is_sub_byte(t)) {
    Output::finish_unpack(static_cast<const uint8_t*>(in.view.data), t, count, items);
  } else if (in.view.size_bytes) {
    const auto* src = static_cast<const uint8_t*>(in.view.data);
    std::copy(src, src + in.view.size_bytes, items);
  }
  return result;
}

// --- the fast path of qdq.quantize_linear, dequantize_linear and dynamic_quantize_linear ---------
//
// At tens of thousands of elements a call's fixed cost was a large part of it: the Python layer's
// argument handling and pybind11's dispatch cost about as much as an 8-bit kernel. These functions take
// the public functions' arguments as they are (METH_FASTCALL, no pybind11 dispatch), handle the common
// forms (plain C-contiguous arrays whose dtype object is one the Python layer registered, NumPy
// scalars, CodeArray and PackedTensor inputs, plain ints for attributes, known type names) and return
// NotImplemented for anything else, which the Python layer then handles itself: every error message
// and every unusual argument stays with the one general path, and both reach the same
// quantize_linear_with / dequantize_linear_with calls with the same values.

// What the Python layer registers once at import (_set_fast_path); read with the GIL held.
struct FastPath {
  bool ready = false;
  std::vector<std::pair<PyObject*, int>> raw_dtypes;     // dtype object -> type (NumPy's and ml_dtypes')
  std::vector<std::pair<PyObject*, int>> native_dtypes;  // dtype object -> type (NumPy's only)
  std::vector<std::pair<PyObject*, int>> scalar_types;   // np.float32, ... -> type
  std::vector<bool> code_type;                           // by type number: a type NumPy lacks
  py::object type_by_name;  // the Python layer's dict of resolved type names (it keeps filling it)
  py::object axis_default, code_array, packed_tensor, as_output, make_packed, float32, uint8;
  py::object keep_alive;  // the registered tables, whose keys raw_dtypes and the others point at
};

FastPath& fast_path() {
  static auto* state = new FastPath;  // never destroyed: outlives the interpreter's teardown
  return *state;
}

// The type number registered for the object `key` (compared by identity: a dtype object or a scalar
// type), or 0 (kUndefined) when it is not in the table.
int lookup(const std::vector<std::pair<PyObject*, int>>& table, PyObject* key) {
  for (const auto& [k, t] : table) {
    if (k == key) return t;
  }
  return 0;
}

// An exact int (not a bool, not an int subclass) that fits int64_t.
bool exact_int(PyObject* o, int64_t* value) {
  if (!PyLong_CheckExact(o)) return false;
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return false;
  }
  *value = v;
  return true;
}

// A type given as output_dtype or precision: 0 (absent), a type number, or -1 (general path).
int64_t type_argument(PyObject* o) {
  if (o == Py_None) return 0;
  int64_t v;
  if (exact_int(o, &v))
    return v == 0 || (qdq::is_known_data_type(static_cast<int32_t>(v)) && v >= 1 && v <= 26 && v != 8 && v != 14 &&
                      v != 15)
               ? v
               : -1;
  if (PyUnicode_CheckExact(o)) {
    PyObject* t = PyDict_GetItemWithError(fast_path().type_by_name.ptr(), o);  // borrowed
    if (t != nullptr && exact_int(t, &v)) return v;
    PyErr_Clear();
  }
  return -1;
}

bool c_contiguous_aligned(PyObject* a) {
  constexpr int kFlags = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_ALIGNED_;
  return (py::detail::array_proxy(a)->flags & kFlags) == kFlags;
}

// An input as the general path's _as_input gives it to the compiled layer: (array or (bytes, shape)
// tuple, type number); type 0 when the general path must take it. raw_sub_byte as there.
std::pair<py::object, int> fast_input(PyObject* value, bool raw_sub_byte) {
  FastPath& fp = fast_path();
  const auto& api = py::detail::npy_api::get();
  PyTypeObject* kind = Py_TYPE(value);
  if (kind == api.PyArray_Type_) {
    const int t = lookup(raw_sub_byte ? fp.raw_dtypes : fp.native_dtypes, py::detail::array_proxy(value)->descr);
    if (t != 0 && c_contiguous_aligned(value)) return {py::reinterpret_borrow<py::object>(value), t};
    return {py::object(), 0};
  }
  if (reinterpret_cast<PyObject*>(kind) == fp.code_array.ptr()) {
    // Its items are read as they are; the dtype must be one of NumPy's own (native) ones.
    if (lookup(fp.native_dtypes, py::detail::array_proxy(value)->descr) == 0 || !c_contiguous_aligned(value)) {
      return {py::object(), 0};
    }
    PyObject* name = PyObject_GetAttrString(value, "qdq_dtype");
    if (name == nullptr) {
      PyErr_Clear();
      return {py::object(), 0};
    }
    const py::object owned = py::reinterpret_steal<py::object>(name);
    PyObject* t = PyUnicode_CheckExact(name) ? PyDict_GetItemWithError(fp.type_by_name.ptr(), name) : nullptr;
    int64_t v;
    if (t != nullptr && exact_int(t, &v)) return {py::reinterpret_borrow<py::object>(value), static_cast<int>(v)};
    PyErr_Clear();
    return {py::object(), 0};
  }
  if (reinterpret_cast<PyObject*>(kind) == fp.packed_tensor.ptr()) {
    if (!raw_sub_byte) return {py::object(), 0};
    const py::object packed = py::reinterpret_borrow<py::object>(value);
    const py::object dtype = packed.attr("dtype");
    PyObject* t =
        PyUnicode_CheckExact(dtype.ptr()) ? PyDict_GetItemWithError(fp.type_by_name.ptr(), dtype.ptr()) : nullptr;
    int64_t v;
    if (t == nullptr || !exact_int(t, &v)) {
      PyErr_Clear();
      return {py::object(), 0};
    }
    return {py::make_tuple(packed.attr("data"), py::list(packed.attr("shape"))), static_cast<int>(v)};
  }
  const int t = lookup(fp.scalar_types, reinterpret_cast<PyObject*>(kind));  // np.float32(0.02), ...
  if (t != 0) {
    PyObject* a = api.PyArray_FromAny_(value, nullptr, 0, 0, 0, nullptr);
    if (a == nullptr) throw py::error_already_set();
    return {py::reinterpret_steal<py::object>(a), t};
  }
  return {py::object(), 0};
}

// The x, scale and zero point (args[0..2], the zero point None where absent) of QuantizeLinear and
// DequantizeLinear as fast_input gives them; false where the general path must take any of them.
struct FastOperands {
  py::object x, s, z = py::none();
  int xt = 0, st = 0, zt = 0;
};
bool fast_operands(PyObject* const* args, FastOperands* o) {
  std::tie(o->x, o->xt) = fast_input(args[0], true);
  if (o->xt == 0) return false;
  std::tie(o->s, o->st) = fast_input(args[1], true);
  if (o->st == 0) return false;
  if (args[2] == Py_None) return true;
  std::tie(o->z, o->zt) = fast_input(args[2], true);
  return o->zt != 0;
}

// out= as the general path's _as_out gives it: None, or (storage view, type number); a null object
// when the general path must take it.
py::object fast_out(PyObject* out) {
  if (out == Py_None) return py::none();
  FastPath& fp = fast_path();
  const auto& api = py::detail::npy_api::get();
  if (Py_TYPE(out) != api.PyArray_Type_) return py::object();
  const int t = lookup(fp.raw_dtypes, py::detail::array_proxy(out)->descr);
  if (t == 0) return py::object();
  if (!fp.code_type[static_cast<size_t>(t)]) return py::make_tuple(py::reinterpret_borrow<py::object>(out), t);
  py::dtype storage = storage_dtype(static_cast<DataType>(t));
  PyObject* view = api.PyArray_View_(out, storage.release().ptr(), nullptr);  // steals the dtype
  if (view == nullptr) throw py::error_already_set();
  return py::make_tuple(py::reinterpret_steal<py::object>(view), t);
}

// The general path's _result: the caller's out=, or the result in the user's representation.
PyObject* fast_result(Result&& result, PyObject* out) {
  if (out != Py_None) {
    Py_INCREF(out);
    return out;
  }
  const auto index = static_cast<size_t>(result.type);
  if (fast_path().code_type[index] && !(index < result_dtypes().size() && result_dtypes()[index])) {
    return fast_path().as_output(result.array, static_cast<int>(result.type)).release().ptr();
  }
  return result.array.release().ptr();
}

// Runs `body` as pybind11's dispatch would: C++ exceptions become the Python exceptions the module's
// functions raise (qdq::Error: ValueError).
template <typename Body>
PyObject* translated(Body&& body) {
  try {
    return body();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const qdq::Error& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const std::bad_alloc&) {
    PyErr_SetString(PyExc_MemoryError, "std::bad_alloc");
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyObject* not_handled() { Py_RETURN_NOTIMPLEMENTED; }

// _fast_quantize_linear(x, scale, zero_point, axis, block_size, saturate, output_dtype, precision,
// opset, out, packed): qdq.quantize_linear's result, or NotImplemented.
PyObject* fast_quantize_linear(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return translated([&]() -> PyObject* {
    if (nargs != 11 || !fast_path().ready) return not_handled();
    qdq::QuantizeLinearAttributes attrs;
    int64_t v;
    if (args[3] != fast_path().axis_default.ptr()) {
      if (!exact_int(args[3], &v)) return not_handled();
      attrs.axis = v;
    }
    if (!exact_int(args[4], &v)) return not_handled();
    if (v != 0) attrs.block_size = v;
    if (args[5] == Py_False) {
      attrs.saturate = 0;
    } else if (args[5] != Py_True) {
      if (!exact_int(args[5], &v)) return not_handled();
      if (v != 1) attrs.saturate = v;
    }
    const int64_t output_dtype = type_argument(args[6]);
    const int64_t precision = type_argument(args[7]);
    if (output_dtype < 0 || precision < 0 || !exact_int(args[8], &v)) return not_handled();
    if (output_dtype != 0) attrs.output_dtype = output_dtype;
    if (precision != 0) attrs.precision = precision;
    attrs.opset = v;
    if (args[10] != Py_True && args[10] != Py_False) return not_handled();
    const bool packed = args[10] == Py_True;
    FastOperands o;
    if (!fast_operands(args, &o)) return not_handled();
    const py::object out = fast_out(args[9]);
    if (!out) return not_handled();
    Result result = quantize_linear_with(attrs, o.x, o.xt, o.s, o.st, o.z, o.zt, out, packed);
    if (packed) {
      const py::object shape = py::isinstance<py::tuple>(o.x) ? py::tuple(py::cast<py::tuple>(o.x)[1])
                                                              : py::tuple(py::cast<py::array>(o.x).attr("shape"));
      return fast_path().make_packed(result.array, static_cast<int>(result.type), shape).release().ptr();
    }
    return fast_result(std::move(result), args[9]);
  });
}

// _fast_dequantize_linear(x, scale, zero_point, axis, block_size, output_dtype, opset, out):
// qdq.dequantize_linear's result, or NotImplemented.
PyObject* fast_dequantize_linear(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return translated([&]() -> PyObject* {
    if (nargs != 8 || !fast_path().ready) return not_handled();
    qdq::DequantizeLinearAttributes attrs;
    int64_t v;
    if (args[3] != fast_path().axis_default.ptr()) {
      if (!exact_int(args[3], &v)) return not_handled();
      attrs.axis = v;
    }
    if (!exact_int(args[4], &v)) return not_handled();
    if (v != 0) attrs.block_size = v;
    const int64_t output_dtype = type_argument(args[5]);
    if (output_dtype < 0 || !exact_int(args[6], &v)) return not_handled();
    if (output_dtype != 0) attrs.output_dtype = output_dtype;
    attrs.opset = v;
    FastOperands o;
    if (!fast_operands(args, &o)) return not_handled();
    const py::object out = fast_out(args[7]);
    if (!out) return not_handled();
    return fast_result(dequantize_linear_with(attrs, o.x, o.xt, o.s, o.st, o.z, o.zt, out), args[7]);
  });
}

// _fast_dynamic_quantize_linear(x, opset, out): qdq.dynamic_quantize_linear's result, or
// NotImplemented.
PyObject* fast_dynamic_quantize_linear(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return translated([&]() -> PyObject* {
    if (nargs != 3 || !fast_path().ready) return not_handled();
    int64_t opset;
    if (!exact_int(args[1], &opset)) return not_handled();
    auto [x, xt] = fast_input(args[0], false);
    if (xt == 0) return not_handled();
    const py::object out = fast_out(args[2]);
    if (!out) return not_handled();
    const py::tuple r = dynamic_quantize_linear(x, xt, opset, out);
    const py::object y = args[2] == Py_None ? py::object(r[0]) : py::reinterpret_borrow<py::object>(args[2]);
    return py::make_tuple(y, fast_path().float32(r[1]), fast_path().uint8(r[2])).release().ptr();
  });
}

PyMethodDef fast_path_methods[] = {
    {"_fast_quantize_linear", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&fast_quantize_linear)),
     METH_FASTCALL, nullptr},
    {"_fast_dequantize_linear", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&fast_dequantize_linear)),
     METH_FASTCALL, nullptr},
    {"_fast_dynamic_quantize_linear",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&fast_dynamic_quantize_linear)), METH_FASTCALL,
     nullptr},
};

// The public qdq.quantize_linear, qdq.dequantize_linear and qdq.dynamic_quantize_linear: the fast
// path above called straight from the caller's arguments, with no Python frame in between (a third of
// a small call's cost in the Python layer), and otherwise the Python layer's general function, called
// with the same arguments, which then converts, or raises its usual errors (unknown or repeated
// keywords included). Each reads the public signature: `names` lists its parameters in the fast
// path's order, the first `positional` of them positional-or-keyword, the rest keyword-only, and
// `defaults` holds each one's default (nullptr: required).
struct EntryPoint {
  const char* const* names;
  size_t count;
  Py_ssize_t positional;
  PyObject* (*fast)(PyObject*, PyObject* const*, Py_ssize_t);
  std::vector<PyObject*> interned;  // the names as interned strings (set by _entry_points)
  std::vector<PyObject*> defaults;  // owned references, kept for the process's life
  py::object general;               // the Python layer's function for every other call
};

constexpr const char* kQuantizeNames[] = {"x",          "scale",    "zero_point",   "axis",
                                          "block_size", "saturate", "output_dtype", "precision",
                                          "opset",      "out",      "packed"};
constexpr const char* kDequantizeNames[] = {"x",          "scale",        "zero_point", "axis",
                                            "block_size", "output_dtype", "opset",      "out"};
constexpr const char* kDynamicNames[] = {"x", "opset", "out"};

EntryPoint& entry_point(int which) {
  static auto* entries = new EntryPoint[3]{
      {kQuantizeNames, std::size(kQuantizeNames), 3, &fast_quantize_linear, {}, {}, {}},
      {kDequantizeNames, std::size(kDequantizeNames), 3, &fast_dequantize_linear, {}, {}, {}},
      {kDynamicNames, std::size(kDynamicNames), 1, &fast_dynamic_quantize_linear, {}, {}, {}},
  };  // never destroyed, like FastPath
  return entries[which];
}

// The parameter `name` (a keyword of the call) stands for, or -1.
Py_ssize_t parameter_index(const EntryPoint& e, PyObject* name) {
  for (size_t i = 0; i < e.count; ++i) {
    if (e.interned[i] == name) return static_cast<Py_ssize_t>(i);  // call sites' keywords are interned
  }
  for (size_t i = 0; i < e.count; ++i) {  // keyword names are always str: the comparison cannot fail
    if (PyUnicode_Compare(e.interned[i], name) == 0) return static_cast<Py_ssize_t>(i);
  }
  return -1;
}

template <int kWhich>
PyObject* entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const EntryPoint& e = entry_point(kWhich);
  static_assert(std::size(kQuantizeNames) >= std::size(kDequantizeNames) &&
                std::size(kQuantizeNames) >= std::size(kDynamicNames));
  PyObject* full[std::size(kQuantizeNames)];
  bool fits = nargs <= e.positional;
  if (fits) {
    std::copy(e.defaults.begin(), e.defaults.end(), full);
    std::copy(args, args + nargs, full);
    const Py_ssize_t keywords = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < keywords && fits; ++k) {
      const Py_ssize_t i = parameter_index(e, PyTuple_GET_ITEM(kwnames, k));
      fits = i >= nargs;  // a known name, not also given by position
      if (fits) full[i] = args[nargs + k];
    }
    for (size_t i = 0; i < e.count && fits; ++i) fits = full[i] != nullptr;
  }
  if (fits) {
    PyObject* result = e.fast(nullptr, full, static_cast<Py_ssize_t>(e.count));
    if (result != Py_NotImplemented) return result;  // the result, or the fast path's error
    Py_DECREF(result);
  }
  return PyObject_Vectorcall(e.general.ptr(), args, static_cast<size_t>(nargs), kwnames);
}

// A dict of objects -> type numbers as a table of the objects (FastPath::keep_alive holds the dicts).
std::vector<std::pair<PyObject*, int>> object_table(const py::dict& d) {
  std::vector<std::pair<PyObject*, int>> table;
  for (const auto& [key, value] : d) table.emplace_back(key.ptr(), py::cast<int>(value));
  return table;
}

#ifdef QDQ_PYTHON_WITH_ONNX

// Moves a tensor's bytes into a numpy array without copying (types of 8 bits or more) or unpacks
// them (sub-byte types).
py::tuple tensor_to_python(qdq::onnx::Tensor&& t) {
  std::vector<py::ssize_t> dims(t.shape.begin(), t.shape.end());
  const uint64_t count = qdq::element_count(t.shape);
  py::array array = no_array();
  if (is_sub_byte(t.type)) {
    array = py::array(storage_dtype(t.type), dims);
    Output::finish_unpack(t.data.data(), t.type, count, static_cast<uint8_t*>(array.mutable_data()));
  } else {
    py::dtype dtype = storage_dtype(t.type);
    auto* owner = new std::vector<uint8_t>(std::move(t.data));
    if (owner->empty()) owner->resize(1);  // a valid pointer for empty tensors
    py::capsule base(owner, [](void* p) { delete static_cast<std::vector<uint8_t>*>(p); });
    array = py::array(dtype, dims, {}, owner->data(), base);
  }
  return py::make_tuple(array, static_cast<int>(t.type), t.name);
}

py::tuple load_tensor(const std::string& path) {
  qdq::onnx::Tensor t;
  {
    py::gil_scoped_release release;
    t = qdq::onnx::read_tensor_file(path);
  }
  const DataType type = t.type;
  storage_dtype(type);  // rejects types this module cannot represent, before any work
  return tensor_to_python(std::move(t));
}

void save_tensor(const std::string& path, const py::object& array, int64_t type, const std::string& name) {
  Input in(array, to_type(type), "array");
  qdq::onnx::Tensor t;
  t.type = in.view.type;
  t.shape = in.shape.vector();
  t.name = name;
  const auto* bytes = static_cast<const uint8_t*>(in.view.data);
  t.data.assign(bytes, bytes + in.view.size_bytes);
  py::gil_scoped_release release;
  qdq::onnx::write_tensor_file(path, t);
}

py::dict read_model_node(const std::string& path) {
  const qdq::onnx::Model model = qdq::onnx::read_model_file(path);
  if (model.nodes.size() != 1) {
    throw qdq::Error(path + ": has " + std::to_string(model.nodes.size()) + " nodes, expected exactly one");
  }
  const qdq::onnx::Node& node = model.nodes[0];
  py::dict attributes;
  for (const auto& a : node.attributes) attributes[py::str(a.name)] = a.i;
  std::vector<std::string> graph_inputs;
  for (const auto& vi : model.inputs) {
    bool initializer = false;
    for (const auto& init : model.initializers) initializer = initializer || init.name == vi.name;
    if (!initializer) graph_inputs.push_back(vi.name);
  }
  std::vector<std::string> graph_outputs;
  for (const auto& vi : model.outputs) graph_outputs.push_back(vi.name);
  py::dict d;
  d["opset"] = model.opset;
  d["op_type"] = node.op_type;
  d["domain"] = node.domain;
  d["attributes"] = attributes;
  d["inputs"] = node.inputs;
  d["outputs"] = node.outputs;
  d["graph_inputs"] = graph_inputs;
  d["graph_outputs"] = graph_outputs;
  return d;
}

#endif  // QDQ_PYTHON_WITH_ONNX

}  // namespace

PYBIND11_MODULE(_qdq, m) {
  m.doc() = "qdq's compiled core; use the qdq package, not this module.";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const qdq::Error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  m.attr("__version__") = std::string(qdq::version());
  m.attr("HAVE_ONNX_IO") =
#ifdef QDQ_PYTHON_WITH_ONNX
      true;
#else
      false;
#endif

  m.def("quantize_linear", &quantize_linear, py::arg("x"), py::arg("x_type"), py::arg("scale"), py::arg("scale_type"),
        py::arg("zero_point").none(true), py::arg("zero_point_type"), py::arg("attributes"), py::arg("opset"),
        py::arg("out") = py::none(), py::arg("packed") = false);
  m.def("dequantize_linear", &dequantize_linear, py::arg("x"), py::arg("x_type"), py::arg("scale"),
        py::arg("scale_type"), py::arg("zero_point").none(true), py::arg("zero_point_type"), py::arg("attributes"),
        py::arg("opset"), py::arg("out") = py::none());
  m.def("dynamic_quantize_linear", &dynamic_quantize_linear, py::arg("x"), py::arg("x_type"), py::arg("opset") = 11,
        py::arg("out") = py::none());
  m.def("_time_library_call", &time_library_call, py::arg("quantize"), py::arg("x"), py::arg("x_type"),
        py::arg("scale"), py::arg("scale_type"), py::arg("zero_point").none(true), py::arg("zero_point_type"),
        py::arg("attributes"), py::arg("opset"), py::arg("calls"), py::arg("samples") = 1);
  m.def("pack", &pack, py::arg("array"), py::arg("type"));
  m.def("unpack", &unpack, py::arg("bytes"), py::arg("type"), py::arg("shape"));
  m.def("parse_data_type", [](const std::string& name) -> std::optional<int> {
    const auto t = qdq::parse_data_type(name);
    if (!t) return std::nullopt;
    return static_cast<int>(*t);
  });
  m.def("data_type_name", [](int64_t type) { return qdq::data_type_name(static_cast<DataType>(type)); });
  m.def("bit_width", [](int64_t type) { return qdq::bit_width(to_type(type)); });
  m.def("storage_dtype", [](int64_t type) { return storage_dtype(to_type(type)); });
  m.def("set_num_threads", [](int n) {
    if (n < 0) throw py::value_error("set_num_threads: the thread count must be >= 0, got " + std::to_string(n));
    qdq::set_default_num_threads(n);
  });
  m.def("get_num_threads", &qdq::default_num_threads);
  m.def("set_buffer_cache", [](int64_t bytes) {
    if (bytes < 0) {
      throw py::value_error("set_buffer_cache: the byte count must be >= 0, got " + std::to_string(bytes));
    }
    return BlockPool::instance().set_limit(static_cast<size_t>(bytes));
  });
  m.def("buffer_cache_bytes", [] { return BlockPool::instance().kept_bytes(); });
  m.def("set_result_dtypes", [](const py::dict& dtypes) {  // replaces the whole table
    std::vector<py::object> table(result_dtypes().size());
    for (const auto& [key, value] : dtypes) {
      const DataType type = to_type(py::cast<int64_t>(key));
      const py::dtype dtype = py::reinterpret_borrow<py::dtype>(value);
      if (!py::isinstance<py::dtype>(value) || dtype.itemsize() != static_cast<py::ssize_t>(item_bytes(type))) {
        throw py::type_error("set_result_dtypes: expected a dtype of " + std::to_string(item_bytes(type)) +
                             "-byte items for " + qdq::data_type_name(type));
      }
      table[static_cast<size_t>(type)] = py::reinterpret_borrow<py::object>(value);
    }
    result_dtypes().swap(table);
  });
  m.def("_set_fast_path",
        [](const py::dict& raw_dtypes, const py::dict& native_dtypes, const py::dict& scalar_types,
           const std::vector<int>& code_types, const py::dict& type_by_name, const py::object& axis_default,
           const py::object& code_array, const py::object& packed_tensor, const py::object& as_output,
           const py::object& make_packed, const py::object& float32, const py::object& uint8) {
          FastPath& fp = fast_path();
          fp.raw_dtypes = object_table(raw_dtypes);
          fp.native_dtypes = object_table(native_dtypes);
          fp.scalar_types = object_table(scalar_types);
          fp.code_type.assign(32, false);
          for (int t : code_types) fp.code_type.at(static_cast<size_t>(to_type(t))) = true;
          fp.type_by_name = type_by_name;
          fp.axis_default = axis_default;
          fp.code_array = code_array;
          fp.packed_tensor = packed_tensor;
          fp.as_output = as_output;
          fp.make_packed = make_packed;
          fp.float32 = float32;
          fp.uint8 = uint8;
          fp.keep_alive = py::make_tuple(raw_dtypes, native_dtypes, scalar_types);
          fp.ready = true;
        });
  // _entry_points(general, docs): qdq's three operator functions (EntryPoint), each standing in for
  // general[i], a function of the same signature and defaults, with the docstring docs[i].
  m.def("_entry_points", [](const py::tuple& general, const py::tuple& docs) {
    const PyCFunction functions[] = {reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&entry<0>)),
                                     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&entry<1>)),
                                     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&entry<2>))};
    const py::module_ inspect = py::module_::import("inspect");
    const py::object signature = inspect.attr("signature");
    const py::object by_position_or_keyword = inspect.attr("Parameter").attr("POSITIONAL_OR_KEYWORD");
    const py::object by_keyword = inspect.attr("Parameter").attr("KEYWORD_ONLY");
    py::list made;
    for (size_t which = 0; which < std::size(functions); ++which) {
      EntryPoint& e = entry_point(static_cast<int>(which));
      const py::object function = general[which];
      const py::object parameters = signature(function).attr("parameters");
      if (py::len(parameters) != e.count) throw py::value_error("_entry_points: a signature has changed");
      e.interned.clear();
      e.defaults.clear();
      for (size_t i = 0; i < e.count; ++i) {
        const py::object parameter = parameters[py::str(e.names[i])];  // KeyError where a name has changed
        const bool positional = static_cast<Py_ssize_t>(i) < e.positional;
        const py::object kind = parameter.attr("kind");
        if (!kind.equal(positional ? by_position_or_keyword : by_keyword)) {
          throw py::value_error(std::string("_entry_points: parameter ") + e.names[i] + " has changed its kind");
        }
        e.interned.push_back(PyUnicode_InternFromString(e.names[i]));
        const py::object value = parameter.attr("default");
        e.defaults.push_back(value.is(parameter.attr("empty")) ? nullptr : value.inc_ref().ptr());
      }
      e.general = function;
      // Never freed: a function object keeps pointing at its PyMethodDef.
      const auto* name = new std::string(py::cast<std::string>(function.attr("__name__")).substr(1));  // "_x" -> "x"
      const auto* doc = new std::string(py::cast<std::string>(docs[which]));
      auto* def = new PyMethodDef{name->c_str(), functions[which], METH_FASTCALL | METH_KEYWORDS, doc->c_str()};
      PyObject* entry_function = PyCFunction_NewEx(def, nullptr, py::str("qdq").ptr());
      if (entry_function == nullptr) throw py::error_already_set();
      made.append(py::reinterpret_steal<py::object>(entry_function));
    }
    return py::tuple(made);
  });
  for (PyMethodDef& def : fast_path_methods) {
    PyObject* function = PyCFunction_NewEx(&def, nullptr, m.attr("__name__").ptr());
    if (function == nullptr) throw py::error_already_set();
    m.add_object(def.ml_name, py::reinterpret_steal<py::object>(function));
  }
  m.def("operator_version", &qdq::quantize_linear_version);
#ifdef QDQ_PYTHON_WITH_ONNX
  m.def("load_tensor", &load_tensor, py::arg("path"));
  m.def("save_tensor", &save_tensor, py::arg("path"), py::arg("array"), py::arg("type"), py::arg("name") = "");
  m.def("read_model_node", &read_model_node, py::arg("path"));
  register_quantize_model(m);
#endif
}
