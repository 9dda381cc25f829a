// fedcld's heap: how glibc's malloc is set up, and giving memory back once sessions close.
//
// While sessions run, freed memory stays in the heap so that transfer staging reuses it (no fresh
// pages, no page fault per 4 KiB). Without a trim it stayed there for good: the RSS kept the peak of
// the busiest moment (1.07 GB after 32 sessions of the load test, against 0.19 GB after one).
#pragma once

#include <uv.h>

#include <memory>

namespace fedcld {

// The mallopt settings; call once, first thing in main().
void configure_malloc();

class MemoryTrim {
 public:
  explicit MemoryTrim(uv_loop_t *loop);
  ~MemoryTrim();
  MemoryTrim(const MemoryTrim &) = delete;
  MemoryTrim &operator=(const MemoryTrim &) = delete;

  // A session or peer link closed and released its objects: malloc_trim soon, on libuv's thread
  // pool (a trim of a large heap takes milliseconds the loop should not wait). One trim at a time;
  // closes during a trim make one more after it.
  void session_closed();

 private:
  // Shared with the trim in flight, which may outlive this (a process that ends while the pool
  // still trims: the request must not live in memory the exit frees under the pool's thread).
  struct State {
    uv_loop_t *loop;
    bool running = false, again = false, gone = false;
  };
  static void start(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
};

}  // namespace fedcld
