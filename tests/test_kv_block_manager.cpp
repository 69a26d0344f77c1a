// tests/test_kv_block_manager.cpp — the paged KV block manager and its prefix cache: unit tests
// of every operation and its edge cases (all-or-nothing allocation, the one-token cap, forged
// hash collisions, eviction order, caching disabled), and rapidcheck properties over random
// operation sequences checked against a content-keyed model of the same policy and against a
// simulated KV pool, so that a prefix hit can never hand a request another prefix's KV.
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

// ---------------------------------------------------------------------------------------------
// Property: random operation sequences against a model and a simulated KV pool

// The reference model: the same policy as KvBlockManager stated over token content instead of
// hashes and block ids, with linear scans everywhere. A cache entry is keyed by the whole prefix
// up to the end of its block, so it knows nothing of hashing.
class Model {
 public:
  Model(int64_t usable, int64_t block_size, bool caching)
      : plain_free_(usable), bs_(block_size), caching_(caching) {}

  int64_t free_blocks() const {
    int64_t evictable = 0;
    for (const auto& entry : entries_) evictable += entry.second.refs == 0 ? 1 : 0;
    return plain_free_ + evictable;
  }
  int64_t num_blocks(uint64_t id) const {
    const auto it = reqs_.find(id);
    return it == reqs_.end() ? 0 : static_cast<int64_t>(it->second.slots.size());
  }

  int64_t acquire(uint64_t id, const Tokens& tokens) {
    if (!caching_) return 0;
    query_tokens += static_cast<int64_t>(tokens.size());
    const int64_t cap = tokens.empty() ? 0 : (static_cast<int64_t>(tokens.size()) - 1) / bs_;
    Req req;
    for (int64_t i = 0; i < cap; ++i) {
      Tokens key(tokens.begin(), tokens.begin() + (i + 1) * bs_);
      const auto it = entries_.find(key);
      if (it == entries_.end()) break;
      ++it->second.refs;
      req.slots.push_back(Slot{true, std::move(key)});
    }
    const int64_t hits = static_cast<int64_t>(req.slots.size());
    req.registered = hits;
    if (hits > 0) reqs_[id] = std::move(req);
    hit_tokens += hits * bs_;
    return hits * bs_;
  }

  bool allocate(uint64_t id, int64_t num_tokens) {
    const int64_t need = (num_tokens + bs_ - 1) / bs_ - num_blocks(id);
    if (need <= 0) return true;
    if (need > free_blocks()) return false;
    for (int64_t i = 0; i < need; ++i) {
      if (plain_free_ > 0) {
        --plain_free_;
      } else {
        auto victim = entries_.end();
        for (auto it = entries_.begin(); it != entries_.end(); ++it)
          if (it->second.refs == 0 && (victim == entries_.end() || it->second.freed_at < victim->second.freed_at))
            victim = it;
        entries_.erase(victim);
        ++evictions;
      }
      reqs_[id].slots.push_back(Slot{});
    }
    return true;
  }

  void cache(uint64_t id, const Tokens& tokens, int64_t computed) {
    const auto it = reqs_.find(id);
    if (!caching_ || it == reqs_.end()) return;
    Req& req = it->second;
    for (int64_t i = req.registered; i < computed / bs_; ++i) {
      Tokens key(tokens.begin(), tokens.begin() + (i + 1) * bs_);
      if (!entries_.contains(key)) {
        entries_[key] = Entry{1, 0};
        req.slots[static_cast<size_t>(i)] = Slot{true, std::move(key)};
      }
      req.registered = i + 1;
    }
  }

  void free(uint64_t id) {
    const auto it = reqs_.find(id);
    if (it == reqs_.end()) return;
    for (auto s = it->second.slots.rbegin(); s != it->second.slots.rend(); ++s) {
      if (!s->cached) {
        ++plain_free_;
        continue;
      }
      Entry& e = entries_.at(s->key);
      if (--e.refs == 0) e.freed_at = clock_++;
    }
    reqs_.erase(it);
  }

  void reset() {
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.refs == 0) {
        ++plain_free_;
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }

  int64_t query_tokens = 0, hit_tokens = 0, evictions = 0;

