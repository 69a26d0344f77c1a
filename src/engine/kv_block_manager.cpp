// engine/kv_block_manager.cpp — block allocation, refcounted sharing of cached prefixes, LRU
// eviction, and the invariant checker the tests run after every operation.
#include "engine/kv_block_manager.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace fg {

KvBlockManager::KvBlockManager(KvBlockManagerOptions options) : options_(options) {
  FG_CHECK(options_.num_blocks >= 2,
           "KvBlockManager: num_blocks must be >= 2 (block 0 is the null block), got {}", options_.num_blocks);
  FG_CHECK(options_.num_blocks <= std::numeric_limits<int32_t>::max(),
           "KvBlockManager: num_blocks {} does not fit the int32 block ids", options_.num_blocks);
  FG_CHECK(options_.block_size >= 1, "KvBlockManager: block_size must be >= 1, got {}", options_.block_size);
  FG_CHECK(options_.block_size <= std::numeric_limits<int32_t>::max() / options_.num_blocks,
           "KvBlockManager: num_blocks {} x block_size {} is too large", options_.num_blocks, options_.block_size);
  blocks_.resize(static_cast<size_t>(options_.num_blocks));
  blocks_[0].where = Where::kNull;
  // Pushed in reverse so that a fresh manager hands out 1, 2, 3, ...: predictable for tests and logs.
  free_.reserve(static_cast<size_t>(options_.num_blocks - 1));
  for (int64_t b = options_.num_blocks - 1; b >= 1; --b) free_.push_back(static_cast<int32_t>(b));
  if (options_.enable_prefix_caching) {
    tokens_.resize(static_cast<size_t>(options_.num_blocks * options_.block_size));
    table_.reserve(static_cast<size_t>(options_.num_blocks));  // no rehash in the step loop
  }
}

double KvBlockManager::usage() const {
  return 1.0 - static_cast<double>(num_free_blocks()) / static_cast<double>(num_usable_blocks());
}

int64_t KvBlockManager::blocks_for(int64_t num_tokens) const {
  FG_CHECK(num_tokens >= 0, "KvBlockManager: token count must be non-negative, got {}", num_tokens);
  return num_tokens / options_.block_size + (num_tokens % options_.block_size != 0 ? 1 : 0);
}

std::span<const int32_t> KvBlockManager::stored_tokens(int32_t b) const {
  return std::span<const int32_t>(tokens_).subspan(static_cast<size_t>(b * options_.block_size),
                                                   static_cast<size_t>(options_.block_size));
}

// Whether cached block b holds exactly this block: the same tokens after the same parent. The hash
// alone is not trusted, so a collision degrades to a miss instead of serving another prefix's KV.
bool KvBlockManager::same_content(int32_t b, const BlockHash* parent, std::span<const int32_t> tokens) const {
  const Block& blk = blocks_[static_cast<size_t>(b)];
  if (blk.has_parent != (parent != nullptr)) return false;
  if (parent != nullptr && blk.parent != *parent) return false;
  const std::span<const int32_t> stored = stored_tokens(b);
  return std::equal(stored.begin(), stored.end(), tokens.begin(), tokens.end());
}

int32_t KvBlockManager::lookup(const BlockHash& h, const BlockHash* parent, std::span<const int32_t> tokens) const {
  const auto it = table_.find(h);
  if (it == table_.end() || !same_content(it->second, parent, tokens)) return -1;
  return it->second;
}

void KvBlockManager::take(int32_t b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  if (blk.ref == 0) {
    FG_ASSERT(blk.where == Where::kEvictable);  // a cached block is held or evictable, never on the free list
    lru_unlink(b);
  }
  ++blk.ref;
  blk.where = Where::kHeld;
}

int32_t KvBlockManager::pop_free_block() {
  int32_t b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else {
    FG_ASSERT(lru_head_ > 0);
    b = lru_head_;
    lru_unlink(b);
    uncache(b);
    ++stats_.evictions;
  }
  Block& blk = blocks_[static_cast<size_t>(b)];
  FG_ASSERT(blk.ref == 0 && !blk.cached);
  blk.ref = 1;
  blk.where = Where::kHeld;
  return b;
}

void KvBlockManager::uncache(int32_t b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  FG_ASSERT(blk.cached);
  const auto it = table_.find(blk.hash);
  FG_ASSERT(it != table_.end() && it->second == b);
  table_.erase(it);
  blk.cached = false;
}

