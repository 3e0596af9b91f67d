// Whole ONNX models: parsing from a mapping, external data, atomic staged writes (model_io.hpp).
#include "model_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "internal.hpp"
#include "onnx_subset.pb.h"
#include "qdq/types.hpp"

namespace qdq::onnx {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& problem) { throw Error(what + ": " + problem); }

std::string system_error(int error) { return std::strerror(error); }

// ---------------------------------------------------------------------------------------------------
// Temporary files that a signal handler may have to remove. Fixed slots of plain char arrays: the
// handler reads them without locks or allocation; a slot's state is published after its path.

constexpr int kCleanupSlots = 64;
struct CleanupSlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 file, 3 folder
  char path[PATH_MAX] = {};
};
CleanupSlot g_cleanup[kCleanupSlots];

int register_cleanup(const std::string& path, bool folder) {
  if (path.size() >= PATH_MAX) return -1;
  for (int k = 0; k < kCleanupSlots; ++k) {
    int expected = 0;
    if (g_cleanup[k].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(g_cleanup[k].path, path.c_str(), path.size() + 1);
      g_cleanup[k].state.store(folder ? 3 : 2);
      return k;
    }
  }
  return -1;  // more writers than slots: still removed on errors, only not on a signal
}

void unregister_cleanup(int slot) {
  if (slot >= 0) g_cleanup[slot].state.store(0);
}

std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void visit_graph(::onnx::GraphProto& graph, const std::function<void(::onnx::GraphProto&)>& visit) {
  visit(graph);
  for (auto& node : *graph.mutable_node()) {
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) visit_graph(*attribute.mutable_g(), visit);
      for (auto& sub : *attribute.mutable_graphs()) visit_graph(sub, visit);
    }
  }
}

void write_all(int fd, const void* bytes, size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(bytes);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, "cannot write: " + system_error(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

size_t page_size() {
  static const size_t size = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

struct ExternalRef {
  std::string location;
  uint64_t offset = 0;
  bool has_length = false;
  uint64_t length = 0;
};

uint64_t parse_u64(const std::string& text, const std::string& what, const char* key) {
  if (text.empty() || text.size() > 20 || text.find_first_not_of("0123456789") != std::string::npos) {
    fail(what, std::string("external data ") + key + " '" + text + "' is not a non-negative integer");
  }
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE || value > static_cast<unsigned long long>(INT64_MAX)) {
    fail(what, std::string("external data ") + key + " '" + text + "' is too large");
  }
  return value;
}

ExternalRef external_ref(const ::onnx::TensorProto& tensor, const std::string& what) {
  ExternalRef ref;
  bool has_location = false;
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == "location") {
      ref.location = entry.value();
      has_location = true;
    } else if (entry.key() == "offset") {
      ref.offset = parse_u64(entry.value(), what, "offset");
    } else if (entry.key() == "length") {
      ref.length = parse_u64(entry.value(), what, "length");
      ref.has_length = true;
    }
  }
  if (!has_location || ref.location.empty()) fail(what, "external data without a location");
  return ref;
}

// A location must name a file inside the model's folder: no absolute path, no `..`, and its real
// path (symlinks resolved) must stay below the folder's real path.
std::string resolve_location(const std::string& folder, const std::string& location, const std::string& what) {
  const std::string quoted = "external data location '" + location + "'";
  if (location.find('\0') != std::string::npos) fail(what, quoted + " contains a NUL byte");
  if (location.front() == '/' || location.front() == '\\' || (location.size() > 1 && location[1] == ':')) {
    fail(what, quoted + " is absolute; it must be relative to the model's folder");
  }
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find_first_of("/\\", start);
    if (end == std::string::npos) end = location.size();
    if (location.compare(start, end - start, "..") == 0 && end - start == 2) {
      fail(what, quoted + " contains '..'; it must stay inside the model's folder");
    }
    start = end + 1;
  }
  char resolved_folder[PATH_MAX];
  if (::realpath(folder.c_str(), resolved_folder) == nullptr) {
    fail(what, "cannot resolve the model's folder '" + folder + "': " + system_error(errno));
  }
  const std::string joined = folder + "/" + location;
  char resolved[PATH_MAX];
  if (::realpath(joined.c_str(), resolved) == nullptr) {
    fail(what, quoted + " cannot be opened: " + system_error(errno));
  }
  std::string prefix = resolved_folder;
  if (prefix != "/") prefix += '/';
  if (std::string_view(resolved).substr(0, prefix.size()) != prefix) {
    fail(what, quoted + " resolves to '" + resolved + "', outside the model's folder");
  }
  return resolved;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// TensorBytes

