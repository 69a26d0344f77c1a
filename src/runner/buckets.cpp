// runner/buckets.cpp — capture sizes and bucket lookup.
#include "runner/buckets.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace fg {

std::string Bucket::to_string() const {
  return fmt::format("({} tokens, {} reqs, {})", num_tokens, num_reqs, uniform_decode ? "uniform decode" : "mixed");
}

std::vector<int64_t> default_capture_sizes(int64_t max_num_tokens) {
  std::vector<int64_t> sizes = {1, 2, 4};
  for (int64_t s = 8; s <= 256; s += 8) sizes.push_back(s);
  for (int64_t s = 272; s <= 512; s += 16) sizes.push_back(s);
  std::erase_if(sizes, [&](int64_t s) { return s > max_num_tokens; });
  return sizes;
}

std::vector<int64_t> parse_capture_sizes(const std::string& text, int64_t max_num_tokens) {
  std::vector<int64_t> sizes;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    FG_CHECK(used == item.size() && !item.empty() && value >= 1 && value <= max_num_tokens,
             "--cuda-graph-sizes: '{}' must be an integer in [1, {}] (the token budget)", item, max_num_tokens);
    sizes.push_back(value);
    start = comma + 1;
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

BucketTable::BucketTable(std::vector<int64_t> capture_sizes, int64_t max_num_seqs)
    : sizes_(std::move(capture_sizes)), max_num_seqs_(max_num_seqs) {
  std::sort(sizes_.begin(), sizes_.end());
  sizes_.erase(std::unique(sizes_.begin(), sizes_.end()), sizes_.end());
  FG_CHECK(max_num_seqs >= 1, "max_num_seqs must be positive");
}

std::optional<Bucket> BucketTable::find(int64_t num_tokens, int64_t num_reqs, bool uniform_decode,
                                        bool prefer_uniform) const {
  FG_ASSERT(num_tokens >= num_reqs && num_reqs >= 1);
  auto it = std::lower_bound(sizes_.begin(), sizes_.end(), num_tokens);
  if (it == sizes_.end()) return std::nullopt;
  if (uniform_decode && prefer_uniform && num_tokens == num_reqs) {
    // The uniform bucket needs a size >= num_reqs that is itself a valid request count.
    if (*it <= max_num_seqs_) return Bucket{*it, *it, true};
  }
  const int64_t reqs = std::min(*it, max_num_seqs_);
  if (num_reqs > reqs) return std::nullopt;
  return Bucket{*it, reqs, false};
}

bool BucketTable::decodes_as_uniform(int64_t num_reqs, bool prefer_uniform) const {
  const std::optional<Bucket> found = find(num_reqs, num_reqs, true, prefer_uniform);
  return !found || found->uniform_decode;
}

std::vector<Bucket> BucketTable::all_largest_first(bool include_mixed, bool include_uniform) const {
  std::vector<Bucket> out;
  for (auto it = sizes_.rbegin(); it != sizes_.rend(); ++it) {
    if (include_mixed) out.push_back({*it, std::min(*it, max_num_seqs_), false});
    if (include_uniform && *it <= max_num_seqs_) out.push_back({*it, *it, true});
  }
  return out;
}

}  // namespace fg
