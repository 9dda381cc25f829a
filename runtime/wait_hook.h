// Waits in fedcl calls that let a library do work on the waiting thread: the MPI commands at thread
// levels below MPI_THREAD_MULTIPLE may call MPI only on the application's thread, so they progress
// while it waits in fedcl (transfer_port.h, set_wait_hook).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace fedcl {

inline std::atomic<void (*)()> wait_hook{nullptr};

// cv.wait(lock, done), running the hook (if any) between short sleeps.
template <typename Done>
void hooked_wait(std::unique_lock<std::mutex> &lock, std::condition_variable &cv, Done done) {
  void (*hook)() = wait_hook.load();
  if (!hook) return cv.wait(lock, done);
  while (!done()) {
    lock.unlock();
    hook();
    lock.lock();
    cv.wait_for(lock, std::chrono::microseconds(200), done);
  }
}

}  // namespace fedcl
