// engine/block_hash.h — the identity of one full KV block in the prefix cache: a 128-bit hash
// chained through every block before it, so equal hashes mean (up to a collision, which the block
// manager checks for) equal token prefixes, not merely equal blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace fg {

struct BlockHash {
  uint64_t lo = 0, hi = 0;
  bool operator==(const BlockHash&) const = default;
};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const;
};

// XXH3_128bits over the parent's 16 bytes (lo then hi, host byte order; a fixed seed stands in
// for the parent of the first block) followed by the block's int32 token ids. Hashes live only in
// this process, so host byte order is fine.
BlockHash hash_block(const BlockHash* parent, std::span<const int32_t> tokens);

}  // namespace fg
