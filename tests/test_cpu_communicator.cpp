// tests/test_cpu_communicator.cpp — the CPU communicator (threads of one process): the all-reduce
// sums in rank order and gives every rank the same bits, the gather places each rank's columns,
// and a rank that fails or never arrives makes the others fail with its rank named, not hang.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_communicator.h"
#include "test_support.h"

namespace fg {
namespace {

using ::testing::HasSubstr;

// The values of rank r: magnitudes spread over many binades so that the sum's order shows.
std::vector<float> rank_values(int rank, int64_t count) {
  std::mt19937 rng(static_cast<uint32_t>(1000 + rank));
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = std::ldexp(mantissa(rng), exponent(rng));
  return v;
}

class AllReduce : public ::testing::TestWithParam<int> {};

// Every rank ends with the bits of ((x0 + x1) + x2) + ..., the fixed rank order, computed here
// sequentially; every rank's bits are identical.
TEST_P(AllReduce, SumsInRankOrderWithIdenticalBitsOnEveryRank) {
  const int ranks = GetParam();
  const int64_t rows = 7, cols = 129;
  CpuCommunicatorGroup group(ranks);
  std::vector<std::vector<float>> data(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) data[r] = rank_values(r, rows * cols);
  std::vector<float> expected = data[0];
  for (int r = 1; r < ranks; ++r)
    for (size_t i = 0; i < expected.size(); ++i) expected[i] += data[r][i];

  std::vector<std::shared_ptr<Communicator>> comms;
  for (int r = 0; r < ranks; ++r) comms.push_back(group.communicator(r));
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        errors[r] = test::error_of([&] {
          for (int repeat = 0; repeat < 3; ++repeat) {  // collectives back to back reuse the group
            std::vector<float> x = data[r];
            comms[r]->all_reduce_sum(Tensor(x.data(), DType::kF32, {rows, cols}));
            if (repeat == 2) data[r] = x;
          }
        });
      });
  }
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(errors[r], "(no error)") << "rank " << r;
    EXPECT_EQ(std::memcmp(data[r].data(), expected.data(), expected.size() * 4), 0) << "rank " << r;
  }
  EXPECT_EQ(comms[1 % ranks]->world_size(), ranks);
}

// Rank r's [n, C] shard lands in columns [r C, (r + 1) C) of every rank's [n, N C].
TEST_P(AllReduce, GatherPlacesEachRanksColumns) {
  const int ranks = GetParam();
  const int64_t n = 3, cols = 5;
  CpuCommunicatorGroup group(ranks);
  std::vector<std::vector<float>> out(static_cast<size_t>(ranks), std::vector<float>(n * cols * ranks, -1.0f));
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        errors[r] = test::error_of([&] {
          std::vector<float> shard(n * cols);
          for (int64_t i = 0; i < n; ++i)
            for (int64_t c = 0; c < cols; ++c) shard[i * cols + c] = static_cast<float>(1000 * i + r * cols + c);
          group.communicator(r)->all_gather_columns(Tensor(shard.data(), DType::kF32, {n, cols}),
                                                    Tensor(out[r].data(), DType::kF32, {n, cols * ranks}));
        });
      });
  }
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(errors[r], "(no error)");
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < cols * ranks; ++c) EXPECT_EQ(out[r][i * cols * ranks + c], 1000 * i + c) << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, AllReduce, ::testing::Values(1, 2, 3, 4));

// A rank that fails before a collective (abort(), as the tensor-parallel runner calls it) makes
// the ranks waiting in it fail at once, naming the failed rank and its error.
TEST(CpuCommunicator, FailingRankMakesTheOthersFailNamingIt) {
  CpuCommunicatorGroup group(3, std::chrono::minutes(5));
  std::vector<std::string> errors(3);
  const auto start = std::chrono::steady_clock::now();
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < 3; ++r)
      threads.emplace_back([&, r] {
        errors[r] = test::error_of([&] {
          std::vector<float> x(16, 1.0f);
          if (r == 2) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the others are waiting by now
            group.abort(2, "out of memory loading layer 7");
            return;
          }
          group.communicator(r)->all_reduce_sum(Tensor(x.data(), DType::kF32, {16}));
        });
      });
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  for (int r = 0; r < 2; ++r) {
    EXPECT_THAT(errors[r], HasSubstr("tensor-parallel rank " + std::to_string(r) + " stopped"));
    EXPECT_THAT(errors[r], HasSubstr("rank 2 failed: out of memory loading layer 7"));
  }
  EXPECT_THAT(group.failure(), HasSubstr("rank 2 failed"));
  // Later collectives fail at once.
  std::vector<float> x(4, 1.0f);
  EXPECT_THAT(test::error_of([&] { group.communicator(0)->all_reduce_sum(Tensor(x.data(), DType::kF32, {4})); }),
              HasSubstr("rank 2 failed"));
}

// A rank that never arrives (stuck) is given up on after the timeout, named as missing.
TEST(CpuCommunicator, StuckRankIsNamedAfterTheTimeout) {
  CpuCommunicatorGroup group(2, std::chrono::milliseconds(200));
  std::vector<float> x(4, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  const std::string error =
      test::error_of([&] { group.communicator(0)->all_reduce_sum(Tensor(x.data(), DType::kF32, {4})); });
  EXPECT_THAT(error, HasSubstr("rank(s) 1 did not reach a collective within 200 ms"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// Ranks that disagree on the shape all fail, naming the shapes.
TEST(CpuCommunicator, MismatchedShapesFailOnEveryRank) {
  CpuCommunicatorGroup group(2);
  std::vector<std::string> errors(2);
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        errors[r] = test::error_of([&] {
          std::vector<float> x(8, 1.0f);
          group.communicator(r)->all_reduce_sum(Tensor(x.data(), DType::kF32, {r == 0 ? 2 : 4, 2}));
        });
      });
  }
  for (int r = 0; r < 2; ++r) EXPECT_THAT(errors[r], HasSubstr("rank 1 gave [4, 2] but rank 0 [2, 2]")) << r;
}

}  // namespace
}  // namespace fg
