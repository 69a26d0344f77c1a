// model/safetensors.cpp — validation of safetensors images, the mmapped file, sharded checkpoint
// folders and the writer.
//
// Checkpoints come from the internet, so the header is treated as hostile: every number is
// checked before it becomes an offset, and nothing is handed out until the whole file holds
// together. Limits chosen here: the header is at most 100,000,000 bytes (the decimal 100 MB of
// the reference Rust implementation) and JSON nests at most 64 levels deep (a valid header needs
// 3). core/json parses the header and the index strictly (duplicate keys, depth, UTF-8).
#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string_view>
#include <utility>

#include "core/error.h"
#include "core/json/strict_json.h"

namespace fg {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr JsonLimits kJsonLimits{kMaxHeaderBytes, 64};
constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

// Names and values from a hostile header can be megabytes long; messages keep a readable prefix.
std::string clip_json(const json& value) {
  return clip_for_message(value.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string join_dims(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

std::string errno_text() { return std::strerror(errno); }

const char* json_kind(const json& value) {
  if (value.is_number_float()) return "a fractional number";
  return value.type_name();
}

// A non-negative JSON integer that fits in int64, or a failure that says why not.
uint64_t require_count(const json& value, const std::string& what) {
  if (value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0)) {
    uint64_t v = value.get<uint64_t>();
    FG_CHECK(v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), "{} is {}, larger than 2^63 - 1", what,
             v);
    return v;
  }
  if (value.is_number_integer()) fail("{} is {}, which is negative", what, value.get<int64_t>());
  fail("{} is {} ({}), not a non-negative integer", what, clip_json(value), json_kind(value));
}

SafetensorsEntry parse_entry(const std::string& name, const json& value, const std::string& source) {
  const std::string tensor = fmt::format("{}: tensor '{}'", source, clip_for_message(name));
  FG_CHECK(value.is_object(), "{} is {} ({}), not an object with dtype, shape and data_offsets", tensor,
           clip_json(value), json_kind(value));
  for (const auto& [field, _] : value.items()) {
    FG_CHECK(field == "dtype" || field == "shape" || field == "data_offsets",
             "{} has an unexpected field '{}' (only dtype, shape and data_offsets are allowed)", tensor,
             clip_for_message(field));
  }
  for (const char* field : {"dtype", "shape", "data_offsets"})
    FG_CHECK(value.contains(field), "{} is missing the '{}' field", tensor, field);

  SafetensorsEntry entry;
  entry.name = name;

  const json& dtype = value["dtype"];
  FG_CHECK(dtype.is_string(), "{} has dtype {} ({}), not a string", tensor, clip_json(dtype), json_kind(dtype));
  const std::string& dtype_text = dtype.get_ref<const std::string&>();
  std::optional<DType> parsed = parse_dtype(dtype_text);
  if (!parsed)
    fail("unsupported dtype '{}' for tensor '{}' in {}", clip_for_message(dtype_text), clip_for_message(name), source);
  entry.dtype = *parsed;

  const json& shape = value["shape"];
  FG_CHECK(shape.is_array(), "{} has shape {} ({}), not an array", tensor, clip_json(shape), json_kind(shape));
  for (size_t i = 0; i < shape.size(); ++i) {
    uint64_t dim = require_count(shape[i], fmt::format("{}: shape dimension {} of {}", tensor, i, clip_json(shape)));
    entry.shape.push_back(static_cast<int64_t>(dim));
  }

  const json& offsets = value["data_offsets"];
  FG_CHECK(offsets.is_array() && offsets.size() == 2, "{} has data_offsets {}, not an array of two integers", tensor,
           clip_json(offsets));
  entry.begin = require_count(offsets[0], fmt::format("{}: data_offsets begin", tensor));
  entry.end = require_count(offsets[1], fmt::format("{}: data_offsets end", tensor));
  FG_CHECK(entry.begin <= entry.end, "{} has data_offsets [{}, {}] whose begin is past its end", tensor, entry.begin,
           entry.end);

  // The product over the non-zero dimensions is bounded too, not only the true (possibly zero)
  // size: code that computes strides or row sizes from a sub-product must not overflow either.
  const uint64_t element = dtype_size(entry.dtype);
  uint64_t bound = element;
  bool overflow = false;
  for (int64_t dim : entry.shape)
    if (dim != 0) overflow = overflow || __builtin_mul_overflow(bound, static_cast<uint64_t>(dim), &bound);
  if (overflow || bound > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    fail("{}: shape {} of {} overflows: the product of its dimensions times {} bytes does not fit in 63 bits", tensor,
         join_dims(entry.shape), dtype_name(entry.dtype), element);
  }
  uint64_t needed = element;
  for (int64_t dim : entry.shape) needed *= static_cast<uint64_t>(dim);  // bounded by `bound` above
  FG_CHECK(entry.end - entry.begin == needed, "{} data_offsets [{}, {}] hold {} bytes but shape {} of {} needs {}",
           tensor, entry.begin, entry.end, entry.end - entry.begin, join_dims(entry.shape), dtype_name(entry.dtype),
           needed);
  return entry;
}

std::map<std::string, std::string> parse_metadata(const json& value, const std::string& source) {
  FG_CHECK(value.is_object(), "{}: __metadata__ is {} ({}), not an object of strings", source, clip_json(value),
           json_kind(value));
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    FG_CHECK(item.is_string(), "{}: __metadata__ value of '{}' is {} ({}), not a string", source, clip_for_message(key),
             clip_json(item), json_kind(item));
    metadata.emplace(key, item.get<std::string>());
  }
  return metadata;
}

// The data section must be tiled exactly: sorted by offset, each tensor begins where the
// previous one ended, the first at 0, the last at the end of the file.
void check_layout(const std::vector<SafetensorsEntry>& entries, uint64_t data_size, uint64_t file_size,
                  const std::string& source) {
  std::vector<size_t> order(entries.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(entries[a].begin, entries[a].end) < std::pair(entries[b].begin, entries[b].end);
  });
  uint64_t covered = 0;
  const SafetensorsEntry* previous = nullptr;
  for (size_t i : order) {
    const SafetensorsEntry& e = entries[i];
    if (e.begin > covered) {
      if (previous == nullptr)
        fail(
            "{}: tensor '{}' data_offsets [{}, {}] do not start at 0: the data section must begin with a tensor, "
            "and bytes [0, {}) belong to none",
            source, clip_for_message(e.name), e.begin, e.end, e.begin);
      fail(
          "{}: gap in the data section: bytes [{}, {}) between tensor '{}' data_offsets [{}, {}] and tensor '{}' "
          "data_offsets [{}, {}] belong to no tensor",
          source, covered, e.begin, clip_for_message(previous->name), previous->begin, previous->end,
          clip_for_message(e.name), e.begin, e.end);
    }
    if (e.begin < covered) {
      fail("{}: tensor '{}' data_offsets [{}, {}] overlap tensor '{}' data_offsets [{}, {}]", source,
           clip_for_message(e.name), e.begin, e.end, clip_for_message(previous->name), previous->begin, previous->end);
    }
    if (e.end > data_size) {
      fail(
          "{}: truncated: tensor '{}' data_offsets [{}, {}] end past the data section, which holds only {} bytes "
          "(file is {} bytes, data starts at byte {})",
          source, clip_for_message(e.name), e.begin, e.end, data_size, file_size, file_size - data_size);
    }
    covered = e.end;
    previous = &e;
  }
  FG_CHECK(covered == data_size,
           "{}: {} trailing bytes: the data section holds {} bytes but the tensors' data_offsets end at {} "
           "(file is {} bytes)",
           source, data_size - covered, data_size, covered, file_size);
}

