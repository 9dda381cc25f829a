// cl_khr_command_buffer 0.9.8, with mutable dispatch and multi-device (include/CL/cl_fedcl_command_buffer.h),
// reached through clGetExtensionFunctionAddressForPlatform: checked here, recorded and replayed by
// runtime/command_buffer. A recorded command is checked as its clEnqueue* twin is, against the
// queue it is recorded to.
#include <algorithm>

#include "api.h"
#include "command_buffer.h"
#include "info.h"
#include "kernel.h"
#include "program.h"

using namespace fedcl;

namespace {

// The fields of a recorded launch that fedcl lets clUpdateMutableCommandsKHR change: all but exec
// info (SVM, which fedcl does not offer).
constexpr fedcl_mutable_dispatch_fields_khr kUpdatableFields = CL_MUTABLE_DISPATCH_GLOBAL_OFFSET_KHR |
                                                               CL_MUTABLE_DISPATCH_GLOBAL_SIZE_KHR |
                                                               CL_MUTABLE_DISPATCH_LOCAL_SIZE_KHR |
                                                               CL_MUTABLE_DISPATCH_ARGUMENTS_KHR;

// What every clCommand*KHR refuses before looking at its command. *on: the queue it is recorded to,
// one of the buffer's (NULL names the only one); only launches have mutable handles and properties
// (check_launch_properties).
cl_int check_recording(cl_command_buffer_khr buffer, cl_command_queue queue, const cl_command_properties_khr *properties,
                       cl_uint num_sync_points, const cl_sync_point_khr *sync_points, cl_mutable_command_khr *handle,
                       cl_command_queue *on, bool launch = false) {
  if (!as<_cl_command_buffer_khr>(buffer)) return CL_INVALID_COMMAND_BUFFER_KHR;
  if (!queue && buffer->queues.size() > 1) return CL_INVALID_COMMAND_QUEUE;
  if (queue && std::find(buffer->queues.begin(), buffer->queues.end(), queue) == buffer->queues.end())
    return CL_INVALID_COMMAND_QUEUE;
  *on = queue ? queue : buffer->queues[0];
  if (!launch && (handle || (properties && properties[0] != 0))) return CL_INVALID_VALUE;
  if ((num_sync_points == 0) != (sync_points == nullptr)) return CL_INVALID_SYNC_POINT_WAIT_LIST_KHR;
  std::lock_guard<std::mutex> lock(buffer->mutex);
  return buffer->finalized ? CL_INVALID_OPERATION : CL_SUCCESS;
}

// A device command (copy or fill) of a command buffer: checked as every recording is, then by
// make_op as its clEnqueue* twin checks it, then recorded.
template <typename MakeOp>
cl_int record_device_op(cl_command_buffer_khr buffer, cl_command_queue queue,
                        const cl_command_properties_khr *properties, cl_uint num_sync_points,
                        const cl_sync_point_khr *sync_points, cl_sync_point_khr *sync_point,
                        cl_mutable_command_khr *handle, MakeOp make_op) {
  cl_command_queue on = nullptr;
  cl_int err = check_recording(buffer, queue, properties, num_sync_points, sync_points, handle, &on);
  if (err != CL_SUCCESS) return err;
  DeviceOp op;
  err = make_op(on, &op);
  if (err != CL_SUCCESS) return err;
  UsedObjects used;
  if (op.source) used.mems.push_back({op.source, false});
  used.mems.push_back({op.dest, true});
  return command_buffer_record(buffer, on, num_sync_points, sync_points, op.build, used, sync_point);
}

// A zero-terminated list of (name, value) properties, each name at most once: bits_name, whose value
// may hold only the allowed bits (given back in *bits), and asserts_name (promises fedcl need not act
// on). *kept: the list as given, its terminating zero included.
template <typename Property, typename Bits>
cl_int check_property_list(const Property *properties, Property bits_name, Property allowed, Property asserts_name,
                           std::vector<Property> *kept, Bits *bits) {
  if (!properties) return CL_SUCCESS;
  std::vector<Property> seen;
  size_t n = 0;
  for (; properties[n] != 0; n += 2) {
    Property name = properties[n], value = properties[n + 1];
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) return CL_INVALID_VALUE;
    seen.push_back(name);
    if (name == bits_name && !(value & ~allowed)) *bits = Bits(value);
    else if (name != asserts_name) return CL_INVALID_VALUE;
  }
  kept->assign(properties, properties + n + 1);
  return CL_SUCCESS;
}

