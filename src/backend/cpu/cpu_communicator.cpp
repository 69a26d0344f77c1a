// backend/cpu/cpu_communicator.cpp — the barriers and the two collectives of CpuCommunicatorGroup.
#include "backend/cpu/cpu_communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "core/error.h"

namespace fg {

// What every rank publishes for a collective: its tensor's data and shape.
namespace {
struct Published {
  const float* data = nullptr;
  int64_t rows = 0, cols = 0;
};
}  // namespace

struct CpuCommunicatorGroup::State {
  State(int n, std::chrono::milliseconds t) : size(n), timeout(t), arrived(n, false), published(n), scratch(n) {}

  const int size;
  const std::chrono::milliseconds timeout;
  std::mutex mutex;
  std::condition_variable changed;
  int waiting = 0;             // ranks in the current barrier
  uint64_t generation = 0;     // barriers completed
  std::vector<bool> arrived;   // [size]: which ranks are in the current barrier
  std::optional<std::string> failed;  // the first failure, once there is one
  std::vector<Published> published;   // [size], written by each rank before the first barrier
  std::vector<std::vector<float>> scratch;  // [size]: rank r's slice of an all-reduce's sums

  // Under the lock: the first failure wins; everyone waiting wakes.
  void fail_locked(const std::string& what) {
    if (!failed) failed = what;
    changed.notify_all();
  }

  [[noreturn]] void throw_failed(int rank) const {
    fail("tensor-parallel rank {} stopped: {}", rank, *failed);
  }

  // Returns when every rank has arrived; throws when the group failed or the others did not come.
  void barrier(int rank) {
    std::unique_lock lock(mutex);
    if (failed) throw_failed(rank);
    const uint64_t gen = generation;
    arrived[rank] = true;
    if (++waiting == size) {
      waiting = 0;
      std::fill(arrived.begin(), arrived.end(), false);
      ++generation;
      changed.notify_all();
      return;
    }
    const bool released = changed.wait_for(lock, timeout, [&] { return generation != gen || failed; });
    if (generation != gen) return;  // the barrier completed; a later failure is seen at the next one
    if (!released) {
      std::vector<int> missing;
      for (int r = 0; r < size; ++r)
        if (!arrived[r]) missing.push_back(r);
      fail_locked(fmt::format("rank(s) {} did not reach a collective within {} ms (stuck or dead)",
                              fmt::join(missing, ", "), timeout.count()));
    }
    throw_failed(rank);
  }

  // Every rank checks the same published shapes, so they all fail together on a mismatch.
  void check_shapes(int rank, const char* what) {
    for (int r = 1; r < size; ++r) {
      if (published[r].rows == published[0].rows && published[r].cols == published[0].cols) continue;
      const std::string message = fmt::format("{}: rank {} gave [{}, {}] but rank 0 [{}, {}]", what, r,
                                              published[r].rows, published[r].cols, published[0].rows,
                                              published[0].cols);
      {
        std::lock_guard lock(mutex);
        fail_locked(message);
      }
      throw_failed(rank);
    }
  }
};

namespace {

class CpuRankCommunicator final : public Communicator {
 public:
  CpuRankCommunicator(std::shared_ptr<CpuCommunicatorGroup::State> state, int rank)
      : state_(std::move(state)), rank_(rank) {}

  int rank() const override { return rank_; }
  int world_size() const override { return state_->size; }

  void all_reduce_sum(const Tensor& x) override {
    FG_CHECK(x.dtype == DType::kF32, "all_reduce_sum: rank {} gave a {} tensor; the CPU communicator sums F32",
             rank_, dtype_name(x.dtype));
    State& s = *state_;
    s.published[rank_] = {x.as<const float>(), x.rank == 0 ? 1 : x.dim(0), x.row_numel()};
    s.barrier(rank_);
    s.check_shapes(rank_, "all_reduce_sum");
    // Each rank sums its own slice of the elements, then every rank copies every slice: the sums
    // are done once, not once per rank. Rank order, one element at a time: ((x0 + x1) + x2) + ...,
    // so every element has the same bits whichever rank sums it.
    const int64_t count = x.numel();
    const auto slice_begin = [&](int r) { return count * r / s.size; };
    const int64_t begin = slice_begin(rank_), end = slice_begin(rank_ + 1);
    std::vector<float>& sum = s.scratch[rank_];
    sum.assign(s.published[0].data + begin, s.published[0].data + end);
    for (int r = 1; r < s.size; ++r) {
      const float* add = s.published[r].data + begin;
      for (int64_t i = 0; i < end - begin; ++i) sum[i] += add[i];
    }
    s.barrier(rank_);  // every slice summed, so no rank reads an x any more
    // The slices are read before any rank can publish again: its next collective's first barrier
    // waits for every rank to finish here.
    for (int r = 0; r < s.size; ++r)
      std::memcpy(x.as<float>() + slice_begin(r), s.scratch[r].data(), s.scratch[r].size() * sizeof(float));
  }

  void all_gather_columns(const Tensor& shard, const Tensor& out) override {
    FG_CHECK(shard.dtype == DType::kF32 && out.dtype == DType::kF32 && shard.rank == 2,
             "all_gather_columns: rank {} needs F32 [n, C] shards, got {} {}", rank_, dtype_name(shard.dtype),
             shard.shape_string());
    State& s = *state_;
    const int64_t n = shard.dim(0), cols = shard.dim(1);
    FG_CHECK(out.same_shape({n, cols * s.size}), "all_gather_columns: rank {} gathers [{}, {}] shards of {} ranks into {}",
             rank_, n, cols, s.size, out.shape_string());
    s.published[rank_] = {shard.as<const float>(), n, cols};
    s.barrier(rank_);
    s.check_shapes(rank_, "all_gather_columns");
    float* dst = out.as<float>();
    for (int r = 0; r < s.size; ++r)
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(dst + i * cols * s.size + r * cols, s.published[r].data + i * cols, static_cast<size_t>(cols) * 4);
    s.barrier(rank_);  // every rank has read every shard
  }

 private:
  using State = CpuCommunicatorGroup::State;
  std::shared_ptr<State> state_;
  int rank_;
};

}  // namespace

CpuCommunicatorGroup::CpuCommunicatorGroup(int world_size, std::chrono::milliseconds timeout) {
  FG_CHECK(world_size >= 1, "a tensor-parallel group needs at least 1 rank, got {}", world_size);
  state_ = std::make_shared<State>(world_size, timeout);
}

CpuCommunicatorGroup::~CpuCommunicatorGroup() = default;

int CpuCommunicatorGroup::world_size() const { return state_->size; }

std::shared_ptr<Communicator> CpuCommunicatorGroup::communicator(int rank) {
  FG_CHECK(rank >= 0 && rank < state_->size, "tensor-parallel rank {} is outside [0, {})", rank, state_->size);
  return std::make_shared<CpuRankCommunicator>(state_, rank);
}

void CpuCommunicatorGroup::abort(int rank, const std::string& what) {
  std::lock_guard lock(state_->mutex);
  state_->fail_locked(fmt::format("rank {} failed: {}", rank, what));
}

std::string CpuCommunicatorGroup::failure() const {
  std::lock_guard lock(state_->mutex);
  return state_->failed.value_or("");
}

}  // namespace fg
