// model/gguf.cpp — validation of GGUF images and the memory-mapped file.
//
// Checkpoints come from the internet, so the header is hostile: every count and length is checked
// against the bytes that remain before anything is reserved or read (a count is bounded by the
// smallest encoding of what it counts), every product and sum is overflow-checked, and nothing is
// handed out until the whole header holds together. The checks follow ggml's own reader
// (ggml/src/gguf.cpp): general.alignment must be a uint32 power of two, a row's length a multiple
// of its type's block size, at most 4 dimensions, tensor data aligned inside the data section.
// Two rules are stricter than ggml's: a bool must be 0 or 1, and tensors may not overlap.
#include "model/gguf.h"


#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <numeric>
#include <map>
#include <utility>

#include "core/error.h"
#include "core/json/strict_json.h"

namespace fg {
namespace {

static_assert(std::endian::native == std::endian::little, "the GGUF reader copies little-endian numbers as they are");

constexpr uint64_t kDefaultAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT
constexpr uint32_t kMaxDims = 4;            // GGML_MAX_DIMS
constexpr const char* kAlignmentKey = "general.alignment";
constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
// The smallest encodings of a key/value pair (empty key, type, a uint8) and of a tensor info (empty
// name, n_dims, one dimension, type, offset): a count larger than the bytes left hold is refused
// before anything is reserved for it.
constexpr uint64_t kMinKeyValueBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

std::string join_dims(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

std::string in_quotes(const std::string& name) { return fmt::format("'{}'", clip_for_message(name)); }

// Sequential reads over the image. `what` callables build the name of the field being read; they
// run only when a message needs it, so the common path formats nothing.
class Reader {
 public:
  Reader(std::span<const std::byte> file, const std::string& source) : file_(file), source_(source) {}

  uint64_t position() const { return pos_; }
  uint64_t remaining() const { return file_.size() - pos_; }

  template <typename What>
  void need(uint64_t n, What&& what) {
    if (n > remaining())
      fail("{}: truncated: {} needs {} bytes at byte {}, but the file ends {} bytes later (file is {} bytes)", source_,
           what(), n, pos_, remaining(), file_.size());
  }

  template <typename T, typename What>
  T read(What&& what) {
    need(sizeof(T), what);
    T value;
    std::memcpy(&value, file_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }

  template <typename What>
  std::string read_string(What&& what) {
    const uint64_t at = pos_;
    const uint64_t length = read<uint64_t>([&] { return "the length of " + what(); });
    if (length > remaining())
      fail("{}: {} has length {} (at byte {}), past the end of the file: only {} bytes follow (file is {} bytes)",
           source_, what(), length, at, remaining(), file_.size());
    std::string out(reinterpret_cast<const char*>(file_.data() + pos_), static_cast<size_t>(length));
    pos_ += length;
    return out;
  }

  template <typename What>
  std::span<const std::byte> take(uint64_t n, What&& what) {
    need(n, what);
    std::span<const std::byte> out = file_.subspan(static_cast<size_t>(pos_), static_cast<size_t>(n));
    pos_ += n;
    return out;
  }

 private:
  std::span<const std::byte> file_;
  const std::string& source_;
  uint64_t pos_ = 0;
};

class Parser {
 public:
  Parser(std::span<const std::byte> file, const std::string& source)
      : file_(file), source_(source), in_(file, source) {}

  GgufHeader parse() {
    GgufHeader header;
    header.metadata = GgufMetadata(source_);
    read_preamble(header);
    for (uint64_t i = 0; i < kv_count_; ++i) read_key_value(header.metadata, i);
    header.alignment = alignment(header.metadata);
    check_count(tensor_count_, kMinTensorInfoBytes, "tensor count", "tensor info");
    header.tensors.reserve(static_cast<size_t>(tensor_count_));
    std::map<std::string, uint64_t> seen;
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      GgufTensorInfo info = read_tensor_info(i);
      auto [it, inserted] = seen.try_emplace(info.name, i);
      FG_CHECK(inserted, "{}: tensor {} appears twice (tensor infos #{} and #{})", source_, in_quotes(info.name),
               it->second, i);
      header.tensors.push_back(std::move(info));
    }
    // The data section starts at the next multiple of the alignment. A file whose tensors hold no
    // bytes may end before that padding, as ggml accepts; the data section is then empty.
    const uint64_t end = in_.position();
    header.data_offset = (end + header.alignment - 1) / header.alignment * header.alignment;
    header.data_size = file_.size() > header.data_offset ? file_.size() - header.data_offset : 0;
    check_layout(header);
    return header;
  }

 private:
  void read_preamble(GgufHeader& header) {
    FG_CHECK(file_.size() >= 4, "{}: file is {} bytes, too short for the 4-byte GGUF magic", source_, file_.size());
    std::span<const std::byte> magic = in_.take(4, [] { return std::string("the magic"); });
    if (std::memcmp(magic.data(), "GGUF", 4) != 0)
      fail("{}: not a GGUF file: it starts with bytes {:02x} {:02x} {:02x} {:02x}, not 'GGUF'", source_,
           std::to_integer<unsigned>(magic[0]), std::to_integer<unsigned>(magic[1]),
           std::to_integer<unsigned>(magic[2]), std::to_integer<unsigned>(magic[3]));
    const uint32_t version = in_.read<uint32_t>([] { return std::string("the version"); });
    if (version == 1)
      fail("{}: GGUF version 1 is not supported (it used 32-bit counts and lengths; supported: 2 and 3); "
           "convert the model again with a current llama.cpp",
           source_);
    const uint32_t swapped = __builtin_bswap32(version);
    if (swapped == 2 || swapped == 3)
      fail("{}: a big-endian GGUF file (version {} byte-swapped); only little-endian files are supported", source_,
           swapped);
    FG_CHECK(version == 2 || version == 3, "{}: GGUF version {} is not supported (supported: 2 and 3)", source_,
             version);
    header.version = version;
    tensor_count_ = in_.read<uint64_t>([] { return std::string("the tensor count"); });
    kv_count_ = in_.read<uint64_t>([] { return std::string("the metadata key/value count"); });
    check_count(kv_count_, kMinKeyValueBytes, "metadata key/value count", "key/value pair");
    check_count(tensor_count_, kMinTensorInfoBytes, "tensor count", "tensor info");
  }

  void check_count(uint64_t count, uint64_t min_bytes, const char* what, const char* unit) {
    if (count > in_.remaining() / min_bytes)
      fail("{}: {} {} cannot be right: each {} takes at least {} bytes, and only {} bytes follow byte {} "
           "(file is {} bytes)",
           source_, what, count, unit, min_bytes, in_.remaining(), in_.position(), file_.size());
  }

  template <typename What>
  GgufValueType read_type(What&& what) {
    const uint32_t id = in_.read<uint32_t>([&] { return "the value type of " + what(); });
    if (!gguf_value_type_known(id))
      fail("{}: {} has unknown value type id {} (GGUF value types are 0 to 12)", source_, what(), id);
    return static_cast<GgufValueType>(id);
  }

  template <typename What>
  void check_bools(std::span<const std::byte> bytes, bool array, What&& what) {
    for (size_t i = 0; i < bytes.size(); ++i) {
      const unsigned b = std::to_integer<unsigned>(bytes[i]);
      if (b <= 1) continue;
      if (!array) fail("{}: {} is a bool of value {}; a bool must be 0 or 1", source_, what(), b);
      fail("{}: element {} of {} is a bool of value {}; a bool must be 0 or 1", source_, i, what(), b);
    }
  }

  void read_key_value(GgufMetadata& metadata, uint64_t index) {
    std::string key = in_.read_string([&] { return fmt::format("the key of metadata entry #{}", index); });
    auto what = [&] { return "metadata key " + in_quotes(key); };
    GgufValue value;
    value.type = read_type(what);
    if (value.type == GgufValueType::kString) {
      value.strings.push_back(in_.read_string(what));
    } else if (value.type == GgufValueType::kArray) {
      read_array(value, what);
    } else {
      std::span<const std::byte> bytes = in_.take(gguf_value_size(value.type), what);
      if (value.type == GgufValueType::kBool) check_bools(bytes, false, what);
      value.numbers.assign(bytes.begin(), bytes.end());
    }
    if (metadata.contains(key))
      fail("{}: metadata key {} appears twice (the second time as entry #{})", source_, in_quotes(key), index);
    metadata.add(std::move(key), std::move(value));
  }

  template <typename What>
  void read_array(GgufValue& value, What&& what) {
    value.element_type = read_type([&] { return "the elements of " + what(); });
    if (value.element_type == GgufValueType::kArray)
      fail("{}: {} is an array of arrays; nested arrays are not supported", source_, what());
    const uint64_t at = in_.position();
    value.count = in_.read<uint64_t>([&] { return "the element count of " + what(); });
    const bool strings = value.element_type == GgufValueType::kString;
    const uint64_t min_bytes = strings ? 8 : gguf_value_size(value.element_type);
    if (value.count > in_.remaining() / min_bytes)
      fail("{}: {} is an array of {} {} (count at byte {}), which needs at least {} bytes each, but only {} bytes "
           "follow (file is {} bytes)",
           source_, what(), value.count, gguf_value_type_name(value.element_type), at, min_bytes, in_.remaining(),
           file_.size());
    if (strings) {
      value.strings.reserve(static_cast<size_t>(value.count));
      for (uint64_t i = 0; i < value.count; ++i)
        value.strings.push_back(in_.read_string([&] { return fmt::format("element {} of {}", i, what()); }));
    } else {
      std::span<const std::byte> bytes = in_.take(value.count * min_bytes, what);  // bounded above
      if (value.element_type == GgufValueType::kBool) check_bools(bytes, true, what);
      value.numbers.assign(bytes.begin(), bytes.end());
    }
  }

  uint64_t alignment(const GgufMetadata& metadata) const {
    const GgufValue* value = metadata.find(kAlignmentKey);
    if (value == nullptr) return kDefaultAlignment;
    FG_CHECK(!value->is_array() && value->type == GgufValueType::kU32, "{}: metadata key '{}' is {}, expected uint32",
             source_, kAlignmentKey, value->describe());
    uint32_t alignment = 0;
    std::memcpy(&alignment, value->numbers.data(), sizeof(alignment));
    FG_CHECK(alignment != 0 && std::has_single_bit(alignment),
             "{}: metadata key '{}' is {}; the alignment must be a nonzero power of two", source_, kAlignmentKey,
             alignment);
    return alignment;
  }

  GgufTensorInfo read_tensor_info(uint64_t index) {
    GgufTensorInfo info;
    info.name = in_.read_string([&] { return fmt::format("the name of tensor info #{}", index); });
    auto what = [&] { return "tensor " + in_quotes(info.name); };
    const uint32_t n_dims = in_.read<uint32_t>([&] { return "the dimension count of " + what(); });
    FG_CHECK(n_dims >= 1 && n_dims <= kMaxDims, "{}: {} has {} dimensions; GGUF tensors have 1 to {}", source_, what(),
             n_dims, kMaxDims);
    std::vector<int64_t> ne(n_dims);  // GGUF order: ne[0] is the row length
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim = in_.read<uint64_t>([&] { return fmt::format("dimension {} of {}", d, what()); });
      FG_CHECK(dim <= kInt64Max, "{}: {} has dimension {} of {}, larger than 2^63 - 1", source_, what(), d, dim);
      ne[d] = static_cast<int64_t>(dim);
    }
    info.shape.assign(ne.rbegin(), ne.rend());
    const uint32_t type_id = in_.read<uint32_t>([&] { return "the type of " + what(); });
    std::optional<GgmlTypeInfo> type = ggml_type_info(type_id);
    if (!type)
      fail("{}: {} has ggml type {}, which this reader does not know", source_, what(), ggml_type_label(type_id));
    info.type = type->type;
    info.offset = in_.read<uint64_t>([&] { return "the data offset of " + what(); });

    FG_CHECK(ne[0] % type->block_size == 0,
             "{}: {} ({}) has rows of {} elements (shape {}), not a multiple of the {}-element {} block", source_,
             what(), type->name, ne[0], join_dims(info.shape), type->block_size, type->name);
    // Products over the non-zero dimensions are bounded too, not only the true (possibly zero)
    // counts: code that computes strides or row sizes from a sub-product must not overflow either.
    uint64_t elements = 1;
    uint64_t bytes = static_cast<uint64_t>(type->block_bytes);
    bool overflow = false;
    for (uint32_t d = 0; d < n_dims; ++d) {
      if (ne[d] == 0) continue;
      const uint64_t dim = static_cast<uint64_t>(ne[d]);
      const uint64_t factor = d == 0 ? dim / static_cast<uint64_t>(type->block_size) : dim;
      overflow = overflow || __builtin_mul_overflow(elements, dim, &elements) ||
                 __builtin_mul_overflow(bytes, factor, &bytes);
    }
    if (overflow || elements > kInt64Max || bytes > kInt64Max)
      fail("{}: {} has shape {} of {}, whose element count or byte size does not fit in 63 bits", source_, what(),
           join_dims(info.shape), type->name);
    uint64_t numel = 1;
    for (int64_t dim : ne) numel *= static_cast<uint64_t>(dim);  // bounded by `elements` above
    info.size = ggml_bytes(info.type, numel).value();              // bounded by `bytes` above
    return info;
  }

  // Each tensor lies inside the data section at an aligned offset, and no two share a byte. Gaps
  // are allowed: writers pad every tensor to the alignment.
  void check_layout(const GgufHeader& header) const {
    const std::vector<GgufTensorInfo>& tensors = header.tensors;
    for (const GgufTensorInfo& t : tensors) {
      FG_CHECK(t.offset % header.alignment == 0,
               "{}: tensor {} has data offset {}, not a multiple of the alignment {}", source_, in_quotes(t.name),
               t.offset, header.alignment);
      if (t.offset > header.data_size || t.size > header.data_size - t.offset)
        fail("{}: truncated: tensor {} ({}, shape {}) at data offset {} needs {} bytes, past the end of the data "
             "section, which holds {} bytes (file is {} bytes, data starts at byte {})",
             source_, in_quotes(t.name), ggml_type_name(t.type), join_dims(t.shape), t.offset, t.size, header.data_size,
             file_.size(), header.data_offset);
    }
    std::vector<size_t> order(tensors.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::erase_if(order, [&](size_t i) { return tensors[i].size == 0; });  // an empty tensor owns no byte
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::pair(tensors[a].offset, a) < std::pair(tensors[b].offset, b);
    });
    for (size_t k = 1; k < order.size(); ++k) {
      const GgufTensorInfo& prev = tensors[order[k - 1]];
      const GgufTensorInfo& next = tensors[order[k]];
      if (next.offset < prev.offset + prev.size)
        fail("{}: tensor {} (data bytes [{}, {})) overlaps tensor {} (data bytes [{}, {}))", source_,
             in_quotes(next.name), next.offset, next.offset + next.size, in_quotes(prev.name), prev.offset,
             prev.offset + prev.size);
    }
  }

