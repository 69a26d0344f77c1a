// tokenizer/bpe_cache.h — a bounded, thread-safe memo of piece → token ids for the BPE model.
//
// Natural text repeats its words constantly, so most pieces skip the merge loop. The cache is
// split into shards, each behind its own mutex, so that concurrent encoders rarely contend; a
// shard that fills up is simply emptied (the workload has no useful eviction order to exploit).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fg {

class BpeCache {
 public:
  // Appends the cached ids of `key` (whose hash_bytes() is `hash`) to `out`; false on a miss.
  bool lookup(std::string_view key, uint64_t hash, std::vector<int32_t>& out);
  void insert(std::string_view key, uint64_t hash, std::span<const int32_t> ids);

 private:
  static constexpr size_t kShards = 16;
  static constexpr size_t kSlotsPerShard = 8192;     // a power of two
  static constexpr size_t kEntriesPerShard = 4096;   // half the slots: probes stay short
  static constexpr size_t kArenaBytesPerShard = 1 << 20;

  struct Slot {
    uint64_t hash = 0;
    uint32_t key_offset = 0;
    uint32_t key_length = 0;  // 0 marks an empty slot (empty pieces are never cached)
    uint32_t ids_offset = 0;
    uint32_t ids_length = 0;
  };
  struct Shard {
    std::mutex mutex;
    std::vector<Slot> slots;   // [kSlotsPerShard] once used
    std::string keys;          // key bytes, back to back
    std::vector<int32_t> ids;  // id lists, back to back
    size_t entries = 0;
  };
  Shard& shard_of(uint64_t hash) { return shards_[hash >> 60]; }  // the top 4 bits pick one of 16

  std::array<Shard, kShards> shards_;
};

}  // namespace fg
