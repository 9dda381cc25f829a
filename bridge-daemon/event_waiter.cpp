#include "event_waiter.h"

#include <atomic>
#include <thread>

namespace fedcld {

struct EventWaiter::Shared {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::pair<cl_event, std::function<void(cl_int)>>> items;
  std::atomic<bool> has_items{false};  // read without the lock while polling
  bool stopping = false;
};

EventWaiter::EventWaiter(std::chrono::microseconds busy_poll) : shared_(std::make_shared<Shared>()) {
  std::thread([shared = shared_, busy_poll] {
    std::unique_lock<std::mutex> lock(shared->mutex);
    for (;;) {
      if (shared->items.empty() && !shared->stopping && busy_poll.count() > 0) {
        lock.unlock();
        auto until = std::chrono::steady_clock::now() + busy_poll;
        while (!shared->has_items.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until)
          std::this_thread::yield();
        lock.lock();
      }
      shared->cv.wait(lock, [&] { return shared->stopping || !shared->items.empty(); });
      if (shared->items.empty()) return;
      auto [event, done] = std::move(shared->items.front());
      shared->items.pop_front();
      shared->has_items.store(!shared->items.empty(), std::memory_order_release);
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
  shared_->has_items.store(true, std::memory_order_release);
  shared_->cv.notify_one();
}

}  // namespace fedcld