// The properties of clCreateCommandBufferKHR: CL_COMMAND_BUFFER_FLAGS_KHR (mutable; simultaneous use:
// replays may always overlap; device-side sync, checked against the queues by the caller) and the
// mutable-dispatch asserts. *flags: the flags given.
cl_int check_properties(const cl_command_buffer_properties_khr *properties,
                        std::vector<cl_command_buffer_properties_khr> *kept, cl_command_buffer_flags_khr *flags) {
  constexpr cl_command_buffer_properties_khr known_flags =
      CL_COMMAND_BUFFER_MUTABLE_KHR | CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR | CL_COMMAND_BUFFER_DEVICE_SIDE_SYNC_KHR;
  return check_property_list<cl_command_buffer_properties_khr>(
      properties, CL_COMMAND_BUFFER_FLAGS_KHR, known_flags, CL_COMMAND_BUFFER_MUTABLE_DISPATCH_ASSERTS_KHR, kept, flags);
}

// A launch's properties: the fields an update may change, and asserts.
cl_int check_launch_properties(const cl_command_properties_khr *properties,
                               std::vector<cl_command_properties_khr> *kept, fedcl_mutable_dispatch_fields_khr *fields) {
  return check_property_list<cl_command_properties_khr>(properties, CL_MUTABLE_DISPATCH_UPDATABLE_FIELDS_KHR,
                                                        kUpdatableFields, CL_MUTABLE_DISPATCH_ASSERTS_KHR, kept, fields);
}

// The queues a command buffer is created for, or remapped to: valid, of one context (that of
// context, where given). *checked: them.
cl_int check_queues(cl_uint num_queues, const cl_command_queue *queues, cl_context context,
                    std::vector<cl_command_queue> *checked) {
  if (num_queues == 0 || !queues) return CL_INVALID_VALUE;
  for (cl_uint i = 0; i < num_queues; i++) {
    if (!as<_cl_command_queue>(queues[i])) return CL_INVALID_COMMAND_QUEUE;
    if (!context) context = queues[i]->context;
    if (queues[i]->context != context) return CL_INVALID_CONTEXT;
  }
  checked->assign(queues, queues + num_queues);
  return CL_SUCCESS;
}

}  // namespace

cl_command_buffer_khr fedcl::api::clCreateCommandBufferKHR(cl_uint num_queues, const cl_command_queue *queues,
                                                           const cl_command_buffer_properties_khr *properties,
                                                           cl_int *errcode_ret) {
  std::vector<cl_command_queue> checked;
  cl_int err = check_queues(num_queues, queues, nullptr, &checked);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  std::vector<cl_command_buffer_properties_khr> kept;
  cl_command_buffer_flags_khr flags = 0;
  err = check_properties(properties, &kept, &flags);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  // A device syncs only with itself without the host (CL_DEVICE_COMMAND_BUFFER_SYNC_DEVICES_KHR).
  if (flags & CL_COMMAND_BUFFER_DEVICE_SIDE_SYNC_KHR)
    for (cl_command_queue queue : checked)
      if (queue->device != checked[0]->device) return set_error(errcode_ret, CL_INCOMPATIBLE_COMMAND_QUEUE_KHR), nullptr;
  cl_command_buffer_khr buffer = command_buffer_create(std::move(checked), std::move(kept), &err);
  if (buffer) buffer->mutable_dispatch = flags & CL_COMMAND_BUFFER_MUTABLE_KHR;
  set_error(errcode_ret, err);
  return buffer;
}

cl_int fedcl::api::clFinalizeCommandBufferKHR(cl_command_buffer_khr buffer) {
  if (!as<_cl_command_buffer_khr>(buffer)) return CL_INVALID_COMMAND_BUFFER_KHR;
  return command_buffer_finalize(buffer);
}

