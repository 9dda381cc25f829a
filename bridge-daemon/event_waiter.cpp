#include "event_waiter.h"

#include <thread>

namespace fedcld {

struct EventWaiter::Shared {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::pair<cl_event, std::function<void(cl_int)>>> items;
  bool stopping = false;
};

EventWaiter::EventWaiter() : shared_(std::make_shared<Shared>()) {
  std::thread([shared = shared_] {
    std::unique_lock<std::mutex> lock(shared->mutex);
    for (;;) {
      shared->cv.wait(lock, [&] { return shared->stopping || !shared->items.empty(); });
      if (shared->items.empty()) return;
      auto [event, done] = std::move(shared->items.front());
      shared->items.pop_front();
      lock.unlock();
      clWaitForEvents(1, &event);
      cl_int status = CL_COMPLETE;
      clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
      clReleaseEvent(event);
      done(status);
      lock.lock();
    }
  }).detach();
}

EventWaiter::~EventWaiter() {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->stopping = true;
  shared_->cv.notify_one();
}

void EventWaiter::watch(cl_event event, std::function<void(cl_int)> done) {
  clRetainEvent(event);
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->items.emplace_back(event, std::move(done));
  shared_->cv.notify_one();
}

}  // namespace fedcld
