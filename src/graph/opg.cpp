// Writing and loading .opg files (safetensors with the graph in the metadata).
#include "opgraph/graph/opg.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>

#include "core/mapped_pages.h"
#include "graph/json_summary.h"

namespace opgraph {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kGraphKey = "opgraph.graph";
constexpr const char* kVersionKey = "opgraph.version";
constexpr const char* kPackagesKey = "opgraph.packages";
constexpr size_t kLengthBytes = 8;

// safetensors' dtype names.
const char* safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "F32";
    case DType::Float64: return "F64";
    case DType::Float16: return "F16";
    case DType::BFloat16: return "BF16";
    case DType::Int8: return "I8";
    case DType::UInt8: return "U8";
    case DType::Int32: return "I32";
    case DType::Int64: return "I64";
    case DType::Bool: return "BOOL";
    case DType::Complex64: return "C64";
    case DType::Complex128: return "C128";
  }
  throw Error("unknown dtype");
}

std::optional<DType> dtype_from_safetensors(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (name == safetensors_dtype(static_cast<DType>(i))) return static_cast<DType>(i);
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- writing

// The constants in the order their data is written: widest elements first,
// so that every tensor starts aligned to its element size when the data does
// (safetensors' own writers do the same).
std::vector<const ValueInfo*> write_order(const Graph& graph) {
  std::vector<const ValueInfo*> constants;
  for (const ValueInfo& constant : graph.constants) constants.push_back(&constant);
  std::stable_sort(constants.begin(), constants.end(),
                   [](const ValueInfo* a, const ValueInfo* b) { return itemsize(a->dtype) > itemsize(b->dtype); });
  return constants;
}

std::string header_text(const Graph& graph, const std::vector<const ValueInfo*>& constants, const Weights& weights) {
  Json header = Json::object();
  header["__metadata__"] = {
      {kVersionKey, kOpgVersion}, {kGraphKey, graph.to_json()}, {kPackagesKey, Json(graph.packages).dump()}};
  size_t offset = 0;
  for (const ValueInfo* constant : constants) {
    const Tensor& weight = weights.at(constant->name);
    header[constant->name] = {{"dtype", safetensors_dtype(weight.dtype())},
                              {"shape", weight.shape()},
                              {"data_offsets", {offset, offset + weight.nbytes()}}};
    offset += weight.nbytes();
  }
  std::string text = header.dump();
  // Pad with spaces (JSON whitespace) so that the data starts 64-byte aligned.
  text.append((kTensorAlignment - (kLengthBytes + text.size()) % kTensorAlignment) % kTensorAlignment, ' ');
  return text;
}

void write_file(const std::string& path, const std::string& header, const std::vector<const ValueInfo*>& constants,
                const Weights& weights) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  OPGRAPH_CHECK(out.good(), "cannot open '", path, "' for writing");
  char length[kLengthBytes];
  const auto header_size = static_cast<uint64_t>(header.size());
  for (size_t i = 0; i < kLengthBytes; ++i) length[i] = static_cast<char>(header_size >> (8 * i));
  out.write(length, kLengthBytes);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const ValueInfo* constant : constants) {
    const Tensor weight = weights.at(constant->name).contiguous();
    out.write(static_cast<const char*>(weight.data()), static_cast<std::streamsize>(weight.nbytes()));
  }
  out.close();
  OPGRAPH_CHECK(out.good(), "writing '", path, "' failed");
}

// ---------------------------------------------------------------- loading