cl_int fedcl::api::clEnqueueCommandBufferKHR(cl_uint num_queues, cl_command_queue *queues, cl_command_buffer_khr buffer,
                                             cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  if (!as<_cl_command_buffer_khr>(buffer)) return CL_INVALID_COMMAND_BUFFER_KHR;
  if (!buffer->finalized) return CL_INVALID_OPERATION;
  if ((num_queues == 0) != (queues == nullptr) || (num_queues && num_queues != buffer->queues.size()))
    return CL_INVALID_VALUE;
  for (cl_uint i = 0; i < num_queues; i++) {
    // A substitute: a queue of the same device, with properties the buffer's commands can run under.
    if (!as<_cl_command_queue>(queues[i])) return CL_INVALID_COMMAND_QUEUE;
    if (queues[i]->context != buffer->context()) return CL_INVALID_CONTEXT;
    if (queues[i]->device != buffer->queues[i]->device) return CL_INCOMPATIBLE_COMMAND_QUEUE_KHR;
  }
  cl_int err = check_wait_list(buffer->context(), num_events, wait_list);
  if (err != CL_SUCCESS) return err;
  return command_buffer_enqueue(buffer, num_queues ? queues : nullptr, num_events, wait_list, event);
}

cl_int fedcl::api::clCommandBarrierWithWaitListKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                                   const cl_command_properties_khr *properties,
                                                   cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                                   cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle) {
  cl_command_queue on = nullptr;
  cl_int err = check_recording(buffer, queue, properties, num_sync_points, sync_points, handle, &on);
  if (err != CL_SUCCESS) return err;
  return command_buffer_record_barrier(buffer, on, num_sync_points, sync_points, sync_point);
}

cl_int fedcl::api::clCommandCopyBufferKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                          const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                          size_t src_offset, size_t dst_offset, size_t size, cl_uint num_sync_points,
                                          const cl_sync_point_khr *sync_points, cl_sync_point_khr *sync_point,
                                          cl_mutable_command_khr *handle) {
  return record_device_op(buffer, queue, properties, num_sync_points, sync_points, sync_point, handle,
                          [&](cl_command_queue on, DeviceOp *op) {
                            cl_int err = copy_buffer_op(on, src, dst, src_offset, dst_offset, size, op);
                            // A copy of no bytes, which clEnqueueCopyBuffer leaves to the backend,
                            // cannot wait for its verdict here.
                            return err == CL_SUCCESS && size == 0 ? CL_INVALID_VALUE : err;
                          });
}

cl_int fedcl::api::clCommandCopyBufferRectKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                              const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                              const size_t *src_origin, const size_t *dst_origin, const size_t *region,
                                              size_t src_row_pitch, size_t src_slice_pitch, size_t dst_row_pitch,
                                              size_t dst_slice_pitch, cl_uint num_sync_points,
                                              const cl_sync_point_khr *sync_points, cl_sync_point_khr *sync_point,
                                              cl_mutable_command_khr *handle) {
  return record_device_op(buffer, queue, properties, num_sync_points, sync_points, sync_point, handle,
                          [&](cl_command_queue on, DeviceOp *op) {
                            return copy_buffer_rect_op(on, src, dst, src_origin, dst_origin, region, src_row_pitch,
                                                       src_slice_pitch, dst_row_pitch, dst_slice_pitch, op);
                          });
}

cl_int fedcl::api::clCommandCopyBufferToImageKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                                 const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                                 size_t src_offset, const size_t *dst_origin, const size_t *region,
                                                 cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                                 cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle) {
  return record_device_op(buffer, queue, properties, num_sync_points, sync_points, sync_point, handle,
                          [&](cl_command_queue on, DeviceOp *op) {
                            return copy_buffer_to_image_op(on, src, dst, src_offset, dst_origin, region, op);
                          });
}

cl_int fedcl::api::clCommandCopyImageKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                         const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                         const size_t *src_origin, const size_t *dst_origin, const size_t *region,
                                         cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                         cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle) {
  return record_device_op(buffer, queue, properties, num_sync_points, sync_points, sync_point, handle,
                          [&](cl_command_queue on, DeviceOp *op) {
                            return copy_image_op(on, src, dst, src_origin, dst_origin, region, op);
                          });
}

cl_int fedcl::api::clCommandCopyImageToBufferKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                                 const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                                 const size_t *src_origin, const size_t *region, size_t dst_offset,
                                                 cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                                 cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle) {
  return record_device_op(buffer, queue, properties, num_sync_points, sync_points, sync_point, handle,
                          [&](cl_command_queue on, DeviceOp *op) {
                            return copy_image_to_buffer_op(on, src, dst, src_origin, region, dst_offset, op);
                          });
}

