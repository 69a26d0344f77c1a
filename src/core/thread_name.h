// core/thread_name.h — names the calling thread, as `top -H`, /proc/PID/task/TID/comm and debuggers
// show it, so that a process's CPU time can be told apart by role (the server's I/O threads, the
// engine loop). Linux keeps the first 15 bytes; elsewhere it does nothing.
#pragma once

#include <string>

namespace fg {

void set_thread_name(const std::string& name);

}  // namespace fg
