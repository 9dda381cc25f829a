#include "event_reports.h"

#include <algorithm>

#include "runtime.h"

namespace fedcl {

namespace {

// The queue's list drops what no longer waits for a clFinish (events asked about, or let go of)
// whenever it has doubled since it last did, and a clFinish's failures for events not listed yet are
// kept for a while (the failed event's enqueue and a clFinish of another thread crossed).
constexpr size_t kFirstTrim = 256;
constexpr size_t kEarlyFailuresKept = 64;

// The event is tracked (Command::send) like any other: a report completes it, and so does the loss
// of its daemon, or the clFinish of its queue, whichever comes first.
void settle(_cl_event *event, cl_int status) {
  event->unreported.store(false, std::memory_order_release);
  Runtime::get().complete_tracked(event, status);
}

enum class Watch { answered, flushed, queued };

// Whether a watch was sent (or queued).
bool send_watch(_cl_event *event, Watch how) {
  if (!event->unreported.load(std::memory_order_acquire) || !event->unreported.exchange(false, std::memory_order_acq_rel))
    return false;
  Connection *connection = event->connection;
  RequestMessage request;
  auto watch = request.root.initWatchEvent();
  watch.setQueue(event->queue->id);
  watch.setEvent(event->id);
  if (how == Watch::answered) connection->call(request);
  else if (how == Watch::queued) connection->queue(request);
  else if (connection->post(request) == CL_SUCCESS) connection->flush();
  return true;
}

}  // namespace

void note_unreported(_cl_event *event) {
  cl_command_queue queue = event->queue;
  cl_int failed = CL_SUCCESS;
  std::vector<_cl_event *> dropped;
  {
    std::lock_guard<std::mutex> lock(queue->unreported_mutex);
    auto &early = queue->unreported_failures;
    auto known = std::find_if(early.begin(), early.end(), [&](const auto &entry) { return entry.first == event->id; });
    if (known != early.end()) {
      failed = known->second;
      early.erase(known);
    } else if (queue->refcount.load(std::memory_order_acquire) == 0) {
      // A command buffer's replay on a queue the application released: no clFinish will come, and
      // a list entry would hold the queue for ever. Reported when asked (ask_completion).
      event->unreported.store(true, std::memory_order_release);
    } else {
      hold(event);
      event->unreported.store(true, std::memory_order_release);
      auto &list = queue->unreported;
      list.push_back(event);
      if (list.size() >= queue->unreported_trim_at) {
        // Asked about, or let go of (forget_unreported): a clFinish has nothing to do for it.
        auto kept = std::stable_partition(list.begin(), list.end(), [](_cl_event *listed) {
          return listed->unreported.load(std::memory_order_acquire) && listed->refcount.load(std::memory_order_acquire) > 0;
        });
        dropped.assign(kept, list.end());
        list.erase(kept, list.end());
        queue->unreported_trim_at = std::max(kFirstTrim, 2 * list.size());
      }
    }
  }
  if (failed != CL_SUCCESS) Runtime::get().complete_tracked(event, failed);
  for (_cl_event *listed : dropped) unhold(listed);
}

void forget_unreported(_cl_event *event) {
  if (event->unreported.exchange(false, std::memory_order_acq_rel)) Runtime::get().untrack(event);
}

void drop_unreported(cl_command_queue queue) {
  for (_cl_event *event : take_unreported(queue)) unhold(event);
}

void ask_completion(_cl_event *event) { send_watch(event, Watch::flushed); }

bool queue_completion_ask(_cl_event *event) { return send_watch(event, Watch::queued); }

void ask_status(_cl_event *event) { send_watch(event, Watch::answered); }

std::vector<_cl_event *> take_unreported(cl_command_queue queue) {
  std::lock_guard<std::mutex> lock(queue->unreported_mutex);
  return std::exchange(queue->unreported, {});
}

void complete_unreported(cl_command_queue queue, std::vector<_cl_event *> &events, PendingReply &reply) {
  std::vector<std::pair<uint64_t, cl_int>> failed;
  if (reply.status == CL_SUCCESS && reply.reader && reply.reply().which() == wire::Reply::FINISHED)
    for (auto completion : reply.reply().getFinished()) failed.emplace_back(completion.getEvent(), completion.getStatus());
  // A clFinish that failed (its daemon lost) says nothing of its queue's commands but that.
  cl_int otherwise = reply.status == CL_SUCCESS ? CL_COMPLETE : reply.status < 0 ? reply.status : CL_OUT_OF_RESOURCES;
  auto take_failure = [&](uint64_t id) {
    auto it = std::find_if(failed.begin(), failed.end(), [&](const auto &entry) { return entry.first == id; });
    if (it == failed.end()) return CL_SUCCESS;
    cl_int status = it->second;
    failed.erase(it);
    return status;
  };
  for (_cl_event *event : events) {
    cl_int status = failed.empty() ? CL_SUCCESS : take_failure(event->id);
    settle(event, status != CL_SUCCESS ? status : otherwise);
    unhold(event);
  }
  events.clear();
  if (failed.empty()) return;
  // Failures of commands whose enqueue on another thread had not listed their event yet.
  std::vector<std::pair<_cl_event *, cl_int>> found;
  {
    std::lock_guard<std::mutex> lock(queue->unreported_mutex);
    auto &list = queue->unreported;
    for (auto it = list.begin(); it != list.end();) {
      cl_int status = failed.empty() ? CL_SUCCESS : take_failure((*it)->id);
      if (status == CL_SUCCESS) {
        ++it;
        continue;
      }
      found.emplace_back(*it, status);
      it = list.erase(it);
    }
    auto &early = queue->unreported_failures;
    early.insert(early.end(), failed.begin(), failed.end());
    if (early.size() > kEarlyFailuresKept) early.erase(early.begin(), early.end() - kEarlyFailuresKept);
  }
  for (auto &[event, status] : found) {
    settle(event, status);
    unhold(event);
  }
}

}  // namespace fedcl
