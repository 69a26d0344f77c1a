// tests/test_buckets.cpp — the runner's bucket table (runner/buckets.h): which bucket a batch
// runs in, and whether a decode batch runs as a uniform decode, which an eager step must know to
// compute the batch as the graph that holds it does (DESIGN.md point 7).
#include <gtest/gtest.h>

#include "runner/buckets.h"

namespace fg {
namespace {

void expect_bucket(const std::optional<Bucket>& got, int64_t tokens, int64_t reqs, bool uniform) {
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->num_tokens, tokens);
  EXPECT_EQ(got->num_reqs, reqs);
  EXPECT_EQ(got->uniform_decode, uniform);
}

TEST(BucketTable, FindsTheSmallestBucketThatHoldsTheBatch) {
  const BucketTable table({1, 2, 4, 8, 16, 32, 64}, 16);
  expect_bucket(table.find(3, 3, true, true), 4, 4, true);       // decodes: the uniform bucket
  expect_bucket(table.find(3, 3, true, false), 4, 4, false);     // unless not preferred
  expect_bucket(table.find(40, 3, false, true), 64, 16, false);  // mixed: requests capped at 16
  expect_bucket(table.find(12, 12, true, true), 16, 16, true);
  EXPECT_FALSE(table.find(65, 4, false, true).has_value());      // past the largest bucket
}

TEST(BucketTable, UniformBucketsHoldAtMostMaxNumSeqsRequests) {
  const BucketTable table({1, 2, 4, 8, 16, 32, 64}, 12);
  expect_bucket(table.find(12, 12, true, true), 16, 12, false);  // 16 > 12: no uniform bucket of 16
  EXPECT_FALSE(table.find(13, 13, true, true).has_value());      // 13 requests fit no bucket
}

TEST(BucketTable, DecodesRunAsUniformExceptInMixedBuckets) {
  const BucketTable table({1, 2, 4, 8, 16, 24}, 20);
  for (int64_t reqs = 1; reqs <= 16; ++reqs) {
    EXPECT_TRUE(table.decodes_as_uniform(reqs, true)) << reqs;    // a uniform bucket holds them
    EXPECT_FALSE(table.decodes_as_uniform(reqs, false)) << reqs;  // a mixed bucket does
  }
  // 17-20 requests: the bucket of 24 tokens is no uniform bucket (24 > 20 requests), so the mixed
  // bucket (24 tokens, 20 requests) holds them whatever the preference.
  for (int64_t reqs = 17; reqs <= 20; ++reqs) {
    EXPECT_FALSE(table.decodes_as_uniform(reqs, true)) << reqs;
    EXPECT_FALSE(table.decodes_as_uniform(reqs, false)) << reqs;
  }
  // Past the largest bucket a batch runs eagerly as itself.
  EXPECT_TRUE(table.decodes_as_uniform(25, true));
  EXPECT_TRUE(table.decodes_as_uniform(25, false));
}

}  // namespace
}  // namespace fg
