// tests/test_size_buckets.cpp — the buckets that graph capture sizes define (core/size_buckets.h):
// every count falls in exactly one bucket, topped by the smallest capture size that holds it, and
// past the largest size (or with none) by a power of two.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/size_buckets.h"

namespace fg {
namespace {

void expect_bucket(const SizeBuckets& b, int64_t n, int64_t lo, int64_t hi) {
  const SizeBuckets::Bucket got = b.of(n);
  EXPECT_EQ(got.lo, lo) << "n = " << n;
  EXPECT_EQ(got.hi, hi) << "n = " << n;
}

TEST(SizeBuckets, CaptureSizesAreBucketTops) {
  const SizeBuckets b({16, 1, 4, 2, 8, 24, 24});  // unsorted, a duplicate
  expect_bucket(b, 1, 1, 1);
  expect_bucket(b, 3, 3, 4);
  expect_bucket(b, 9, 9, 16);
  expect_bucket(b, 16, 9, 16);
  expect_bucket(b, 17, 17, 24);
  expect_bucket(b, 25, 25, 32);  // past the largest: powers of two, starting after it
  expect_bucket(b, 33, 33, 64);
  expect_bucket(b, 100, 65, 128);
}

TEST(SizeBuckets, EveryCountHasOneBucketThatHoldsIt) {
  const SizeBuckets b({1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64});
  for (int64_t n = 1; n <= 300; ++n) {
    const SizeBuckets::Bucket k = b.of(n);
    ASSERT_LE(k.lo, n);
    ASSERT_GE(k.hi, n);
    for (int64_t m = k.lo; m <= k.hi; ++m) {  // every member maps to the same bucket
      ASSERT_EQ(b.of(m).lo, k.lo) << m;
      ASSERT_EQ(b.of(m).hi, k.hi) << m;
    }
  }
}

TEST(SizeBuckets, WithoutSizesTheTopsArePowersOfTwo) {
  const SizeBuckets b;
  expect_bucket(b, 1, 1, 1);
  expect_bucket(b, 5, 5, 8);
  expect_bucket(b, 8, 5, 8);
  expect_bucket(b, 9, 9, 16);
}

TEST(SizeBuckets, RefusesSizesBelowOne) {
  EXPECT_THROW(SizeBuckets({4, 0}), Error);
  EXPECT_THROW(SizeBuckets({-2}), Error);
}

}  // namespace
}  // namespace fg
