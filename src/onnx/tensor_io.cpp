// TensorProto <-> qdq::onnx::Tensor, and tensor files.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "internal.hpp"
#include "onnx_subset.pb.h"
#include "qdq_onnx.hpp"

static_assert(std::endian::native == std::endian::little,
              "qdq::onnx copies raw_data as is: it assumes a little-endian host");

namespace qdq::onnx {
namespace {

// Where a TensorProto without raw_data keeps the elements of each type (packing.md §2).
enum class Storage { kFloat, kInt32, kInt64, kDouble, kUint64 };

// Decided by kind, width and sign, with no default, so that a new kind must say where it goes.
Storage typed_storage(DataType type) {
  const int bits = bit_width(type);
  switch (type_kind(type)) {
    case TypeKind::kFloat: return bits == 64 ? Storage::kDouble : Storage::kFloat;
    case TypeKind::kInteger:
      if (bits == 64) return is_signed(type) ? Storage::kInt64 : Storage::kUint64;
      return bits == 32 && !is_signed(type) ? Storage::kUint64 : Storage::kInt32;
    case TypeKind::kMiniFloat:  // the codes, as unsigned numbers
    case TypeKind::kExponent:
    case TypeKind::kOther: return Storage::kInt32;  // BOOL (the others have no typed storage qdq reads)
  }
  return Storage::kInt32;
}

const char* storage_name(Storage s) {
  switch (s) {
    case Storage::kFloat: return "float_data";
    case Storage::kInt32: return "int32_data";
    case Storage::kInt64: return "int64_data";
    case Storage::kDouble: return "double_data";
    case Storage::kUint64: return "uint64_data";
  }
  return "?";
}

// Types whose typed entries are packed bytes, not elements.
bool is_packed(DataType type) { return bit_width(type) < 8; }

// Sub-byte padding is "ignored by readers" (packing.md §1); clearing it makes the stored bytes a
// function of the elements alone, so byte comparison and re-serialization are deterministic.
void clear_padding(DataType type, uint64_t elements, std::vector<uint8_t>& data) {
  const int bits = bit_width(type);
  if (bits >= 8 || data.empty()) return;
  const uint64_t per_byte = static_cast<uint64_t>(8 / bits);
  const uint64_t used = elements % per_byte;
  if (used == 0) return;
  data.back() &= static_cast<uint8_t>((1u << (used * static_cast<uint64_t>(bits))) - 1u);
}

[[noreturn]] void fail(const std::string& what, const std::string& problem) { throw Error(what + ": " + problem); }

std::string read_whole_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) fail(path, std::string("cannot read: ") + std::strerror(errno));
  return std::move(buffer).str();
}

template <typename Field>
void require_count(const Field& field, uint64_t expected, const std::string& what, Storage s,
                   const std::string& description) {
  if (field.empty() && expected != 0) {
    fail(what, "has no data (neither raw_data nor " + std::string(storage_name(s)) + "), but " + description +
                   " needs " + std::to_string(expected) + " " + storage_name(s) + " entries");
  }
  if (static_cast<uint64_t>(field.size()) != expected) {
    fail(what, description + " needs " + std::to_string(expected) + " " + storage_name(s) +
                   " entries, the tensor has " + std::to_string(field.size()));
  }
}

}  // namespace

Sizes checked_sizes(DataType type, std::span<const int64_t> dims, const std::string& what) {
  Sizes sizes;
  try {
    sizes.elements = element_count(dims);
    sizes.bytes = storage_bytes(type, sizes.elements);
  } catch (const Error& e) {
    fail(what, e.what());
  }
  if (sizes.bytes > static_cast<uint64_t>(std::numeric_limits<size_t>::max())) {
    fail(what, shape_to_string(dims) + " " + data_type_name(type) + " needs more bytes than fit in memory");
  }
  return sizes;
}

TensorView Tensor::view() const {
  static const uint8_t kEmpty = 0;
  return TensorView{type, shape, data.empty() ? &kEmpty : data.data(), data.size()};
}

MutableTensorView Tensor::mutable_view() {
  static uint8_t empty_sink = 0;
  return MutableTensorView{type, shape, data.empty() ? &empty_sink : data.data(), data.size()};
}

