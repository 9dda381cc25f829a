#include "malloc_config.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>

#include "log.h"

namespace fedcld {

void configure_malloc() {
  // Transfer staging buffers come and go by the megabyte: keep them in the heap for reuse instead of
  // mapping fresh pages (and taking a page fault per 4 KiB) for every chunk. The session's worker
  // process ends with the session, and the memory with it.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // glibc gives every thread that allocates an arena of its own, up to 8 per core, and never frees
  // one. Two per core keep the backend's per-core workers
  // apart, and bound the arenas of many waiter threads (--completion wait).
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  mallopt(M_ARENA_MAX, int(std::max(4L, 2 * cores)));
}

}  // namespace fedcld
