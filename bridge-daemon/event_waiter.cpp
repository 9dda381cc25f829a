#include "event_waiter.h"

#include <atomic>
#include <thread>
#include <vector>

namespace fedcld {

namespace {

using Item = std::pair<cl_event, std::function<void(cl_int)>>;

cl_int status_of(cl_event event) {
  cl_int status = CL_COMPLETE;
  clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  return status;
}

// Between two polls of events that are all still running, past the busy-poll time.
constexpr std::chrono::microseconds kPollSleep{20};

}  // namespace

struct EventWaiter::Shared {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Item> items;
  std::atomic<bool> has_items{false};  // read without the lock while polling
  bool stopping = false;

  // Spins for up to busy_poll for an item to come, then sleeps until one does or the waiter stops.
  // Called and returns with lock held; false: stopping and nothing left.
  bool wait_for_items(std::unique_lock<std::mutex> &lock, std::chrono::microseconds busy_poll) {
    if (items.empty() && !stopping && busy_poll.count() > 0) {
      lock.unlock();
      auto until = std::chrono::steady_clock::now() + busy_poll;
      while (!has_items.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
      lock.lock();
    }
    cv.wait(lock, [&] { return stopping || !items.empty(); });
    return !items.empty();
  }

  // Every pending event is polled: one waiting for the network does not hide the others behind
  // it, and no thread sits inside the driver waiting for an event that a user event set by fedcld's
  // loop releases (on NVIDIA that stalled collectives over 4 daemons for ever; in clWaitForEvents,
  // event by event, as this waiter did until then).
  void poll(std::chrono::microseconds busy_poll) {
    std::vector<Item> pending;
    auto progress = std::chrono::steady_clock::now();
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        if (pending.empty() && !wait_for_items(lock, busy_poll)) return;
        for (Item &item : items) pending.push_back(std::move(item));
        items.clear();
        has_items.store(false, std::memory_order_release);
      }
      bool progressed = false;
      for (size_t i = 0; i < pending.size();) {
        cl_int status = status_of(pending[i].first);
        if (status > CL_COMPLETE) {
          i++;
          continue;
        }
        Item done = std::move(pending[i]);
        pending.erase(pending.begin() + long(i));
        done.second(status);
        clReleaseEvent(done.first);  // after the hand-off: a release may cost the driver microseconds
        progressed = true;
      }
      auto now = std::chrono::steady_clock::now();
      if (progressed) progress = now;
      else if (now - progress < busy_poll) std::this_thread::yield();
      else std::this_thread::sleep_for(kPollSleep);
    }
  }
};

EventWaiter::EventWaiter(std::chrono::microseconds busy_poll) : shared_(std::make_shared<Shared>()) {
  std::thread([shared = shared_, busy_poll] { shared->poll(busy_poll); }).detach();
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
