// core/size_buckets.cpp — see size_buckets.h.
#include "core/size_buckets.h"

#include <algorithm>

#include "core/error.h"

namespace fg {

namespace {

int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

SizeBuckets::SizeBuckets(std::vector<int64_t> sizes) : sizes_(std::move(sizes)) {
  for (int64_t s : sizes_) FG_CHECK(s >= 1, "bucket sizes must be positive, got {}", s);
  std::sort(sizes_.begin(), sizes_.end());
  sizes_.erase(std::unique(sizes_.begin(), sizes_.end()), sizes_.end());
}

SizeBuckets::Bucket SizeBuckets::of(int64_t n) const {
  auto it = std::lower_bound(sizes_.begin(), sizes_.end(), n);
  if (it != sizes_.end()) return {it == sizes_.begin() ? 1 : *(it - 1) + 1, *it};
  const int64_t largest = sizes_.empty() ? 0 : sizes_.back();
  const int64_t top = next_pow2(n);
  return {std::max(top / 2 + 1, largest + 1), top};
}

}  // namespace fg