void KvBlockManager::lru_push_back(int32_t b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  blk.lru_prev = lru_tail_;
  blk.lru_next = -1;
  if (lru_tail_ >= 0) blocks_[static_cast<size_t>(lru_tail_)].lru_next = b;
  else lru_head_ = b;
  lru_tail_ = b;
  blk.where = Where::kEvictable;
  ++num_evictable_;
}

void KvBlockManager::lru_unlink(int32_t b) {
  Block& blk = blocks_[static_cast<size_t>(b)];
  FG_ASSERT(blk.where == Where::kEvictable);
  if (blk.lru_prev >= 0) blocks_[static_cast<size_t>(blk.lru_prev)].lru_next = blk.lru_next;
  else lru_head_ = blk.lru_next;
  if (blk.lru_next >= 0) blocks_[static_cast<size_t>(blk.lru_next)].lru_prev = blk.lru_prev;
  else lru_tail_ = blk.lru_prev;
  blk.lru_prev = blk.lru_next = -1;
  --num_evictable_;
}

int64_t KvBlockManager::acquire_cached_prefix(RequestId id, std::span<const int32_t> tokens) {
  if (!options_.enable_prefix_caching) return 0;
  FG_CHECK(!holds(id), "acquire_cached_prefix: request {} already holds {} blocks; only a request holding none "
           "can acquire a cached prefix", id, block_ids(id).size());
  const int64_t bs = options_.block_size;
  const int64_t n = static_cast<int64_t>(tokens.size());
  stats_.prefix_query_tokens += n;
  // At least one token must be computed: the step that computes it produces the next token's logits.
  const int64_t max_blocks = n == 0 ? 0 : (n - 1) / bs;
  Request request;
  BlockHash parent;
  for (int64_t i = 0; i < max_blocks; ++i) {
    const std::span<const int32_t> block = tokens.subspan(static_cast<size_t>(i * bs), static_cast<size_t>(bs));
    const BlockHash* parent_ptr = i == 0 ? nullptr : &parent;
    const BlockHash h = hash_block(parent_ptr, block);
    const int32_t b = lookup(h, parent_ptr, block);
    if (b < 0) break;
    take(b);
    request.blocks.push_back(b);
    parent = h;
  }
  const int64_t hits = static_cast<int64_t>(request.blocks.size());
  if (hits > 0) {
    request.num_hashed = hits;  // the hit blocks are registered already
    request.last_hash = parent;
    requests_.emplace(id, std::move(request));
  }
  stats_.prefix_hit_tokens += hits * bs;
  return hits * bs;
}

bool KvBlockManager::allocate(RequestId id, int64_t num_tokens) {
  const int64_t wanted = blocks_for(num_tokens);
  const auto it = requests_.find(id);
  const int64_t have = it == requests_.end() ? 0 : static_cast<int64_t>(it->second.blocks.size());
  const int64_t need = wanted - have;
  if (need <= 0) return true;
  if (need > num_free_blocks()) return false;  // checked before touching anything: all or nothing
  Request& request = it == requests_.end() ? requests_[id] : it->second;
  request.blocks.reserve(static_cast<size_t>(wanted));
  for (int64_t i = 0; i < need; ++i) request.blocks.push_back(pop_free_block());
  return true;
}

void KvBlockManager::cache_full_blocks(RequestId id, std::span<const int32_t> tokens, int64_t num_computed) {
  if (!options_.enable_prefix_caching) return;
  FG_CHECK(num_computed >= 0 && num_computed <= static_cast<int64_t>(tokens.size()),
           "cache_full_blocks: request {}: num_computed {} is outside [0, {}] (the sequence length)", id,
           num_computed, tokens.size());
  const int64_t bs = options_.block_size;
  const int64_t full = num_computed / bs;
  const auto it = requests_.find(id);
  const int64_t held = it == requests_.end() ? 0 : static_cast<int64_t>(it->second.blocks.size());
  FG_CHECK(blocks_for(num_computed) <= held,
           "cache_full_blocks: request {} claims {} computed tokens but holds only {} blocks of {} tokens", id,
           num_computed, held, bs);
  if (it == requests_.end()) return;
  Request& request = it->second;
  if (request.chain_broken) return;
  for (int64_t i = request.num_hashed; i < full; ++i) {
    const std::span<const int32_t> block = tokens.subspan(static_cast<size_t>(i * bs), static_cast<size_t>(bs));
    const BlockHash* parent = i == 0 ? nullptr : &request.last_hash;
    const BlockHash h = hash_block(parent, block);
    const int32_t b = request.blocks[static_cast<size_t>(i)];
    const auto [entry, inserted] = table_.try_emplace(h, b);
    if (inserted) {
      Block& blk = blocks_[static_cast<size_t>(b)];
      FG_ASSERT(!blk.cached && blk.where == Where::kHeld);
      blk.cached = true;
      blk.hash = h;
      blk.has_parent = parent != nullptr;
      blk.parent = parent != nullptr ? *parent : BlockHash{};
      std::copy(block.begin(), block.end(), tokens_.begin() + b * bs);
    } else if (!same_content(entry->second, parent, block)) {
      // A true collision: later blocks' hashes would chain through an ambiguous parent, so the
      // rest of this request stays out of the cache.
      request.chain_broken = true;
      return;
    }
    // else: another block caches these very tokens; this one stays private (no duplicate entries).
    request.num_hashed = i + 1;
    request.last_hash = h;
  }
}

