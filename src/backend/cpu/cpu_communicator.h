// backend/cpu/cpu_communicator.h — tensor parallelism over threads of one process: the CPU
// implementation of backend/communicator.h, so that the sharded model runs and is tested without
// GPUs.
//
// A CpuCommunicatorGroup is the shared state of N ranks; communicator(r) is rank r's view of it,
// used by rank r's thread only. A collective is two barriers: every rank publishes its tensor and
// waits for the others, reads all of them into its own result, waits again (so no rank overwrites
// its tensor while another still reads it), then writes its result. Each rank computes the whole
// sum itself, in rank order, so every rank holds the same bits without a broadcast.
//
// Failure: a rank that throws outside a collective cannot reach the next one, so the group must be
// told (abort()); from then on every rank waiting in a collective, or arriving at one later,
// throws an error naming the failed rank. A rank that neither arrives nor fails (stuck) is given
// up on after the group's timeout, naming the ranks that never arrived. Nothing waits forever.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "backend/communicator.h"

namespace fg {

class CpuCommunicatorGroup {
 public:
  // `timeout`: how long a rank waits in a collective for the others before it gives up.
  explicit CpuCommunicatorGroup(int world_size, std::chrono::milliseconds timeout = std::chrono::minutes(5));
  ~CpuCommunicatorGroup();
  CpuCommunicatorGroup(const CpuCommunicatorGroup&) = delete;
  CpuCommunicatorGroup& operator=(const CpuCommunicatorGroup&) = delete;

  int world_size() const;
  // Rank `rank`'s communicator; it shares the group's state and may outlive the group object.
  std::shared_ptr<Communicator> communicator(int rank);
  // Marks the group failed because rank `rank` failed with `what` (the first failure is kept).
  void abort(int rank, const std::string& what);
  // The first failure's message ("" while none).
  std::string failure() const;


  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace fg
