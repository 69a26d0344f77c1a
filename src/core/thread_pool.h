// core/thread_pool.h — a fixed pool of worker threads running data-parallel loops.
//
// The CPU backend owns one pool and passes it where work is split; there is no global pool.
// parallel_for splits [0, n) into contiguous chunks, one per thread, so that the work each
// index gets (and the order of any per-index arithmetic) never depends on the thread count.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fg {

class ThreadPool {
 public:
  // num_threads <= 0 means one thread per hardware thread.
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls body(begin, end) on disjoint chunks covering [0, n); returns when all are done.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& body);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t n_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace fg
