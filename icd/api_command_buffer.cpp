// cl_khr_command_buffer 0.9.8 (include/CL/cl_fedcl_command_buffer.h), reached through
// clGetExtensionFunctionAddressForPlatform: checked here, recorded and replayed by
// runtime/command_buffer. A recorded command is checked as its clEnqueue* twin is, against the
// command buffer's queue.
#include <algorithm>

#include "api.h"
#include "command_buffer.h"
#include "info.h"
#include "kernel.h"
#include "program.h"

using namespace fedcl;

namespace {

// What every clCommand*KHR refuses before looking at its command: fedcl offers neither the
// multi-device extension (command_queue must be NULL: CL_INVALID_COMMAND_QUEUE) nor mutable dispatch
// (no handles), and the base extension defines no command properties.
cl_int check_recording(cl_command_buffer_khr buffer, cl_command_queue queue, const cl_command_properties_khr *properties,
                       cl_uint num_sync_points, const cl_sync_point_khr *sync_points, cl_mutable_command_khr *handle) {
  if (!as<_cl_command_buffer_khr>(buffer)) return CL_INVALID_COMMAND_BUFFER_KHR;
  if (queue) return CL_INVALID_COMMAND_QUEUE;
  if (handle || (properties && properties[0] != 0)) return CL_INVALID_VALUE;
  if ((num_sync_points == 0) != (sync_points == nullptr)) return CL_INVALID_SYNC_POINT_WAIT_LIST_KHR;
  std::lock_guard<std::mutex> lock(buffer->mutex);
  return buffer->finalized ? CL_INVALID_OPERATION : CL_SUCCESS;
}

cl_int record(cl_command_buffer_khr buffer, cl_int checked, const DeviceOp &op, cl_uint num_sync_points,
              const cl_sync_point_khr *sync_points, cl_sync_point_khr *sync_point) {
  if (checked != CL_SUCCESS) return checked;
  std::vector<UsedMem> mems;
  if (op.source) mems.push_back({op.source, false});
  mems.push_back({op.dest, true});
  return command_buffer_record(buffer, num_sync_points, sync_points, op.build, mems, sync_point);
}

// The properties of clCreateCommandBufferKHR: only CL_COMMAND_BUFFER_FLAGS_KHR, once, and none of
// its flags (those belong to extensions fedcl does not offer).
cl_int check_properties(const cl_command_buffer_properties_khr *properties,
                        std::vector<cl_command_buffer_properties_khr> *kept) {
  if (!properties) return CL_SUCCESS;
  bool flags_seen = false;
  size_t n = 0;
  for (; properties[n] != 0; n += 2) {
    if (properties[n] != CL_COMMAND_BUFFER_FLAGS_KHR || flags_seen) return CL_INVALID_VALUE;
    flags_seen = true;
    if (properties[n + 1] != 0) return CL_INVALID_VALUE;
  }
  kept->assign(properties, properties + n + 1);
  return CL_SUCCESS;
}

}  // namespace

cl_command_buffer_khr fedcl::api::clCreateCommandBufferKHR(cl_uint num_queues, const cl_command_queue *queues,
                                                           const cl_command_buffer_properties_khr *properties,
                                                           cl_int *errcode_ret) {
  if (num_queues != 1 || !queues) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  cl_command_queue queue = queues[0];
  if (!as<_cl_command_queue>(queue)) return set_error(errcode_ret, CL_INVALID_COMMAND_QUEUE), nullptr;
  std::vector<cl_command_buffer_properties_khr> kept;
  cl_int err = check_properties(properties, &kept);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  cl_command_buffer_khr buffer = command_buffer_create(queue, std::move(kept), &err);
  set_error(errcode_ret, err);
  return buffer;
}

cl_int fedcl::api::clFinalizeCommandBufferKHR(cl_command_buffer_khr buffer) {
  if (!as<_cl_command_buffer_khr>(buffer)) return CL_INVALID_COMMAND_BUFFER_KHR;
  return command_buffer_finalize(buffer);
}

cl_int fedcl::api::clRetainCommandBufferKHR(cl_command_buffer_khr buffer) {
  return as<_cl_command_buffer_khr>(buffer) ? retain(buffer) : CL_INVALID_COMMAND_BUFFER_KHR;
}

cl_int fedcl::api::clReleaseCommandBufferKHR(cl_command_buffer_khr buffer) {
  return as<_cl_command_buffer_khr>(buffer) ? release(buffer) : CL_INVALID_COMMAND_BUFFER_KHR;
}

