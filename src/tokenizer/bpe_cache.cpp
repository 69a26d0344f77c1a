// tokenizer/bpe_cache.cpp — the sharded piece → ids memo (see bpe_cache.h).
#include "tokenizer/bpe_cache.h"

#include <cstring>

namespace fg {

bool BpeCache::lookup(std::string_view key, uint64_t hash, std::vector<int32_t>& out) {
  Shard& shard = shard_of(hash);
  std::lock_guard<std::mutex> lock(shard.mutex);
  if (shard.slots.empty()) return false;
  for (size_t i = hash & (kSlotsPerShard - 1);; i = (i + 1) & (kSlotsPerShard - 1)) {
    const Slot& s = shard.slots[i];
    if (s.key_length == 0) return false;
    if (s.hash == hash && s.key_length == key.size() &&
        std::memcmp(shard.keys.data() + s.key_offset, key.data(), key.size()) == 0) {
      out.insert(out.end(), shard.ids.begin() + s.ids_offset, shard.ids.begin() + s.ids_offset + s.ids_length);
      return true;
    }
  }
}

void BpeCache::insert(std::string_view key, uint64_t hash, std::span<const int32_t> ids) {
  if (key.empty()) return;
  Shard& shard = shard_of(hash);
  std::lock_guard<std::mutex> lock(shard.mutex);
  if (shard.entries >= kEntriesPerShard || shard.keys.size() + key.size() > kArenaBytesPerShard ||
      (shard.ids.size() + ids.size()) * sizeof(int32_t) > kArenaBytesPerShard || shard.slots.empty()) {
    shard.slots.assign(kSlotsPerShard, Slot{});
    shard.keys.clear();
    shard.ids.clear();
    shard.entries = 0;
    if (key.size() > kArenaBytesPerShard || ids.size() * sizeof(int32_t) > kArenaBytesPerShard) return;
  }
  size_t i = hash & (kSlotsPerShard - 1);
  for (;; i = (i + 1) & (kSlotsPerShard - 1)) {
    const Slot& s = shard.slots[i];
    if (s.key_length == 0) break;
    if (s.hash == hash && s.key_length == key.size() &&
        std::memcmp(shard.keys.data() + s.key_offset, key.data(), key.size()) == 0)
      return;  // another thread cached it meanwhile
  }
  shard.slots[i] = Slot{hash, static_cast<uint32_t>(shard.keys.size()), static_cast<uint32_t>(key.size()),
                        static_cast<uint32_t>(shard.ids.size()), static_cast<uint32_t>(ids.size())};
  shard.keys.append(key);
  shard.ids.insert(shard.ids.end(), ids.begin(), ids.end());
  ++shard.entries;
}

}  // namespace fg