// The whole file, mapped privately (copy-on-write): weights are views into
// it. Kernels that pack a weight release its pages (core/mapped_pages.h).
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    OPGRAPH_CHECK(fd >= 0, "cannot open '", path, "': ", std::strerror(errno));
    struct stat info{};
    if (::fstat(fd, &info) != 0) {
      ::close(fd);
      throw Error(detail::concat("cannot read '", path, "': ", std::strerror(errno)));
    }
    size_ = static_cast<size_t>(info.st_size);
    if (size_ > 0) {
      void* data = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
      ::close(fd);
      OPGRAPH_CHECK(data != MAP_FAILED, "cannot map '", path, "': ", std::strerror(errno));
      data_ = static_cast<uint8_t*>(data);
      note_file_mapping(data_, size_);
    } else {
      ::close(fd);
    }
  }
  ~MappedFile() {
    if (data_ == nullptr) return;
    forget_file_mapping(data_);
    ::munmap(data_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// One entry of the safetensors header, checked on its own.
struct TensorEntry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;  // data_offsets, relative to the start of the data
};

std::string offsets_str(uint64_t begin, uint64_t end) {
  return detail::concat("data_offsets [", begin, ", ", end, "]");
}

uint64_t unsigned_of(const Json& value, const std::string& what) {
  OPGRAPH_CHECK(value.is_number_unsigned(), what, " must be a non-negative integer, got ", json_summary(value));
  return value.get<uint64_t>();
}

TensorEntry parse_entry(const std::string& name, const Json& entry, uint64_t data_size) {
  const std::string where = "tensor '" + name + "'";
  OPGRAPH_CHECK(entry.is_object(), where, ": expected an object with dtype, shape and data_offsets, got ",
                json_summary(entry));
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    OPGRAPH_CHECK(entry.contains(key), where, ": missing '", key, "'");
  }
  TensorEntry t{name, DType::Float32, {}, 0, 0};
  const Json& dtype = entry["dtype"];
  OPGRAPH_CHECK(dtype.is_string(), where, ": dtype must be a string, got ", json_summary(dtype));
  std::optional<DType> known = dtype_from_safetensors(dtype.get<std::string>());
  OPGRAPH_CHECK(known, where, ": dtype '", dtype.get<std::string>(),
                "' is not supported (opgraph reads F32, F64, F16, BF16, I8, U8, I32, I64, BOOL, C64 and C128)");
  t.dtype = *known;

  const Json& shape = entry["shape"];
  OPGRAPH_CHECK(shape.is_array(), where, ": shape must be an array, got ", json_summary(shape));
  uint64_t bytes = itemsize(t.dtype);
  for (const Json& extent : shape) {
    const uint64_t size = unsigned_of(extent, where + ": shape extent");
    OPGRAPH_CHECK(size <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) &&
                      !__builtin_mul_overflow(bytes, size, &bytes),
                  where, ": shape ", json_summary(shape), " of ", dtype.get<std::string>(),
                  " overflows: its byte size does not fit in 64 bits");
    t.shape.push_back(static_cast<int64_t>(size));
  }

  const Json& offsets = entry["data_offsets"];
  OPGRAPH_CHECK(offsets.is_array() && offsets.size() == 2, where, ": data_offsets must be [begin, end], got ",
                json_summary(offsets));
  t.begin = unsigned_of(offsets[0], where + ": data_offsets[0]");
  t.end = unsigned_of(offsets[1], where + ": data_offsets[1]");
  OPGRAPH_CHECK(t.begin <= t.end, where, ": ", offsets_str(t.begin, t.end), " end before they begin");
  OPGRAPH_CHECK(t.end <= data_size, where, ": ", offsets_str(t.begin, t.end), " run past the end of the data (",
                data_size, " bytes)");
  OPGRAPH_CHECK(t.end - t.begin == bytes, where, ": ", offsets_str(t.begin, t.end), " hold ", t.end - t.begin,
                " bytes; ", dtype_name(t.dtype), shape_str(t.shape), " needs ", bytes);
  return t;
}

void check_no_overlap(std::vector<const TensorEntry*> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const TensorEntry* a, const TensorEntry* b) { return a->begin < b->begin; });
  const TensorEntry* previous = nullptr;
  for (const TensorEntry* entry : entries) {
    if (entry->begin == entry->end) continue;  // empty tensors hold no bytes
    if (previous) {
      OPGRAPH_CHECK(entry->begin >= previous->end, "tensors '", previous->name, "' (",
                    offsets_str(previous->begin, previous->end), ") and '", entry->name, "' (",
                    offsets_str(entry->begin, entry->end), ") overlap");
    }
    previous = entry;
  }
}

const std::string& metadata_string(const Json& metadata, const char* key) {
  OPGRAPH_CHECK(metadata.contains(key), "__metadata__ has no '", key, "': not an .opg file");
  const Json& value = metadata[key];
  OPGRAPH_CHECK(value.is_string(), "__metadata__['", key, "'] must be a string, got ", json_summary(value));
  return value.get_ref<const std::string&>();
}

Graph parse_graph(const Json& metadata) {
  const std::string& version = metadata_string(metadata, kVersionKey);
  OPGRAPH_CHECK(version == kOpgVersion, "unsupported .opg version '", version, "'; this opgraph reads version ",
                kOpgVersion);
  Graph graph = Graph::from_json(metadata_string(metadata, kGraphKey));
  Json packages;
  try {
    packages = Json::parse(metadata_string(metadata, kPackagesKey));
  } catch (const Json::exception&) {
    throw Error(detail::concat("__metadata__['", kPackagesKey, "'] is not valid JSON"));
  }
  OPGRAPH_CHECK(packages == Json(graph.packages), "__metadata__['", kPackagesKey, "'] lists ", json_summary(packages),
                " but the graph lists ", json_summary(Json(graph.packages)));
  verify_structure(graph);
  return graph;
}

// A view into the mapping (which it keeps alive), or a copy when the file
// places the tensor at an address its element type cannot be read from.
Tensor weight_view(const std::shared_ptr<MappedFile>& file, const uint8_t* data, const TensorEntry& entry) {
  void* address = const_cast<uint8_t*>(data + entry.begin);
  if (reinterpret_cast<uintptr_t>(address) % itemsize(entry.dtype) == 0) {
    return Tensor::from_blob(address, entry.shape, {}, entry.dtype, [file] {});
  }
  Tensor copy = Tensor::empty(entry.shape, entry.dtype);
  std::memcpy(copy.data(), address, copy.nbytes());
  return copy;
}

