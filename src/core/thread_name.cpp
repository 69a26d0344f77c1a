// core/thread_name.cpp — see thread_name.h.
#include "core/thread_name.h"

#if defined(__linux__)
#include <pthread.h>
#endif

namespace fg {

void set_thread_name(const std::string& name) {
#if defined(__linux__)
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());  // a longer name is refused (ERANGE)
#else
  (void)name;
#endif
}

}  // namespace fg
