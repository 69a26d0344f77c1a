// core/size_buckets.h — the buckets of a count (token rows, requests) that the runner's graph
// capture sizes define, for kernels that choose an algorithm by size. A graph captured at size S
// runs every count n in (previous size, S] with S's algorithm; an eager run of n must use the same
// one, so that graph and eager agree bit for bit (DESIGN.md point 7). Both ask `of(n)`.
#pragma once

#include <cstdint>
#include <vector>

namespace fg {

// A bucket holds n in [lo, hi]. Configured sizes (the capture sizes) are bucket tops; past the
// largest, or with none configured, the tops are powers of two (which agrees with
// runner/buckets.h's default capture sizes: each power of two up to 512 is one of them).
class SizeBuckets {
 public:
  struct Bucket {
    int64_t lo = 1, hi = 1;
  };
  SizeBuckets() = default;
  explicit SizeBuckets(std::vector<int64_t> sizes);  // raises fg::Error on a size < 1

  Bucket of(int64_t n) const;  // n >= 1
  const std::vector<int64_t>& sizes() const { return sizes_; }  // the configured tops, sorted

 private:
  std::vector<int64_t> sizes_;  // sorted, unique, positive
};

}  // namespace fg