OpgFile load_mapped(const std::shared_ptr<MappedFile>& file) {
  const uint8_t* bytes = file->data();
  const size_t size = file->size();
  OPGRAPH_CHECK(size >= kLengthBytes, "the file is ", size, " bytes; a safetensors file starts with an ", kLengthBytes,
                "-byte header length");
  uint64_t header_size = 0;
  for (size_t i = 0; i < kLengthBytes; ++i) header_size |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  OPGRAPH_CHECK(header_size <= size - kLengthBytes, "header length ", header_size, " runs past the end of the file (",
                size, " bytes, so at most ", size - kLengthBytes, ")");
  Json header;
  try {
    header = Json::parse(std::string_view(reinterpret_cast<const char*>(bytes + kLengthBytes), header_size));
  } catch (const Json::exception& e) {
    throw Error(detail::concat("header (bytes ", kLengthBytes, " to ", kLengthBytes + header_size,
                               ") is not valid JSON: ", e.what()));
  }
  OPGRAPH_CHECK(header.is_object(), "header must be a JSON object, got ", header.type_name());
  OPGRAPH_CHECK(header.contains("__metadata__") && header["__metadata__"].is_object(),
                "header has no __metadata__ object: not an .opg file");

  const uint8_t* data = bytes + kLengthBytes + header_size;
  const uint64_t data_size = size - kLengthBytes - header_size;
  std::unordered_map<std::string, TensorEntry> entries;
  std::vector<const TensorEntry*> all;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    all.push_back(&entries.emplace(name, parse_entry(name, entry, data_size)).first->second);
  }
  check_no_overlap(all);

  OpgFile opg{parse_graph(header["__metadata__"]), {}};
  for (const ValueInfo& constant : opg.graph.constants) {
    auto it = entries.find(constant.name);
    OPGRAPH_CHECK(it != entries.end(), "constant '", constant.name, "' (", constant.type_str(),
                  ") has no tensor in the file");
    const TensorEntry& entry = it->second;
    OPGRAPH_CHECK(entry.dtype == constant.dtype && entry.shape == static_shape(constant.shape), "tensor '",
                  constant.name, "' is ", dtype_name(entry.dtype), shape_str(entry.shape),
                  "; the graph declares constant '", constant.name, "' as ", constant.type_str());
    opg.weights.emplace(constant.name, weight_view(file, data, entry));
  }
  return opg;
}

}  // namespace

void check_weights(const Graph& graph, const Weights& weights) {
  for (const ValueInfo& constant : graph.constants) {
    auto it = weights.find(constant.name);
    OPGRAPH_CHECK(it != weights.end(), "no weight given for constant '", constant.name, "' (", constant.type_str(),
                  ")");
    const Tensor& weight = it->second;
    OPGRAPH_CHECK(weight.defined() && weight.device().type == DeviceType::CPU, "weight '", constant.name,
                  "' must be a cpu tensor");
    OPGRAPH_CHECK(weight.dtype() == constant.dtype && weight.shape() == static_shape(constant.shape), "weight '",
                  constant.name, "' is ", weight.str(), "; the graph declares ", constant.type_str());
  }
  for (const auto& entry : weights) {
    const std::string& name = entry.first;  // clang with OpenMP cannot capture a binding
    const bool declared = std::any_of(graph.constants.begin(), graph.constants.end(),
                                      [&](const ValueInfo& constant) { return constant.name == name; });
    OPGRAPH_CHECK(declared, "weight '", name, "' is not a constant of the graph");
  }
}

void save_opg(const std::string& path, const Graph& graph, const Weights& weights) {
  try {
    verify_structure(graph);
    check_weights(graph, weights);
    const std::vector<const ValueInfo*> constants = write_order(graph);
    // Write beside the target and rename: a failed save leaves no half file.
    const std::string partial = path + ".partial";
    std::error_code ec;
    try {
      write_file(partial, header_text(graph, constants, weights), constants, weights);
    } catch (const Error&) {
      std::filesystem::remove(partial, ec);
      throw;
    }
    std::filesystem::rename(partial, path, ec);
    OPGRAPH_CHECK(!ec, "cannot rename '", partial, "' to '", path, "': ", ec.message());
  } catch (const Error& e) {
    throw Error(detail::concat("save_opg '", path, "': ", e.what()));
  }
}

OpgFile load_opg(const std::string& path) {
  try {
    return load_mapped(std::make_shared<MappedFile>(path));
  } catch (const Error& e) {
    throw Error(detail::concat("load_opg '", path, "': ", e.what()));
  }
}

}  // namespace opgraph