 private:
  struct Entry {
    int64_t refs = 0;
    int64_t freed_at = 0;  // when refs last reached 0: eviction order
  };
  struct Slot {
    bool cached = false;
    Tokens key;  // when cached: tokens[0, end of this block)
  };
  struct Req {
    std::vector<Slot> slots;  // [blocks held]
    int64_t registered = 0;
  };
  int64_t plain_free_;
  int64_t bs_;
  bool caching_;
  int64_t clock_ = 0;
  std::map<Tokens, Entry> entries_;
  std::map<uint64_t, Req> reqs_;
};

// rapidcheck scales inRange by the case's size, so its early cases would be nearly all minimal
// (tiny sequences, caching mostly off). The shape of an operation sequence is drawn uniformly from
// the first case instead; shrinking still moves each pick toward `lo`.
template <typename T>
T uniform(T lo, T hi) {  // in [lo, hi)
  return *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<T>(lo, hi));
}

struct Live {
  Tokens tokens;         // [len] the whole sequence so far
  int64_t computed = 0;  // tokens whose KV is in the pool
};

RC_GTEST_PROP(KvBlockProperty, RandomOperationsMatchTheModelAndNeverServeWrongKv, ()) {
  const int64_t bs = uniform<int64_t>(1, 5);
  const int64_t num_blocks = uniform<int64_t>(2, 14);
  const bool caching = uniform<int>(0, 6) != 0;
  KvBlockManagerOptions options;
  options.num_blocks = num_blocks;
  options.block_size = bs;
  options.enable_prefix_caching = caching;
  KvBlockManager m(options);
  Model model(num_blocks - 1, bs, caching);
  // The simulated KV pool: the token each slot's K/V was computed from; -1 never written.
  std::vector<int32_t> kv(static_cast<size_t>(num_blocks * bs), -1);  // [num_blocks, block_size]
  std::map<uint64_t, Live> live;
  std::vector<Tokens> bank;  // sequences seen so far: new requests often extend one, so prefixes repeat
  uint64_t next_id = 1;

  const auto random_tokens = [](int64_t max_len) {
    const auto n = static_cast<size_t>(uniform<int64_t>(0, max_len + 1));
    return *rc::gen::container<Tokens>(n, rc::gen::inRange(0, 3));  // 3 symbols: blocks repeat
  };
  const auto slot = [&](int32_t block, int64_t pos) -> int32_t& {
    return kv[static_cast<size_t>(block * bs + pos % bs)];
  };
  // A request's acquired or computed tokens must sit in its blocks' KV slots.
  const auto check_content = [&](uint64_t id, const Tokens& tokens, int64_t n) {
    const std::span<const int32_t> blocks = m.block_ids(id);
    RC_ASSERT(static_cast<int64_t>(blocks.size()) >= m.blocks_for(n));
    for (int64_t p = 0; p < n; ++p) RC_ASSERT(slot(blocks[static_cast<size_t>(p / bs)], p) == tokens[static_cast<size_t>(p)]);
  };
  const auto start = [&](uint64_t id, Tokens tokens, bool acquire) {
    Live r{std::move(tokens), 0};
    if (acquire) {
      r.computed = m.acquire_cached_prefix(id, r.tokens);
      RC_ASSERT(r.computed == model.acquire(id, r.tokens));
      RC_ASSERT(r.computed % bs == 0);
      RC_ASSERT(r.computed == 0 || r.computed < static_cast<int64_t>(r.tokens.size()));
      check_content(id, r.tokens, r.computed);  // the oracle: a hit never serves wrong KV
    }
    live[id] = std::move(r);
  };
  const auto pick = [&]() -> uint64_t {
    auto it = live.begin();
    std::advance(it, uniform<size_t>(0, live.size()));
    return it->first;
  };
  const auto finish = [&](uint64_t id) {
    bank.push_back(live.at(id).tokens);
    m.free(id);
    model.free(id);
    live.erase(id);
  };

  const int num_ops = uniform<int>(1, 150);
  for (int op_index = 0; op_index < num_ops; ++op_index) {
    const int op = uniform<int>(0, 100);
    if (op < 25 || live.empty()) {
      // A new request: often a prefix of an earlier sequence plus a fresh tail.
      Tokens tokens;
      if (!bank.empty() && uniform<int>(0, 3) != 0) {
        const Tokens& base = bank[uniform<size_t>(0, bank.size())];
        tokens.assign(base.begin(), base.begin() + uniform<size_t>(0, base.size() + 1));
      }
      const Tokens tail = random_tokens(3 * bs);
      tokens.insert(tokens.end(), tail.begin(), tail.end());
      if (tokens.empty()) tokens.push_back(0);
      start(next_id++, std::move(tokens), uniform<int>(0, 5) != 0);
    } else if (op < 60) {
      // A step: compute a chunk (after a decode appends tokens, if all were computed).
      const uint64_t id = pick();
      Live& r = live.at(id);
      if (r.computed == static_cast<int64_t>(r.tokens.size())) {
        const Tokens more = random_tokens(bs);
        r.tokens.insert(r.tokens.end(), more.begin(), more.end());
        if (more.empty()) r.tokens.push_back(1);
      }
      const int64_t target =
          r.computed + uniform<int64_t>(1, static_cast<int64_t>(r.tokens.size()) - r.computed + 1);
      const bool ok = m.allocate(id, target);
      RC_ASSERT(ok == model.allocate(id, target));
      if (ok) {
        const std::span<const int32_t> blocks = m.block_ids(id);
        RC_ASSERT(static_cast<int64_t>(blocks.size()) == m.blocks_for(target));
        for (int64_t p = r.computed; p < target; ++p) {
          const int32_t b = blocks[static_cast<size_t>(p / bs)];
          // Only a block nobody else holds may be written.
          int64_t holders = 0;
          for (const auto& other : live)
            for (const int32_t ob : m.block_ids(other.first)) holders += ob == b ? 1 : 0;
          RC_ASSERT(holders == 1);
          slot(b, p) = r.tokens[static_cast<size_t>(p)];
        }
        r.computed = target;
        if (*rc::gen::arbitrary<bool>()) {
          m.cache_full_blocks(id, r.tokens, r.computed);
          model.cache(id, r.tokens, r.computed);
        }
      }
    } else if (op < 72) {
      // Late (or repeated, or behind) registration.
      const uint64_t id = pick();
      const Live& r = live.at(id);
      const int64_t c = uniform<int64_t>(0, r.computed + 1);
      m.cache_full_blocks(id, r.tokens, c);
      model.cache(id, r.tokens, c);
    } else if (op < 90) {
      finish(pick());
    } else if (op < 94) {
      // Preemption: free, then start over with the same tokens (recompute after a prefix hit).
      const uint64_t id = pick();
      const Tokens tokens = live.at(id).tokens;
      finish(id);
      start(next_id++, tokens, true);
    } else if (op < 97) {
      m.reset_prefix_cache();
      model.reset();
    } else {
      m.free(next_id + 1000);  // unknown: no-op
    }

    m.check_invariants();
    RC_ASSERT(m.num_free_blocks() == model.free_blocks());
    RC_ASSERT(m.stats().evictions == model.evictions);
    RC_ASSERT(m.stats().prefix_query_tokens == model.query_tokens);
    RC_ASSERT(m.stats().prefix_hit_tokens == model.hit_tokens);
    for (const auto& entry : live) {
      RC_ASSERT(static_cast<int64_t>(m.block_ids(entry.first).size()) == model.num_blocks(entry.first));
      RC_ASSERT(m.holds(entry.first) == (model.num_blocks(entry.first) > 0));
      check_content(entry.first, entry.second.tokens, entry.second.computed);  // nobody overwrote it
    }
  }

  while (!live.empty()) finish(live.begin()->first);
  m.check_invariants();
  RC_ASSERT(m.num_free_blocks() == num_blocks - 1);
  m.reset_prefix_cache();
  m.check_invariants();
  // Every usable block can be handed out again, and none is the null block.
  RC_ASSERT(m.allocate(next_id, (num_blocks - 1) * bs));
  std::vector<int32_t> all = ids(m, next_id);
  std::sort(all.begin(), all.end());
  std::vector<int32_t> want(static_cast<size_t>(num_blocks - 1));
  std::iota(want.begin(), want.end(), 1);
  RC_ASSERT(all == want);
  RC_ASSERT(m.stats().evictions == model.evictions);  // the reset left nothing to evict
}

}  // namespace
}  // namespace fg
