// server/http_registry.h — the open connections, shared by the I/O threads under one mutex:
// their count against the cap (--max-connections), the idle ones oldest first (at the cap, the
// oldest idle connection is closed to make room for a new one), and all of them for the drain.
//
// "Idle" means waiting for a request of which no byte has arrived: a fresh connection, or a
// kept-alive one between requests. A connection busy reading a request, waiting for its answer or
// writing it is never evicted; when every connection is busy, a new one is refused.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace fg::server {

class ConnectionRegistry {
 public:
  // What the registry holds: a connection, seen through the two things asked of it.
  class Member {
   public:
    virtual ~Member() = default;
    // Any thread: the registry has taken this connection's slot; it must close (if it started a
    // request meanwhile, that request is not served).
    virtual void evict() = 0;
    // Any thread: the server drains; close when idle, finish the answer in flight otherwise.
    virtual void drain() = 0;
    virtual std::shared_ptr<Member> self() = 0;  // null while being destroyed

   private:
    friend class ConnectionRegistry;
    std::list<Member*>::iterator idle_at_;
    bool idle_ = false, evicted_ = false, counted_ = false;
  };

  explicit ConnectionRegistry(size_t max_connections) : max_(max_connections) {}
  // Before serving: a lower cap (the descriptor limit allows no more).
  void set_max(size_t max_connections) { max_ = max_connections; }

  // Accepting: counts a new connection, and returns true, when a slot is free or an idle
  // connection gave up its own (that one is told to close); false when every slot is busy.
  bool reserve();
  // Registers the connection that reserve() made room for.
  void add(Member& member);
  // The member waits for a request (pushed last: the newest idle).
  void set_idle(Member& member);
  // A request started on the member; false when it was evicted meanwhile (it must close).
  bool set_busy(Member& member);
  // The member closed (idempotent).
  void remove(Member& member);

  size_t open() const;
  bool empty() const;
  // Every registered member, for the drain.
  std::vector<std::shared_ptr<Member>> members() const;
  // Called (outside the lock) each time the last member is removed.
  void on_empty(std::function<void()> fn) { on_empty_ = std::move(fn); }

 private:
  size_t max_;
  mutable std::mutex mutex_;
  size_t open_ = 0;              // slots taken: reserved, or held by a member not evicted
  std::list<Member*> idle_;      // oldest first
  std::unordered_set<Member*> all_;
  std::function<void()> on_empty_;
};

}  // namespace fg::server
