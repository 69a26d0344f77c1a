// tokenizer/bpe_model.cpp — loading and validating the BPE model, and the merge loop.
//
// The merge loop is the classic one: symbols in a doubly linked list, candidate pairs in a
// min-heap ordered by (merge rank, position), stale candidates skipped when popped. This is the
// order Hugging Face applies merges in, so the ids match for every input, not just typical ones.
#include "tokenizer/bpe_model.h"

#include <algorithm>

#include "core/error.h"
#include "core/json/json_view.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace fg {

namespace {

constexpr size_t kMaxCachedPieceBytes = 256;  // longer pieces rarely repeat

bool is_upper_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); }

std::string byte_token(uint8_t b) { return fmt::format("<0x{:02X}>", b); }

bool heap_after(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) { return a.order > b.order; }

BpeScratch::Candidate candidate(const Merge& m, int32_t pos, int32_t left_id, int32_t right_id) {
  return {(static_cast<uint64_t>(m.rank) << 32) | static_cast<uint32_t>(pos), left_id, right_id, m.new_id};
}

}  // namespace

BpeModel BpeModel::from_json(const JsonView& node, bool byte_level) {
  node.require_object();
  const std::string& type = node["type"].as_string();
  if (type != "BPE")
    node["type"].fail("the model type \"{}\" is not supported (supported: BPE)", type);
  node.allow_only({"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
                   "byte_fallback", "ignore_merges", "vocab", "merges"});
  BpeModel m;
  m.byte_level_ = byte_level;
  if (auto dropout = node.get("dropout"); dropout && !dropout->is_null() && dropout->as_number() != 0.0)
    dropout->fail("BPE dropout is not supported (it makes encoding random)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (auto affix = node.get(key); affix && !affix->is_null() && !affix->as_string().empty())
      affix->fail("a non-empty {} is not supported", key);
  if (auto v = node.get("fuse_unk"); v && !v->is_null()) m.fuse_unk_ = v->as_bool();
  if (auto v = node.get("byte_fallback"); v && !v->is_null()) m.byte_fallback_ = v->as_bool();
  if (auto v = node.get("ignore_merges"); v && !v->is_null()) m.ignore_merges_ = v->as_bool();
  if (m.byte_fallback_ && byte_level)
    node["byte_fallback"].fail("byte_fallback together with a ByteLevel pre-tokenizer is not supported");

  m.load_vocab(node["vocab"]);
  if (auto unk = node.get("unk_token"); unk && !unk->is_null()) {
    m.unk_id_ = m.vocab_.find(unk->as_string());
    if (m.unk_id_ < 0) unk->fail("the unk token \"{}\" is not in the vocabulary", unk->as_string());
  }
  m.load_merges(node["merges"]);
  return m;
}

void BpeModel::load_vocab(const JsonView& vocab) {
  vocab.require_object();
  const size_t n = vocab.raw().size();
  if (n == 0) vocab.fail("the vocabulary is empty");
  if (n > static_cast<size_t>(INT32_MAX) - 1) vocab.fail("the vocabulary is too large");
  std::vector<const std::string*> by_id(n, nullptr);
  for (const auto& [token, value] : vocab.raw().items()) {
    if (!value.is_number_integer())
      vocab.fail("the token \"{}\" has {} instead of an integer id", token, vocab.member(token, value).describe());
    const int64_t id = value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                           ? INT64_MAX
                           : value.get<int64_t>();
    if (id < 0 || id >= static_cast<int64_t>(n))
      vocab.fail("the token \"{}\" has id {}, out of range: ids must be 0..{} for {} tokens", token, id, n - 1, n);
    if (by_id[id]) vocab.fail("the tokens \"{}\" and \"{}\" both have id {} (duplicate id)", *by_id[id], token, id);
    by_id[id] = &token;
  }
  offsets_.reserve(n + 1);
  for (size_t id = 0; id < n; ++id) {
    offsets_.push_back(static_cast<uint32_t>(text_.size()));
    text_ += *by_id[id];
    FG_CHECK(text_.size() < (1ull << 32), "{}: {}: the vocabulary text exceeds 4 GiB", vocab.source(), vocab.path());
    const bool fresh = vocab_.insert(*by_id[id], static_cast<int32_t>(id));
    FG_ASSERT(fresh);  // JSON object keys were checked to be unique when parsing
  }
  offsets_.push_back(static_cast<uint32_t>(text_.size()));

  fallback_ids_.fill(-1);
  byte_ids_.fill(-1);
  ascii_ids_.fill(-1);
  if (byte_fallback_) {
    for (size_t id = 0; id < n; ++id) {
      const std::string& t = *by_id[id];
      if (t.rfind("<0x", 0) != 0) continue;
      if (t.size() != 6 || !is_upper_hex(t[3]) || !is_upper_hex(t[4]) || t[5] != '>')
        vocab.fail("the byte-fallback token \"{}\" (id {}) is malformed: expected <0x, two upper-case hex digits, >",
                   t, id);
    }
    for (int b = 0; b < 256; ++b) fallback_ids_[b] = vocab_.find(byte_token(static_cast<uint8_t>(b)));
  }
  if (byte_level_) {
    for (size_t id = 0; id < n; ++id)
      if (auto raw = byte_level::unspell(*by_id[id])) raw_vocab_.insert(*raw, static_cast<int32_t>(id));
    for (int b = 0; b < 256; ++b) byte_ids_[b] = raw_vocab_.find(std::string(1, static_cast<char>(b)));
  } else {
    for (int c = 0; c < 128; ++c) ascii_ids_[c] = vocab_.find(std::string(1, static_cast<char>(c)));
  }
}

void BpeModel::load_merges(const JsonView& merges) {
  const size_t n = merges.size();
  if (n > static_cast<size_t>(INT32_MAX)) merges.fail("too many merges");
  std::string merged;
  for (size_t i = 0; i < n; ++i) {
    const JsonView entry = merges.item(i);
    std::string_view left, right;
    if (entry.raw().is_string()) {
      const std::string& s = entry.as_string();
      const size_t space = s.find(' ');
      if (space == std::string::npos) entry.fail("the merge \"{}\" is not two tokens separated by a space", s);
      left = std::string_view(s).substr(0, space);
      right = std::string_view(s).substr(space + 1);
    } else if (entry.raw().is_array() && entry.size() == 2) {
      left = entry.item(0).as_string();
      right = entry.item(1).as_string();
    } else {
      entry.fail("a merge must be \"left right\" or [\"left\", \"right\"], found {}", entry.describe());
    }
    const int32_t l = vocab_.find(left), r = vocab_.find(right);
    if (l < 0) entry.fail("the merge names the unknown token \"{}\"", left);
    if (r < 0) entry.fail("the merge names the unknown token \"{}\"", right);
    merged.assign(left);
    merged.append(right);
    const int32_t id = vocab_.find(merged);
    if (id < 0) entry.fail("the merged token \"{}\" is not in the vocabulary", merged);
    if (const Merge* previous = merges_.find(l, r))
      entry.fail("the merge of \"{}\" and \"{}\" repeats merge #{}", left, right, previous->rank);
    merges_.insert(l, r, Merge{static_cast<int32_t>(i), id});
  }
}

void BpeModel::initial_symbols(std::string_view piece, BpeScratch& scratch) const {
  auto& symbols = scratch.symbols;
  symbols.clear();
  const auto add = [&](int32_t id) {
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, -1, true});
    if (index > 0) symbols[index - 1].next = index;
  };
  // Characters the vocabulary lacks become unk; with fuse_unk a run of them is one unk. As in
  // Hugging Face, a pending unk is only written out when a known character (or the end) follows,
  // so byte-fallback tokens emitted in between come before it.
  bool pending_unk = false;
  const auto unknown = [&] {
    if (unk_id_ < 0) return;  // no unk token: the character is dropped
    if (pending_unk && !fuse_unk_) add(unk_id_);
    pending_unk = true;
  };
  const auto known = [&](int32_t id) {
    if (pending_unk) add(unk_id_);
    pending_unk = false;
    add(id);
  };
  if (byte_level_) {
    for (char c : piece) {
      const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
      if (id >= 0) known(id);
      else unknown();
    }
  } else {
    size_t pos = 0;
    while (pos < piece.size()) {
      const auto lead = static_cast<uint8_t>(piece[pos]);
      const size_t len = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
      const int32_t id = lead < 0x80 ? ascii_ids_[lead] : vocab_.find(piece.substr(pos, len));
      if (id >= 0) {
        known(id);
      } else if (byte_fallback_ && std::all_of(piece.begin() + pos, piece.begin() + pos + len,
                                                [&](char b) { return fallback_ids_[static_cast<uint8_t>(b)] >= 0; })) {
        for (size_t k = 0; k < len; ++k) add(fallback_ids_[static_cast<uint8_t>(piece[pos + k])]);
      } else {
        unknown();
      }
      pos += len;
    }
  }
  if (pending_unk) add(unk_id_);
}

