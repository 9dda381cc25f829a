// Lifetimes: what each object tells the daemons when the application lets go of it, and what it
// lets go of itself when its memory goes. A daemon forgets a context, queue, program, kernel or
// sampler only when nothing in this process holds it any more (its memory goes), not at the
// application's last release: work fedcl accepted may still name it there (a command buffer's
// replays and remapped copies, an event's report, a stand-in's context).
#include <algorithm>
#include <unordered_set>
#include <cstdlib>

#include "context.h"
#include "device.h"
#include "event_reports.h"
#include "runtime.h"

namespace fedcl {

std::atomic<uint64_t> g_next_id{wire::FIRST_CLIENT_ID};
uint64_t new_object_id() { return g_next_id.fetch_add(1, std::memory_order_relaxed); }
uint64_t new_object_ids(uint64_t count) { return g_next_id.fetch_add(count, std::memory_order_relaxed); }

namespace {
std::mutex g_handles_mutex;
std::unordered_set<const void *> g_handles;
}  // namespace

void handle_register(const void *handle) {
  std::lock_guard<std::mutex> lock(g_handles_mutex);
  g_handles.insert(handle);
}

void handle_unregister(const void *handle) {
  std::lock_guard<std::mutex> lock(g_handles_mutex);
  g_handles.erase(handle);
}

bool handle_registered(const void *handle) {
  std::lock_guard<std::mutex> lock(g_handles_mutex);
  return g_handles.count(handle) != 0;
}

void post_release(Connection *connection, uint64_t id) {
  if (!connection->alive()) return;
  RequestMessage request;
  request.root.setRelease(id);
  connection->queue(request);  // under an event's lock too (release_proxies); its verdict is not waited for
}

namespace {
// Destructor callbacks run in reverse order of registration, as the specification requires.
template <typename Handle>
void run_destructor_callbacks(std::vector<Callback> &callbacks, Handle handle) {
  for (auto it = callbacks.rbegin(); it != callbacks.rend(); ++it) it->function(handle, it->user_data);
}
}  // namespace

}  // namespace fedcl

using namespace fedcl;

// Only sub-devices are ever released. Contexts hold their devices without counting as references
// (as in a local driver), so the daemon drops a sub-device once nothing of the application uses it.
void _cl_device_id::last_release() {}
_cl_device_id::~_cl_device_id() {
  post_release(connection, remote_id);
  unhold(parent);
}

void _cl_context::last_release() {
  Runtime::get().close_notify(this);
  Runtime::get().remove_context(this);
}

_cl_context::~_cl_context() {
  for (auto &part : parts) {
    if (part.transfer_queue) post_release(part.connection, part.transfer_queue);
    post_release(part.connection, id);
  }
  run_destructor_callbacks(destructor_callbacks, this);
  for (cl_device_id device : devices) unhold(device);
}

ContextPart *_cl_context::part(const Connection *connection) {
  for (auto &p : parts)
    if (p.connection == connection) return &p;
  return nullptr;
}

bool _cl_context::has_device(cl_device_id device) const {
  return std::find(devices.begin(), devices.end(), device) != devices.end();
}

uint64_t _cl_context::transfer_queue(ContextPart &p) {
  std::lock_guard<std::mutex> lock(mutex);
  if (p.transfer_queue == 0) {
    p.transfer_queue = new_object_id();
    // Out of order where the device allows it: a transfer waits for what it depends on (transfer_tail,
    // coherence.cpp) and nothing else. In order, a receive waiting for its bytes held up every
    // transfer after it on that daemon, among them the sends that other daemons' receives waited for:
    // two daemons exchanging buffers could each wait for the other for ever (tests/stress).
    cl_command_queue_properties properties = 0;
    for (cl_device_id device : devices)
      if (device->connection == p.connection && device->remote_id == p.device_ids.front())
        properties = device_scalar<cl_command_queue_properties>(device, CL_DEVICE_QUEUE_PROPERTIES) &
                     CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
    queue_create(p.connection, p.transfer_queue, this, p.device_ids.front(), properties);
  }
  return p.transfer_queue;
}

