// Waits in fedcl calls that let a library do work on the waiting thread: the MPI commands progress
// while the application waits in fedcl (transfer_port.h, set_wait_hook). At thread levels below
// MPI_THREAD_MULTIPLE only the application's thread may call MPI; at any level a thread that waits
// for a message takes it sooner than fedcl's MPI thread, which backs off while idle.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace fedcl {

// Runs the library's work once; returns whether work is in flight.
inline std::atomic<bool (*)()> wait_hook{nullptr};

// How long a wait polls the hook without sleeping while it has work in flight: about as long as
// a message between two nodes takes through two daemons; a wait for a long kernel then sleeps.
constexpr auto kHookSpin = std::chrono::milliseconds(2);

// cv.wait(lock, done), running the hook (if any): back to back while it has work in flight, for up
// to kHookSpin, then between short sleeps.
template <typename Done>
void hooked_wait(std::unique_lock<std::mutex> &lock, std::condition_variable &cv, Done done) {
  bool (*hook)() = wait_hook.load();
  if (!hook) return cv.wait(lock, done);
  auto spin_until = std::chrono::steady_clock::now() + kHookSpin;
  while (!done()) {
    lock.unlock();
    bool busy = hook();
    if (busy && std::chrono::steady_clock::now() < spin_until) {
      std::this_thread::yield();
      lock.lock();
      continue;
    }
    lock.lock();
    cv.wait_for(lock, std::chrono::microseconds(200), done);
  }
}

}  // namespace fedcl