std::string byte_text(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x}", u);
}

bool is_inside(const fs::path& path, const fs::path& folder) {
  fs::path rel = path.lexically_relative(folder);
  return !rel.empty() && rel != "." && *rel.begin() != "..";
}

// A shard path from the index, confined to the folder. Symbolic links are followed, and the
// target must lie in the folder too, except for the Hugging Face hub cache, where
// snapshots/<rev>/<file> links to ../../blobs/<hash> by design.
fs::path resolve_shard(const fs::path& folder, const fs::path& index, const std::string& tensor,
                       const std::string& shard) {
  const std::string what = fmt::format("{}: shard path '{}' of tensor '{}'", index.string(), clip_for_message(shard),
                                       clip_for_message(tensor));
  FG_CHECK(!shard.empty(), "{} is empty", what);
  FG_CHECK(shard.find('\0') == std::string::npos, "{} contains a NUL byte", what);
  fs::path relative(shard);
  FG_CHECK(!relative.has_root_path(), "{} is absolute; shard paths must be relative to the folder {}", what,
           folder.string());
  for (const fs::path& part : relative)
    FG_CHECK(part != "..", "{} has a '..' component; shard paths must stay inside the folder {}", what,
             folder.string());
  fs::path full = folder / relative;
  std::error_code ec;
  FG_CHECK(fs::exists(full, ec), "{}: shard file {} does not exist", what, full.string());
  fs::path resolved = fs::canonical(full, ec);
  FG_CHECK(!ec, "{}: cannot resolve {}: {}", what, full.string(), ec.message());
  fs::path home = fs::canonical(folder, ec);
  FG_CHECK(!ec, "cannot resolve the folder {}: {}", folder.string(), ec.message());
  bool hub_blob =
      home.parent_path().filename() == "snapshots" && is_inside(resolved, home.parent_path().parent_path() / "blobs");
  FG_CHECK(is_inside(resolved, home) || hub_blob, "{} resolves to {}, outside the folder {}", what, resolved.string(),
           folder.string());
  return resolved;
}

