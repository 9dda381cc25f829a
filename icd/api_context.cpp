// Contexts and command queues.
#include <algorithm>

#include "api.h"
#include "context.h"
#include "device.h"
#include "info.h"
#include "wait_hook.h"

using namespace fedcl;

namespace {

cl_int check_context_properties(const cl_context_properties *properties) {
  bool seen_platform = false, seen_sync = false;
  for (const cl_context_properties *p = properties; p && *p; p += 2) {
    switch (p[0]) {
      case CL_CONTEXT_PLATFORM:
        if (seen_platform) return CL_INVALID_PROPERTY;
        seen_platform = true;
        if (!as<_cl_platform_id>(reinterpret_cast<void *>(p[1]))) return CL_INVALID_PLATFORM;
        break;
      case CL_CONTEXT_INTEROP_USER_SYNC:
        if (seen_sync) return CL_INVALID_PROPERTY;
        seen_sync = true;
        break;
      default: return CL_INVALID_PROPERTY;
    }
  }
  return CL_SUCCESS;
}

cl_context create_context(const cl_context_properties *properties, std::vector<cl_device_id> devices,
                          ContextNotify notify, void *user_data, cl_int *errcode_ret) {
  auto *context = new _cl_context();
  context->devices = std::move(devices);
  for (cl_device_id device : context->devices) hold(device);  // sub-devices outlive their contexts
  context->notify = notify;
  context->notify_data = user_data;
  for (const cl_context_properties *p = properties; p && *p; p += 2) {
    context->properties.push_back(p[0]);
    context->properties.push_back(p[1]);
  }
  if (properties) context->properties.push_back(0);
  for (cl_device_id device : context->devices) {
    ContextPart *part = context->part(device->connection);
    if (!part) {
      context->parts.push_back({device->connection, {}});
      part = &context->parts.back();
    }
    part->device_ids.push_back(device->remote_id);
  }
  Runtime::get().add_context(context);
  cl_int err = context_create(context);
  if (err != CL_SUCCESS) return finish_create(context, err, errcode_ret);
  if (context->parts.size() > 1) {
    std::vector<Connection *> connections;
    for (const ContextPart &part : context->parts) connections.push_back(part.connection);
    Runtime::get().link_peers(connections);
  }
  set_error(errcode_ret, CL_SUCCESS);
  return context;
}

}  // namespace

cl_context fedcl::api::clCreateContext(const cl_context_properties *properties, cl_uint num_devices,
                                       const cl_device_id *devices, ContextNotify notify, void *user_data,
                                       cl_int *errcode_ret) {
  if (!devices || num_devices == 0 || (!notify && user_data)) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  cl_int err = check_context_properties(properties);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  std::vector<cl_device_id> list;
  for (cl_uint i = 0; i < num_devices; i++) {
    if (!as<_cl_device_id>(devices[i])) return set_error(errcode_ret, CL_INVALID_DEVICE), nullptr;
    if (!devices[i]->connection->alive()) return set_error(errcode_ret, CL_DEVICE_NOT_AVAILABLE), nullptr;
    if (std::find(list.begin(), list.end(), devices[i]) == list.end()) list.push_back(devices[i]);
  }
  return create_context(properties, std::move(list), notify, user_data, errcode_ret);
}

cl_context fedcl::api::clCreateContextFromType(const cl_context_properties *properties, cl_device_type type,
                                               ContextNotify notify, void *user_data, cl_int *errcode_ret) {
  if (!notify && user_data) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  cl_int err = check_context_properties(properties);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  cl_uint count = 0;
  err = api::clGetDeviceIDs(nullptr, type, 0, nullptr, &count);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  std::vector<cl_device_id> devices(count);
  api::clGetDeviceIDs(nullptr, type, count, devices.data(), nullptr);
  devices.erase(std::remove_if(devices.begin(), devices.end(), [](cl_device_id d) { return !d->connection->alive(); }),
                devices.end());
  if (devices.empty()) return set_error(errcode_ret, CL_DEVICE_NOT_AVAILABLE), nullptr;
  return create_context(properties, std::move(devices), notify, user_data, errcode_ret);
}

cl_int fedcl::api::clGetContextInfo(cl_context context, cl_context_info param, size_t size, void *value,
                                    size_t *size_ret) {
  if (!as<_cl_context>(context)) return CL_INVALID_CONTEXT;
  switch (param) {
    case CL_CONTEXT_REFERENCE_COUNT: return info_value(size, value, size_ret, context->refcount.load());
    case CL_CONTEXT_NUM_DEVICES: return info_value(size, value, size_ret, cl_uint(context->devices.size()));
    case CL_CONTEXT_DEVICES: return info_vector(size, value, size_ret, context->devices);
    case CL_CONTEXT_PROPERTIES: return info_vector(size, value, size_ret, context->properties);
    default: return CL_INVALID_VALUE;
  }
}

