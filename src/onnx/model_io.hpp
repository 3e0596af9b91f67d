// Reading and writing whole ONNX models as protobuf messages, external data included, for the tools
// that rewrite models (`qdq quantize`, `qdq convert`).
//
// Reading: the .onnx file is parsed from a read-only mapping; tensors stored in external data stay on
// disk, and each one is mapped on demand (TensorBytes), so a tool that handles one tensor at a time
// needs about the graph plus one tensor of memory, not the model size. Every external location is
// checked when the model is opened: absolute paths, `..` components and anything that resolves
// (symlinks included) outside the model's folder are rejected, as are ranges outside the file.
//
// Writing: everything goes to a staging folder next to the output, which is renamed into place only
// when complete, so an error, SIGINT or SIGTERM (with remove_temporary_model_files() in the handler)
// never leaves a partial or stray file. Tensors go to one external data file (OUT.onnx.data) when
// asked or when the model would exceed protobuf's 2 GiB limit.
//
// Internal to qdq_onnx and the tools: it names the generated onnx_subset.pb.h classes. Errors are
// qdq::Error with one line starting with the file concerned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace onnx {
class GraphProto;
class ModelProto;
class TensorProto;
}  // namespace onnx

namespace qdq::onnx {

/// protobuf's limit on one serialized message (INT_MAX bytes).
inline constexpr uint64_t kProtobufLimit = 2147483647u;

/// The element bytes of one tensor: borrowed from the message (raw_data, float_data), a read-only
/// mapping of its external file range, or an owned copy (other typed fields). Move-only; a borrowed
/// view lives as long as the message is not changed.
class TensorBytes {
 public:
  TensorBytes() = default;
  TensorBytes(TensorBytes&& other) noexcept;
  TensorBytes& operator=(TensorBytes&& other) noexcept;
  TensorBytes(const TensorBytes&) = delete;
  TensorBytes& operator=(const TensorBytes&) = delete;
  ~TensorBytes();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> span() const { return {data_, size_}; }
  /// Says that bytes [0, end) are not needed for now: a mapping drops those pages from the process's
  /// resident memory (they are read from the file again if touched; a smaller `end` than before
  /// starts a new pass). No-op for in-memory bytes.
  void release_until(size_t end);

 private:
  friend class ModelSource;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* map_base_ = nullptr;  // non-null for a mapping
  size_t map_length_ = 0;
  size_t released_ = 0;  // bytes of the mapping already released, from map_base_
  std::vector<uint8_t> owned_;
};

/// Calls `visit` for every graph of `model`: the main graph, then every subgraph in node attributes
/// (If/Loop/Scan bodies, recursively), parents before children. No allocation beyond recursion.
void for_each_graph(::onnx::ModelProto& model, const std::function<void(::onnx::GraphProto&)>& visit);

/// Calls `visit` for every TensorProto of every graph: initializers and tensor-valued attributes
/// (Constant values included). No allocation beyond recursion.
void for_each_tensor(::onnx::ModelProto& model, const std::function<void(::onnx::TensorProto&)>& visit);

/// A model opened from a file: the parsed ModelProto, with external data left on disk.
class ModelSource {
 public:
  /// Parses the model at `path` and validates every external-data reference (location inside the
  /// model's folder, offset/length inside the file and equal to the tensor's size). Keeps the
  /// external files open. Throws qdq::Error naming the file and the problem. Allocates the message
  /// (the graph plus inline tensors); single-threaded.
  explicit ModelSource(const std::string& path);
  ~ModelSource();
  ModelSource(const ModelSource&) = delete;
  ModelSource& operator=(const ModelSource&) = delete;

  ::onnx::ModelProto& model() { return *model_; }
  const ::onnx::ModelProto& model() const { return *model_; }
  const std::string& path() const { return path_; }
  /// The model's size on disk: the .onnx file plus every external data file it references.
  uint64_t bytes_on_disk() const { return bytes_on_disk_; }

  /// True if `tensor` keeps its elements in an external file of this model.
  static bool is_external(const ::onnx::TensorProto& tensor);
  /// The number of element bytes `tensor` has (inline or external), from its dims and type.
  static uint64_t data_bytes(const ::onnx::TensorProto& tensor, const std::string& what);

  /// The element bytes of `tensor` (which must belong to this model, or be inline): maps an external
  /// range, borrows raw_data/float_data, or converts other typed fields into an owned buffer.
  /// Throws qdq::Error (message starting with `what`) for data that does not match dims and type.
  TensorBytes tensor_bytes(const ::onnx::TensorProto& tensor, const std::string& what) const;
  /// The same for a tensor stored in the message itself (no source needed).
  static TensorBytes inline_bytes(const ::onnx::TensorProto& tensor, const std::string& what);

