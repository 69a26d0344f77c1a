// runner/buckets.h — the padded shapes graphs are captured for, and the choice of the smallest
// one that holds a batch (DESIGN.md, "The core contract", point 2).
//
// A bucket is (num_tokens_padded, num_reqs_padded, uniform_decode). For each capture size S:
//   - a mixed bucket (S, min(S, max_num_seqs), false): any batch of at most S tokens fits, since
//     every request in a step owns at least one token;
//   - a uniform-decode bucket (S, S, true) when S <= max_num_seqs: S requests of one token each.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fg {

struct Bucket {
  int64_t num_tokens = 0;
  int64_t num_reqs = 0;
  bool uniform_decode = false;

  bool operator==(const Bucket&) const = default;
  std::string to_string() const;
};

// 1, 2, 4, 8, then every 8 up to 256, then every 16 up to 512 — capped at max_num_tokens.
std::vector<int64_t> default_capture_sizes(int64_t max_num_tokens);

// Parses "1,2,4,8" (sorted, deduplicated, each in [1, max_num_tokens]); errors name the item.
std::vector<int64_t> parse_capture_sizes(const std::string& text, int64_t max_num_tokens);

class BucketTable {
 public:
  BucketTable(std::vector<int64_t> capture_sizes, int64_t max_num_seqs);

  // The smallest bucket that holds a batch of num_tokens tokens over num_reqs requests; a batch
  // whose requests all have one query token prefers the uniform-decode bucket when
  // prefer_uniform. nullopt when the batch is larger than the largest bucket.
  std::optional<Bucket> find(int64_t num_tokens, int64_t num_reqs, bool uniform_decode, bool prefer_uniform) const;
  // Whether a batch of num_reqs one-token requests runs as a uniform decode: in a uniform-decode
  // bucket, or in no bucket (eagerly, as itself). false when a mixed bucket holds it.
  bool decodes_as_uniform(int64_t num_reqs, bool prefer_uniform) const;

  // Every bucket, largest first (the capture order: later, smaller graphs reuse the memory the
  // largest one sized).
  std::vector<Bucket> all_largest_first(bool include_mixed, bool include_uniform) const;
  const std::vector<int64_t>& capture_sizes() const { return sizes_; }

 private:
  std::vector<int64_t> sizes_;  // ascending
  int64_t max_num_seqs_;
};

}  // namespace fg
