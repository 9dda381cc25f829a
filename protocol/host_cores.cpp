#include "host_cores.h"

#include <sched.h>

#include <thread>

namespace fedcl {

unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  unsigned cores = std::thread::hardware_concurrency();
  return cores ? cores : 1;
}

}  // namespace fedcl