void BpeModel::merge(BpeScratch& scratch) const {
  auto& symbols = scratch.symbols;
  auto& heap = scratch.heap;
  heap.clear();
  for (size_t i = 0; i + 1 < symbols.size(); ++i) merges_.prefetch(symbols[i].id, symbols[i + 1].id);
  for (size_t i = 0; i + 1 < symbols.size(); ++i)
    if (const Merge* m = merges_.find(symbols[i].id, symbols[i + 1].id))
      heap.push_back(candidate(*m, static_cast<int32_t>(i), symbols[i].id, symbols[i + 1].id));
  std::make_heap(heap.begin(), heap.end(), heap_after);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), heap_after);
    const BpeScratch::Candidate top = heap.back();
    heap.pop_back();
    const auto pos = static_cast<int32_t>(top.order & 0xFFFFFFFFu);
    BpeScratch::Symbol& left = symbols[pos];
    // A candidate is stale once either side has merged since it was pushed. Symbols only grow to
    // the right, so comparing the two ids is the same test as Hugging Face's "does the current pair
    // still merge into the same token".
    if (!left.alive || left.next < 0 || left.id != top.left_id) continue;
    BpeScratch::Symbol& right = symbols[left.next];
    if (right.id != top.right_id) continue;
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = pos;
    if (left.prev >= 0) merges_.prefetch(symbols[left.prev].id, left.id);
    if (left.next >= 0) merges_.prefetch(left.id, symbols[left.next].id);
    if (left.prev >= 0) {
      const int32_t prev_id = symbols[left.prev].id;
      if (const Merge* p = merges_.find(prev_id, left.id)) {
        heap.push_back(candidate(*p, left.prev, prev_id, left.id));
        std::push_heap(heap.begin(), heap.end(), heap_after);
      }
    }
    if (left.next >= 0) {
      const int32_t next_id = symbols[left.next].id;
      if (const Merge* q = merges_.find(left.id, next_id)) {
        heap.push_back(candidate(*q, pos, left.id, next_id));
        std::push_heap(heap.begin(), heap.end(), heap_after);
      }
    }
  }
}

void BpeModel::tokenize(std::string_view piece, std::vector<int32_t>& out, BpeScratch& scratch) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    const int32_t id = byte_level_ ? raw_vocab_.find(piece) : vocab_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  // A one-byte piece needs no merging, and caching it would cost more than building it.
  const bool cacheable = piece.size() > 1 && piece.size() <= kMaxCachedPieceBytes;
  const uint64_t hash = cacheable ? hash_bytes(piece) : 0;
  if (cacheable && cache_->lookup(piece, hash, out)) return;
  initial_symbols(piece, scratch);
  if (scratch.symbols.size() > 1) merge(scratch);
  const size_t before = out.size();
  for (int32_t i = scratch.symbols.empty() ? -1 : 0; i >= 0; i = scratch.symbols[i].next)
    out.push_back(scratch.symbols[i].id);
  if (cacheable) cache_->insert(piece, hash, std::span<const int32_t>(out).subspan(before));
}

}  // namespace fg
