// tokenizer/id_maps.h — the two lookup tables on the encoder's hot path: token text → id and
// (left id, right id) → merge. Both are open-addressing tables built once at load and then only
// read, so they are safe to share between threads; std::unordered_map's node chasing was the
// bottleneck they replace.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace fg {

// A fast, non-cryptographic hash of a byte string (the tables above and the BPE cache use it).
uint64_t hash_bytes(std::string_view s);

// Byte string → int32 id. Keys are copied into an arena owned by the map.
class StringIdMap {
 public:
  // Inserts `key` with `id`; returns false (and changes nothing) if the key is already present.
  bool insert(std::string_view key, int32_t id);
  // The id of `key`, or -1.
  int32_t find(std::string_view key) const { return find(key, hash_bytes(key)); }
  int32_t find(std::string_view key, uint64_t hash) const;
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint32_t tag = 0;  // high hash bits, never 0 for a used slot
    int32_t id = -1;
    uint32_t offset = 0;
    uint32_t length = 0;
  };
  void grow();
  static uint32_t tag_of(uint64_t hash) { return static_cast<uint32_t>(hash >> 32) | 1u; }

  std::vector<Slot> slots_;  // [capacity], capacity a power of two, at most half full
  std::string keys_;         // all keys, back to back
  size_t size_ = 0;
};

// What merging the pair (left, right) produces, and its priority (lower merges first).
struct Merge {
  int32_t rank;
  int32_t new_id;
};

// (left id, right id) → Merge.
class PairMap {
 public:
  // Inserts or overwrites.
  void insert(int32_t left, int32_t right, Merge merge);
  // The merge of (left, right), or nullptr.
  const Merge* find(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    const uint64_t key = pack(left, right);
    for (size_t i = index_of(key);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.merge;
      if (s.key == kEmpty) return nullptr;
    }
  }
  // Starts loading the slot of (left, right) into cache: the table is megabytes, so lookups are
  // memory-bound, and issuing several loads before using any of them overlaps their latency.
  void prefetch(int32_t left, int32_t right) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[index_of(pack(left, right))]);
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  struct Slot {
    uint64_t key = kEmpty;
    Merge merge{0, 0};
  };
  static uint64_t pack(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  size_t index_of(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow();

  std::vector<Slot> slots_;  // [capacity], a power of two, at most half full
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace fg
