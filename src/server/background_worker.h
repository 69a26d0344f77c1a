// server/background_worker.h — one thread that runs posted tasks in order, for work that must not
// run on the HTTP layer's I/O threads: compiling a request's output constraint can take seconds
// (a large JSON schema), and an I/O thread held that long stalls every connection it serves.
// The task reports back through its exchange's wake(). Destruction finishes the queued tasks.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace fg::server {

class BackgroundWorker {
 public:
  BackgroundWorker();
  ~BackgroundWorker();
  BackgroundWorker(const BackgroundWorker&) = delete;
  BackgroundWorker& operator=(const BackgroundWorker&) = delete;

  void post(std::function<void()> task);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest exists
};

}  // namespace fg::server
