// tokenizer/id_maps.cpp — hashing and growth of the lookup tables (see id_maps.h).
#include "tokenizer/id_maps.h"

#include <bit>

#include "core/error.h"

namespace fg {

namespace {

constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;  // 2^64 / golden ratio: spreads bits on multiply

uint64_t finish(uint64_t h) {
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return h;
}

}  // namespace

uint64_t hash_bytes(std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  uint64_t h = 0x243F6A8885A308D3ull ^ (n * kMul);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = std::rotl((h ^ w) * kMul, 27);
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = std::rotl((h ^ w) * kMul, 27);
  }
  return finish(h);
}

bool StringIdMap::insert(std::string_view key, int32_t id) {
  const uint64_t hash = hash_bytes(key);
  if (find(key, hash) >= 0) return false;
  FG_CHECK(keys_.size() + key.size() < (1ull << 32), "token table larger than 4 GiB");
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const uint32_t tag = tag_of(hash);
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>(hash) & mask;
  while (slots_[i].tag != 0) i = (i + 1) & mask;
  slots_[i] = Slot{tag, id, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(key.size())};
  keys_.append(key);
  ++size_;
  return true;
}

int32_t StringIdMap::find(std::string_view key, uint64_t hash) const {
  if (slots_.empty()) return -1;
  const uint32_t tag = tag_of(hash);
  const size_t mask = slots_.size() - 1;
  for (size_t i = static_cast<size_t>(hash) & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.tag == 0) return -1;
    if (s.tag == tag && s.length == key.size() && std::memcmp(keys_.data() + s.offset, key.data(), key.size()) == 0)
      return s.id;
  }
}

void StringIdMap::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.tag == 0) continue;
    const uint64_t hash = hash_bytes(std::string_view(keys_.data() + s.offset, s.length));
    size_t i = static_cast<size_t>(hash) & mask;
    while (slots_[i].tag != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void PairMap::insert(int32_t left, int32_t right, Merge merge) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const uint64_t key = pack(left, right);
  for (size_t i = index_of(key);; i = (i + 1) & (slots_.size() - 1)) {
    Slot& s = slots_[i];
    if (s.key == key) {
      s.merge = merge;
      return;
    }
    if (s.key == kEmpty) {
      s = Slot{key, merge};
      ++size_;
      return;
    }
  }
}

void PairMap::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
  shift_ = 64 - std::countr_zero(slots_.size());
  for (const Slot& s : old) {
    if (s.key == kEmpty) continue;
    size_t i = index_of(s.key);
    while (slots_[i].key != kEmpty) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = s;
  }
}

}  // namespace fg
