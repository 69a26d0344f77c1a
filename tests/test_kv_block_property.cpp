// tests/test_kv_block_property.cpp — a rapidcheck property of the paged KV block manager: random
// operation sequences checked against a content-keyed model of the same policy and against a
// simulated KV pool, so that a prefix hit can never hand a request another prefix's KV. (Unit
// tests of each operation: tests/test_kv_block_manager.cpp.)
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/kv_block_manager.h"

namespace fg {
namespace {

using Tokens = std::vector<int32_t>;

std::vector<int32_t> ids(const KvBlockManager& m, KvBlockManager::RequestId id) {
  const std::span<const int32_t> s = m.block_ids(id);
  return {s.begin(), s.end()};
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