TensorBytes::TensorBytes(TensorBytes&& other) noexcept { *this = std::move(other); }

TensorBytes& TensorBytes::operator=(TensorBytes&& other) noexcept {
  if (this != &other) {
    if (map_base_ != nullptr) ::munmap(map_base_, map_length_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    map_base_ = std::exchange(other.map_base_, nullptr);
    map_length_ = std::exchange(other.map_length_, 0);
    released_ = std::exchange(other.released_, 0);
    owned_ = std::move(other.owned_);
    if (!owned_.empty()) data_ = owned_.data();
  }
  return *this;
}

TensorBytes::~TensorBytes() {
  if (map_base_ != nullptr) ::munmap(map_base_, map_length_);
}

void TensorBytes::release_until(size_t end) {
  if (map_base_ == nullptr) return;
  const size_t from_base = static_cast<size_t>(data_ - static_cast<const uint8_t*>(map_base_)) + end;
  const size_t aligned = from_base / page_size() * page_size();
  if (aligned < released_) released_ = 0;  // a new pass over the bytes: its pages are mapped again
  if (aligned <= released_) return;
  // Pages of a private read-only file mapping: dropping them only costs a re-read if touched again.
  ::madvise(static_cast<uint8_t*>(map_base_) + released_, aligned - released_, MADV_DONTNEED);
  released_ = aligned;
}

// ---------------------------------------------------------------------------------------------------
// Walking a model

void for_each_graph(::onnx::ModelProto& model, const std::function<void(::onnx::GraphProto&)>& visit) {
  if (model.has_graph()) visit_graph(*model.mutable_graph(), visit);
}

void for_each_tensor(::onnx::ModelProto& model, const std::function<void(::onnx::TensorProto&)>& visit) {
  for_each_graph(model, [&](::onnx::GraphProto& graph) {
    for (auto& tensor : *graph.mutable_initializer()) visit(tensor);
    for (auto& node : *graph.mutable_node()) {
      for (auto& attribute : *node.mutable_attribute()) {
        if (attribute.has_t()) visit(*attribute.mutable_t());
        for (auto& tensor : *attribute.mutable_tensors()) visit(tensor);
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------------
// ModelSource

bool ModelSource::is_external(const ::onnx::TensorProto& tensor) { return tensor.data_location() == 1; }

uint64_t ModelSource::data_bytes(const ::onnx::TensorProto& tensor, const std::string& what) {
  const auto type = static_cast<DataType>(tensor.data_type());
  if (!is_known_data_type(tensor.data_type()) || bit_width(type) == 0) {
    fail(what, "data type " + std::to_string(tensor.data_type()) + " has no fixed element size");
  }
  const std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  return checked_sizes(type, dims, what).bytes;
}

ModelSource::ModelSource(const std::string& path) : path_(path), folder_(folder_of(path)) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open: " + system_error(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    const int error = errno;
    ::close(fd);
    fail(path, S_ISDIR(info.st_mode) ? "is a folder, not a model file" : "cannot read: " + system_error(error));
  }
  const uint64_t size = static_cast<uint64_t>(info.st_size);
  if (size > kProtobufLimit) {
    ::close(fd);
    fail(path, "is " + std::to_string(size) + " bytes, over protobuf's 2 GiB message limit");
  }
  void* map = size == 0 ? nullptr : ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) fail(path, "cannot map: " + system_error(errno));
  model_ = std::make_unique<::onnx::ModelProto>();
  const bool parsed = model_->ParseFromArray(map, static_cast<int>(size));
  if (map != nullptr) ::munmap(map, size);
  if (!parsed) fail(path, "is not an ONNX model (protobuf parsing failed: corrupt or truncated)");
  if (!model_->has_graph()) fail(path, "the model has no graph");
  bytes_on_disk_ = size;

  // Every external reference is checked now, so that a tool fails before it writes anything.
  std::string problem;
  for_each_tensor(*model_, [&](::onnx::TensorProto& tensor) {
    if (tensor.data_location() != 0 && tensor.data_location() != 1) {
      fail(path_, "tensor '" + tensor.name() + "': unknown data_location " + std::to_string(tensor.data_location()));
    }
    if (!is_external(tensor)) return;
    const std::string what = path_ + ": tensor '" + tensor.name() + "'";
    const ExternalRef ref = external_ref(tensor, what);
    const uint64_t expected = data_bytes(tensor, what);
    if (ref.has_length && ref.length != expected) {
      fail(what, "external data length " + std::to_string(ref.length) + " does not match its " +
                     std::to_string(expected) + " bytes of elements");
    }
    auto it = files_.find(ref.location);
    if (it == files_.end()) {
      const std::string resolved = resolve_location(folder_, ref.location, what);
      ExternalFile file;
      file.fd = ::open(resolved.c_str(), O_RDONLY | O_CLOEXEC);
      if (file.fd < 0) fail(what, "cannot open external data '" + ref.location + "': " + system_error(errno));
      struct stat data_info {};
      if (::fstat(file.fd, &data_info) != 0 || !S_ISREG(data_info.st_mode)) {
        ::close(file.fd);
        fail(what, "external data '" + ref.location + "' is not a regular file");
      }
      file.size = static_cast<uint64_t>(data_info.st_size);
      bytes_on_disk_ += file.size;
      it = files_.emplace(ref.location, file).first;
    }
    if (ref.offset > it->second.size || expected > it->second.size - ref.offset) {
      fail(what, "external data range [" + std::to_string(ref.offset) + ", +" + std::to_string(expected) +
                     ") is outside '" + ref.location + "' (" + std::to_string(it->second.size) + " bytes)");
    }
  });
}

ModelSource::~ModelSource() {
  for (auto& [location, file] : files_) ::close(file.fd);
}

const ModelSource::ExternalFile& ModelSource::external_file(const std::string& location) const {
  auto it = files_.find(location);
  if (it == files_.end()) fail(path_, "external data '" + location + "' was not opened with the model");
  return it->second;
}

TensorBytes ModelSource::tensor_bytes(const ::onnx::TensorProto& tensor, const std::string& what) const {
  TensorBytes bytes;
  const uint64_t expected = data_bytes(tensor, what);
  if (is_external(tensor)) {
    const ExternalRef ref = external_ref(tensor, what);
    const ExternalFile& file = external_file(ref.location);
    if (expected == 0) return bytes;
    const uint64_t aligned = ref.offset / page_size() * page_size();
    const size_t delta = static_cast<size_t>(ref.offset - aligned);
    const size_t length = static_cast<size_t>(expected) + delta;
    void* map = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, file.fd, static_cast<off_t>(aligned));
    if (map == MAP_FAILED) fail(what, "cannot map external data '" + ref.location + "': " + system_error(errno));
    bytes.map_base_ = map;
    bytes.map_length_ = length;
    bytes.data_ = static_cast<const uint8_t*>(map) + delta;
    bytes.size_ = static_cast<size_t>(expected);
    return bytes;
  }
  return inline_bytes(tensor, what);
}

TensorBytes ModelSource::inline_bytes(const ::onnx::TensorProto& tensor, const std::string& what) {
  TensorBytes bytes;
  const uint64_t expected = data_bytes(tensor, what);
  if (is_external(tensor)) fail(what, "has external data where inline data was expected");
  if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != expected) {
      fail(what,
           "raw_data has " + std::to_string(tensor.raw_data().size()) + " bytes, expected " + std::to_string(expected));
    }
    bytes.data_ = reinterpret_cast<const uint8_t*>(tensor.raw_data().data());
    bytes.size_ = tensor.raw_data().size();
    return bytes;
  }
  if (tensor.data_type() == static_cast<int32_t>(DataType::kFloat) &&
      static_cast<uint64_t>(tensor.float_data_size()) * 4 == expected) {
    bytes.data_ = reinterpret_cast<const uint8_t*>(tensor.float_data().data());
    bytes.size_ = static_cast<size_t>(expected);
    return bytes;
  }
  Tensor converted = tensor_from_proto(tensor, what);
  bytes.owned_ = std::move(converted.data);
  bytes.data_ = bytes.owned_.data();
  bytes.size_ = bytes.owned_.size();
  return bytes;
}