Tensor make_tensor(DataType type, std::vector<int64_t> shape, std::string name) {
  const Sizes sizes = checked_sizes(type, shape, "tensor '" + name + "'");
  Tensor t;
  t.type = type;
  t.shape = std::move(shape);
  t.data.assign(static_cast<size_t>(sizes.bytes), 0);
  t.name = std::move(name);
  return t;
}

Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const std::string& what) {
  const int32_t type_number = proto.data_type();
  if (!proto.has_data_type() || type_number == 0) fail(what, "data_type is missing (UNDEFINED)");
  if (!is_known_data_type(type_number)) {
    fail(what, "unknown data_type " + std::to_string(type_number));
  }
  const auto type = static_cast<DataType>(type_number);
  if (type == DataType::kString || type == DataType::kComplex64 || type == DataType::kComplex128) {
    fail(what, "data_type " + data_type_name(type) + " is not supported");
  }
  if (proto.has_segment()) fail(what, "segmented tensors (field 'segment') are not supported");
  if (proto.data_location() != 0 || proto.external_data_size() != 0) {
    fail(what, "external data is not supported (data_location " + std::to_string(proto.data_location()) + ", " +
                   std::to_string(proto.external_data_size()) + " external_data entries)");
  }

  Tensor t;
  t.type = type;
  t.name = proto.name();
  t.shape.assign(proto.dims().begin(), proto.dims().end());
  for (int64_t d : t.shape) {
    if (d < 0) fail(what, "negative dimension " + std::to_string(d) + " in dims " + shape_to_string(t.shape));
  }
  const Sizes sizes = checked_sizes(type, t.shape, what);
  const std::string description = data_type_name(type) + " " + shape_to_string(t.shape);

  if (proto.string_data_size() != 0) fail(what, "string_data is set on a " + data_type_name(type) + " tensor");

  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    if (static_cast<uint64_t>(raw.size()) != sizes.bytes) {
      fail(what, "raw_data has " + std::to_string(raw.size()) + " bytes, but " + description + " needs " +
                     std::to_string(sizes.bytes));
    }
    t.data.assign(raw.begin(), raw.end());
    // NumPy reads any non-zero byte as True; canonical 0/1 keeps raw and typed storage equivalent.
    if (type == DataType::kBool) {
      for (uint8_t& b : t.data) b = b != 0 ? 1 : 0;
    }
    clear_padding(type, sizes.elements, t.data);
    return t;
  }

  // Typed storage: the entries must be in the one field the type uses; elements elsewhere would be
  // silently ignored by a lenient reader, which hides a broken writer.
  const Storage storage = typed_storage(type);
  const std::pair<Storage, int> present[] = {
      {Storage::kFloat, proto.float_data_size()},   {Storage::kInt32, proto.int32_data_size()},
      {Storage::kInt64, proto.int64_data_size()},   {Storage::kDouble, proto.double_data_size()},
      {Storage::kUint64, proto.uint64_data_size()},
  };
  for (const auto& [s, count] : present) {
    if (s != storage && count != 0) {
      fail(what, std::string(storage_name(s)) + " holds " + std::to_string(count) + " entries, but " +
                     data_type_name(type) + " elements belong in " + storage_name(storage) + " (or raw_data)");
    }
  }

  // Check the entry count before allocating: the dims alone may claim petabytes.
  const uint64_t int32_entries = is_packed(type) ? sizes.bytes : sizes.elements;
  switch (storage) {
    case Storage::kFloat: require_count(proto.float_data(), sizes.elements, what, storage, description); break;
    case Storage::kDouble: require_count(proto.double_data(), sizes.elements, what, storage, description); break;
    case Storage::kInt64: require_count(proto.int64_data(), sizes.elements, what, storage, description); break;
    case Storage::kUint64: require_count(proto.uint64_data(), sizes.elements, what, storage, description); break;
    case Storage::kInt32:
      require_count(proto.int32_data(), int32_entries, what, storage,
                    is_packed(type) ? description + " (packed, one entry per byte)" : description);
      break;
  }
  t.data.assign(static_cast<size_t>(sizes.bytes), 0);
  uint8_t* out = t.data.data();
  switch (storage) {
    case Storage::kFloat: {
      // Copy the bit patterns: the floats are never used as numbers, so NaN payloads survive.
      for (int k = 0; k < proto.float_data_size(); ++k) {
        const uint32_t bits = std::bit_cast<uint32_t>(proto.float_data(k));
        std::memcpy(out + 4 * static_cast<size_t>(k), &bits, 4);
      }
      break;
    }
    case Storage::kDouble: {
      for (int k = 0; k < proto.double_data_size(); ++k) {
        const uint64_t bits = std::bit_cast<uint64_t>(proto.double_data(k));
        std::memcpy(out + 8 * static_cast<size_t>(k), &bits, 8);
      }
      break;
    }
    case Storage::kInt64: {
      for (int k = 0; k < proto.int64_data_size(); ++k) {
        const int64_t v = proto.int64_data(k);
        std::memcpy(out + 8 * static_cast<size_t>(k), &v, 8);
      }
      break;
    }
    case Storage::kUint64: {
      const size_t width = static_cast<size_t>(bit_width(type) / 8);
      for (int k = 0; k < proto.uint64_data_size(); ++k) {
        const uint64_t v = proto.uint64_data(k);  // UINT32 keeps the low 32 bits (little-endian)
        std::memcpy(out + width * static_cast<size_t>(k), &v, width);
      }
      break;
    }
    case Storage::kInt32: {
      // Packed types store one entry per byte; everything else one entry per element, of which the
      // low bits of the element's width are taken (packing.md §2).
      const size_t width = is_packed(type) ? 1 : static_cast<size_t>(bit_width(type) / 8);
      for (int k = 0; k < proto.int32_data_size(); ++k) {
        uint32_t v = static_cast<uint32_t>(proto.int32_data(k));
        if (type == DataType::kBool) v = v != 0 ? 1 : 0;
        std::memcpy(out + width * static_cast<size_t>(k), &v, width);
      }
      clear_padding(type, sizes.elements, t.data);
      break;
    }
  }
  return t;
}