void KvBlockManager::free(RequestId id) {
  const auto it = requests_.find(id);
  if (it == requests_.end()) return;
  const std::vector<int32_t>& held = it->second.blocks;
  // Tail first: the evictable list is evicted from its head, so a sequence's later blocks go before
  // its prefix, which is what other requests are likeliest to share.
  for (auto b = held.rbegin(); b != held.rend(); ++b) {
    Block& blk = blocks_[static_cast<size_t>(*b)];
    FG_ASSERT(blk.ref > 0);
    if (--blk.ref > 0) continue;
    if (blk.cached) {
      lru_push_back(*b);
    } else {
      free_.push_back(*b);
      blk.where = Where::kFree;
    }
  }
  requests_.erase(it);
}

std::span<const int32_t> KvBlockManager::block_ids(RequestId id) const {
  const auto it = requests_.find(id);
  if (it == requests_.end()) return {};
  return it->second.blocks;
}

void KvBlockManager::reset_prefix_cache() {
  for (int32_t b = lru_head_; b >= 0;) {
    Block& blk = blocks_[static_cast<size_t>(b)];
    const int32_t next = blk.lru_next;
    uncache(b);
    blk.lru_prev = blk.lru_next = -1;
    blk.where = Where::kFree;
    free_.push_back(b);
    b = next;
  }
  lru_head_ = lru_tail_ = -1;
  num_evictable_ = 0;
}

