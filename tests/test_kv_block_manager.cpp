// tests/test_kv_block_manager.cpp — the paged KV block manager and its prefix cache: unit tests
// of every operation and its edge cases (all-or-nothing allocation, the one-token cap, forged
// hash collisions, eviction order, caching disabled). The random-sequence property against a
// model of the same policy is tests/test_kv_block_property.cpp.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "engine/block_hash.h"
#include "engine/kv_block_manager.h"

namespace fg {

// Reaches into the manager to forge what a real 128-bit collision would look like: there is no
// way to find one, so the tests re-key a cached block instead.
class KvBlockManagerTestPeer {
 public:
  // Re-keys cached block b under `fake`, as if its content hashed to `fake`.
  static void forge_hash(KvBlockManager& m, int32_t b, const BlockHash& fake) {
    KvBlockManager::Block& blk = m.blocks_[static_cast<size_t>(b)];
    ASSERT_TRUE(blk.cached);
    m.table_.erase(blk.hash);
    blk.hash = fake;
    m.table_[fake] = b;
  }
  static bool is_cached(const KvBlockManager& m, int32_t b) { return m.blocks_[static_cast<size_t>(b)].cached; }
  static size_t num_entries(const KvBlockManager& m) { return m.table_.size(); }
};

namespace {

using Peer = KvBlockManagerTestPeer;
using Tokens = std::vector<int32_t>;

Tokens concat(std::initializer_list<Tokens> parts) {
  Tokens out;
  for (const Tokens& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<int32_t> ids(const KvBlockManager& m, KvBlockManager::RequestId id) {
  const std::span<const int32_t> s = m.block_ids(id);
  return {s.begin(), s.end()};
}

KvBlockManager make_manager(int64_t num_blocks, int64_t block_size = 4, bool caching = true) {
  KvBlockManagerOptions o;
  o.num_blocks = num_blocks;
  o.block_size = block_size;
  o.enable_prefix_caching = caching;
  return KvBlockManager(o);
}

// Allocates and "computes" tokens[0, n) for a request, then registers its full blocks.
void compute(KvBlockManager& m, KvBlockManager::RequestId id, const Tokens& tokens, int64_t n) {
  ASSERT_TRUE(m.allocate(id, n));
  m.cache_full_blocks(id, tokens, n);
  m.check_invariants();
}

void expect_error(const std::function<void()>& f, const std::string& substring) {
  try {
    f();
    ADD_FAILURE() << "expected fg::Error containing '" << substring << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(substring), std::string::npos) << e.what();
  }
}

// Blocks of 4 tokens used throughout.
const Tokens kA = {1, 1, 1, 1}, kB = {2, 2, 2, 2}, kC = {3, 3, 3, 3}, kD = {4, 4, 4, 4};

// ---------------------------------------------------------------------------------------------
// BlockHash

TEST(BlockHash, DeterministicAndSensitiveToEveryInput) {
  const Tokens t = {1, 2, 3, 4};
  const BlockHash h = hash_block(nullptr, t);
  EXPECT_EQ(h, hash_block(nullptr, Tokens(t)));
  EXPECT_NE(h, hash_block(nullptr, Tokens{1, 2, 3, 5}));
  EXPECT_NE(h, hash_block(nullptr, Tokens{4, 3, 2, 1}));
  EXPECT_NE(h, hash_block(nullptr, Tokens{1, 2, 3}));
  const BlockHash zero{};
  EXPECT_NE(h, hash_block(&zero, t)) << "the first block's seed must differ from an all-zero parent";
  const BlockHash child = hash_block(&h, t);
  EXPECT_NE(child, h);
  const BlockHash other_parent = hash_block(nullptr, Tokens{9, 9, 9, 9});
  EXPECT_NE(child, hash_block(&other_parent, t));
  EXPECT_NE(hash_block(nullptr, Tokens{}), hash_block(nullptr, Tokens{0}));

  // Past the stack buffer (64 tokens) the heap path must hash the same way.
  Tokens long_block(100);
  std::iota(long_block.begin(), long_block.end(), 0);
  const BlockHash hl = hash_block(&h, long_block);
  EXPECT_EQ(hl, hash_block(&h, Tokens(long_block)));
  long_block.back() = -1;
  EXPECT_NE(hl, hash_block(&h, long_block));
}

// The documented layout: XXH3-128 over the parent's lo, hi bytes, then the int32 tokens.
TEST(BlockHash, IsXxh3OverParentThenTokens) {
  const BlockHash parent{0x0123456789abcdefull, 0xfedcba9876543210ull};
  for (const size_t n : {size_t{0}, size_t{4}, size_t{16}, size_t{100}}) {
    Tokens t(n);
    std::iota(t.begin(), t.end(), 7);
    std::vector<unsigned char> bytes(16 + 4 * n);  // [16 + 4n] the hashed bytes
    std::memcpy(bytes.data(), &parent.lo, 8);
    std::memcpy(bytes.data() + 8, &parent.hi, 8);
    if (n > 0) std::memcpy(bytes.data() + 16, t.data(), 4 * n);
    const XXH128_hash_t want = XXH3_128bits(bytes.data(), bytes.size());
    const BlockHash got = hash_block(&parent, t);
    EXPECT_EQ(got.lo, want.low64) << n << " tokens";
    EXPECT_EQ(got.hi, want.high64) << n << " tokens";
  }
}

TEST(BlockHash, HasherKeysAnUnorderedSet) {
  std::unordered_set<BlockHash, BlockHashHasher> set;
  BlockHash parent = hash_block(nullptr, kA);
  for (int32_t i = 0; i < 1000; ++i) {
    set.insert(hash_block(nullptr, Tokens{i, i + 1}));
    parent = hash_block(&parent, Tokens{i});
    set.insert(parent);
  }
  EXPECT_EQ(set.size(), 2000u);
  EXPECT_TRUE(set.contains(hash_block(nullptr, Tokens{5, 6})));
  EXPECT_FALSE(set.contains(hash_block(nullptr, Tokens{6, 5})));
}

// Over a small alphabet, equal hashes happen exactly for equal (parent, tokens).
RC_GTEST_PROP(BlockHashProperty, EqualExactlyForEqualParentAndTokens, ()) {
  const auto tokens = [] {
    return *rc::gen::container<Tokens>(static_cast<size_t>(*rc::gen::inRange(0, 6)), rc::gen::inRange(0, 3));
  };
  const Tokens a = tokens(), b = tokens();
  const Tokens pa = tokens(), pb = tokens();
  const bool a_first = *rc::gen::arbitrary<bool>(), b_first = *rc::gen::arbitrary<bool>();
  const BlockHash ha = hash_block(nullptr, pa), hb = hash_block(nullptr, pb);
  const BlockHash x = hash_block(a_first ? nullptr : &ha, a);
  const BlockHash y = hash_block(b_first ? nullptr : &hb, b);
  const bool same_parent = a_first == b_first && (a_first || pa == pb);
  RC_ASSERT((x == y) == (same_parent && a == b));
}

// ---------------------------------------------------------------------------------------------
// KvBlockManager: construction, counting, allocation, freeing

TEST(KvBlockManager, RejectsBadOptions) {
  expect_error([] { make_manager(1); }, "num_blocks must be >= 2");
  expect_error([] { make_manager(0); }, "num_blocks must be >= 2");
  expect_error([] { make_manager(8, 0); }, "block_size must be >= 1");
  expect_error([] { make_manager(8, -3); }, "block_size must be >= 1");
  expect_error([] { make_manager(int64_t{1} << 40); }, "int32");
  EXPECT_NO_THROW(make_manager(2, 1));
}

TEST(KvBlockManager, FreshManagerIsAllFree) {
  KvBlockManager m = make_manager(10);
  EXPECT_EQ(m.block_size(), 4);
  EXPECT_EQ(m.num_usable_blocks(), 9);
  EXPECT_EQ(m.num_free_blocks(), 9);
  EXPECT_DOUBLE_EQ(m.usage(), 0.0);
  EXPECT_EQ(m.blocks_for(0), 0);
  EXPECT_EQ(m.blocks_for(1), 1);
  EXPECT_EQ(m.blocks_for(4), 1);
  EXPECT_EQ(m.blocks_for(5), 2);
  expect_error([&] { m.blocks_for(-1); }, "non-negative");
  EXPECT_TRUE(m.block_ids(7).empty());
  EXPECT_FALSE(m.holds(7));
  EXPECT_EQ(m.stats().prefix_query_tokens, 0);
  m.check_invariants();
}

TEST(KvBlockManager, AllocateGrowsAndNeverHandsOutTheNullBlock) {
  KvBlockManager m = make_manager(5);  // 4 usable blocks
  EXPECT_TRUE(m.allocate(1, 3));
  EXPECT_EQ(ids(m, 1), (std::vector<int32_t>{1}));
  EXPECT_TRUE(m.allocate(1, 4));  // still fits in one block
  EXPECT_EQ(ids(m, 1).size(), 1u);
  EXPECT_TRUE(m.allocate(1, 5));
  EXPECT_EQ(ids(m, 1), (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(m.allocate(1, 2));  // never shrinks
  EXPECT_EQ(ids(m, 1).size(), 2u);
  EXPECT_TRUE(m.allocate(2, 8));
  EXPECT_EQ(ids(m, 2), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(m.num_free_blocks(), 0);
  EXPECT_DOUBLE_EQ(m.usage(), 1.0);
  EXPECT_FALSE(m.allocate(3, 1));
  EXPECT_FALSE(m.holds(3));
  EXPECT_TRUE(m.allocate(3, 0));  // nothing needed: succeeds without a record
  EXPECT_FALSE(m.holds(3));
  EXPECT_TRUE(m.holds(1) && m.holds(2));
  expect_error([&] { m.allocate(1, -1); }, "non-negative");
  m.check_invariants();
}

TEST(KvBlockManager, FailedAllocateChangesNothing) {
  KvBlockManager m = make_manager(6);  // 5 usable
  const Tokens ab = concat({kA, kB});
  compute(m, 1, ab, 8);
  m.free(1);  // 2 evictable
  ASSERT_TRUE(m.allocate(2, 4));
  const std::vector<int32_t> before = ids(m, 2);
  ASSERT_EQ(m.num_free_blocks(), 4);  // 2 plain free + 2 evictable

  EXPECT_FALSE(m.allocate(2, 4 + 5 * 4));  // needs 5 more
  EXPECT_FALSE(m.allocate(9, 100));
  EXPECT_EQ(ids(m, 2), before);
  EXPECT_FALSE(m.holds(9));
  EXPECT_EQ(m.num_free_blocks(), 4);
  EXPECT_EQ(m.stats().evictions, 0);
  m.check_invariants();
  // Nothing was evicted: the freed prefix still hits.
  EXPECT_EQ(m.acquire_cached_prefix(3, concat({ab, {7}})), 8);
  // And exactly the free blocks can still be taken.
  EXPECT_TRUE(m.allocate(2, 4 + 2 * 4));
  EXPECT_EQ(m.num_free_blocks(), 0);
  m.check_invariants();
}

TEST(KvBlockManager, FreeReturnsBlocksAndForgetsTheRequest) {
  KvBlockManager m = make_manager(5, 4, /*caching=*/false);
  m.free(42);  // unknown: no-op
  ASSERT_TRUE(m.allocate(1, 12));
  EXPECT_EQ(m.num_free_blocks(), 1);
  m.free(1);
  EXPECT_FALSE(m.holds(1));
  EXPECT_TRUE(m.block_ids(1).empty());
  EXPECT_EQ(m.num_free_blocks(), 4);
  m.free(1);  // twice: no-op
  EXPECT_EQ(m.num_free_blocks(), 4);
  EXPECT_TRUE(m.allocate(2, 16));
  EXPECT_EQ(m.num_free_blocks(), 0);
  m.check_invariants();
}

// ---------------------------------------------------------------------------------------------
// KvBlockManager: prefix hits

TEST(KvBlockManager, PrefixHitSharesBlocksAndCountsTokens) {
  KvBlockManager m = make_manager(10);
  const Tokens t = concat({kA, kB, {5, 6}});  // 10 tokens: 2 full blocks + 2
  compute(m, 1, t, 10);
  const std::vector<int32_t> first = ids(m, 1);
  ASSERT_EQ(first.size(), 3u);

  EXPECT_EQ(m.acquire_cached_prefix(2, t), 8);
  EXPECT_EQ(ids(m, 2), (std::vector<int32_t>{first[0], first[1]}));
  EXPECT_EQ(m.stats().prefix_query_tokens, 10);
  EXPECT_EQ(m.stats().prefix_hit_tokens, 8);
  EXPECT_EQ(m.num_free_blocks(), 9 - 3);  // shared blocks count once
  ASSERT_TRUE(m.allocate(2, 10));
  EXPECT_EQ(ids(m, 2).size(), 3u);
  EXPECT_NE(ids(m, 2)[2], first[2]);  // the partial block is never shared
  EXPECT_EQ(m.num_free_blocks(), 9 - 4);
  m.check_invariants();

  m.free(1);
  EXPECT_EQ(m.num_free_blocks(), 9 - 3);  // the shared blocks are still held by request 2
  m.check_invariants();
  m.free(2);
  EXPECT_EQ(m.num_free_blocks(), 9);
  m.check_invariants();
}

TEST(KvBlockManager, HitLeavesAtLeastOneTokenToCompute) {
  KvBlockManager m = make_manager(10);
  const Tokens ab = concat({kA, kB});
  compute(m, 1, concat({ab, kC}), 12);
  EXPECT_EQ(m.acquire_cached_prefix(2, ab), 4) << "8 tokens = 2 full blocks, but the last token must be computed";
  EXPECT_EQ(m.acquire_cached_prefix(3, concat({ab, {1}})), 8);
  EXPECT_EQ(m.acquire_cached_prefix(4, kA), 0);
  EXPECT_FALSE(m.holds(4));
  EXPECT_EQ(m.acquire_cached_prefix(5, Tokens{1}), 0);
  EXPECT_EQ(m.acquire_cached_prefix(6, Tokens{}), 0);
  EXPECT_EQ(m.stats().prefix_query_tokens, 8 + 9 + 4 + 1 + 0);
  EXPECT_EQ(m.stats().prefix_hit_tokens, 4 + 8);
  m.check_invariants();
}

TEST(KvBlockManager, OnlyComputedFullBlocksAreCached) {
  KvBlockManager m = make_manager(10);
  const Tokens t = concat({kA, kB, {9}});
  ASSERT_TRUE(m.allocate(1, 9));
  m.cache_full_blocks(1, t, 6);  // block 0 computed, block 1 half computed
  EXPECT_EQ(Peer::num_entries(m), 1u);
  EXPECT_EQ(m.acquire_cached_prefix(2, t), 4);
  m.cache_full_blocks(1, t, 9);
  EXPECT_EQ(Peer::num_entries(m), 2u);
  EXPECT_EQ(m.acquire_cached_prefix(3, t), 8);
  m.check_invariants();
}

TEST(KvBlockManager, HitStopsAtTheFirstDifferentBlock) {
  KvBlockManager m = make_manager(16);
  compute(m, 1, concat({kA, kB, kC}), 12);
  EXPECT_EQ(m.acquire_cached_prefix(2, concat({kA, kD, kC, {0}})), 4);
  EXPECT_EQ(m.acquire_cached_prefix(3, concat({kD, kB, kC, {0}})), 0);
  EXPECT_EQ(m.acquire_cached_prefix(4, concat({Tokens{1, 1, 1, 2}, {0}})), 0);
  m.check_invariants();
}

TEST(KvBlockManager, SameBlockAfterADifferentPrefixMisses) {
  KvBlockManager m = make_manager(16);
  compute(m, 1, concat({kA, kB}), 8);
  compute(m, 2, concat({kD, kC}), 8);
  // kB is cached, but only after kA: the chained hash keys the whole prefix.
  EXPECT_EQ(m.acquire_cached_prefix(3, concat({kD, kB, {0}})), 4);
  EXPECT_EQ(m.acquire_cached_prefix(4, concat({kC, kB, {0}})), 0);
  m.check_invariants();
}

// A block whose key matches but whose stored tokens differ (what a collision looks like) is a miss.
TEST(KvBlockManager, ForgedCollisionIsAMiss) {
  KvBlockManager m = make_manager(8);
  compute(m, 1, concat({kA, {9}}), 5);
  const int32_t a = ids(m, 1)[0];
  Peer::forge_hash(m, a, hash_block(nullptr, kB));  // as if hash(kA) == hash(kB)
  EXPECT_EQ(m.acquire_cached_prefix(2, concat({kB, {9}})), 0);
  EXPECT_FALSE(m.holds(2));
  EXPECT_EQ(m.stats().prefix_hit_tokens, 0);
  expect_error([&] { m.check_invariants(); }, "do not hash to its hash-table key");
}

// Same tokens, same chained key, different parent: also a miss (the stored parent is compared).
TEST(KvBlockManager, ForgedCollisionAcrossParentsIsAMiss) {
  KvBlockManager m = make_manager(8);
  compute(m, 1, concat({kA, kC}), 8);
  compute(m, 2, concat({kB, {9}}), 5);
  const BlockHash hb = hash_block(nullptr, kB);
  const int32_t c = ids(m, 1)[1];
  Peer::forge_hash(m, c, hash_block(&hb, kC));  // as if hash(ha, kC) == hash(hb, kC)
  EXPECT_EQ(m.acquire_cached_prefix(3, concat({kB, kC, {9}})), 4) << "kB hits, the forged kC must not";
  EXPECT_EQ(ids(m, 3), (std::vector<int32_t>{ids(m, 2)[0]}));
}

// A collision seen while registering stops the rest of the request's chain from being cached:
// its later hashes would chain through a parent that names two different prefixes.
TEST(KvBlockManager, CollisionWhileRegisteringStopsTheChain) {
  KvBlockManager m = make_manager(8);
  compute(m, 1, concat({kA, {9}}), 5);
  Peer::forge_hash(m, ids(m, 1)[0], hash_block(nullptr, kB));
  const Tokens t = concat({kB, kC, kD});
  ASSERT_TRUE(m.allocate(2, 12));
  m.cache_full_blocks(2, t, 12);
  EXPECT_EQ(Peer::num_entries(m), 1u);
  for (const int32_t b : ids(m, 2)) EXPECT_FALSE(Peer::is_cached(m, b));
  m.cache_full_blocks(2, t, 12);  // still nothing
  EXPECT_EQ(Peer::num_entries(m), 1u);
}

TEST(KvBlockManager, DuplicateBlocksStayUncachedAndTheChainContinues) {
  KvBlockManager m = make_manager(16);
  const Tokens ab = concat({kA, kB});
  compute(m, 1, ab, 8);
  // Request 2 computed the same blocks itself (it never asked for a prefix), then one more.
  const Tokens abc = concat({ab, kC});
  compute(m, 2, abc, 12);
  const std::vector<int32_t> one = ids(m, 1), two = ids(m, 2);
  EXPECT_EQ(Peer::num_entries(m), 3u);
  EXPECT_FALSE(Peer::is_cached(m, two[0]));
  EXPECT_FALSE(Peer::is_cached(m, two[1]));
  EXPECT_TRUE(Peer::is_cached(m, two[2]));
  // The chain continues through the duplicates: kC after kA kB hits, on request 2's block.
  EXPECT_EQ(m.acquire_cached_prefix(3, concat({abc, {0}})), 12);
  EXPECT_EQ(ids(m, 3), (std::vector<int32_t>{one[0], one[1], two[2]}));
  m.check_invariants();
  // Freed duplicates go to the free list, not the evictable list: taking them evicts nothing.
  m.free(3);
  m.free(2);
  EXPECT_EQ(m.num_free_blocks(), 15 - 2);
  ASSERT_TRUE(m.allocate(4, 4 * 13));
  EXPECT_EQ(m.stats().evictions, 1) << "12 plain free blocks, then the evictable kC";
  m.check_invariants();
}

TEST(KvBlockManager, CacheFullBlocksIsIdempotentAndIncremental) {
  KvBlockManager m = make_manager(16);
  Tokens t = concat({kA, kB});
  ASSERT_TRUE(m.allocate(1, 8));
  m.cache_full_blocks(1, t, 8);
  m.cache_full_blocks(1, t, 8);
  m.cache_full_blocks(1, t, 3);  // behind what is registered: no-op
  EXPECT_EQ(Peer::num_entries(m), 2u);
  // Decode appends tokens; the next full block is registered once computed.
  t.insert(t.end(), kC.begin(), kC.end());
  ASSERT_TRUE(m.allocate(1, 12));
  m.cache_full_blocks(1, t, 11);
  EXPECT_EQ(Peer::num_entries(m), 2u);
  m.cache_full_blocks(1, t, 12);
  EXPECT_EQ(Peer::num_entries(m), 3u);
  m.check_invariants();
  EXPECT_EQ(m.acquire_cached_prefix(2, concat({t, {0}})), 12);

  expect_error([&] { m.cache_full_blocks(1, t, 13); }, "outside [0, 12]");
  expect_error([&] { m.cache_full_blocks(1, t, -1); }, "outside");
  const Tokens longer = concat({t, kD});
  expect_error([&] { m.cache_full_blocks(1, longer, 16); }, "holds only 3 blocks");
  m.cache_full_blocks(99, t, 0);  // unknown request, nothing computed: no-op
  expect_error([&] { m.cache_full_blocks(99, t, 4); }, "holds only 0 blocks");
  m.check_invariants();
}

TEST(KvBlockManager, AcquireOnARequestHoldingBlocksThrows) {
  KvBlockManager m = make_manager(8);
  ASSERT_TRUE(m.allocate(1, 4));
  expect_error([&] { m.acquire_cached_prefix(1, concat({kA, {0}})); }, "already holds 1 blocks");
}

// ---------------------------------------------------------------------------------------------
// KvBlockManager: eviction and reset

TEST(KvBlockManager, EvictableBlockComesBackOnAHit) {
  KvBlockManager m = make_manager(8);  // 7 usable
  const Tokens ab = concat({kA, kB});
  compute(m, 1, ab, 8);
  const std::vector<int32_t> blocks = ids(m, 1);
  m.free(1);
  EXPECT_EQ(m.num_free_blocks(), 7) << "evictable blocks count as free";
  EXPECT_EQ(m.acquire_cached_prefix(2, concat({ab, {0}})), 8);
  EXPECT_EQ(ids(m, 2), blocks);
  EXPECT_EQ(m.num_free_blocks(), 5);
  EXPECT_EQ(m.stats().evictions, 0);
  m.check_invariants();
}

TEST(KvBlockManager, FreeListIsUsedBeforeEviction) {
  KvBlockManager m = make_manager(5);  // 4 usable
  const Tokens ab = concat({kA, kB});
  compute(m, 1, ab, 8);
  m.free(1);
  ASSERT_TRUE(m.allocate(2, 8));  // the 2 plain free blocks
  EXPECT_EQ(m.stats().evictions, 0);
  EXPECT_EQ(m.acquire_cached_prefix(3, concat({ab, {0}})), 8);
  m.check_invariants();
}

TEST(KvBlockManager, EvictsTheLeastRecentlyFreedTailFirst) {
  KvBlockManager m = make_manager(5);  // 4 usable
  compute(m, 1, concat({kA, kB}), 8);
  compute(m, 2, concat({kC, kD}), 8);
  const std::vector<int32_t> one = ids(m, 1), two = ids(m, 2);
  m.free(1);
  m.free(2);  // evictable, oldest first: kB, kA, kD, kC
  ASSERT_TRUE(m.allocate(3, 4));
  EXPECT_EQ(ids(m, 3), (std::vector<int32_t>{one[1]})) << "request 1's tail goes first";
  EXPECT_EQ(m.stats().evictions, 1);
  EXPECT_EQ(m.acquire_cached_prefix(4, concat({kA, kB, {0}})), 4) << "kA survives, kB is gone";
  // The hit took kA off the evictable list, so kD is next.
  ASSERT_TRUE(m.allocate(3, 8));
  EXPECT_EQ(ids(m, 3), (std::vector<int32_t>{one[1], two[1]}));
  EXPECT_EQ(m.acquire_cached_prefix(5, concat({kC, kD, {0}})), 4);
  EXPECT_EQ(m.stats().evictions, 2);
  EXPECT_EQ(m.num_free_blocks(), 0);
  EXPECT_FALSE(m.allocate(6, 1));
  m.check_invariants();
}

TEST(KvBlockManager, ResetPrefixCacheDropsOnlyEvictableBlocks) {
  KvBlockManager m = make_manager(8);
  compute(m, 1, concat({kA, {0}}), 5);
  compute(m, 2, concat({kB, {0}}), 5);
  m.free(2);
  const int64_t free_before = m.num_free_blocks();
  m.reset_prefix_cache();
  m.check_invariants();
  EXPECT_EQ(m.num_free_blocks(), free_before);
  EXPECT_EQ(Peer::num_entries(m), 1u);
  EXPECT_EQ(m.acquire_cached_prefix(3, concat({kB, {0}})), 0);
  EXPECT_EQ(m.acquire_cached_prefix(4, concat({kA, {0}})), 4);
  m.free(1);
  m.free(4);
  m.reset_prefix_cache();
  EXPECT_EQ(Peer::num_entries(m), 0u);
  EXPECT_EQ(m.num_free_blocks(), 7);
  // Reset blocks are plain free: taking all of them evicts nothing.
  ASSERT_TRUE(m.allocate(5, 28));
  EXPECT_EQ(m.stats().evictions, 0);
  m.check_invariants();
}

TEST(KvBlockManager, CachingDisabledNeverCachesOrHits) {
  KvBlockManager m = make_manager(5, 4, /*caching=*/false);
  const Tokens ab = concat({kA, kB, {0}});
  compute(m, 1, ab, 9);
  EXPECT_EQ(Peer::num_entries(m), 0u);
  m.free(1);
  EXPECT_EQ(m.acquire_cached_prefix(2, ab), 0);
  EXPECT_FALSE(m.holds(2));
  EXPECT_EQ(m.stats().prefix_query_tokens, 0);
  EXPECT_EQ(m.stats().prefix_hit_tokens, 0);
  ASSERT_TRUE(m.allocate(2, 16));
  EXPECT_EQ(m.stats().evictions, 0);
  m.reset_prefix_cache();
  m.check_invariants();
}

}  // namespace
}  // namespace fg
