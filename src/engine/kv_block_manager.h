// engine/kv_block_manager.h — the paged KV cache's block bookkeeping for the scheduler: which
// request holds which physical blocks, the free list, and the prefix cache (full blocks indexed by
// their chained hash, kept after their requests finish until the space is needed).
//
// Plain CPU code, called every step: every operation costs O(blocks it touches). A block is in
// exactly one place: held (refcount > 0, possibly by several requests sharing a cached prefix),
// the free list (uncached, a stack), or the evictable list (cached, refcount 0, least recently
// freed first). Block 0 is the null block: padded slots of the block table point at it, so it is
// never handed out.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/block_hash.h"

namespace fg {

struct KvBlockManagerOptions {
  int64_t num_blocks = 0;  // including the null block 0, which is never handed out
  int64_t block_size = 16;
  bool enable_prefix_caching = true;
};

class KvBlockManager {
 public:
  using RequestId = uint64_t;

  // Validates: num_blocks >= 2, block_size >= 1 (and that block ids fit int32).
  explicit KvBlockManager(KvBlockManagerOptions options);

  int64_t block_size() const { return options_.block_size; }
  int64_t num_usable_blocks() const { return options_.num_blocks - 1; }
  // Plain free blocks plus evictable cached ones: both can be handed out right now.
  int64_t num_free_blocks() const { return static_cast<int64_t>(free_.size()) + num_evictable_; }
  double usage() const;                          // 1 - free / usable, in [0, 1]
  int64_t blocks_for(int64_t num_tokens) const;  // ceil(num_tokens / block_size)

  // For a request that holds no blocks yet: takes a reference on the longest run of leading full
  // blocks of `tokens` found in the prefix cache, capped so at least one token is left to compute
  // (the step must produce logits for the last token), and makes them the request's first blocks.
  // A hash hit counts only if the block's stored tokens and parent hash match too. Returns the
  // number of tokens covered. Stats count tokens queried and hit. Caching disabled: returns 0.
  int64_t acquire_cached_prefix(RequestId id, std::span<const int32_t> tokens);

  // Grows the request's blocks to cover num_tokens tokens (never shrinks): free list first, then
  // evicting the least recently freed cached block. All or nothing: false changes nothing.
  bool allocate(RequestId id, int64_t num_tokens);

  // Registers the request's full blocks within tokens[0, num_computed) not registered yet
  // (tokens = the request's whole sequence so far). A block whose hash another block already
  // caches stays uncached. Idempotent; no-op when caching is disabled.
  void cache_full_blocks(RequestId id, std::span<const int32_t> tokens, int64_t num_computed);

  // Releases every block of the request (tail first into the evictable list, so a prefix outlives
  // its continuation) and forgets it. Unknown ids: no-op.
  void free(RequestId id);

  std::span<const int32_t> block_ids(RequestId id) const;  // empty for unknown ids
  bool holds(RequestId id) const { return requests_.contains(id); }  // true iff it holds >= 1 block

  // Drops every evictable block from the cache (they become plain free blocks); held blocks keep
  // their entries.
  void reset_prefix_cache();

  struct Stats {
    int64_t prefix_query_tokens = 0, prefix_hit_tokens = 0, evictions = 0;
  };
  const Stats& stats() const { return stats_; }

  // Throws fg::Error naming the first broken invariant (see the .cpp for the list).
  void check_invariants() const;

 private:
  friend class KvBlockManagerTestPeer;  // forges hash collisions in tests

  enum class Where : uint8_t { kNull, kHeld, kFree, kEvictable };

  struct Block {
    int32_t ref = 0;                        // number of (request, position) holdings
    int32_t lru_prev = -1, lru_next = -1;   // evictable-list neighbours while where == kEvictable
    Where where = Where::kFree;
    bool cached = false;                    // has the hash-table entry table_[hash] == this block
    bool has_parent = false;                // false for a sequence's first block (hashed from the seed)
    BlockHash hash;                         // while cached: hash_block(parent or seed, stored tokens)
    BlockHash parent;                       // while cached and has_parent: the hash of the block before it
  };

  struct Request {
    std::vector<int32_t> blocks;  // [num blocks held] block ids in sequence order
    int64_t num_hashed = 0;       // leading blocks already hashed (hit, registered, or left as duplicates)
    BlockHash last_hash;          // hash of blocks[num_hashed - 1], the parent of the next one
    bool chain_broken = false;    // a hash collision was seen: nothing after it may be registered
  };

  std::span<const int32_t> stored_tokens(int32_t b) const;
  bool same_content(int32_t b, const BlockHash* parent, std::span<const int32_t> tokens) const;
  int32_t lookup(const BlockHash& h, const BlockHash* parent, std::span<const int32_t> tokens) const;
  void take(int32_t b);
  int32_t pop_free_block();
  void uncache(int32_t b);
  void lru_push_back(int32_t b);
  void lru_unlink(int32_t b);

  KvBlockManagerOptions options_;
  std::vector<Block> blocks_;        // [num_blocks]; blocks_[0] is the null block
  std::vector<int32_t> free_;        // [<= num_blocks - 1] uncached ref-0 block ids; back() is handed out next
  std::vector<int32_t> tokens_;      // [num_blocks, block_size] row b: block b's tokens while it is cached
                                     // (empty when caching is disabled)
  int32_t lru_head_ = -1, lru_tail_ = -1;  // evictable list: head is evicted first, freed blocks join the tail
  int64_t num_evictable_ = 0;
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> table_;  // hash -> the one block caching it
  std::unordered_map<RequestId, Request> requests_;                 // only requests holding >= 1 block
  Stats stats_;
};

}  // namespace fg