Tensor parse_tensor(std::string_view bytes, const std::string& what) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) fail(what, "file is larger than protobuf's 2 GiB limit");
  ::onnx::TensorProto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    fail(what, "not a valid serialized TensorProto (corrupt or truncated protobuf)");
  }
  return tensor_from_proto(proto, what);
}

Tensor read_tensor_file(const std::string& path) { return parse_tensor(read_whole_file(path), path); }

std::string read_file_bytes(const std::string& path) { return read_whole_file(path); }

void tensor_to_proto(const Tensor& tensor, bool use_typed_fields, ::onnx::TensorProto& proto, const std::string& what) {
  const auto type_number = static_cast<int32_t>(tensor.type);
  if (!is_known_data_type(type_number) || bit_width(tensor.type) == 0 || tensor.type == DataType::kComplex64 ||
      tensor.type == DataType::kComplex128) {
    fail(what, "cannot serialize a tensor of type " + data_type_name(tensor.type));
  }
  const Sizes sizes = checked_sizes(tensor.type, tensor.shape, what);
  if (static_cast<uint64_t>(tensor.data.size()) != sizes.bytes) {
    fail(what, "holds " + std::to_string(tensor.data.size()) + " bytes, but " + data_type_name(tensor.type) + " " +
                   shape_to_string(tensor.shape) + " needs " + std::to_string(sizes.bytes));
  }
  for (int64_t d : tensor.shape) proto.add_dims(d);
  proto.set_data_type(type_number);
  if (!tensor.name.empty()) proto.set_name(tensor.name);
  if (!use_typed_fields) {
    proto.set_raw_data(tensor.data.data(), tensor.data.size());
    return;
  }
  if (sizes.elements > static_cast<uint64_t>(INT_MAX)) fail(what, "too many elements for typed storage");
  const uint8_t* in = tensor.data.data();
  const auto n = static_cast<size_t>(sizes.elements);
  switch (typed_storage(tensor.type)) {
    case Storage::kFloat:
      proto.mutable_float_data()->Reserve(static_cast<int>(n));
      for (size_t k = 0; k < n; ++k) {
        uint32_t bits;
        std::memcpy(&bits, in + 4 * k, 4);
        proto.add_float_data(std::bit_cast<float>(bits));
      }
      break;
    case Storage::kDouble:
      proto.mutable_double_data()->Reserve(static_cast<int>(n));
      for (size_t k = 0; k < n; ++k) {
        uint64_t bits;
        std::memcpy(&bits, in + 8 * k, 8);
        proto.add_double_data(std::bit_cast<double>(bits));
      }
      break;
    case Storage::kInt64:
      proto.mutable_int64_data()->Reserve(static_cast<int>(n));
      for (size_t k = 0; k < n; ++k) {
        int64_t v;
        std::memcpy(&v, in + 8 * k, 8);
        proto.add_int64_data(v);
      }
      break;
    case Storage::kUint64: {
      const size_t width = static_cast<size_t>(bit_width(tensor.type) / 8);
      proto.mutable_uint64_data()->Reserve(static_cast<int>(n));
      for (size_t k = 0; k < n; ++k) {
        uint64_t v = 0;
        std::memcpy(&v, in + width * k, width);
        proto.add_uint64_data(v);
      }
      break;
    }
    case Storage::kInt32: {
      // Writers store the plain value (make_tensor's convention): signed types sign-extended,
      // unsigned types, float bit patterns and packed bytes zero-extended.
      const size_t entries = is_packed(tensor.type) ? tensor.data.size() : n;
      const size_t width = is_packed(tensor.type) ? 1 : static_cast<size_t>(bit_width(tensor.type) / 8);
      if (width > sizeof(uint32_t)) fail(what, "cannot store " + data_type_name(tensor.type) + " in int32_data");
      const bool sign_extend =
          !is_packed(tensor.type) && type_kind(tensor.type) == TypeKind::kInteger && is_signed(tensor.type);
      const auto shift = static_cast<unsigned>(32 - 8 * width);
      proto.mutable_int32_data()->Reserve(static_cast<int>(entries));
      for (size_t k = 0; k < entries; ++k) {
        uint32_t u = 0;
        std::memcpy(&u, in + width * k, width);  // little-endian host
        proto.add_int32_data(sign_extend ? static_cast<int32_t>(u << shift) >> shift : static_cast<int32_t>(u));
      }
      break;
    }
  }
}