void write_all(int fd, const void* data, size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t written = ::write(fd, p, size);
    if (written < 0 && errno == EINTR) continue;
    FG_CHECK(written > 0, "cannot write {}: {}", path, errno_text());
    p += written;
    size -= static_cast<size_t>(written);
  }
}

}  // namespace

SafetensorsHeader parse_safetensors(std::span<const std::byte> file, const std::string& source) {
  const uint64_t size = file.size();
  FG_CHECK(size >= 8, "{}: file is {} bytes, shorter than the 8-byte header length that starts a safetensors file",
           source, size);
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | std::to_integer<uint64_t>(file[static_cast<size_t>(i)]);
  FG_CHECK(length <= kMaxHeaderBytes, "{}: header length {} is over the limit of {} bytes (100 MB)", source, length,
           kMaxHeaderBytes);
  FG_CHECK(length <= size - 8,
           "{}: header length {} runs past the end of the file: the file is {} bytes, so at most {} follow the "
           "8-byte length",
           source, length, size, size - 8);

  std::string_view text(reinterpret_cast<const char*>(file.data()) + 8, static_cast<size_t>(length));
  const std::string what = source + ": header";
  // Writers pad the header with spaces to align the data; nothing else may follow the JSON.
  std::string_view json_text = text.substr(0, text.find_last_not_of(' ') + 1);
  FG_CHECK(!json_text.empty(), "{} is empty (length {}), not a JSON object", what, length);
  FG_CHECK(json_text.front() == '{', "{} is not a JSON object: it starts with {}", what, byte_text(json_text.front()));
  const JsonDocument parsed = parse_strict_json(json_text, {source, "header"}, kJsonLimits);
  FG_CHECK(json_text.back() == '}', "{} has {} at offset {} after the JSON object; only spaces may pad the header",
           what, byte_text(json_text.back()), json_text.size() - 1);
  FG_ASSERT(parsed.value.is_object());

  // Entries keep the header's order (the API promises it): the first bad tensor reported, and
  // the tie order of zero-size tensors at one offset in check_layout, follow the file.
  SafetensorsHeader header;
  header.data_offset = 8 + length;
  for (const std::string& key : parsed.top_level_keys) {
    const json& value = parsed.value.at(key);
    if (key == "__metadata__")
      header.metadata = parse_metadata(value, source);
    else
      header.entries.push_back(parse_entry(key, value, source));
  }
  check_layout(header.entries, size - header.data_offset, size, source);
  return header;
}

// ---- SafetensorsFile ----

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  file->mapped_ = MappedFile::open(path);
  file->header_ = parse_safetensors(file->mapped_.bytes(), path);
  for (size_t i = 0; i < file->header_.entries.size(); ++i) file->index_.emplace(file->header_.entries[i].name, i);
  return file;
}


const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.entries[it->second];
}

