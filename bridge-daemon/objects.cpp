#include "objects.h"

#include <CL/cl_ext.h>

#include <algorithm>

#include "fedcl.capnp.h"

namespace fedcld {

namespace {

cl_int invalid_status(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::device: return CL_INVALID_DEVICE;
    case ObjectKind::context: return CL_INVALID_CONTEXT;
    case ObjectKind::queue: return CL_INVALID_COMMAND_QUEUE;
    case ObjectKind::mem: return CL_INVALID_MEM_OBJECT;
    case ObjectKind::program: return CL_INVALID_PROGRAM;
    case ObjectKind::kernel: return CL_INVALID_KERNEL;
    case ObjectKind::event: return CL_INVALID_EVENT;
    case ObjectKind::sampler: return CL_INVALID_SAMPLER;
    case ObjectKind::command_buffer: return CL_INVALID_COMMAND_BUFFER_KHR;
  }
  return CL_INVALID_VALUE;
}

void release_handle(ObjectKind kind, void *handle) {
  switch (kind) {
    case ObjectKind::device: clReleaseDevice(static_cast<cl_device_id>(handle)); break;  // no-op for root devices
    case ObjectKind::context: clReleaseContext(static_cast<cl_context>(handle)); break;
    case ObjectKind::queue: clReleaseCommandQueue(static_cast<cl_command_queue>(handle)); break;
    case ObjectKind::mem: clReleaseMemObject(static_cast<cl_mem>(handle)); break;
    case ObjectKind::program: clReleaseProgram(static_cast<cl_program>(handle)); break;
    case ObjectKind::kernel: clReleaseKernel(static_cast<cl_kernel>(handle)); break;
    case ObjectKind::event: clReleaseEvent(static_cast<cl_event>(handle)); break;
    case ObjectKind::sampler: clReleaseSampler(static_cast<cl_sampler>(handle)); break;
    case ObjectKind::command_buffer: destroy_command_buffer(static_cast<CommandBuffer *>(handle)); break;
  }
}

}  // namespace

void fail_unset_user_event(cl_event event) {
  cl_command_type type = 0;
  cl_int status = CL_COMPLETE;
  if (clGetEventInfo(event, CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr) == CL_SUCCESS && type == CL_COMMAND_USER &&
      clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) == CL_SUCCESS &&
      status > CL_COMPLETE) {
    bool backend_failed = false;  // the session ends: no watch is left to sweep
    failures_set_user_event(event, CL_OUT_OF_RESOURCES, &backend_failed);
  }
}

const char *object_kind_name(ObjectKind kind) {
  static const char *const names[] = {"device", "context", "queue", "memory object",
                                      "program", "kernel", "event", "sampler", "command buffer"};
  return names[static_cast<int>(kind)];
}

bool ObjectTable::can_add(uint64_t id) const { return id >= fedcl::wire::FIRST_CLIENT_ID && !contains(id); }

void ObjectTable::add(uint64_t id, ObjectKind kind, void *handle, cl_context context) {
  if (!can_add(id)) {
    release_handle(kind, handle);
    throw RequestError{CL_INVALID_VALUE, "object id " + std::to_string(id) + " is reserved or already in use"};
  }
  Object object{kind, handle, nullptr, context};
  if (kind == ObjectKind::queue) object.queue = std::make_unique<QueueState>();
  objects_.emplace(id, std::move(object));
  publish();
}

void ObjectTable::add_sub_buffer(uint64_t id, cl_mem handle, cl_mem parent, cl_context context) {
  add(id, ObjectKind::mem, handle, context);
  if (!sub_buffer_order_) return;
  objects_.at(id).parent = parent;
  sub_buffer_order_->created(parent, handle);
}

void ObjectTable::release_object(Object &object) {
  if (object.parent) sub_buffer_order_->release(object.parent, static_cast<cl_mem>(object.handle));
  else release_handle(object.kind, object.handle);
}

uint64_t ObjectTable::context_id(cl_context context) const {
  for (const auto &entry : objects_)
    if (entry.second.kind == ObjectKind::context && entry.second.handle == context) return entry.first;
  return 0;
}

void ObjectTable::add_device(uint64_t id, cl_device_id device) {
  objects_.emplace(id, Object{ObjectKind::device, device, nullptr, nullptr});
}

Object &ObjectTable::get(uint64_t id, ObjectKind kind) {
  auto it = objects_.find(id);
  if (it == objects_.end() || it->second.kind != kind)
    throw RequestError{invalid_status(kind),
                       std::string("no ") + object_kind_name(kind) + " with id " + std::to_string(id)};
  return it->second;
}

void ObjectTable::charge(uint64_t bytes) {
  if (memory_limit_ && bytes > memory_limit_ - std::min(memory_limit_, memory_used_))
    throw RequestError{CL_MEM_OBJECT_ALLOCATION_FAILURE,
                       "the session's memory limit of " + std::to_string(memory_limit_) + " bytes is reached"};
}

void ObjectTable::attach_bytes(uint64_t id, uint64_t bytes) {
  auto it = objects_.find(id);
  if (it == objects_.end()) return;
  it->second.bytes = bytes;
  memory_used_ += bytes;
  publish();
}

void ObjectTable::release(uint64_t id) {
  // Releasing an id the session never got (its creation failed and was reported) is harmless, and
  // the root devices Hello announced stay for the whole session.
  auto it = objects_.find(id);
  if (it == objects_.end() || id < fedcl::wire::FIRST_CLIENT_ID) return;
  if (it->second.queue) it->second.queue->unreported.keep_unsettled(*this);
  release_object(it->second);
  memory_used_ -= it->second.bytes;
  objects_.erase(it);
  publish();
}

void ObjectTable::abandon_all() {
  objects_.clear();
  if (sub_buffer_order_) sub_buffer_order_->forget();
  failed_events_.clear();
  memory_used_ = 0;
  publish();
}

void ObjectTable::release_all() {
  // Children before parents, so that no backend sees a parent released while a child still runs;
  // sub-buffers before the other memory objects.
  static const ObjectKind order[] = {ObjectKind::command_buffer, ObjectKind::event, ObjectKind::kernel, ObjectKind::program,
                                     ObjectKind::sampler, ObjectKind::mem, ObjectKind::queue,
                                     ObjectKind::context, ObjectKind::device};
  auto release_where = [this](auto wanted) {
    for (auto it = objects_.begin(); it != objects_.end();) {
      if (!wanted(it->second)) {
        ++it;
        continue;
      }
      if (it->second.kind == ObjectKind::event) fail_unset_user_event(static_cast<cl_event>(it->second.handle));
      release_object(it->second);
      it = objects_.erase(it);
    }
  };
  for (ObjectKind kind : order) {
    if (kind == ObjectKind::mem) release_where([](const Object &object) { return object.parent != nullptr; });
    release_where([kind](const Object &object) { return object.kind == kind; });
  }
  objects_.clear();
  for (cl_event event : failed_events_) clReleaseEvent(event);
  failed_events_.clear();
  memory_used_ = 0;
  publish();
}

}  // namespace fedcld
