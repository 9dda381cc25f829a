#include "runtime.h"

#include <cstdio>
#include <cstdlib>

#include "device.h"
#include "hosts.h"

namespace fedcl {

namespace {
int connect_timeout_ms() {
  const char *text = std::getenv("FEDCL_CONNECT_TIMEOUT_MS");
  long ms = text ? std::strtol(text, nullptr, 10) : 0;
  return ms > 0 ? static_cast<int>(ms) : 2000;
}
}  // namespace

Runtime &Runtime::get() {
  // Never destroyed: application threads may still call in while the process exits.
  static Runtime *runtime = new Runtime();
  return *runtime;
}

const std::vector<cl_device_id> &Runtime::devices() {
  std::call_once(connected_, [this] { connect_all(); });
  return devices_;
}

void Runtime::connect_all() {
  HostList hosts = hosts_from_environment();
  for (const std::string &problem : hosts.problems) std::fprintf(stderr, "fedcl: warning: %s\n", problem.c_str());
  // All daemons at once, so that one slow or dead host costs one timeout, not one each. A daemon
  // that exports several backend platforms gets one session per platform: a context never mixes
  // backend platforms, so each session is a separate part of fedcl's contexts.
  std::vector<std::unique_ptr<Connection>> first;
  for (size_t i = 0; i < hosts.endpoints.size(); i++)
    first.push_back(std::make_unique<Connection>(0, hosts.endpoints[i], 0, this));
  std::vector<std::string> errors = open_all(first, hosts.key);
  for (size_t i = 0; i < first.size(); i++) {
    if (!errors[i].empty()) {
      std::fprintf(stderr, "fedcl: warning: skipping daemon %s: %s\n", hosts.endpoints[i].c_str(), errors[i].c_str());
      continue;
    }
    std::vector<std::unique_ptr<Connection>> more;
    for (uint32_t p = 1; p < first[i]->hello().getPlatformCount(); p++)
      more.push_back(std::make_unique<Connection>(0, hosts.endpoints[i], p, this));
    std::vector<std::string> more_errors = open_all(more, hosts.key);
    connections_.push_back(std::move(first[i]));
    for (size_t m = 0; m < more.size(); m++) {
      if (more_errors[m].empty()) connections_.push_back(std::move(more[m]));
      else std::fprintf(stderr, "fedcl: warning: skipping a platform of daemon %s: %s\n", hosts.endpoints[i].c_str(),
                        more_errors[m].c_str());
    }
  }
  if (connections_.size() > 64) {
    std::fprintf(stderr, "fedcl: warning: %zu daemon sessions; using the first 64\n", connections_.size());
    connections_.resize(64);
  }
  for (size_t i = 0; i < connections_.size(); i++) {
    connections_[i]->set_index(i);
    devices_from_hello(*connections_[i], &devices_);
  }
}

std::vector<std::string> Runtime::open_all(std::vector<std::unique_ptr<Connection>> &connections,
                                           const std::string &key) {
  std::vector<std::string> errors(connections.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < connections.size(); i++)
    threads.emplace_back([&, i] { errors[i] = connections[i]->open(connect_timeout_ms(), key); });
  for (auto &thread : threads) thread.join();
  return errors;
}

void Runtime::track(_cl_event *event) {
  hold(event);
  std::lock_guard<std::mutex> lock(events_mutex_);
  events_.emplace(event->id, event);
}

void Runtime::complete(_cl_event *event, cl_int status, const uint64_t *profiling) {
  std::vector<_cl_event::StatusCallback> due;
  ConnectionMask proxies;
  {
    std::lock_guard<std::mutex> lock(event->mutex);
    if (event->status <= CL_COMPLETE) return;
    event->status = status;
    if (profiling) {
      for (int i = 0; i < 4; i++) event->profiling[i] = profiling[i];
      event->has_profiling = true;
    }
    due.swap(event->callbacks);
    proxies = event->proxies;
    event->cv.notify_all();
  }
  // Commands on other daemons that wait for this event wait on a stand-in user event there.
  if (proxies) {
    for (const auto &part : event->context->parts) {
      if (!(proxies & bit(part.connection))) continue;
      RequestMessage request;
      auto set = request.root.initSetUserEventStatus();
      set.setEvent(event->id);
      set.setStatus(status);
      part.connection->post(request);
      part.connection->flush();
    }
  }
  for (const auto &callback : due) {
    hold(event);
    defer([event, callback, status] {
      callback.function(event, status < 0 ? status : callback.status, callback.user_data);
      unhold(event);
    });
  }
}

void Runtime::complete_by_id(uint64_t id, cl_int status, const uint64_t *profiling) {
  _cl_event *event = nullptr;
  {
    std::lock_guard<std::mutex> lock(events_mutex_);
    auto it = events_.find(id);
    if (it == events_.end()) return;
    event = it->second;
    events_.erase(it);
  }
  complete(event, status, profiling);
  unhold(event);
}

void Runtime::on_notice(Connection &connection, wire::Notice::Reader notice) {
  for (auto completion : notice.getCompletions()) {
    uint64_t times[4];
    auto list = completion.getProfiling();
    for (unsigned i = 0; i < 4 && i < list.size(); i++) times[i] = list[i];
    complete_by_id(completion.getEvent(), completion.getStatus(), list.size() == 4 ? times : nullptr);
  }
  for (auto error : notice.getErrors()) {
    cl_int status = error.getStatus() < 0 ? error.getStatus() : CL_OUT_OF_RESOURCES;
    connection.defer_error(error.getObject(), status);
    if (error.getEvent()) complete_by_id(error.getEvent(), status, nullptr);
    std::string message = "fedcl: daemon " + connection.endpoint() + ": " + error.getMessage().cStr();
    _cl_context *context = nullptr;
    {
      std::lock_guard<std::mutex> lock(contexts_mutex_);
      auto it = contexts_.find(error.getContext());
      if (it != contexts_.end()) context = it->second;
    }
    if (context) notify(context, message);
    if (std::getenv("FEDCL_DEBUG")) std::fprintf(stderr, "%s\n", message.c_str());
  }
}

void Runtime::on_read_done(Connection &, wire::Completion::Reader completion) {
  uint64_t times[4];
  auto list = completion.getProfiling();
  for (unsigned i = 0; i < 4 && i < list.size(); i++) times[i] = list[i];
  complete_by_id(completion.getEvent(), completion.getStatus(), list.size() == 4 ? times : nullptr);
}

void Runtime::on_lost(Connection &connection, const std::string &reason) {
  std::string message = "fedcl: lost daemon " + connection.endpoint() + ": " + reason;
  std::fprintf(stderr, "%s\n", message.c_str());
  std::vector<uint64_t> failed;
  {
    std::lock_guard<std::mutex> lock(events_mutex_);
    for (const auto &entry : events_)
      if (entry.second->connection == &connection) failed.push_back(entry.first);
  }
  for (uint64_t id : failed) complete_by_id(id, CL_DEVICE_NOT_AVAILABLE, nullptr);
  std::vector<_cl_context *> affected;
  {
    std::lock_guard<std::mutex> lock(contexts_mutex_);
    for (const auto &entry : contexts_)
      if (entry.second->part(&connection)) affected.push_back(entry.second);
  }
  for (_cl_context *context : affected) notify(context, message);
}

void Runtime::add_context(_cl_context *context) {
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  contexts_.emplace(context->id, context);
}

void Runtime::remove_context(_cl_context *context) {
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  contexts_.erase(context->id);
}

void Runtime::notify(_cl_context *context, const std::string &message) {
  if (!context->notify) return;
  hold(context);
  defer([context, message] {
    context->notify(message.c_str(), nullptr, 0, context->notify_data);
    unhold(context);
  });
}

void Runtime::defer(std::function<void()> function) {
  std::lock_guard<std::mutex> lock(callback_mutex_);
  if (!callback_thread_.joinable()) callback_thread_ = std::thread([this] { callback_main(); });
  callback_queue_.push_back(std::move(function));
  callback_cv_.notify_one();
}

void Runtime::callback_main() {
  std::unique_lock<std::mutex> lock(callback_mutex_);
  for (;;) {
    callback_cv_.wait(lock, [&] { return !callback_queue_.empty(); });
    std::vector<std::function<void()>> batch;
    batch.swap(callback_queue_);
    lock.unlock();
    for (auto &function : batch) function();
    lock.lock();
  }
}

}  // namespace fedcl
