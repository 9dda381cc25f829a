// Learns that backend events completed on a thread of its own, which polls them. Some backends
// deliver event callbacks late (NVIDIA's take up to ~20 ms for a transfer that clWaitForEvents sees
// finish in 0.2 ms); for those, fedcld watches each queue's commands with a waiter as well as with a
// callback (an in-order queue's with the waiter alone), and whichever learns first reports.
#pragma once

#include <CL/cl.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

namespace fedcld {

class EventWaiter {
 public:
  // While events are pending it polls them, spinning for up to busy_poll after the last one
  // completed and then every 20 us; with none, it spins for busy_poll, then sleeps (server.h).
  explicit EventWaiter(std::chrono::microseconds busy_poll);
  // Lets the thread finish the waits it has and end by itself: it may be inside a long wait.
  ~EventWaiter();
  EventWaiter(const EventWaiter &) = delete;

  // Calls done(status) on the waiter's thread once event completed (status < 0: it failed).
  void watch(cl_event event, std::function<void(cl_int status)> done);

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace fedcld