cl_int fedcl::api::clCommandFillBufferKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                          const cl_command_properties_khr *properties, cl_mem mem, const void *pattern,
                                          size_t pattern_size, size_t offset, size_t size, cl_uint num_sync_points,
                                          const cl_sync_point_khr *sync_points, cl_sync_point_khr *sync_point,
                                          cl_mutable_command_khr *handle) {
  return record_device_op(buffer, queue, properties, num_sync_points, sync_points, sync_point, handle,
                          [&](cl_command_queue on, DeviceOp *op) {
                            return fill_buffer_op(on, mem, pattern, pattern_size, offset, size, op);
                          });
}

cl_int fedcl::api::clCommandFillImageKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                         const cl_command_properties_khr *properties, cl_mem image,
                                         const void *fill_color, const size_t *origin, const size_t *region,
                                         cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                         cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle) {
  return record_device_op(buffer, queue, properties, num_sync_points, sync_points, sync_point, handle,
                          [&](cl_command_queue on, DeviceOp *op) {
                            return fill_image_op(on, image, fill_color, origin, region, op);
                          });
}

cl_int fedcl::api::clCommandNDRangeKernelKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                             const cl_command_properties_khr *properties, cl_kernel kernel,
                                             cl_uint work_dim, const size_t *global_offset, const size_t *global_size,
                                             const size_t *local_size, cl_uint num_sync_points,
                                             const cl_sync_point_khr *sync_points, cl_sync_point_khr *sync_point,
                                             cl_mutable_command_khr *handle) {
  cl_command_queue on = nullptr;
  cl_int err = check_recording(buffer, queue, properties, num_sync_points, sync_points, handle, &on, true);
  if (err != CL_SUCCESS) return err;
  std::vector<cl_command_properties_khr> kept;
  fedcl_mutable_dispatch_fields_khr fields = kUpdatableFields;  // without the property: all fedcl can update
  err = check_launch_properties(properties, &kept, &fields);
  if (err != CL_SUCCESS) return err;
  // Without a local size, a kernel with reqd_work_group_size runs with that size (the recorded
  // launch names it; clEnqueueNDRangeKernel leaves NULL to the backend).
  size_t required[3];
  if (!local_size && as<_cl_kernel>(kernel) && kernel->desc->compile_work_group_size[0] && work_dim >= 1 && work_dim <= 3) {
    std::copy(kernel->desc->compile_work_group_size, kernel->desc->compile_work_group_size + 3, required);
    local_size = required;
  }
  // A mutable launch whose arguments an update may set can leave some unset until then.
  bool args_may_wait = handle && buffer->mutable_dispatch && (fields & CL_MUTABLE_DISPATCH_ARGUMENTS_KHR);
  bool empty = false;
  err = check_launch(on, kernel, work_dim, global_offset, global_size, local_size, &empty, args_may_wait);
  if (err != CL_SUCCESS) return err;
  // fedcl does not capture printf output during a replay (no CL_COMMAND_BUFFER_CAPABILITY_KERNEL_PRINTF_KHR):
  // a kernel whose source calls printf is refused, as the extension says.
  if (program_calls_printf(kernel->program)) return CL_INVALID_OPERATION;
  // Nothing to run: the recorded command only orders, as a barrier on its sync points does.
  if (empty) return api::clCommandBarrierWithWaitListKHR(buffer, on, nullptr, num_sync_points, sync_points, sync_point,
                                                         nullptr);
  _cl_mutable_command_khr *launch = nullptr;
  err = kernel_record(buffer, on, kernel, work_dim, global_offset, global_size, local_size, num_sync_points, sync_points,
                      sync_point, handle ? &launch : nullptr);
  if (err != CL_SUCCESS || !handle) return err;
  launch->properties = std::move(kept);
  launch->updatable = fields;
  *handle = launch;
  return CL_SUCCESS;
}

