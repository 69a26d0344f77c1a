// tests/test_grammar_differential.cpp — our xgrammar integration (grammar/grammar_compiler.h,
// grammar_matcher.h, grammar_vocabulary.h) against xgrammar's own Python package, bit for bit:
// for hundreds of random JSON schemas on the three fixture tokenizers, the mask our matcher
// computes at every position of a random valid prefix has the hash and popcount the package's
// had, and where the goldens keep a mask in full, the same ids. The goldens
// (tests/fixtures/grammar_masks/) come from scripts/grammar/make_mask_goldens.py, run once by hand,
// since CI does not install the package; that script says which options both sides mirror.
//
// The vocabularies differ in one known way, stated in each golden file's header: ours gives
// special tokens no bytes, the package their literal text. The script cleared those ids (the EOS
// ids excepted) from its masks; here ours must never allow them. The bytes of every other id must
// agree: the header's hash over them is recomputed from our vocabulary.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/json/strict_json.h"
#include "grammar_test_support.h"

namespace fg {
namespace {

using IdRanges = std::vector<std::pair<int32_t, int32_t>>;  // [first, last] runs, ascending

struct MaskDigest {
  uint64_t hash = 0;
  int64_t popcount = 0;
};

struct GoldenCase {
  size_t schema = 0;
  std::vector<int32_t> prefix;
  std::vector<MaskDigest> masks;  // [prefix.size() + 1]: before each prefix token, and after the last
  std::optional<size_t> full_position;
  IdRanges full_ranges;  // the allowed ids at full_position
};

struct GoldenHeader {
  int64_t vocab_size = 0;
  std::vector<int32_t> stop_token_ids, special_ids, cleared_ids;
  int64_t non_special_tokens = 0;
  uint64_t vocabulary_hash = 0;
  int64_t block_ids = 0;                // ids per partial hash
  std::vector<uint64_t> block_hashes;   // [ceil(vocab_size / block_ids)]
  std::vector<int32_t> nul_ids;         // ids whose bytes are the one byte 0x00
};

struct Schema {
  std::string text;
  bool any_whitespace = true;
};

std::filesystem::path goldens_dir() { return std::filesystem::path(__FILE__).parent_path() / "fixtures/grammar_masks"; }

// The parsed lines of a JSON-lines file; fg::Error naming the file and line on bad JSON.
std::vector<JsonDocument> read_jsonl(const std::filesystem::path& path) {
  std::ifstream in(path);
  FG_CHECK(in.good(), "{} is missing: scripts/grammar/make_mask_goldens.py writes it", path.string());
  std::vector<JsonDocument> lines;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    lines.push_back(parse_strict_json(line, JsonSource{path.string(), fmt::format("line {}", n)}));
  return lines;
}

uint64_t read_hash(const JsonView& v) {
  const std::string& hex = v.as_string();
  if (hex.size() != 16 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    v.fail_expected("16 lower-case hex digits");
  return std::stoull(hex, nullptr, 16);
}

std::vector<int32_t> read_ids(const JsonView& v) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < v.size(); ++i) ids.push_back(static_cast<int32_t>(v.item(i).as_int(0, INT32_MAX)));
  return ids;
}

IdRanges read_ranges(const JsonView& v) {
  IdRanges ranges;
  for (size_t i = 0; i < v.size(); ++i) {
    const JsonView r = v.item(i);
    if (r.size() != 2) r.fail_expected("[first, last]");
    ranges.emplace_back(static_cast<int32_t>(r.item(0).as_int(0, INT32_MAX)),
                        static_cast<int32_t>(r.item(1).as_int(0, INT32_MAX)));
  }
  return ranges;
}

std::vector<int32_t> expand(const IdRanges& ranges) {
  std::vector<int32_t> ids;
  for (auto [first, last] : ranges)
    for (int32_t id = first; id <= last; ++id) ids.push_back(id);
  return ids;
}

GoldenHeader read_header(const JsonView& h) {
  GoldenHeader out;
  out.vocab_size = h["vocab_size"].as_int(1);
  out.stop_token_ids = read_ids(h["stop_token_ids"]);
  out.special_ids = expand(read_ranges(h["special_ids"]));
  out.cleared_ids = expand(read_ranges(h["cleared_ids"]));
  out.non_special_tokens = h["vocabulary"]["non_special_tokens"].as_int(0);
  const JsonView vocabulary = h["vocabulary"];
  out.vocabulary_hash = read_hash(vocabulary["fnv1a64"]);
  out.block_ids = vocabulary["block_ids"].as_int(1);
  for (size_t i = 0; i < vocabulary["block_fnv1a64"].size(); ++i)
    out.block_hashes.push_back(read_hash(vocabulary["block_fnv1a64"].item(i)));
  out.nul_ids = read_ids(vocabulary["nul_ids"]);
  return out;
}

GoldenCase read_case(const JsonView& c) {
  GoldenCase out;
  out.schema = static_cast<size_t>(c["schema"].as_int(0));
  out.prefix = read_ids(c["prefix"]);
  const JsonView masks = c["masks"];
  for (size_t i = 0; i < masks.size(); ++i)
    out.masks.push_back({read_hash(masks.item(i).item(0)), masks.item(i).item(1).as_int(0)});
  if (out.masks.size() != out.prefix.size() + 1) c.fail("expected one mask more than the prefix's tokens");
  if (auto full = c.get("full")) {
    out.full_position = static_cast<size_t>((*full)["position"].as_int(0, static_cast<int64_t>(out.prefix.size())));
    out.full_ranges = read_ranges((*full)["ranges"]);
  }
  return out;
}

std::vector<Schema> read_schemas() {
  std::vector<Schema> schemas;
  for (const JsonDocument& doc : read_jsonl(goldens_dir() / "schemas.jsonl")) {
    const JsonView s = doc.root();
    if (static_cast<size_t>(s["index"].as_int(0)) != schemas.size()) s["index"].fail("out of order");
    schemas.push_back({s["schema"].as_string(), s["any_whitespace"].as_bool()});
  }
  return schemas;
}

// FNV-1a 64, as the script computes it.
struct Fnv1a {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(const void* data, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 0x100000001b3ull;
  }
  void add_u32(uint32_t v) {  // little-endian, whatever the host
    const unsigned char bytes[4] = {static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                                    static_cast<unsigned char>(v >> 16), static_cast<unsigned char>(v >> 24)};
    add(bytes, 4);
  }
};

MaskDigest digest(const std::vector<int32_t>& row) {
  Fnv1a f;
  int64_t popcount = 0;
  for (int32_t word : row) {
    f.add_u32(static_cast<uint32_t>(word));
    popcount += std::popcount(static_cast<uint32_t>(word));
  }
  return {f.h, popcount};
}

// The first few ids allowed by one side only, for a message.
std::string first_differences(const std::vector<int32_t>& row, const IdRanges& expected) {
  const size_t bits = row.size() * 32;
  std::vector<bool> theirs(bits);
  std::ostringstream out;
  int shown = 0;
  for (int32_t id : expand(expected)) {
    if (static_cast<size_t>(id) < bits) theirs[static_cast<size_t>(id)] = true;
    else if (shown++ < 8) out << (shown > 1 ? ", " : "") << id << " (past the mask)";
  }
  for (size_t id = 0; id < bits && shown < 8; ++id) {
    const bool ours = test::allowed(row, static_cast<int64_t>(id));
    if (ours == theirs[id]) continue;
    out << (shown++ ? ", " : "") << id << (ours ? " (only ours allows it)" : " (only xgrammar's Python allows it)");
  }
  return out.str();
}

// Reports a mismatch, at most `kShown` per tokenizer in full; returns false.
constexpr int kShown = 10;
bool report(int& failures, const std::string& message) {
  if (++failures <= kShown) ADD_FAILURE() << message;
  return false;
}

// Feeds the case's prefix and compares the mask at every position; false on the first mismatch.
bool check_case(const std::string& name, size_t index, const GoldenCase& c, const Schema& schema,
                const GoldenHeader& header, int& failures) {
  StructuredOutput constraint = test::constraint(StructuredOutputKind::kJsonSchema, schema.text);
  constraint.any_whitespace = schema.any_whitespace;
  GrammarMatcher m(test::compiler_fixture(name).compile(constraint));
  const std::string where = fmt::format("{} case {} (schema {})", name, index, c.schema);
  for (size_t pos = 0; pos < c.masks.size(); ++pos) {
    const std::vector<int32_t> row = test::mask_of(m);
    const MaskDigest ours = digest(row);
    // Where the whole mask is kept, the ids say more than a hash.
    const std::string differences = c.full_position == pos ? first_differences(row, c.full_ranges) : "";
    if (!differences.empty())
      return report(failures, fmt::format("{}, position {}: the masks differ at ids {}", where, pos, differences));
    if (ours.hash != c.masks[pos].hash || ours.popcount != c.masks[pos].popcount)
      return report(failures, fmt::format("{}, position {}: mask hash {:016x} popcount {}, xgrammar's Python "
                                          "{:016x} popcount {}", where, pos, ours.hash, ours.popcount,
                                          c.masks[pos].hash, c.masks[pos].popcount));
    for (int32_t id : header.cleared_ids)
      if (test::allowed(row, id))
        return report(failures, fmt::format("{}, position {}: special id {} is allowed", where, pos, id));
    if (pos < c.prefix.size() && !m.accept_token(c.prefix[pos]))
      return report(failures, fmt::format("{}, position {}: token {} refused", where, pos, c.prefix[pos]));
  }
  return true;
}

void check_masks(const std::string& name) {
  const std::filesystem::path file = goldens_dir() / (name + ".jsonl");
  ASSERT_TRUE(std::filesystem::exists(file)) << file << " is missing: scripts/grammar/make_mask_goldens.py writes it";
  const std::vector<Schema> schemas = read_schemas();
  const std::vector<JsonDocument> lines = read_jsonl(file);
  // The acceptance bar of the comparison: at least 200 schemas on each tokenizer.
  ASSERT_GE(lines.size(), 201u) << file;
  const GoldenHeader header = read_header(lines.front().root());
  ASSERT_EQ(header.vocab_size, test::vocabulary_fixture(name).vocab_size()) << name;
  ASSERT_EQ(header.stop_token_ids, test::vocabulary_fixture(name).stop_token_ids) << name;
  int failures = 0, positions = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const GoldenCase c = read_case(lines[i].root());
    ASSERT_LT(c.schema, schemas.size()) << file << " line " << i + 1;
    if (check_case(name, i - 1, c, schemas[c.schema], header, failures)) positions += static_cast<int>(c.masks.size());
  }
  EXPECT_EQ(failures, 0) << name << ": " << failures << " of " << lines.size() - 1 << " cases differ from xgrammar's "
                         << "Python package (at most " << kShown << " shown)";
  EXPECT_GT(positions, 0);
}