// ---------------------------------------------------------------------------------------------------
// ModelWriter

ModelWriter::ModelWriter(const std::string& output_path, bool external_data)
    : output_path_(output_path), external_data_(external_data) {
  if (output_path.empty()) fail("output", "the output path is empty");
  struct stat info {};
  if (::stat(output_path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    fail(output_path, "is a folder; give the path of the .onnx file to write");
  }
  const std::string folder = folder_of(output_path);
  const std::string name = base_name(output_path);
  data_path_ = output_path + ".data";
  location_ = name + ".data";
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string candidate =
        folder + "/." + name + ".qdq-tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    // Registered before mkdir: a signal right after mkdir must still find the folder to remove (rmdir
    // of a folder that is not there, or of someone else's non-empty one, does nothing).
    const int slot = register_cleanup(candidate, true);
    if (::mkdir(candidate.c_str(), 0700) == 0) {
      staging_ = std::move(candidate);
      cleanup_slots_.push_back(slot);
      break;
    }
    const int error = errno;
    unregister_cleanup(slot);
    if (error != EEXIST) fail(output_path, "cannot create a file in '" + folder + "': " + system_error(error));
  }
  if (staging_.empty()) fail(output_path, "cannot create a staging folder: too many name collisions");
  staged_model_ = staging_ + "/" + name;
  staged_data_ = staging_ + "/" + location_;
  // The file names are registered before the files exist: unlink() of a missing file is harmless.
  cleanup_slots_.push_back(register_cleanup(staged_model_, false));
  if (external_data_) {
    cleanup_slots_.push_back(register_cleanup(staged_data_, false));
    data_fd_ = ::open(staged_data_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (data_fd_ < 0) {
      const int error = errno;
      remove_staged();
      fail(output_path, "cannot create the data file: " + system_error(error));
    }
  }
}

ModelWriter::~ModelWriter() {
  if (!committed_) remove_staged();
}

void ModelWriter::remove_staged() noexcept {
  if (data_fd_ >= 0) ::close(data_fd_);
  data_fd_ = -1;
  if (!staged_data_.empty()) ::unlink(staged_data_.c_str());
  if (!staged_model_.empty()) ::unlink(staged_model_.c_str());
  if (!staging_.empty()) ::rmdir(staging_.c_str());
  for (int slot : cleanup_slots_) unregister_cleanup(slot);
  cleanup_slots_.clear();
}

void ModelWriter::write_external(::onnx::TensorProto& tensor, std::span<const uint8_t> bytes) {
  begin_external();
  append_external(bytes);
  end_external(tensor);
}

void ModelWriter::begin_external() {
  if (!external_data_) fail(output_path_, "write_external on a writer without external data");
  // 4 KiB alignment lets a runtime map each tensor directly.
  static const uint8_t zeros[4096] = {};
  const uint64_t padding = (4096 - data_bytes_ % 4096) % 4096;
  write_all(data_fd_, zeros, static_cast<size_t>(padding), data_path_);
  data_bytes_ += padding;
  tensor_offset_ = data_bytes_;
}

void ModelWriter::append_external(std::span<const uint8_t> bytes) {
  const uint64_t offset = data_bytes_;
  write_all(data_fd_, bytes.data(), bytes.size(), data_path_);
  data_bytes_ += bytes.size();
#if defined(__linux__)
  // Starts the write-back of what was just written, so that it overlaps the next tensors' work and
  // finish()'s fsync waits for little more than the last tensor. Only a hint: a failure here shows
  // again, and is reported, at that fsync.
  ::sync_file_range(data_fd_, static_cast<off_t>(offset), static_cast<off_t>(bytes.size()), SYNC_FILE_RANGE_WRITE);
#endif
}

void ModelWriter::end_external(::onnx::TensorProto& tensor) {
  tensor.clear_raw_data();
  tensor.clear_float_data();
  tensor.clear_int32_data();
  tensor.clear_int64_data();
  tensor.clear_double_data();
  tensor.clear_uint64_data();
  tensor.clear_external_data();
  tensor.set_data_location(1);
  auto add = [&](const char* key, const std::string& value) {
    auto* entry = tensor.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add("location", location_);
  add("offset", std::to_string(tensor_offset_));
  add("length", std::to_string(data_bytes_ - tensor_offset_));
  written_.push_back(&tensor);
}

void ModelWriter::finish(::onnx::ModelProto& model, const ModelSource* source) {
  auto already_written = [&](const ::onnx::TensorProto* tensor) {
    for (const auto* t : written_) {
      if (t == tensor) return true;
    }
    return false;
  };
  auto move_tensor = [&](::onnx::TensorProto& tensor, bool to_data_file) {
    if (already_written(&tensor)) return;
    const bool external = ModelSource::is_external(tensor);
    if (!to_data_file && !external) return;
    const std::string what = (source != nullptr ? source->path() : output_path_) + ": tensor '" + tensor.name() + "'";
    if (external && source == nullptr) fail(what, "has external data but there is no source model");
    const int32_t type = tensor.data_type();
    const bool sized = is_known_data_type(type) && bit_width(static_cast<DataType>(type)) != 0;
    if (!sized) return;  // STRING and unknown types stay as they are
    if (to_data_file && ModelSource::data_bytes(tensor, what) < kExternalThreshold) {
      if (!external) return;
      to_data_file = false;  // small tensors go inline whatever their input layout was
    }
    if (to_data_file) {
      if (external) {
        write_external(tensor, source->tensor_bytes(tensor, what).span());
        return;
      }
      std::vector<uint8_t> copy;  // write_external clears the fields that borrowed bytes live in
      {
        const TensorBytes bytes = ModelSource::inline_bytes(tensor, what);
        copy.assign(bytes.data(), bytes.data() + bytes.size());
      }
      write_external(tensor, copy);
      return;
    }
    std::string raw;
    {
      const TensorBytes bytes = source->tensor_bytes(tensor, what);
      raw.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }
    tensor.clear_external_data();
    tensor.clear_data_location();
    tensor.set_raw_data(std::move(raw));
  };
  for_each_graph(model, [&](::onnx::GraphProto& graph) {
    for (auto& tensor : *graph.mutable_initializer()) move_tensor(tensor, external_data_);
    for (auto& node : *graph.mutable_node()) {
      for (auto& attribute : *node.mutable_attribute()) {
        // Attribute tensors stay inline (ONNX's convert_attribute=False) unless they were external.
        auto attribute_tensor = [&](::onnx::TensorProto& t) {
          move_tensor(t, external_data_ && ModelSource::is_external(t));
        };
        if (attribute.has_t()) attribute_tensor(*attribute.mutable_t());
        for (auto& t : *attribute.mutable_tensors()) attribute_tensor(t);
      }
    }
  });
  if (data_fd_ >= 0) {
    int error = ::fsync(data_fd_) == 0 ? 0 : errno;
    if (::close(data_fd_) != 0 && error == 0) error = errno;
    data_fd_ = -1;
    if (error != 0) fail(data_path_, "cannot write: " + system_error(error));
  }
  const size_t size = model.ByteSizeLong();
  if (size > kProtobufLimit) {
    fail(output_path_, "the model would be " + std::to_string(size) +
                           " bytes, over protobuf's 2 GiB limit; write it with external data");
  }
  const int fd = ::open(staged_model_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) fail(output_path_, "cannot create: " + system_error(errno));
  // Straight to the file: no second in-memory copy of a large inline model.
  errno = 0;
  int error = model.SerializeToFileDescriptor(fd) ? 0 : (errno != 0 ? errno : EIO);
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error != 0) fail(output_path_, "cannot write: " + system_error(error));
  model_bytes_ = size;
}

void ModelWriter::commit() {
  if (model_bytes_ == 0) fail(output_path_, "commit before finish");
  if (external_data_) {
    if (::rename(staged_data_.c_str(), data_path_.c_str()) != 0) {
      fail(data_path_, "cannot rename the data file into place: " + system_error(errno));
    }
  }
  if (::rename(staged_model_.c_str(), output_path_.c_str()) != 0) {
    const int error = errno;
    if (external_data_) ::unlink(data_path_.c_str());
    fail(output_path_, "cannot rename the model into place: " + system_error(error));
  }
  committed_ = true;
  ::rmdir(staging_.c_str());
  for (int slot : cleanup_slots_) unregister_cleanup(slot);
  cleanup_slots_.clear();
}

// ---------------------------------------------------------------------------------------------------

uint64_t inline_model_bytes(const ::onnx::ModelProto& model) {
  uint64_t total = model.ByteSizeLong();
  for_each_tensor(const_cast<::onnx::ModelProto&>(model), [&](::onnx::TensorProto& tensor) {
    if (ModelSource::is_external(tensor)) {
      // The data plus the raw_data field header that replaces the external_data entries.
      total += ModelSource::data_bytes(tensor, "tensor '" + tensor.name() + "'") + 16;
    }
  });
  return total;
}

uint64_t write_model_file(::onnx::ModelProto& model, const ModelSource* source, const std::string& output_path,
                          const WriteModelOptions& options) {
  const bool external = options.external_data || inline_model_bytes(model) > kProtobufLimit;
  ModelWriter writer(output_path, external);
  writer.finish(model, source);
  if (options.before_commit) options.before_commit(writer.staged_model_path());
  writer.commit();
  return writer.bytes_written();
}

void remove_temporary_model_files() noexcept {
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& slot : g_cleanup) {
      const int state = slot.state.load();
      if (pass == 0 && state == 2) ::unlink(slot.path);
      if (pass == 1 && state == 3) ::rmdir(slot.path);
    }
  }
}

}  // namespace qdq::onnx