 private:
  struct ExternalFile {
    int fd = -1;
    uint64_t size = 0;
  };
  const ExternalFile& external_file(const std::string& location) const;

  std::string path_;
  std::string folder_;
  std::unique_ptr<::onnx::ModelProto> model_;
  std::map<std::string, ExternalFile> files_;  // by location as written in the model
  uint64_t bytes_on_disk_ = 0;
};

/// Writes one model into a staging folder next to `output_path` and, on commit(), renames the files
/// into place. Destroying it without commit() removes everything it wrote. Single-threaded.
class ModelWriter {
 public:
  /// Creates the staging folder; `external_data` selects the OUT.onnx.data layout. Throws
  /// qdq::Error naming `output_path` if its folder cannot be written or it is a folder itself.
  ModelWriter(const std::string& output_path, bool external_data);
  ~ModelWriter();
  ModelWriter(const ModelWriter&) = delete;
  ModelWriter& operator=(const ModelWriter&) = delete;

  bool external_data() const { return external_data_; }
  /// Tensors of at least this many bytes go to the data file in external mode (ONNX's default).
  static constexpr uint64_t kExternalThreshold = 1024;

  /// Appends `bytes` to the data file (4 KiB aligned) and points `tensor` at them: data_location
  /// EXTERNAL, location/offset/length, inline fields cleared. Only in external mode.
  void write_external(::onnx::TensorProto& tensor, std::span<const uint8_t> bytes);

  /// write_external in pieces, for bytes produced piece by piece: begin_external starts a tensor in
  /// the data file (4 KiB aligned), append_external adds its next bytes (no copy kept), end_external
  /// points `tensor` at all of them. Only in external mode; one tensor at a time.
  void begin_external();
  void append_external(std::span<const uint8_t> bytes);
  void end_external(::onnx::TensorProto& tensor);

  /// Completes the staged files: in external mode every initializer of at least kExternalThreshold
  /// bytes (and every tensor that was external in `source`) goes to the data file, except those
  /// already written by write_external; in inline mode, external tensors of `source` are read into
  /// raw_data. Then `model` is serialized. Throws qdq::Error if the message would exceed 2 GiB (the
  /// message suggests --external-data) or a write fails. `source` may be null (no external input).
  void finish(::onnx::ModelProto& model, const ModelSource* source);

  /// Where finish() wrote the model (inside the staging folder, next to its data file), for a check
  /// that must run before commit().
  const std::string& staged_model_path() const { return staged_model_; }
  /// The bytes of the finished model: .onnx plus data file.
  uint64_t bytes_written() const { return model_bytes_ + data_bytes_; }

  /// Renames the staged files over the output (data file first) and removes the staging folder.
  void commit();

 private:
  void remove_staged() noexcept;

  std::string output_path_;
  std::string data_path_;  // final path of the data file
  std::string location_;   // its name as written in the model
  std::string staging_;
  std::string staged_model_;
  std::string staged_data_;
  bool external_data_ = false;
  bool committed_ = false;
  int data_fd_ = -1;
  uint64_t data_bytes_ = 0;
  uint64_t tensor_offset_ = 0;  // where the tensor being appended starts
  uint64_t model_bytes_ = 0;
  std::vector<const ::onnx::TensorProto*> written_;  // tensors placed by write_external
  std::vector<int> cleanup_slots_;
};

/// How write_model_file chooses the layout.
struct WriteModelOptions {
  /// Always write external data; otherwise only when the inline model would exceed 2 GiB.
  bool external_data = false;
  /// Called with the staged model path after everything is written and before the rename; if it
  /// throws, nothing is committed and the exception propagates.
  std::function<void(const std::string& staged_model_path)> before_commit;
};

/// The size `model` would have serialized with every tensor inline (inline bytes plus the external
/// bytes `source` holds). Allocates nothing; single-threaded.
uint64_t inline_model_bytes(const ::onnx::ModelProto& model);

/// Writes `model` to `output_path` atomically (ModelWriter), external tensors read from `source`
/// (may be null). Returns the bytes written. Used by `qdq convert`.
uint64_t write_model_file(::onnx::ModelProto& model, const ModelSource* source, const std::string& output_path,
                          const WriteModelOptions& options = {});

/// Removes every temporary file and staging folder that a ModelWriter holds right now. Only calls
/// unlink() and rmdir(): async-signal-safe, for SIGINT/SIGTERM handlers, which should then re-raise.
void remove_temporary_model_files() noexcept;

}  // namespace qdq::onnx