TEST(GrammarDifferential, Llama2MasksEqualXgrammarPython) { check_masks("llama2"); }
TEST(GrammarDifferential, Llama31MasksEqualXgrammarPython) { check_masks("llama3_1"); }
TEST(GrammarDifferential, Qwen3MasksEqualXgrammarPython) { check_masks("qwen3"); }

// One (id, bytes) record of the vocabulary hash: id and length as 32-bit little-endian, then the bytes.
void add_token(Fnv1a& f, int32_t id, const std::string& bytes) {
  f.add_u32(static_cast<uint32_t>(id));
  f.add_u32(static_cast<uint32_t>(bytes.size()));
  f.add(bytes.data(), bytes.size());
}

// The ids the goldens call special are our tokenizer's special ids (the cleared ones: those that
// do not stop), and every other id has the bytes xgrammar's Python TokenizerInfo holds for it.
void check_vocabulary(const std::string& name) {
  const std::filesystem::path file = goldens_dir() / (name + ".jsonl");
  ASSERT_TRUE(std::filesystem::exists(file)) << file << " is missing: scripts/grammar/make_mask_goldens.py writes it";
  const std::vector<JsonDocument> lines = read_jsonl(file);
  ASSERT_FALSE(lines.empty()) << file;
  const GoldenHeader header = read_header(lines.front().root());
  const Tokenizer& tok = test::tokenizer_fixture(name);
  const GrammarVocabulary& vocab = test::vocabulary_fixture(name);
  ASSERT_EQ(header.vocab_size, vocab.vocab_size()) << name;

  std::vector<int32_t> special, cleared;
  std::vector<bool> is_special(static_cast<size_t>(vocab.vocab_size()));
  for (int32_t id = 0; id < std::min(tok.vocab_size(), vocab.vocab_size()); ++id) {
    if (!tok.is_special(id)) continue;
    special.push_back(id);
    is_special[static_cast<size_t>(id)] = true;
    if (!std::ranges::binary_search(vocab.stop_token_ids, id)) cleared.push_back(id);
  }
  EXPECT_EQ(special, header.special_ids) << name;
  EXPECT_EQ(cleared, header.cleared_ids) << name;
  for (int32_t id : header.nul_ids) EXPECT_EQ(vocab.token_bytes[static_cast<size_t>(id)], std::string(1, '\0')) << id;

  Fnv1a all;
  std::vector<uint64_t> blocks;
  int64_t count = 0;
  Fnv1a block;
  for (int32_t id = 0; id < vocab.vocab_size(); ++id) {
    if (id % header.block_ids == 0 && id > 0) blocks.push_back(std::exchange(block, Fnv1a{}).h);
    if (is_special[static_cast<size_t>(id)]) continue;
    add_token(all, id, vocab.token_bytes[static_cast<size_t>(id)]);
    add_token(block, id, vocab.token_bytes[static_cast<size_t>(id)]);
    ++count;
  }
  blocks.push_back(block.h);
  EXPECT_EQ(count, header.non_special_tokens) << name;
  EXPECT_EQ(all.h, header.vocabulary_hash) << name << ": a non-special token's bytes differ from xgrammar's";
  ASSERT_EQ(blocks.size(), header.block_hashes.size()) << name;
  for (size_t b = 0; b < blocks.size(); ++b)
    EXPECT_EQ(blocks[b], header.block_hashes[b]) << name << ": the bytes of a non-special id in ["
                                                 << b * static_cast<size_t>(header.block_ids) << ", "
                                                 << (b + 1) * static_cast<size_t>(header.block_ids) << ") differ";
}

TEST(GrammarDifferential, VocabularyBytesEqualXgrammarPython) {
  for (const std::string name : {"llama2", "llama3_1", "qwen3"}) check_vocabulary(name);
}

}  // namespace
}  // namespace fg