cl_int fedcl::api::clEnqueueCommandBufferKHR(cl_uint num_queues, cl_command_queue *queues, cl_command_buffer_khr buffer,
                                             cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  if (!as<_cl_command_buffer_khr>(buffer)) return CL_INVALID_COMMAND_BUFFER_KHR;
  if (!buffer->finalized) return CL_INVALID_OPERATION;
  if ((num_queues == 0) != (queues == nullptr) || num_queues > 1) return CL_INVALID_VALUE;
  cl_command_queue queue = buffer->queue;
  if (num_queues == 1) {
    // A substitute: a queue of the same device, with properties the buffer's commands can run under.
    queue = queues[0];
    if (!as<_cl_command_queue>(queue)) return CL_INVALID_COMMAND_QUEUE;
    if (queue->context != buffer->queue->context) return CL_INVALID_CONTEXT;
    if (queue->device != buffer->queue->device) return CL_INCOMPATIBLE_COMMAND_QUEUE_KHR;
  }
  cl_int err = check_wait_list(queue->context, num_events, wait_list);
  if (err != CL_SUCCESS) return err;
  return command_buffer_enqueue(buffer, queue, num_events, wait_list, event);
}

cl_int fedcl::api::clCommandBarrierWithWaitListKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                                   const cl_command_properties_khr *properties,
                                                   cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                                   cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle) {
  cl_int err = check_recording(buffer, queue, properties, num_sync_points, sync_points, handle);
  if (err != CL_SUCCESS) return err;
  auto build = [](wire::Request::Builder request) { return request.initBarrier(); };
  return command_buffer_record(buffer, num_sync_points, sync_points, build, {}, sync_point);
}

cl_int fedcl::api::clCommandCopyBufferKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                          const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                          size_t src_offset, size_t dst_offset, size_t size, cl_uint num_sync_points,
                                          const cl_sync_point_khr *sync_points, cl_sync_point_khr *sync_point,
                                          cl_mutable_command_khr *handle) {
  cl_int err = check_recording(buffer, queue, properties, num_sync_points, sync_points, handle);
  if (err != CL_SUCCESS) return err;
  DeviceOp op;
  err = copy_buffer_op(buffer->queue, src, dst, src_offset, dst_offset, size, &op);
  // A copy of no bytes, which clEnqueueCopyBuffer leaves to the backend, cannot wait for its verdict here.
  if (err == CL_SUCCESS && size == 0) err = CL_INVALID_VALUE;
  return record(buffer, err, op, num_sync_points, sync_points, sync_point);
}

cl_int fedcl::api::clCommandCopyBufferRectKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                              const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                              const size_t *src_origin, const size_t *dst_origin, const size_t *region,
                                              size_t src_row_pitch, size_t src_slice_pitch, size_t dst_row_pitch,
                                              size_t dst_slice_pitch, cl_uint num_sync_points,
                                              const cl_sync_point_khr *sync_points, cl_sync_point_khr *sync_point,
                                              cl_mutable_command_khr *handle) {
  cl_int err = check_recording(buffer, queue, properties, num_sync_points, sync_points, handle);
  if (err != CL_SUCCESS) return err;
  DeviceOp op;
  err = copy_buffer_rect_op(buffer->queue, src, dst, src_origin, dst_origin, region, src_row_pitch, src_slice_pitch,
                            dst_row_pitch, dst_slice_pitch, &op);
  return record(buffer, err, op, num_sync_points, sync_points, sync_point);
}

cl_int fedcl::api::clCommandCopyBufferToImageKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                                 const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                                 size_t src_offset, const size_t *dst_origin, const size_t *region,
                                                 cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                                 cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle) {
  cl_int err = check_recording(buffer, queue, properties, num_sync_points, sync_points, handle);
  if (err != CL_SUCCESS) return err;
  DeviceOp op;
  err = copy_buffer_to_image_op(buffer->queue, src, dst, src_offset, dst_origin, region, &op);
  return record(buffer, err, op, num_sync_points, sync_points, sync_point);
}

cl_int fedcl::api::clCommandCopyImageKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                         const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                         const size_t *src_origin, const size_t *dst_origin, const size_t *region,
                                         cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                         cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle) {
  cl_int err = check_recording(buffer, queue, properties, num_sync_points, sync_points, handle);
  if (err != CL_SUCCESS) return err;
  DeviceOp op;
  err = copy_image_op(buffer->queue, src, dst, src_origin, dst_origin, region, &op);
  return record(buffer, err, op, num_sync_points, sync_points, sync_point);
}

cl_int fedcl::api::clCommandCopyImageToBufferKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                                 const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                                 const size_t *src_origin, const size_t *region, size_t dst_offset,
                                                 cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                                 cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle) {
  cl_int err = check_recording(buffer, queue, properties, num_sync_points, sync_points, handle);
  if (err != CL_SUCCESS) return err;
  DeviceOp op;
  err = copy_image_to_buffer_op(buffer->queue, src, dst, src_origin, region, dst_offset, &op);
  return record(buffer, err, op, num_sync_points, sync_points, sync_point);
}

