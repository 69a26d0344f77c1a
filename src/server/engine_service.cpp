// server/engine_service.cpp — see engine_service.h.
#include "server/engine_service.h"

namespace fg::server {

EngineService::EngineService(Engine& engine) : engine_(engine) {
  {
    std::lock_guard lock(kv_mutex_);
    last_ = read_kv();
  }
  thread_ = std::thread([this] { run(); });
}

EngineService::~EngineService() { stop(); }

bool EngineService::try_admit(int64_t n, int64_t limit) {
  std::lock_guard lock(mutex_);
  if (held_ + n > limit) return false;
  held_ += n;
  return true;
}

void EngineService::release(int64_t n) {
  std::lock_guard lock(mutex_);
  held_ -= n;
}

int64_t EngineService::held() const {
  std::lock_guard lock(mutex_);
  return held_;
}

uint64_t EngineService::submit(RequestSpec spec) {
  {
    std::lock_guard lock(mutex_);
    FG_CHECK(!fatal_, "the engine stopped after an error: {}", *fatal_);
    FG_CHECK(!stopping_, "the engine is shutting down");
  }
  const uint64_t id = engine_.submit(std::move(spec));
  {
    std::lock_guard lock(mutex_);
    work_ = true;
  }
  wake_.notify_one();
  return id;
}

bool EngineService::cancel(uint64_t id) {
  std::lock_guard lock(kv_mutex_);
  const bool cancelled = engine_.cancel(id);
  if (cancelled && !stepping_) last_ = read_kv();
  return cancelled;
}

void EngineService::cancel_all() {
  std::lock_guard lock(kv_mutex_);
  engine_.cancel_all();
  if (!stepping_) last_ = read_kv();
}

void EngineService::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

std::optional<std::string> EngineService::fatal_error() const {
  std::lock_guard lock(mutex_);
  return fatal_;
}

KvSnapshot EngineService::read_kv() const {
  const KvBlockManager& kv = engine_.kv();
  KvSnapshot s;
  s.free_blocks = kv.num_free_blocks();
  s.usable_blocks = kv.num_usable_blocks();
  s.usage = kv.usage();
  s.prefix_query_tokens = kv.stats().prefix_query_tokens;
  s.prefix_hit_tokens = kv.stats().prefix_hit_tokens;
  return s;
}

KvSnapshot EngineService::kv_snapshot() const {
  std::lock_guard lock(kv_mutex_);
  if (!stepping_) last_ = read_kv();
  return last_;
}

void EngineService::run() {
  while (true) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || work_; });
      if (stopping_) return;
      work_ = false;
    }
    try {
      while (true) {
        {
          std::lock_guard lock(kv_mutex_);
          stepping_ = true;
        }
        const bool stepped = engine_.step();
        {
          std::lock_guard lock(kv_mutex_);
          stepping_ = false;
          last_ = read_kv();
        }
        if (!stepped) break;
        std::lock_guard lock(mutex_);
        if (stopping_) return;
      }
    } catch (const std::exception& e) {
      {
        std::lock_guard lock(mutex_);
        fatal_ = e.what();
      }
      // Every stream ends ("abort") so that no client waits forever.
      std::lock_guard lock(kv_mutex_);
      stepping_ = false;
      engine_.cancel_all();
      last_ = read_kv();
      return;
    }
  }
}

}  // namespace fg::server
