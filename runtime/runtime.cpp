#include "runtime.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "coherence.h"
#include "device.h"
#include "event_reports.h"
#include "hosts.h"
#include "spin_wait.h"

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
  static Runtime *runtime = [] {
    auto *created = new Runtime();
    std::atexit([] { get().say_goodbye(); });
    return created;
  }();
  return *runtime;
}

void Runtime::say_goodbye() {
  for (auto &connection : connections_) connection->say_goodbye();
}

const std::vector<cl_device_id> &Runtime::devices() {
  std::call_once(connected_, [this] { connect_all(); });
  return devices_;
}

void Runtime::connect_all() {
  HostList hosts = hosts_from_environment();
  const char *severity = hosts.credentials_broken ? "error" : "warning";
  for (const std::string &problem : hosts.problems) std::fprintf(stderr, "fedcl: %s: %s\n", severity, problem.c_str());
  for (const std::string &warning : hosts.warnings) std::fprintf(stderr, "fedcl: warning: %s\n", warning.c_str());
  if (hosts.credentials_broken) {
    std::fprintf(stderr, "fedcl: error: no daemon dialled (%zu listed): a key or TLS setting above cannot be used, and "
                         "fedcl never falls back to plain TCP or to another key\n", hosts.endpoints.size());
    return;
  }
  // All daemons at once, so that one slow or dead host costs one timeout, not one each. A daemon
  // that exports several backend platforms gets one session per platform: a context never mixes
  // backend platforms, so each session is a separate part of fedcl's contexts.
  std::vector<std::unique_ptr<Connection>> first;
  for (size_t i = 0; i < hosts.endpoints.size(); i++)
    first.push_back(std::make_unique<Connection>(0, hosts.endpoints[i], 0, this));
  std::vector<std::string> errors = open_all(first, hosts.credentials());
  for (size_t i = 0; i < first.size(); i++) {
    if (!errors[i].empty()) {
      std::fprintf(stderr, "fedcl: warning: skipping daemon %s: %s\n", hosts.endpoints[i].c_str(), errors[i].c_str());
      continue;
    }
    std::vector<std::unique_ptr<Connection>> more;
    for (uint32_t p = 1; p < first[i]->hello().getPlatformCount(); p++)
      more.push_back(std::make_unique<Connection>(0, hosts.endpoints[i], p, this));
    std::vector<std::string> more_errors = open_all(more, hosts.credentials());
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
                                           const Credentials &credentials) {
  std::vector<std::string> errors(connections.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < connections.size(); i++)
    threads.emplace_back([&, i] { errors[i] = open_session(connections[i], connect_timeout_ms(), credentials); });
  for (auto &thread : threads) thread.join();
  return errors;
}

void Runtime::track(_cl_event *event) {
  hold(event);
  std::lock_guard<std::mutex> lock(events_mutex_);
  events_.emplace(event->id, event);
}

void Runtime::untrack(_cl_event *event) {
  {
    std::lock_guard<std::mutex> lock(events_mutex_);
    auto it = events_.find(event->id);
    if (it == events_.end() || it->second != event) return;
    events_.erase(it);
  }
  unhold(event);
}

void Runtime::complete(_cl_event *event, cl_int status, const uint64_t *profiling) {
  std::vector<_cl_event::StatusCallback> due;
  _cl_event *fails_too;
  std::vector<Connection *> told;  // flushed once the lock is released
  {
    std::lock_guard<std::mutex> lock(event->mutex);
    if (event->status <= CL_COMPLETE) return;
    event->status = status;
    if (profiling) {
      for (int i = 0; i < 4; i++) event->profiling[i] = profiling[i];
      event->has_profiling = true;
    }
    due.swap(event->callbacks);
    // Commands on other daemons that wait for this event wait on a stand-in user event there. A
    // peer signals its stand-ins; failures are relayed from here as well, in case no signal can
    // come. Queued under the lock, so that a release cannot overtake the status (last_release);
    // sent after it.
    ConnectionMask proxies = status < 0 ? event->proxies : event->proxies & ~event->signalled;
    if (proxies) {
      for (const auto &part : event->context->parts)
        if (proxies & bit(part.connection)) {
          queue_event_status(part.connection, event->id, status);
          told.push_back(part.connection);
        }
    }
    // The application let go of the event before it completed: its stand-ins go now.
    if (event->refcount.load() == 0) event->release_proxies();
    fails_too = std::exchange(event->fails_too, nullptr);
    event->cv.notify_all();
  }
  for (Connection *connection : told) connection->flush();
  // A transfer whose sending side failed: its receiving side will get no bytes. A lost peer link
  // (the daemons lost each other, not this process) sends later data through this process.
  if (fails_too && status < 0) {
    Connection *receiver = fails_too->connection;
    set_remote_status(receiver, fails_too->id, status);
    complete_by_id(fails_too->id, status, nullptr);
    // Only where both daemons still answer this process: a daemon that dropped may be gone, and the
    // link with it is not what failed.
    bool both_answer = event->connection->alive() && receiver->alive() && !event->connection->dropped() && !receiver->dropped();
    if (status == CL_DEVICE_NOT_AVAILABLE && both_answer) unlink_peers(event->connection, receiver);
  }
  if (fails_too) release(fails_too);
  for (const auto &callback : due) {
    hold(event);
    if (callback.on_completing_thread) {
      callback.function(event, status < 0 ? status : callback.status, callback.user_data);
      unhold(event);
      continue;
    }
    defer([event, callback, status] {
      callback.function(event, status < 0 ? status : callback.status, callback.user_data);
      unhold(event);
    });
  }
}

void Runtime::set_remote_status(Connection *connection, uint64_t event_id, cl_int status) {
  queue_event_status(connection, event_id, status);
  connection->flush();
}

bool Runtime::peer_linked(Connection *a, Connection *b) {
  std::lock_guard<std::mutex> lock(links_mutex_);
  auto it = links_.find(std::minmax(a->index(), b->index()));
  return it != links_.end() && it->second;
}

void Runtime::unlink_peers(Connection *a, Connection *b) {
  {
    std::lock_guard<std::mutex> lock(links_mutex_);
    bool &linked = links_[std::minmax(a->index(), b->index())];
    if (!linked) return;
    linked = false;
  }
  std::fprintf(stderr, "fedcl: warning: the peer link between daemons %s and %s failed: data and events between them "
               "go through this process from now on\n", a->endpoint().c_str(), b->endpoint().c_str());
}

bool Runtime::peer_links_allowed() const {
  static const bool allowed = [] {
    const char *text = std::getenv("FEDCL_PEER_LINKS");
    return !text || std::string(text) != "0";
  }();
  return allowed;
}

cl_int wait_complete(_cl_event *event) {
  ask_completion(event);
  spin_then_wait(event->mutex, event->cv, [&] { return event->status.load(std::memory_order_acquire) <= CL_COMPLETE; });
  return event->status;
}

void Runtime::link_peers(const std::vector<Connection *> &connections) {
  const bool enabled = peer_links_allowed();
  struct Probe {
    Connection *from, *to;
    std::shared_ptr<PendingReply> reply;
  };
  std::vector<Probe> probes;
  {
    std::lock_guard<std::mutex> lock(links_mutex_);
    for (size_t i = 0; i < connections.size(); i++) {
      for (size_t j = i + 1; j < connections.size(); j++) {
        // A copy: std::minmax returns references, here to the temporaries index() returned.
        const std::pair<size_t, size_t> key = std::minmax(connections[i]->index(), connections[j]->index());
        if (links_.count(key)) continue;
        links_[key] = false;  // until the probe says otherwise
        if (enabled && connections[i]->alive() && connections[j]->alive()) probes.push_back({connections[i], connections[j], nullptr});
      }
    }
  }
  // All pairs at once: one peer timeout at worst, not one per pair.
  for (Probe &probe : probes) {
    RequestMessage request;
    fill_peer_ref(request.root.initPeerConnect(), *probe.to);
    probe.reply = probe.from->send_call(request);
  }
  for (Probe &probe : probes) {
    cl_int status = probe.from->wait(*probe.reply);
    if (status != CL_SUCCESS)
      std::fprintf(stderr, "fedcl: warning: daemons %s and %s have no peer link (%s): data and events between them go "
                   "through this process\n", probe.from->endpoint().c_str(), probe.to->endpoint().c_str(),
                   probe.reply->message.c_str());
    std::lock_guard<std::mutex> lock(links_mutex_);
    links_[std::minmax(probe.from->index(), probe.to->index())] = status == CL_SUCCESS;
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
    // A command refused because an event it waits for failed has that as its outcome, on its event,
    // as on a driver: not an error of the call that enqueued it, for a later call to report
    // (clFinish names no such error).
    if (status != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) connection.defer_error(error.getObject(), status);
    if (error.getEvent()) complete_by_id(error.getEvent(), status, nullptr);
    std::string message = "fedcl: daemon " + connection.endpoint() + ": " + error.getMessage().cStr();
    _cl_context *context = nullptr;
    {
      // Held under the lock: the application's last release may come meanwhile (it removes the
      // context under this lock before letting go of it).
      std::lock_guard<std::mutex> lock(contexts_mutex_);
      auto it = contexts_.find(error.getContext());
      if (it != contexts_.end()) hold(context = it->second);
    }
    if (context) {
      notify(context, message);
      unhold(context);
    }
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
      if (entry.second->part(&connection)) {
        hold(entry.second);  // as in on_notice
        affected.push_back(entry.second);
      }
  }
  for (_cl_context *context : affected) {
    notify(context, message);
    unhold(context);
  }
}

void Runtime::on_transfer_chunk(Connection &, uint64_t transfer, uint64_t offset, std::unique_ptr<uint8_t[]> bytes,
                                uint64_t size) {
  TransferSink sink;
  {
    std::lock_guard<std::mutex> lock(sinks_mutex_);
    auto it = sinks_.find(transfer);
    if (it == sinks_.end()) return;  // its command has failed or ended already
    sink = it->second;
  }
  sink(offset, std::move(bytes), size);
}

uint8_t *Runtime::landing_for(uint64_t transfer, uint64_t offset, uint64_t size) {
  std::lock_guard<std::mutex> lock(sinks_mutex_);
  auto it = landings_.find(transfer);
  if (it == landings_.end() || offset > it->second.second || size > it->second.second - offset) return nullptr;
  return it->second.first + offset;
}

void Runtime::add_landing(uint64_t transfer, uint8_t *base, uint64_t size) {
  std::lock_guard<std::mutex> lock(sinks_mutex_);
  landings_[transfer] = {base, size};
}

void Runtime::remove_landing(uint64_t transfer) {
  std::lock_guard<std::mutex> lock(sinks_mutex_);
  landings_.erase(transfer);
}

void Runtime::add_sink(uint64_t transfer, TransferSink sink) {
  std::lock_guard<std::mutex> lock(sinks_mutex_);
  sinks_[transfer] = std::move(sink);
}

void Runtime::remove_sink(uint64_t transfer) {
  std::lock_guard<std::mutex> lock(sinks_mutex_);
  sinks_.erase(transfer);
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
    {
      std::lock_guard<std::mutex> lock(context->notify_mutex);
      if (context->notify_closed) return unhold(context);
      context->notifying++;
    }
    context->notify(message.c_str(), nullptr, 0, context->notify_data);
    {
      std::lock_guard<std::mutex> lock(context->notify_mutex);
      context->notifying--;
    }
    context->notify_done.notify_all();
    unhold(context);
  });
}

void Runtime::close_notify(_cl_context *context) {
  std::unique_lock<std::mutex> lock(context->notify_mutex);
  context->notify_closed = true;
  // Released from inside a callback (on the callback thread): that call is the one under way.
  if (on_callback_thread()) return;
  context->notify_done.wait(lock, [&] { return context->notifying == 0; });
}

bool Runtime::on_callback_thread() {
  std::lock_guard<std::mutex> lock(callback_mutex_);
  return callback_thread_.joinable() && callback_thread_.get_id() == std::this_thread::get_id();
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