// Its events hold it: what holds them (the clFinish lists) lets go of them now, or it would never go.
void _cl_command_queue::last_release() {
  drop_unreported(this);
  std::vector<_cl_event *> pending;
  {
    std::lock_guard<std::mutex> lock(local_mutex);
    pending.swap(local_pending);
    local_count.store(0, std::memory_order_release);
  }
  for (_cl_event *event : pending) unhold(event);
}
_cl_command_queue::~_cl_command_queue() {
  post_release(connection, id);
  unhold(context);
}

void _cl_command_queue::add_local(_cl_event *event) {
  hold(event);
  std::lock_guard<std::mutex> lock(local_mutex);
  local_pending.push_back(event);
  local_count.store(local_pending.size(), std::memory_order_release);
}

std::vector<_cl_event *> _cl_command_queue::pending_local() {
  std::vector<_cl_event *> pending;
  if (local_count.load(std::memory_order_acquire) == 0) return pending;  // the usual case: no file saves
  std::lock_guard<std::mutex> lock(local_mutex);
  for (auto it = local_pending.begin(); it != local_pending.end();) {
    _cl_event *event = *it;
    bool done;
    {
      std::lock_guard<std::mutex> event_lock(event->mutex);
      done = event->status <= CL_COMPLETE;
    }
    if (done) {
      unhold(event);
      it = local_pending.erase(it);
      continue;
    }
    hold(event);
    pending.push_back(event);
    ++it;
  }
  local_count.store(local_pending.size(), std::memory_order_release);
  return pending;
}

void _cl_mem::last_release() {
  for (auto &part : context->parts)
    if (present & bit(part.connection)) post_release(part.connection, id);
}

_cl_mem::_cl_mem() : Object(kMagic) { handle_register(this); }

_cl_mem::~_cl_mem() {
  handle_unregister(this);
  run_destructor_callbacks(destructor_callbacks, this);
  for (auto &entry : writers)
    for (const Writer &writer : entry.second) release(writer.event);
  for (auto &entry : arrivals) release(entry.second);
  for (auto &entry : transfer_tails) release(entry.second);
  std::free(mirror);
  if (parent) unhold(parent);
  unhold(context);
}

void _cl_program::last_release() {}
_cl_program::~_cl_program() {
  for (auto &part : context->parts) post_release(part.connection, id);
  unhold(context);
}

const KernelDesc *_cl_program::kernel(const std::string &name) const {
  for (const auto &k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

bool _cl_program::built() const {
  for (const auto &entry : builds)
    if (entry.second.status == CL_BUILD_SUCCESS && entry.second.binary_type == CL_PROGRAM_BINARY_TYPE_EXECUTABLE)
      return true;
  return false;
}

void _cl_kernel::last_release() { program->attached_kernels--; }
_cl_kernel::~_cl_kernel() {
  for (auto &part : program->context->parts)
    if (present & bit(part.connection)) post_release(part.connection, id);
  unhold(program);
}

void _cl_event::last_release() {
  forget_unreported(this);
  if (connection) post_release(connection, id);
  // A stand-in still waiting for its status is released once it has it (Runtime::complete).
  std::lock_guard<std::mutex> lock(mutex);
  if (status <= CL_COMPLETE) release_proxies();
}

void _cl_event::release_proxies() {
  for (auto &part : context->parts)
    if (proxies & bit(part.connection)) post_release(part.connection, id);
}

void _cl_sampler::last_release() {}
_cl_sampler::_cl_sampler() : Object(kMagic) { handle_register(this); }

// Samplers exist on every daemon of their context.
_cl_sampler::~_cl_sampler() {
  for (auto &part : context->parts) post_release(part.connection, id);
  handle_unregister(this);
  unhold(context);
}

_cl_event::~_cl_event() {
  if (fails_too) release(fails_too);  // never completed: nothing will be relayed
  if (queue) unhold(queue);
  unhold(context);
}
