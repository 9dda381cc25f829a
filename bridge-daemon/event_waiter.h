// Learns that backend events completed on a thread of its own. Some backends deliver event callbacks
// late (NVIDIA's take up to ~20 ms for a transfer that clWaitForEvents sees finish in 0.2 ms); for
// those, fedcld watches each queue's commands with a waiter as well as with a callback, and
// whichever learns first reports. An in-order queue's waiter waits for its events one after the
// other; another waiter polls every pending event, since there one may wait long (a transfer's
// chunk waiting for the network) while later ones complete: waiting in line, those were learned
// only from NVIDIA's late callbacks (collectives over 4 daemons on an H100 took 3-10 ms for 4 KiB).
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
  // After each wait it polls for the next event for up to busy_poll before it sleeps (server.h).
  // in_order: the events complete in the order they are watched.
  EventWaiter(std::chrono::microseconds busy_poll, bool in_order);
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
