// server/http_registry.cpp — see http_registry.h.
#include "server/http_registry.h"

namespace fg::server {

bool ConnectionRegistry::reserve() {
  std::shared_ptr<Member> victim;
  {
    std::lock_guard lock(mutex_);
    if (open_ < max_) {
      ++open_;
      return true;
    }
    if (idle_.empty()) return false;
    // The oldest idle connection gives its slot to the new one (the count stays). One that is
    // being destroyed has no self() left, and needs no telling.
    Member* oldest = idle_.front();
    idle_.pop_front();
    oldest->idle_ = false;
    oldest->evicted_ = true;
    oldest->counted_ = false;
    victim = oldest->self();
  }
  if (victim) victim->evict();
  return true;
}

void ConnectionRegistry::add(Member& member) {
  std::lock_guard lock(mutex_);
  all_.insert(&member);
  member.counted_ = true;
}

void ConnectionRegistry::set_idle(Member& member) {
  std::lock_guard lock(mutex_);
  if (member.evicted_ || member.idle_ || !all_.count(&member)) return;
  member.idle_at_ = idle_.insert(idle_.end(), &member);
  member.idle_ = true;
}

bool ConnectionRegistry::set_busy(Member& member) {
  std::lock_guard lock(mutex_);
  if (member.evicted_) return false;
  if (member.idle_) {
    idle_.erase(member.idle_at_);
    member.idle_ = false;
  }
  return true;
}

void ConnectionRegistry::remove(Member& member) {
  bool empty = false;
  {
    std::lock_guard lock(mutex_);
    if (!all_.erase(&member)) return;
    if (member.idle_) {
      idle_.erase(member.idle_at_);
      member.idle_ = false;
    }
    if (member.counted_) {
      member.counted_ = false;
      --open_;
    }
    empty = all_.empty();
  }
  if (empty && on_empty_) on_empty_();
}

size_t ConnectionRegistry::open() const {
  std::lock_guard lock(mutex_);
  return open_;
}

bool ConnectionRegistry::empty() const {
  std::lock_guard lock(mutex_);
  return all_.empty();
}

std::vector<std::shared_ptr<ConnectionRegistry::Member>> ConnectionRegistry::members() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<Member>> out;
  out.reserve(all_.size());
  for (Member* m : all_)
    if (auto s = m->self()) out.push_back(std::move(s));
  return out;
}

}  // namespace fg::server
