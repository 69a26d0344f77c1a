// server/engine_service.cpp — see engine_service.h.
#include "server/engine_service.h"

#include "core/thread_name.h"

namespace fg::server {

EngineService::EngineService(Engine& engine) : engine_(engine) { thread_ = std::thread([this] {
    set_thread_name("engine-loop");
    run();
  }); }

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

bool EngineService::cancel(uint64_t id) { return engine_.cancel(id); }

void EngineService::cancel_all() { engine_.cancel_all(); }

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
        if (!engine_.step()) break;
        std::lock_guard lock(mutex_);
        if (stopping_) return;
      }
    } catch (const std::exception& e) {
      {
        std::lock_guard lock(mutex_);
        fatal_ = e.what();
      }
      // Every stream ends ("abort") so that no client waits forever.
      engine_.cancel_all();
      return;
    }
  }
}

}  // namespace fg::server