Tensor SafetensorsFile::tensor(const SafetensorsEntry& entry) const {
  FG_CHECK(entry.end <= mapped_.size() - header_.data_offset && entry.begin <= entry.end,
           "{}: tensor '{}' data_offsets [{}, {}] are not inside this file's data section", path_,
           clip_for_message(entry.name), entry.begin, entry.end);
  FG_CHECK(entry.shape.size() <= static_cast<size_t>(Tensor::kMaxRank),
           "{}: tensor '{}' has rank {} (shape {}); at most {} is supported", path_, clip_for_message(entry.name),
           entry.shape.size(), join_dims(entry.shape), Tensor::kMaxRank);
  const std::byte* data = mapped_.bytes().data() + header_.data_offset + entry.begin;
  // The format does not require alignment, but a typed view of misaligned memory is undefined
  // behaviour for every reader of it; files written by the safetensors library are aligned.
  const size_t element = dtype_size(entry.dtype);
  FG_CHECK(entry.begin == entry.end || reinterpret_cast<uintptr_t>(data) % element == 0,
           "{}: tensor '{}' ({}) starts at byte {} of the file, not a multiple of its {}-byte element size; "
           "re-save the file with the safetensors library to align it",
           path_, clip_for_message(entry.name), dtype_name(entry.dtype), header_.data_offset + entry.begin, element);
  Tensor view;
  // The mapping is read-only: a Tensor has no const flavour, but writing through it faults.
  view.data = const_cast<std::byte*>(data);
  view.dtype = entry.dtype;
  view.device = Device::kHost;
  view.rank = static_cast<int>(entry.shape.size());
  std::copy(entry.shape.begin(), entry.shape.end(), view.shape.begin());
  return view;
}

// ---- Checkpoint ----

Checkpoint Checkpoint::open(const std::string& dir) {
  Checkpoint checkpoint;
  checkpoint.dir_ = dir;
  const fs::path folder(dir);
  std::error_code ec;
  FG_CHECK(fs::is_directory(folder, ec), "{}: not a checkpoint folder (it does not exist or is not a directory)", dir);
  const fs::path index_path = folder / kIndexName;
  const fs::path single_path = folder / kSingleName;

  if (!fs::exists(index_path, ec)) {
    FG_CHECK(fs::exists(single_path, ec), "{}: no safetensors checkpoint in this folder: neither {} nor {} exists", dir,
             kIndexName, kSingleName);
    auto file = SafetensorsFile::open(single_path.string());
    for (const SafetensorsEntry& entry : file->header().entries)
      checkpoint.tensors_.emplace(entry.name, Located{file.get(), &entry});
    checkpoint.files_.push_back(std::move(file));
    return checkpoint;
  }

  const std::string index = index_path.string();
  const JsonDocument parsed = read_json_file(index, {dir, kIndexName}, kJsonLimits);
  parsed.root().require_object();
  const json& root = parsed.value;
  FG_CHECK(root.contains("weight_map"), "{} has no 'weight_map'", index);
  const json& weight_map = root["weight_map"];
  FG_CHECK(weight_map.is_object(), "{}: 'weight_map' is {}, not an object of tensor name → shard file", index,
           json_kind(weight_map));
  if (root.contains("metadata"))
    FG_CHECK(root["metadata"].is_object(), "{}: 'metadata' is {}, not an object", index, json_kind(root["metadata"]));

  // Shards are keyed by their resolved path so that "a.safetensors" and "./a.safetensors" open once.
  struct Shard {
    std::string path;  // as the index spells it, joined to the folder, for messages
    std::shared_ptr<SafetensorsFile> file;
  };
  std::map<std::string, Shard> shards;
  std::map<std::string, std::string> shard_of;  // tensor → resolved shard path, from the index
  for (const auto& [name, value] : weight_map.items()) {
    FG_CHECK(value.is_string(), "{}: 'weight_map' entry of tensor '{}' is {} ({}), not a shard file name", index,
             clip_for_message(name), clip_json(value), json_kind(value));
    const std::string& shard = value.get_ref<const std::string&>();
    std::string resolved = resolve_shard(folder, index_path, name, shard).string();
    shards.try_emplace(resolved, Shard{(folder / shard).string(), nullptr});
    shard_of.emplace(name, std::move(resolved));
  }
  for (auto& [resolved, shard] : shards) shard.file = SafetensorsFile::open(shard.path);

  // Every tensor lives in exactly one shard, and that shard is the one the index names.
  for (const auto& [resolved, shard] : shards) {
    for (const SafetensorsEntry& entry : shard.file->header().entries) {
      auto [it, inserted] = checkpoint.tensors_.emplace(entry.name, Located{shard.file.get(), &entry});
      FG_CHECK(inserted, "{}: tensor '{}' is in two shards, {} and {}", dir, clip_for_message(entry.name),
               it->second.file->path(), shard.path);
      auto mapped = shard_of.find(entry.name);
      FG_CHECK(mapped != shard_of.end(), "{}: tensor '{}' is in {} but {} does not list it", dir,
               clip_for_message(entry.name), shard.path, index);
      FG_CHECK(mapped->second == resolved, "{}: tensor '{}' is in {} but {} maps it to {}", dir,
               clip_for_message(entry.name), shard.path, index, shards.at(mapped->second).path);
    }
  }
  for (const auto& [name, resolved] : shard_of) {
    FG_CHECK(checkpoint.tensors_.count(name) != 0,
             "{}: missing tensor '{}': {} maps it to {}, which does not contain it", dir, clip_for_message(name), index,
             shards.at(resolved).path);
  }
  for (auto& [resolved, shard] : shards) checkpoint.files_.push_back(std::move(shard.file));
  return checkpoint;
}