cl_int fedcl::api::clCommandFillBufferKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                          const cl_command_properties_khr *properties, cl_mem mem, const void *pattern,
                                          size_t pattern_size, size_t offset, size_t size, cl_uint num_sync_points,
                                          const cl_sync_point_khr *sync_points, cl_sync_point_khr *sync_point,
                                          cl_mutable_command_khr *handle) {
  cl_int err = check_recording(buffer, queue, properties, num_sync_points, sync_points, handle);
  if (err != CL_SUCCESS) return err;
  DeviceOp op;
  err = fill_buffer_op(buffer->queue, mem, pattern, pattern_size, offset, size, &op);
  return record(buffer, err, op, num_sync_points, sync_points, sync_point);
}

cl_int fedcl::api::clCommandFillImageKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                         const cl_command_properties_khr *properties, cl_mem image,
                                         const void *fill_color, const size_t *origin, const size_t *region,
                                         cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                         cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle) {
  cl_int err = check_recording(buffer, queue, properties, num_sync_points, sync_points, handle);
  if (err != CL_SUCCESS) return err;
  DeviceOp op;
  err = fill_image_op(buffer->queue, image, fill_color, origin, region, &op);
  return record(buffer, err, op, num_sync_points, sync_points, sync_point);
}

cl_int fedcl::api::clCommandNDRangeKernelKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                             const cl_command_properties_khr *properties, cl_kernel kernel,
                                             cl_uint work_dim, const size_t *global_offset, const size_t *global_size,
                                             const size_t *local_size, cl_uint num_sync_points,
                                             const cl_sync_point_khr *sync_points, cl_sync_point_khr *sync_point,
                                             cl_mutable_command_khr *handle) {
  cl_int err = check_recording(buffer, queue, properties, num_sync_points, sync_points, handle);
  if (err != CL_SUCCESS) return err;
  // Without a local size, a kernel with reqd_work_group_size runs with that size (the recorded
  // launch names it; clEnqueueNDRangeKernel leaves NULL to the backend).
  size_t required[3];
  if (!local_size && as<_cl_kernel>(kernel) && kernel->desc->compile_work_group_size[0] && work_dim >= 1 && work_dim <= 3) {
    std::copy(kernel->desc->compile_work_group_size, kernel->desc->compile_work_group_size + 3, required);
    local_size = required;
  }
  bool empty = false;
  err = check_launch(buffer->queue, kernel, work_dim, global_offset, global_size, local_size, &empty);
  if (err != CL_SUCCESS) return err;
  // fedcl does not capture printf output during a replay (no CL_COMMAND_BUFFER_CAPABILITY_KERNEL_PRINTF_KHR):
  // a kernel whose source calls printf is refused, as the extension says.
  if (program_calls_printf(kernel->program)) return CL_INVALID_OPERATION;
  // Nothing to run: the recorded command only orders, as a barrier on its sync points does.
  if (empty) return api::clCommandBarrierWithWaitListKHR(buffer, nullptr, nullptr, num_sync_points, sync_points,
                                                         sync_point, nullptr);
  return kernel_record(buffer, kernel, work_dim, global_offset, global_size, local_size, num_sync_points, sync_points,
                       sync_point);
}

cl_int fedcl::api::clGetCommandBufferInfoKHR(cl_command_buffer_khr buffer, cl_command_buffer_info_khr param,
                                             size_t size, void *value, size_t *size_ret) {
  if (!as<_cl_command_buffer_khr>(buffer)) return CL_INVALID_COMMAND_BUFFER_KHR;
  switch (param) {
    case CL_COMMAND_BUFFER_QUEUES_KHR: return info_value(size, value, size_ret, buffer->queue);
    case CL_COMMAND_BUFFER_NUM_QUEUES_KHR: return info_value(size, value, size_ret, cl_uint(1));
    case CL_COMMAND_BUFFER_REFERENCE_COUNT_KHR: return info_value(size, value, size_ret, buffer->refcount.load());
    case CL_COMMAND_BUFFER_STATE_KHR: {
      std::lock_guard<std::mutex> lock(buffer->mutex);
      cl_command_buffer_state_khr state =
          buffer->finalized ? CL_COMMAND_BUFFER_STATE_EXECUTABLE_KHR : CL_COMMAND_BUFFER_STATE_RECORDING_KHR;
      return info_value(size, value, size_ret, state);
    }
    case CL_COMMAND_BUFFER_PROPERTIES_ARRAY_KHR: return info_vector(size, value, size_ret, buffer->properties);
    case CL_COMMAND_BUFFER_CONTEXT_KHR: return info_value(size, value, size_ret, buffer->queue->context);
    default: return CL_INVALID_VALUE;
  }
}
