// engine/block_hash.cpp — chained XXH3-128 over (parent hash, block tokens).
#include "engine/block_hash.h"

#include <xxhash.h>

#include <array>
#include <cstring>
#include <vector>

namespace fg {
namespace {

// The "parent" of a sequence's first block. Any fixed value works; a non-zero one keeps the first
// block's hash distinct from that of a block whose parent happens to hash to all zeros.
constexpr BlockHash kFirstBlockSeed{0x66756c6c67726170ull, 0x682d6b762d626c6bull};  // "fullgrap", "h-kv-blk"

// Blocks up to this many tokens hash from a stack buffer; the engine's block sizes (16, 32) fit.
constexpr size_t kInlineTokens = 64;

}  // namespace

size_t BlockHashHasher::operator()(const BlockHash& h) const {
  // XXH3 output is already uniformly mixed, so either half is a good bucket key on its own.
  return static_cast<size_t>(h.lo);
}

BlockHash hash_block(const BlockHash* parent, std::span<const int32_t> tokens) {
  // One contiguous buffer and the one-shot XXH3 call: the streaming API would need a
  // heap-allocated state per block (its state type is only stack-allocatable with
  // XXH_STATIC_LINKING_ONLY, which ties us to the library's struct layout).
  const BlockHash& head = parent != nullptr ? *parent : kFirstBlockSeed;
  const size_t num_bytes = sizeof(head.lo) + sizeof(head.hi) + tokens.size_bytes();
  std::array<unsigned char, 16 + kInlineTokens * sizeof(int32_t)> inline_buffer;  // [16 + 4 * kInlineTokens] bytes
  std::vector<unsigned char> heap_buffer;                                         // [num_bytes] when inline is too small
  unsigned char* bytes = inline_buffer.data();
  if (num_bytes > inline_buffer.size()) {
    heap_buffer.resize(num_bytes);
    bytes = heap_buffer.data();
  }
  std::memcpy(bytes, &head.lo, sizeof(head.lo));
  std::memcpy(bytes + 8, &head.hi, sizeof(head.hi));
  if (!tokens.empty()) std::memcpy(bytes + 16, tokens.data(), tokens.size_bytes());  // data() may be null when empty
  const XXH128_hash_t h = XXH3_128bits(bytes, num_bytes);
  return BlockHash{h.low64, h.high64};
}

}  // namespace fg