Tensor Checkpoint::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  FG_CHECK(it != tensors_.end(), "{}: no tensor '{}' in this checkpoint ({} tensors)", dir_, clip_for_message(name),
           tensors_.size());
  return it->second.file->tensor(*it->second.entry);
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, _] : tensors_) out.push_back(name);
  return out;
}

// ---- writer ----

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const NamedTensor& named : tensors) {
    const Tensor& t = named.tensor;
    FG_CHECK(named.name != "__metadata__", "{}: cannot write a tensor named '__metadata__'", path);
    FG_CHECK(!header.contains(named.name), "{}: tensor '{}' is given twice", path, clip_for_message(named.name));
    FG_CHECK(t.device == Device::kHost, "{}: tensor '{}' is not in host memory", path, clip_for_message(named.name));
    std::vector<int64_t> shape(t.shape.begin(), t.shape.begin() + t.rank);
    for (int64_t dim : shape)
      FG_CHECK(dim >= 0, "{}: tensor '{}' has a negative dimension in shape {}", path, clip_for_message(named.name),
               join_dims(shape));
    FG_CHECK(t.data != nullptr || t.numel() == 0, "{}: tensor '{}' of shape {} has no data", path,
             clip_for_message(named.name), join_dims(shape));
    uint64_t bytes = t.nbytes();
    // The header is padded to 8 bytes, so this keeps the reader's typed views aligned.
    FG_CHECK(bytes == 0 || offset % dtype_size(t.dtype) == 0,
             "{}: tensor '{}' ({}) would start at byte {} of the data section, not a multiple of its {}-byte "
             "element size; order the tensors by decreasing element size",
             path, clip_for_message(named.name), dtype_name(t.dtype), offset, dtype_size(t.dtype));
    header[named.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::strict);
  } catch (const nlohmann::ordered_json::exception& e) {
    fail("{}: cannot encode the header (names and metadata must be UTF-8): {}", path, e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned
  FG_CHECK(text.size() <= kMaxHeaderBytes, "{}: header would be {} bytes, over the limit of {}", path, text.size(),
           kMaxHeaderBytes);
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));

  // Readers never see a half-written file: write beside it, then rename over it.
  const std::string temp = path + ".tmp";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  FG_CHECK(fd >= 0, "cannot create {}: {}", temp, errno_text());
  try {
    write_all(fd, length, sizeof(length), temp);
    write_all(fd, text.data(), text.size(), temp);
    for (const NamedTensor& named : tensors)
      if (named.tensor.nbytes() > 0) write_all(fd, named.tensor.data, named.tensor.nbytes(), temp);
    FG_CHECK(::fsync(fd) == 0, "cannot flush {}: {}", temp, errno_text());
    FG_CHECK(::close(fd) == 0, "cannot close {}: {}", temp, errno_text());
    fd = -1;
    FG_CHECK(::rename(temp.c_str(), path.c_str()) == 0, "cannot rename {} to {}: {}", temp, path, errno_text());
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
}

}  // namespace fg
