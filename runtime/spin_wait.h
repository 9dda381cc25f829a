// Waiting for the daemon by spinning first. An answer usually comes within a network round trip,
// and waking a sleeping thread costs about as much again (more in a virtual machine), so a waiting
// thread polls for up to FEDCL_SPIN_US (default 1000 us with 4 cores or more, else 100 us; yielding
// between polls) before it sleeps.
// While any thread of the process spins, the connections' receiver threads poll their sockets
// instead of sleeping in recv (spinning_waiters), so that the answer is not held up by their
// wake-up either. Both spins are bounded: a long kernel costs the waits a sleeping thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "wait_hook.h"

namespace fedcl {

std::chrono::microseconds spin_time();

// How many threads are spinning for an answer now.
inline std::atomic<int> spinning_waiters{0};

// Waits until done() (which must be safe to call without the lock: an atomic load), spinning first,
// then sleeping on cv under lock (taken here); the wait hook (wait_hook.h) runs throughout.
template <typename Done>
void spin_then_wait(std::mutex &mutex, std::condition_variable &cv, Done done) {
  if (!done()) {
    auto deadline = std::chrono::steady_clock::now() + spin_time();
    bool (*hook)() = wait_hook.load();
    spinning_waiters.fetch_add(1, std::memory_order_relaxed);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      if (hook) hook();  // a message that came or may leave now goes at once, not after the wait
      std::this_thread::yield();
    }
    spinning_waiters.fetch_sub(1, std::memory_order_relaxed);
  }
  std::unique_lock<std::mutex> lock(mutex);
  hooked_wait(lock, cv, done);
}

}  // namespace fedcl
