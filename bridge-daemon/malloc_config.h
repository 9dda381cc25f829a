// fedcld's heap: how glibc's malloc is set up in a session worker. While a session runs, freed
// memory stays in the heap so that transfer staging reuses it (no fresh pages, no page fault per
// 4 KiB); the worker process gives all of it back when the session ends (listener.h).
#pragma once

namespace fedcld {

// The mallopt settings; call once, first thing in the process.
void configure_malloc();

}  // namespace fedcld