cl_int fedcl::api::clSetContextDestructorCallback(cl_context context,
                                                  void(CL_CALLBACK *notify)(cl_context, void *), void *user_data) {
  if (!as<_cl_context>(context)) return CL_INVALID_CONTEXT;
  if (!notify) return CL_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(context->mutex);
  context->destructor_callbacks.push_back({reinterpret_cast<void(CL_CALLBACK *)(void *, void *)>(notify), user_data});
  return CL_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// Command queues

namespace {

const cl_command_queue_properties kHostQueueProperties = CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE;

// Device-side queues (CL_QUEUE_ON_DEVICE) are not offered: fedcl's devices report no device-side
// enqueue. The combinations the specification calls not valid, which are all that driver_check
// tries, are CL_INVALID_VALUE as NVIDIA answers: ON_DEVICE without OUT_OF_ORDER, ON_DEVICE_DEFAULT
// without ON_DEVICE, CL_QUEUE_SIZE without ON_DEVICE; a valid device-side request is
// CL_INVALID_QUEUE_PROPERTIES (valid, not supported).
cl_int check_device_queue(cl_command_queue_properties properties, bool has_size) {
  bool on_device = properties & CL_QUEUE_ON_DEVICE;
  if (!on_device)
    return (has_size || (properties & CL_QUEUE_ON_DEVICE_DEFAULT)) ? CL_INVALID_VALUE : CL_SUCCESS;
  if (!(properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)) return CL_INVALID_VALUE;
  return CL_INVALID_QUEUE_PROPERTIES;
}

cl_command_queue create_queue(cl_context context, cl_device_id device, cl_command_queue_properties properties,
                              std::vector<cl_queue_properties> properties_array, cl_int *errcode_ret) {
  if (!as<_cl_context>(context)) return set_error(errcode_ret, CL_INVALID_CONTEXT), nullptr;
  if (!as<_cl_device_id>(device) || !context->has_device(device)) return set_error(errcode_ret, CL_INVALID_DEVICE), nullptr;
  if (properties & ~kHostQueueProperties) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  cl_command_queue_properties supported = 0;
  device_info(device, CL_DEVICE_QUEUE_PROPERTIES, sizeof supported, &supported, nullptr);
  if (properties & ~supported) return set_error(errcode_ret, CL_INVALID_QUEUE_PROPERTIES), nullptr;
  if (!device->connection->alive()) return set_error(errcode_ret, CL_DEVICE_NOT_AVAILABLE), nullptr;

  auto *queue = new _cl_command_queue();
  queue->context = context;
  queue->device = device;
  queue->connection = device->connection;
  queue->properties = properties;
  queue->properties_array = std::move(properties_array);
  hold(context);
  cl_int err = queue_create(queue->connection, queue->id, context, device->remote_id, properties);
  return finish_create(queue, err, errcode_ret);
}

}  // namespace

// The legacy call takes the host-queue bits alone: any other bit is not valid (CL_INVALID_VALUE).
cl_command_queue fedcl::api::clCreateCommandQueue(cl_context context, cl_device_id device,
                                                  cl_command_queue_properties properties, cl_int *errcode_ret) {
  return create_queue(context, device, properties, {}, errcode_ret);
}

cl_command_queue fedcl::api::clCreateCommandQueueWithProperties(cl_context context, cl_device_id device,
                                                                const cl_queue_properties *properties,
                                                                cl_int *errcode_ret) {
  cl_command_queue_properties bits = 0;
  bool has_size = false;
  std::vector<cl_queue_properties> array;
  for (const cl_queue_properties *p = properties; p && *p; p += 2) {
    if (p[0] == CL_QUEUE_PROPERTIES) bits = p[1];
    else if (p[0] == CL_QUEUE_SIZE) has_size = true;
    else return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
    array.push_back(p[0]);
    array.push_back(p[1]);
  }
  if (properties) array.push_back(0);
  cl_int err = check_device_queue(bits, has_size);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  return create_queue(context, device, bits, std::move(array), errcode_ret);
}

cl_int fedcl::api::clGetCommandQueueInfo(cl_command_queue queue, cl_command_queue_info param, size_t size,
                                         void *value, size_t *size_ret) {
  if (!as<_cl_command_queue>(queue)) return CL_INVALID_COMMAND_QUEUE;
  switch (param) {
    case CL_QUEUE_CONTEXT: return info_value(size, value, size_ret, queue->context);
    case CL_QUEUE_DEVICE: return info_value(size, value, size_ret, queue->device);
    case CL_QUEUE_REFERENCE_COUNT: return info_value(size, value, size_ret, queue->refcount.load());
    case CL_QUEUE_PROPERTIES: return info_value(size, value, size_ret, queue->properties);
    case CL_QUEUE_PROPERTIES_ARRAY: return info_vector(size, value, size_ret, queue->properties_array);
    case CL_QUEUE_DEVICE_DEFAULT: return info_value(size, value, size_ret, static_cast<cl_command_queue>(nullptr));
    case CL_QUEUE_SIZE: return CL_INVALID_COMMAND_QUEUE;  // host queues have no size
    default: return CL_INVALID_VALUE;
  }
}

cl_int fedcl::api::clFlush(cl_command_queue queue) {
  if (!as<_cl_command_queue>(queue)) return CL_INVALID_COMMAND_QUEUE;
  return queue_flush(queue);
}

cl_int fedcl::api::clFinish(cl_command_queue queue) {
  if (!as<_cl_command_queue>(queue)) return CL_INVALID_COMMAND_QUEUE;
  if (wait_hook.load()) {
    // The daemon's finish may wait for commands that only this thread's MPI calls can complete:
    // wait here first, running the hook.
    cl_event last = nullptr;
    cl_int err = api::clEnqueueMarkerWithWaitList(queue, 0, nullptr, &last);
    if (err != CL_SUCCESS) return err;
    api::clFlush(queue);
    wait_complete(last);
    api::clReleaseEvent(last);
  }
  cl_int err = queue_finish(queue);
  if (err != CL_SUCCESS) return err;
  // Commands that end in this process (file saves) are the queue's too.
  for (_cl_event *local : queue->pending_local()) {
    wait_complete(local);
    unhold(local);
  }
  // A failure the daemon found in an earlier command of this queue surfaces here.
  return queue->connection->take_error(queue->id);
}