cl_int fedcl::api::clGetCommandBufferInfoKHR(cl_command_buffer_khr buffer, cl_command_buffer_info_khr param,
                                             size_t size, void *value, size_t *size_ret) {
  if (!as<_cl_command_buffer_khr>(buffer)) return CL_INVALID_COMMAND_BUFFER_KHR;
  switch (param) {
    case CL_COMMAND_BUFFER_QUEUES_KHR: return info_vector(size, value, size_ret, buffer->queues);
    case CL_COMMAND_BUFFER_NUM_QUEUES_KHR: return info_value(size, value, size_ret, cl_uint(buffer->queues.size()));
    case CL_COMMAND_BUFFER_REFERENCE_COUNT_KHR: return info_value(size, value, size_ret, buffer->refcount.load());
    case CL_COMMAND_BUFFER_STATE_KHR: {
      std::lock_guard<std::mutex> lock(buffer->mutex);
      cl_command_buffer_state_khr state = !buffer->finalized      ? CL_COMMAND_BUFFER_STATE_RECORDING_KHR
                                          : command_buffer_ready(buffer) ? CL_COMMAND_BUFFER_STATE_EXECUTABLE_KHR
                                                                        : FEDCL_COMMAND_BUFFER_STATE_FINALIZED;
      return info_value(size, value, size_ret, state);
    }
    case CL_COMMAND_BUFFER_PROPERTIES_ARRAY_KHR: return info_vector(size, value, size_ret, buffer->properties);
    case CL_COMMAND_BUFFER_CONTEXT_KHR: return info_value(size, value, size_ret, buffer->context());
    default: return CL_INVALID_VALUE;
  }
}

namespace {

// One dispatch config of clUpdateMutableCommandsKHR, checked against its launch: the update to send.
cl_int check_update(cl_command_buffer_khr buffer, const fedcl_mutable_dispatch_config_khr *config, LaunchUpdate *update) {
  if (!config) return CL_INVALID_VALUE;
  auto *launch = as<_cl_mutable_command_khr>(config->command);
  if (!launch || launch->buffer != buffer) return CL_INVALID_MUTABLE_COMMAND_KHR;
  update->command = launch;
  if (config->num_svm_args || config->num_exec_infos) return CL_INVALID_OPERATION;
  if ((config->num_args == 0) != (config->arg_list == nullptr)) return CL_INVALID_VALUE;
  if (config->work_dim && config->work_dim != launch->work_dim) return CL_INVALID_VALUE;
  auto allowed = [&](fedcl_mutable_dispatch_fields_khr field) { return (launch->updatable & field) != 0; };
  if ((config->num_args && !allowed(CL_MUTABLE_DISPATCH_ARGUMENTS_KHR)) ||
      (config->global_work_offset && !allowed(CL_MUTABLE_DISPATCH_GLOBAL_OFFSET_KHR)) ||
      (config->global_work_size && !allowed(CL_MUTABLE_DISPATCH_GLOBAL_SIZE_KHR)) ||
      (config->local_work_size && !allowed(CL_MUTABLE_DISPATCH_LOCAL_SIZE_KHR)))
    return CL_INVALID_OPERATION;
  for (cl_uint i = 0; i < config->num_args; i++) {
    const fedcl_mutable_dispatch_arg_khr &given = config->arg_list[i];
    _cl_kernel::Arg arg;
    cl_int err = make_kernel_arg(launch->kernel, given.arg_index, given.arg_size, given.arg_value, &arg);
    if (err != CL_SUCCESS) return err;
    update->args.emplace_back(given.arg_index, std::move(arg));
  }
  // The sizes the launch would have, checked as clEnqueueNDRangeKernel checks them.
  update->offset = config->global_work_offset;
  update->global = config->global_work_size;
  update->local = config->local_work_size;
  std::lock_guard<std::mutex> lock(buffer->mutex);
  const size_t *global = update->global ? update->global : launch->global;
  const size_t *local = update->local ? update->local : (launch->local[0] ? launch->local : nullptr);
  const size_t *offset = update->offset ? update->offset : launch->offset;
  bool empty = false;
  return check_launch_geometry(launch->kernel, launch->queue->device, launch->work_dim, offset, global, local, &empty);
}

}  // namespace