std::string serialize_tensor(const Tensor& tensor, bool use_typed_fields) {
  const std::string what = "tensor '" + tensor.name + "'";
  ::onnx::TensorProto proto;
  tensor_to_proto(tensor, use_typed_fields, proto, what);
  if (proto.ByteSizeLong() > static_cast<size_t>(INT_MAX)) {
    fail(what, "serialized size exceeds protobuf's 2 GiB limit");
  }
  std::string out;
  if (!proto.SerializeToString(&out)) fail(what, "protobuf serialization failed");
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Atomic files

namespace {

std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Creates the temporary next to `path` (rename is only atomic within one file system) with
// O_EXCL, so two writers never share one; mode 0666 lets the umask decide, like a plain open().
std::string write_temporary(const std::string& path, const std::string& bytes) {
  static std::atomic<unsigned> counter{0};
  std::string temp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) {
      fail(path, std::string("cannot create a file in ") + folder_of(path) + ": " + std::strerror(errno));
    }
  }
  if (fd < 0) fail(path, "cannot create a temporary file: too many name collisions");
  const char* p = bytes.data();
  size_t left = bytes.size();
  int error = 0;
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = errno;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) {
    ::unlink(temp.c_str());
    fail(path, std::string("cannot write: ") + std::strerror(error));
  }
  return temp;
}

}  // namespace

void write_tensor_file(const std::string& path, const Tensor& tensor) { write_tensor_files({{path, &tensor}}); }

void write_tensor_files(const std::vector<std::pair<std::string, const Tensor*>>& files) {
  std::vector<std::string> temps;
  auto remove_temps = [&] {
    for (const std::string& t : temps) ::unlink(t.c_str());
  };
  try {
    for (const auto& [path, tensor] : files) {
      std::string bytes;
      try {
        bytes = serialize_tensor(*tensor);
      } catch (const Error& e) {
        fail(path, e.what());
      }
      temps.push_back(write_temporary(path, bytes));
    }
  } catch (...) {
    remove_temps();
    throw;
  }
  for (size_t k = 0; k < files.size(); ++k) {
    if (::rename(temps[k].c_str(), files[k].first.c_str()) != 0) {
      const int error = errno;
      for (size_t j = 0; j < k; ++j) ::unlink(files[j].first.c_str());
      for (size_t j = k; j < temps.size(); ++j) ::unlink(temps[j].c_str());
      fail(files[k].first, std::string("cannot rename the temporary file into place: ") + std::strerror(error));
    }
  }
}

}  // namespace qdq::onnx