  std::span<const std::byte> file_;
  const std::string& source_;
  Reader in_;
  uint64_t tensor_count_ = 0;
  uint64_t kv_count_ = 0;
};

}  // namespace

int64_t GgufTensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t dim : shape) n *= dim;  // checked against overflow when the file was read
  return n;
}

GgufHeader parse_gguf(std::span<const std::byte> file, const std::string& source) {
  return Parser(file, source).parse();
}

// ---- GgufFile ----

std::shared_ptr<GgufFile> GgufFile::open(const std::string& path) {
  std::shared_ptr<GgufFile> file(new GgufFile());
  file->path_ = path;
  file->mapped_ = MappedFile::open(path);
  file->header_ = parse_gguf(file->mapped_.bytes(), path);
  for (size_t i = 0; i < file->header_.tensors.size(); ++i) file->index_.emplace(file->header_.tensors[i].name, i);
  return file;
}


const GgufTensorInfo* GgufFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

const GgufTensorInfo& GgufFile::tensor(const std::string& name) const {
  const GgufTensorInfo* info = find(name);
  FG_CHECK(info != nullptr, "{}: no tensor '{}' in this file ({} tensors)", path_, clip_for_message(name),
           header_.tensors.size());
  return *info;
}

std::span<const std::byte> GgufFile::bytes(const GgufTensorInfo& info) const {
  if (info.size == 0) return {};
  FG_CHECK(info.offset <= header_.data_size && info.size <= header_.data_size - info.offset,
           "{}: tensor '{}' data bytes [{}, {}) are not inside this file's data section", path_,
           clip_for_message(info.name), info.offset, info.offset + info.size);
  return {mapped_.bytes().data() + header_.data_offset + info.offset, static_cast<size_t>(info.size)};
}

}  // namespace fg