cl_int fedcl::api::clUpdateMutableCommandsKHR(cl_command_buffer_khr buffer, cl_uint num_configs,
                                              const fedcl_command_buffer_update_type_khr *config_types,
                                              const void **configs) {
  if (!as<_cl_command_buffer_khr>(buffer)) return CL_INVALID_COMMAND_BUFFER_KHR;
  if (!buffer->finalized || !buffer->mutable_dispatch) return CL_INVALID_OPERATION;
  if ((num_configs == 0) != (config_types == nullptr) || (num_configs == 0) != (configs == nullptr))
    return CL_INVALID_VALUE;
  // Every config is checked before anything changes.
  std::vector<LaunchUpdate> updates(num_configs);
  for (cl_uint i = 0; i < num_configs; i++) {
    if (config_types[i] != FEDCL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG) return CL_INVALID_VALUE;
    cl_int err = check_update(buffer, static_cast<const fedcl_mutable_dispatch_config_khr *>(configs[i]), &updates[i]);
    if (err != CL_SUCCESS) return err;
  }
  return command_buffer_update(buffer, updates);
}

cl_int fedcl::api::clGetMutableCommandInfoKHR(cl_mutable_command_khr command, fedcl_mutable_command_info_khr param,
                                              size_t size, void *value, size_t *size_ret) {
  auto *launch = as<_cl_mutable_command_khr>(command);
  if (!launch) return CL_INVALID_MUTABLE_COMMAND_KHR;
  std::lock_guard<std::mutex> lock(launch->buffer->mutex);
  auto sizes = [&](const size_t *values) { return info_bytes(size, value, size_ret, values, launch->work_dim * sizeof(size_t)); };
  switch (param) {
    case CL_MUTABLE_COMMAND_COMMAND_QUEUE_KHR: return info_value(size, value, size_ret, launch->queue);
    case CL_MUTABLE_COMMAND_COMMAND_BUFFER_KHR: return info_value(size, value, size_ret, launch->buffer);
    case CL_MUTABLE_COMMAND_COMMAND_TYPE_KHR: return info_value(size, value, size_ret, cl_command_type(CL_COMMAND_NDRANGE_KERNEL));
    case CL_MUTABLE_COMMAND_PROPERTIES_ARRAY_KHR: return info_vector(size, value, size_ret, launch->properties);
    case CL_MUTABLE_DISPATCH_KERNEL_KHR: return info_value(size, value, size_ret, launch->kernel);
    case CL_MUTABLE_DISPATCH_DIMENSIONS_KHR: return info_value(size, value, size_ret, launch->work_dim);
    case CL_MUTABLE_DISPATCH_GLOBAL_WORK_OFFSET_KHR: return sizes(launch->offset);
    case CL_MUTABLE_DISPATCH_GLOBAL_WORK_SIZE_KHR: return sizes(launch->global);
    case CL_MUTABLE_DISPATCH_LOCAL_WORK_SIZE_KHR: return sizes(launch->local);
    default: return CL_INVALID_VALUE;
  }
}

cl_command_buffer_khr fedcl::api::clRemapCommandBufferKHR(cl_command_buffer_khr buffer, cl_bool automatic,
                                                          cl_uint num_queues, const cl_command_queue *queues,
                                                          cl_uint num_handles, const cl_mutable_command_khr *handles,
                                                          cl_mutable_command_khr *handles_ret, cl_int *errcode_ret) {
  if (!as<_cl_command_buffer_khr>(buffer)) return set_error(errcode_ret, CL_INVALID_COMMAND_BUFFER_KHR), nullptr;
  std::vector<cl_command_queue> checked;
  cl_int err = check_queues(num_queues, queues, buffer->context(), &checked);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  if (!automatic && num_queues != buffer->queues.size()) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  if (num_handles && (!handles || !handles_ret)) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  std::vector<cl_mutable_command_khr> originals(handles, handles + num_handles);
  for (cl_mutable_command_khr handle : originals) {
    auto *launch = as<_cl_mutable_command_khr>(handle);
    if (!launch || launch->buffer != buffer) return set_error(errcode_ret, CL_INVALID_MUTABLE_COMMAND_KHR), nullptr;
  }
  // Queue i of the buffer becomes queues[i]; automatically, the queues are dealt out in turn
  // (fedcl knows nothing better: every device of a context is equally far from the application).
  std::vector<cl_uint> map(buffer->queues.size());
  for (cl_uint i = 0; i < map.size(); i++) map[i] = i % num_queues;
  cl_command_buffer_khr remapped = command_buffer_remap(buffer, checked, map, originals, handles_ret, &err);
  set_error(errcode_ret, err);
  return remapped;
}
