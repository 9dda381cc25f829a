#include "command.h"

#include "image.h"
#include "runtime.h"

namespace fedcl {

_cl_event *event_create(cl_context context, cl_command_queue queue, cl_command_type type, cl_int status) {
  auto *event = new _cl_event();
  event->context = context;
  event->queue = queue;
  event->connection = queue ? queue->connection : nullptr;
  event->command_type = type;
  event->status = status;
  hold(context);
  if (queue) hold(queue);
  return event;
}

cl_mem_flags backend_flags(cl_mem mem) {
  cl_mem_flags kept = ~cl_mem_flags(CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR | CL_MEM_HOST_WRITE_ONLY |
                                    CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS);
  if (mem->parent) kept &= ~cl_mem_flags(CL_MEM_ALLOC_HOST_PTR);
  return mem->flags & kept;
}

cl_int check_wait_list(cl_context context, cl_uint num_events, const cl_event *wait_list) {
  if ((num_events == 0) != (wait_list == nullptr)) return CL_INVALID_EVENT_WAIT_LIST;
  for (cl_uint i = 0; i < num_events; i++) {
    _cl_event *event = as<_cl_event>(wait_list[i]);
    if (!event) return CL_INVALID_EVENT_WAIT_LIST;
    if (context && event->context != context) return CL_INVALID_CONTEXT;
  }
  return CL_SUCCESS;
}

bool wait_list_failed(cl_uint num_events, const cl_event *wait_list) {
  for (cl_uint i = 0; i < num_events; i++) {
    std::lock_guard<std::mutex> lock(wait_list[i]->mutex);
    if (wait_list[i]->status < 0) return true;
  }
  return false;
}

Command::~Command() {
  // A command that failed before it was sent leaves no event behind.
  if (event_ && !sent_) release(event_);
}

cl_int Command::begin(cl_uint num_events, const cl_event *wait_list, cl_event *event_out, bool internal) {
  cl_int err = check_wait_list(queue_->context, num_events, wait_list);
  if (err != CL_SUCCESS) return err;
  Connection *here = queue_->connection;
  if (!here->alive()) return CL_DEVICE_NOT_AVAILABLE;
  for (cl_uint i = 0; i < num_events; i++) {
    _cl_event *event = static_cast<_cl_event *>(wait_list[i]);
    if (event->connection == here) {
      wait_ids_.push_back(event->id);
      continue;
    }
    // An event of another daemon, or a user event: this daemon waits on a stand-in user event
    // that the runtime completes when the real one does.
    std::lock_guard<std::mutex> lock(event->mutex);
    if (event->status == CL_COMPLETE) continue;
    if (!(event->proxies & bit(here))) {
      event->proxies |= bit(here);
      RequestMessage request;
      auto create = request.root.initCreateUserEvent();
      create.setId(event->id);
      create.setContext(queue_->context->id);
      here->post(request);
      if (event->status < 0) {
        RequestMessage fail;
        auto set = fail.root.initSetUserEventStatus();
        set.setEvent(event->id);
        set.setStatus(event->status);
        here->post(fail);
      }
    }
    wait_ids_.push_back(event->id);
  }
  if (event_out || internal || sync_mode()) event_ = event_create(queue_->context, queue_, type_, CL_QUEUED);
  event_out_ = event_out;
  return CL_SUCCESS;
}

void Command::fill(wire::Command::Builder command) const {
  command.setQueue(queue_->id);
  command.setEvent(event_ ? event_->id : 0);
  if (!wait_ids_.empty()) {
    auto list = command.initWaitFor(wait_ids_.size());
    for (size_t i = 0; i < wait_ids_.size(); i++) list.set(i, wait_ids_[i]);
  }
}

cl_int Command::send(RequestMessage &request, const void *payload, uint64_t payload_bytes) {
  // Tracked before the request leaves, so that its completion cannot arrive first.
  if (event_) Runtime::get().track(event_);
  cl_int err = queue_->connection->post(request, payload, payload_bytes);
  // A failure the call returns (a lost daemon; any failure in FEDCL_SYNC mode) comes in no notice.
  if (err != CL_SUCCESS && event_) Runtime::get().fail_tracked(event_, err < 0 ? err : CL_OUT_OF_RESOURCES);
  if (err != CL_SUCCESS && !sync_mode()) return err;
  sent_ = true;
  if (event_out_) *event_out_ = event_;
  else if (event_) release(event_);
  return err;
}

std::shared_ptr<PendingReply> Command::send_call(RequestMessage &request, void *read_dest, uint64_t read_size,
                                                 std::function<void()> landed) {
  if (event_) Runtime::get().track(event_);
  auto pending = queue_->connection->send_call(request, nullptr, 0, read_dest, read_size, std::move(landed));
  sent_ = true;
  if (event_out_) {
    *event_out_ = event_;
  } else if (event_) {
    hold(event_);  // wait() may still look at it
    release(event_);
  }
  return pending;
}

cl_int Command::wait() {
  if (!event_) return CL_SUCCESS;
  std::unique_lock<std::mutex> lock(event_->mutex);
  event_->cv.wait(lock, [&] { return event_->status <= CL_COMPLETE; });
  return event_->status < 0 ? CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST : CL_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// Buffers across daemons

namespace {

void post_create(cl_mem mem, Connection *connection) {
  RequestMessage request;
  if (mem->is_image()) {
    image_fill_create(request.root.initCreateImage(), mem);
  } else if (mem->parent) {
    auto create = request.root.initCreateSubBuffer();
    create.setId(mem->id);
    create.setParent(mem->parent->id);
    create.setFlags(backend_flags(mem));
    create.setOrigin(mem->origin);
    create.setSize(mem->size);
  } else {
    auto create = request.root.initCreateBuffer();
    create.setId(mem->id);
    create.setContext(mem->context->id);
    create.setFlags(backend_flags(mem));
    create.setSize(mem->size);
  }
  connection->post(request);
  mem->present |= bit(connection);
}

// The request that reads (write false) or writes all of root, and the bytes that travel with it.
std::pair<wire::Command::Builder, size_t> whole_transfer(wire::Request::Builder request, cl_mem root, bool write) {
  if (root->is_image()) return image_whole_transfer(request, root, write);
  if (write) {
    auto w = request.initWriteBuffer();
    w.setBuffer(root->id);
    w.setSize(root->size);
    return {w.getCommand(), root->size};
  }
  auto r = request.initReadBuffer();
  r.setBuffer(root->id);
  r.setSize(root->size);
  return {r.getCommand(), root->size};
}

// Brings root's contents from a daemon that has them to connection, through this process.
cl_int migrate(cl_mem root, Connection *to) {
  cl_context context = root->context;
  ContextPart *source = nullptr;
  for (auto &part : context->parts)
    if (root->valid & bit(part.connection)) source = &part;
  ContextPart *target = context->part(to);
  if (!source || !target) return CL_SUCCESS;
  RequestMessage read;
  auto [r, bytes] = whole_transfer(read.root, root, false);
  std::vector<uint8_t> staging(bytes);
  r.setQueue(context->transfer_queue(*source));
  if (root->last_writer && root->last_writer->connection == source->connection)
    r.initWaitFor(1).set(0, root->last_writer->id);
  auto pending = source->connection->send_call(read, nullptr, 0, staging.data(), staging.size());
  cl_int err = source->connection->wait(*pending);
  if (err != CL_SUCCESS) return err;

  RequestMessage write;
  uint64_t queue = context->transfer_queue(*target);
  whole_transfer(write.root, root, true).first.setQueue(queue);
  to->post(write, staging.data(), staging.size());
  // The command about to use the buffer runs on another queue: let the copy land first.
  RequestMessage finish;
  finish.root.setFinish(queue);
  return to->wait(*to->send_call(finish));
}

}  // namespace

cl_int mem_prepare(cl_mem mem, Connection *connection, bool overwrites_all) {
  cl_mem root = mem->parent ? mem->parent : mem;
  std::lock_guard<std::mutex> lock(root->mutex);
  ConnectionMask here = bit(connection);
  if (!(root->present & here)) post_create(root, connection);
  if (mem != root && !(mem->present & here)) post_create(mem, connection);
  if (root->valid & here) return CL_SUCCESS;
  if (root->valid != 0 && !overwrites_all) {
    cl_int err = migrate(root, connection);
    if (err != CL_SUCCESS) return err;
  }
  root->valid |= here;
  return CL_SUCCESS;
}

void mem_written(cl_mem mem, Connection *connection, cl_event event) {
  cl_mem root = mem->parent ? mem->parent : mem;
  if (root->context->parts.size() < 2) return;  // one daemon: always current
  std::lock_guard<std::mutex> lock(root->mutex);
  root->valid = bit(connection);
  if (event) retain(event);
  if (root->last_writer) release(root->last_writer);
  root->last_writer = event;
}

}  // namespace fedcl
