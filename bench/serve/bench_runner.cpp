// bench/serve/bench_runner.cpp — arrival-time dispatch, the concurrency semaphore, progress.
#include "bench/serve/bench_runner.h"


#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "bench/common/clock.h"
#include "bench/serve/arrival_schedule.h"
#include "core/error.h"
#include "core/progress_bar.h"

namespace fg::bench {

namespace {

// A counting semaphore whose limit is a runtime value (std::counting_semaphore's maximum is a
// template argument, and its acquire order is unspecified; here waiters are served in order).
class Slots {
 public:
  explicit Slots(int64_t limit) : free_(limit) {}
  void acquire() {
    std::unique_lock lock(mutex_);
    freed_.wait(lock, [&] { return free_ > 0; });
    --free_;
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      ++free_;
    }
    freed_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable freed_;
  int64_t free_;
};

// The shared progress line (core/progress_bar.h), ticked from the request threads.
class Progress {
 public:
  Progress(int64_t total, bool enabled) : bar_("bench serve: requests", static_cast<size_t>(total), enabled) {}
  void tick() {
    std::lock_guard lock(mutex_);
    bar_.update(++done_);
  }

 private:
  std::mutex mutex_;
  size_t done_ = 0;
  ProgressBar bar_;
};

}  // namespace

TrafficOutcome run_traffic(const std::vector<BenchRequest>& requests, const TrafficSpec& spec, const SendRequest& send) {
  FG_CHECK(spec.max_concurrency >= 0, "--max-concurrency must not be negative, got {}", spec.max_concurrency);
  const auto count = static_cast<int64_t>(requests.size());
  const std::vector<double> arrivals = arrival_schedule(count, spec.request_rate, spec.burstiness, spec.seed);
  TrafficOutcome outcome;
  outcome.results.resize(requests.size());
  Slots slots(spec.max_concurrency > 0 ? spec.max_concurrency : count);
  Progress progress(count, spec.show_progress);
  std::atomic<int64_t> in_flight{0}, max_in_flight{0};

  auto run_one = [&](size_t i) {
    RequestResult r;
    try {
      r = send(requests[i]);
    } catch (const std::exception& e) {
      r = RequestResult{};
      r.prompt_len = static_cast<int64_t>(requests[i].prompt.size());
      r.error = e.what();
    } catch (...) {
      r = RequestResult{};
      r.prompt_len = static_cast<int64_t>(requests[i].prompt.size());
      r.error = "the request raised an unknown exception";
    }
    outcome.results[i] = std::move(r);
    --in_flight;
    slots.release();
    progress.tick();
  };

  std::vector<std::thread> threads;
  threads.reserve(requests.size());
  // Joined on every way out: a joinable std::thread's destructor would end the process if the
  // dispatch loop failed (e.g. no thread could be created).
  auto join_all = [&] {
    for (std::thread& t : threads)
      if (t.joinable()) t.join();
  };
  const double start = monotonic_seconds();
  try {
    for (size_t i = 0; i < requests.size(); ++i) {
      const double wait = start + arrivals[i] - monotonic_seconds();
      if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
      slots.acquire();
      const int64_t now_in_flight = ++in_flight;
      int64_t seen = max_in_flight.load();
      while (now_in_flight > seen && !max_in_flight.compare_exchange_weak(seen, now_in_flight)) {
      }
      threads.emplace_back(run_one, i);
    }
  } catch (...) {
    join_all();
    throw;
  }
  join_all();
  outcome.duration_s = monotonic_seconds() - start;
  outcome.max_in_flight = max_in_flight.load();
  return outcome;
}

}  // namespace fg::bench