// The invariants, in the order checked:
//   the null block is never held, free, evictable or cached;
//   every request record holds >= 1 block, all in [1, num_blocks), and has hashed no more than it holds;
//   each block's refcount equals its (request, position) holdings, and ref > 0 exactly when held;
//   the free list and the evictable list hold ref-0 blocks without duplicates, in neither list twice,
//   free-list blocks uncached and evictable ones cached; the evictable list's links are consistent;
//   every block 1..num_blocks-1 is in exactly one of {held, free list, evictable list};
//   every hash-table entry maps to a cached block whose recorded hash is the key and whose stored
//   tokens (after its recorded parent) hash to it; every cached block has its entry;
//   num_free_blocks() equals the number of ref-0 usable blocks.
void KvBlockManager::check_invariants() const {
  const int64_t n = options_.num_blocks;
  const Block& null_block = blocks_[0];
  FG_CHECK(null_block.ref == 0 && !null_block.cached && null_block.where == Where::kNull,
           "KvBlockManager invariant: the null block 0 is held, free, evictable or cached");

  std::vector<int64_t> holdings(static_cast<size_t>(n), 0);  // [num_blocks] (request, position) count
  for (const auto& [id, request] : requests_) {
    FG_CHECK(!request.blocks.empty(), "KvBlockManager invariant: request {} has a record but holds no blocks", id);
    FG_CHECK(request.num_hashed <= static_cast<int64_t>(request.blocks.size()),
             "KvBlockManager invariant: request {} hashed {} blocks but holds {}", id, request.num_hashed,
             request.blocks.size());
    for (size_t pos = 0; pos < request.blocks.size(); ++pos) {
      const int32_t b = request.blocks[pos];
      FG_CHECK(b >= 1 && b < n, "KvBlockManager invariant: request {} position {} holds block {} outside [1, {})",
               id, pos, b, n);
      ++holdings[static_cast<size_t>(b)];
    }
  }

  enum : uint8_t { kNowhere, kSeenHeld, kSeenFree, kSeenEvictable };
  std::vector<uint8_t> seen(static_cast<size_t>(n), kNowhere);  // [num_blocks] where the walk found each block
  for (int64_t b = 1; b < n; ++b) {
    const Block& blk = blocks_[static_cast<size_t>(b)];
    FG_CHECK(blk.ref == holdings[static_cast<size_t>(b)],
             "KvBlockManager invariant: block {} has refcount {} but {} (request, position) holdings", b, blk.ref,
             holdings[static_cast<size_t>(b)]);
    FG_CHECK((blk.ref > 0) == (blk.where == Where::kHeld),
             "KvBlockManager invariant: block {} has refcount {} but is {}marked held", b, blk.ref,
             blk.where == Where::kHeld ? "" : "not ");
    if (blk.ref > 0) seen[static_cast<size_t>(b)] = kSeenHeld;
  }
  for (const int32_t b : free_) {
    FG_CHECK(b >= 1 && b < n, "KvBlockManager invariant: the free list holds block {} outside [1, {})", b, n);
    const Block& blk = blocks_[static_cast<size_t>(b)];
    FG_CHECK(seen[static_cast<size_t>(b)] == kNowhere,
             "KvBlockManager invariant: free-list block {} is also held or appears twice in the free list", b);
    FG_CHECK(blk.where == Where::kFree, "KvBlockManager invariant: free-list block {} is not marked free", b);
    FG_CHECK(!blk.cached, "KvBlockManager invariant: free-list block {} is cached", b);
    seen[static_cast<size_t>(b)] = kSeenFree;
  }
  int64_t walked = 0;
  int32_t prev = -1;
  for (int32_t b = lru_head_; b >= 0; b = blocks_[static_cast<size_t>(b)].lru_next) {
    FG_CHECK(b >= 1 && b < n, "KvBlockManager invariant: the evictable list holds block {} outside [1, {})", b, n);
    FG_CHECK(++walked <= n, "KvBlockManager invariant: the evictable list has a cycle");
    const Block& blk = blocks_[static_cast<size_t>(b)];
    FG_CHECK(seen[static_cast<size_t>(b)] == kNowhere,
             "KvBlockManager invariant: evictable block {} is also held, free, or in the evictable list twice", b);
    FG_CHECK(blk.where == Where::kEvictable, "KvBlockManager invariant: evictable block {} is not marked evictable", b);
    FG_CHECK(blk.cached, "KvBlockManager invariant: evictable block {} is not cached", b);
    FG_CHECK(blk.lru_prev == prev, "KvBlockManager invariant: evictable block {} links back to {}, not {}", b,
             blk.lru_prev, prev);
    seen[static_cast<size_t>(b)] = kSeenEvictable;
    prev = b;
  }
  FG_CHECK(prev == lru_tail_, "KvBlockManager invariant: the evictable list ends at {} but its tail is {}", prev,
           lru_tail_);
  FG_CHECK(walked == num_evictable_, "KvBlockManager invariant: the evictable list has {} blocks but counts {}",
           walked, num_evictable_);
  int64_t unheld = 0, cached = 0;
  for (int64_t b = 1; b < n; ++b) {
    FG_CHECK(seen[static_cast<size_t>(b)] != kNowhere,
             "KvBlockManager invariant: block {} is neither held, free nor evictable (leaked)", b);
    if (seen[static_cast<size_t>(b)] != kSeenHeld) ++unheld;
    if (blocks_[static_cast<size_t>(b)].cached) ++cached;
  }

  FG_CHECK(options_.enable_prefix_caching || (cached == 0 && table_.empty()),
           "KvBlockManager invariant: prefix caching is disabled but {} blocks are cached", cached);
  for (const auto& [h, b] : table_) {
    FG_CHECK(b >= 1 && b < n, "KvBlockManager invariant: a hash-table entry maps to block {} outside [1, {})", b, n);
    const Block& blk = blocks_[static_cast<size_t>(b)];
    FG_CHECK(blk.cached, "KvBlockManager invariant: a hash-table entry maps to uncached block {}", b);
    FG_CHECK(blk.hash == h, "KvBlockManager invariant: block {}'s recorded hash differs from its hash-table key", b);
    FG_CHECK(hash_block(blk.has_parent ? &blk.parent : nullptr, stored_tokens(b)) == h,
             "KvBlockManager invariant: block {}'s stored tokens do not hash to its hash-table key", b);
  }
  // Each entry's block records that entry's key, so entries map to distinct blocks; equal counts
  // then mean every cached block has its entry.
  FG_CHECK(cached == static_cast<int64_t>(table_.size()),
           "KvBlockManager invariant: {} blocks are cached but the hash table has {} entries", cached, table_.size());
  FG_CHECK(num_free_blocks() == unheld,
           "KvBlockManager invariant: num_free_blocks() is {} but {} usable blocks are unheld", num_free_blocks(),
           unheld);
}

}  // namespace fg
