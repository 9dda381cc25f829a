// Enqueued commands: checked here, sent without waiting unless the call blocks.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "api.h"
#include "host_stream.h"
#include "coherence.h"
#include "command.h"
#include "image.h"
#include "kernel.h"
#include "transfer.h"

using namespace fedcl;

namespace {

bool in_bounds(cl_mem mem, size_t offset, size_t size) { return offset <= mem->size && size <= mem->size - offset; }

// ---------------------------------------------------------------------------------------------
// Launch geometry, checked in the order the local drivers (PoCL, NVIDIA) check it.

// The largest size_t of the device (its address bits), which global ids must not pass.
size_t device_size_max(cl_device_id device) { return device->address_bits == 32 ? UINT32_MAX : SIZE_MAX; }

// Ids that would wrap around: the specification's CL_INVALID_GLOBAL_OFFSET. (PoCL runs such a
// launch inside fedcld's process, NVIDIA answers CL_OUT_OF_RESOURCES.)
cl_int check_global_offset(cl_device_id device, cl_uint work_dim, const size_t *offset, const size_t *global) {
  if (!offset || !global) return CL_SUCCESS;
  size_t max = device_size_max(device);
  for (cl_uint d = 0; d < work_dim; d++)
    if (offset[d] > max || global[d] > max - offset[d]) return CL_INVALID_GLOBAL_OFFSET;
  return CL_SUCCESS;
}

bool empty_range(cl_uint work_dim, const size_t *global) {
  return !global || std::any_of(global, global + work_dim, [](size_t size) { return size == 0; });
}

// Local sizes against the device: the total comes first (both backends answer
// CL_INVALID_WORK_GROUP_SIZE when it is too large, even if one dimension is too).
cl_int check_local_size(cl_device_id device, cl_uint work_dim, const size_t *local) {
  size_t total = 1;
  for (cl_uint d = 0; d < work_dim; d++) {
    if (local[d] == 0) return CL_INVALID_WORK_GROUP_SIZE;
    total = __builtin_mul_overflow(total, local[d], &total) ? SIZE_MAX : total;
  }
  if (device->max_work_group_size && total > device->max_work_group_size) return CL_INVALID_WORK_GROUP_SIZE;
  for (cl_uint d = 0; d < work_dim; d++)
    if (device->max_work_item_sizes[d] && local[d] > device->max_work_item_sizes[d]) return CL_INVALID_WORK_ITEM_SIZE;
  return CL_SUCCESS;
}

// reqd_work_group_size: the launch must name exactly that local size (dimensions past work_dim count as 1).
cl_int check_required_size(const KernelDesc &desc, cl_uint work_dim, const size_t *local) {
  const size_t *required = desc.compile_work_group_size;
  if (required[0] == 0) return CL_SUCCESS;
  if (!local) return CL_INVALID_WORK_GROUP_SIZE;
  for (cl_uint d = 0; d < 3; d++)
    if (required[d] != (d < work_dim ? local[d] : 1)) return CL_INVALID_WORK_GROUP_SIZE;
  return CL_SUCCESS;
}

// Without non-uniform work-groups (OpenCL C before 2.0, -cl-uniform-work-group-size, or a device
// without them) the global size must be a multiple of the local size.
bool uniform_only(cl_kernel kernel, cl_device_id device) {
  const auto &devices = kernel->uniform_only;
  return !device->non_uniform_work_groups || std::find(devices.begin(), devices.end(), device) != devices.end();
}

cl_int check_uniform(cl_kernel kernel, cl_device_id device, cl_uint work_dim, const size_t *global, const size_t *local) {
  if (!local || !uniform_only(kernel, device)) return CL_SUCCESS;
  for (cl_uint d = 0; d < work_dim; d++)
    if (global[d] % local[d]) return CL_INVALID_WORK_GROUP_SIZE;
  return CL_SUCCESS;
}

}  // namespace

// Everything clEnqueueNDRangeKernel refuses about the sizes. *empty: nothing to run (a zero or NULL
// global size, allowed from OpenCL 2.1 on); the kernel's own rules do not apply to an empty range.
cl_int fedcl::check_launch_geometry(cl_kernel kernel, cl_device_id device, cl_uint work_dim, const size_t *offset,
                                   const size_t *global, const size_t *local, bool *empty) {
  if (work_dim < 1 || work_dim > 3) return CL_INVALID_WORK_DIMENSION;
  *empty = empty_range(work_dim, global);
  if (*empty && device->version < 21) return CL_INVALID_GLOBAL_WORK_SIZE;
  cl_int err = check_global_offset(device, work_dim, offset, global);
  if (err == CL_SUCCESS && local) err = check_local_size(device, work_dim, local);
  if (err != CL_SUCCESS || *empty) return err;
  err = check_required_size(*kernel->desc, work_dim, local);
  if (err == CL_SUCCESS) err = check_uniform(kernel, device, work_dim, global, local);
  return err;
}

namespace {

// A read or write of no bytes (OpenCL 3.0 names no error for it; PoCL and NVIDIA accept it): nothing
// moves, but the command still orders and completes like any other, and a blocking one waits for that.
cl_int empty_transfer(cl_command_queue queue, bool blocking, cl_uint num_events, const cl_event *wait_list,
                      cl_event *event, cl_command_type type) {
  cl_event own = nullptr;
  cl_event *out = (blocking && !event) ? &own : event;
  cl_int err = enqueue_marker(queue, type, false, num_events, wait_list, out);
  if (err != CL_SUCCESS || !blocking) return err;
  err = api::clWaitForEvents(1, out);
  if (own) api::clReleaseEvent(own);
  return err;
}

}  // namespace

cl_int fedcl::api::clEnqueueReadBuffer(cl_command_queue queue, cl_mem mem, cl_bool blocking, size_t offset,
                                       size_t size, void *ptr, cl_uint num_events, const cl_event *wait_list,
                                       cl_event *event) {
  cl_int err = check_queue_mem(queue, mem, MemKind::buffer);
  if (err != CL_SUCCESS) return err;
  if (!ptr || !in_bounds(mem, offset, size)) return CL_INVALID_VALUE;
  if (mem->flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS)) return CL_INVALID_OPERATION;
  if (size == 0) return empty_transfer(queue, blocking, num_events, wait_list, event, CL_COMMAND_READ_BUFFER);
  // A local session's reads land in its shared memory and are copied out once, piece by piece.
  if (size >= read_stream_min(queue->device) && !sync_mode() && !queue->connection->shares_memory())
    return read_streamed(queue, mem, blocking, offset, size, ptr, num_events, wait_list, event);
  return host_read(queue, mem, MemSpan::read(offset, size), blocking, HostRegion::contiguous(ptr, size),
                   buffer_transfer(mem, offset, false),
                   num_events, wait_list, event, CL_COMMAND_READ_BUFFER);
}

cl_int fedcl::api::clEnqueueWriteBuffer(cl_command_queue queue, cl_mem mem, cl_bool blocking, size_t offset,
                                        size_t size, const void *ptr, cl_uint num_events,
                                        const cl_event *wait_list, cl_event *event) {
  cl_int err = check_queue_mem(queue, mem, MemKind::buffer);
  if (err != CL_SUCCESS) return err;
  if (!ptr || !in_bounds(mem, offset, size)) return CL_INVALID_VALUE;
  if (mem->flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)) return CL_INVALID_OPERATION;
  if (size == 0) return empty_transfer(queue, blocking, num_events, wait_list, event, CL_COMMAND_WRITE_BUFFER);
  // Behind a user event that has not completed (an MPI receive's, clCreateEventFromMPIRequest), a
  // non-blocking write reads ptr once it has: the memory is still being filled. Otherwise the bytes
  // leave this process before the call returns, so even a non-blocking write may reuse ptr.
  if (!blocking && num_events && check_wait_list(queue->context, num_events, wait_list) == CL_SUCCESS &&
      waits_for_user_event(num_events, wait_list))
    return enqueue_write_when_ready(queue, mem, offset, size, ptr, num_events, wait_list, event);
  return host_write(queue, mem, MemSpan::written(offset, size), HostRegion::contiguous(ptr, size),
                    buffer_transfer(mem, offset, true), num_events, wait_list, event, CL_COMMAND_WRITE_BUFFER);
}

cl_int fedcl::copy_buffer_op(cl_command_queue queue, cl_mem src, cl_mem dst, size_t src_offset, size_t dst_offset,
                             size_t size, DeviceOp *op) {
  cl_int err = check_queue_mem(queue, src, MemKind::buffer);
  if (err == CL_SUCCESS) err = check_queue_mem(queue, dst, MemKind::buffer);
  if (err != CL_SUCCESS) return err;
  if (!in_bounds(src, src_offset, size) || !in_bounds(dst, dst_offset, size)) return CL_INVALID_VALUE;
  if (src == dst && src_offset < dst_offset + size && dst_offset < src_offset + size) return CL_MEM_COPY_OVERLAP;
  *op = {CL_COMMAND_COPY_BUFFER, src, MemSpan::read(src_offset, size), dst, MemSpan::written(dst_offset, size),
         buffer_copy(src, dst, src_offset, dst_offset, size)};
  return CL_SUCCESS;
}

cl_int fedcl::api::clEnqueueCopyBuffer(cl_command_queue queue, cl_mem src, cl_mem dst, size_t src_offset,
                                       size_t dst_offset, size_t size, cl_uint num_events,
                                       const cl_event *wait_list, cl_event *event) {
  DeviceOp op;
  cl_int err = copy_buffer_op(queue, src, dst, src_offset, dst_offset, size, &op);
  if (err != CL_SUCCESS) return err;
  // A copy of no bytes: OpenCL 3.0 names no error for it; NVIDIA accepts it, PoCL answers CL_INVALID_VALUE.
  if (size == 0) return backend_decides(queue, op, num_events, wait_list, event);
  return device_command(queue, op, num_events, wait_list, event);
}

cl_int fedcl::fill_buffer_op(cl_command_queue queue, cl_mem mem, const void *pattern, size_t pattern_size, size_t offset,
                             size_t size, DeviceOp *op) {
  cl_int err = check_queue_mem(queue, mem, MemKind::buffer);
  if (err != CL_SUCCESS) return err;
  bool power_of_two = pattern_size && (pattern_size & (pattern_size - 1)) == 0;
  if (!pattern || !power_of_two || pattern_size > 128 || offset % pattern_size || size % pattern_size ||
      !in_bounds(mem, offset, size))
    return CL_INVALID_VALUE;
  *op = {CL_COMMAND_FILL_BUFFER, nullptr, {}, mem, MemSpan::written(offset, size),
         buffer_fill(mem, pattern, pattern_size, offset, size)};
  return CL_SUCCESS;
}

cl_int fedcl::api::clEnqueueFillBuffer(cl_command_queue queue, cl_mem mem, const void *pattern, size_t pattern_size,
                                       size_t offset, size_t size, cl_uint num_events, const cl_event *wait_list,
                                       cl_event *event) {
  DeviceOp op;
  cl_int err = fill_buffer_op(queue, mem, pattern, pattern_size, offset, size, &op);
  if (err != CL_SUCCESS) return err;
  return device_command(queue, op, num_events, wait_list, event);
}

// Maps point into host memory fedcl owns (or the application's, for CL_MEM_USE_HOST_PTR): a map
// reads the region there, an unmap writes it back.
void *fedcl::api::clEnqueueMapBuffer(cl_command_queue queue, cl_mem mem, cl_bool blocking, cl_map_flags flags,
                                     size_t offset, size_t size, cl_uint num_events, const cl_event *wait_list,
                                     cl_event *event, cl_int *errcode_ret) {
  cl_int err = check_queue_mem(queue, mem, MemKind::buffer);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  if (size == 0 || !in_bounds(mem, offset, size)) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  err = check_map_flags(mem, flags);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  // A write map shows the region's contents too (fedcl reads them, whatever the host-access flags:
  // the daemon's object has none); only an invalidating map starts from nothing.
  bool reads = !(flags & CL_MAP_WRITE_INVALIDATE_REGION);

  cl_mem root = mem->parent ? mem->parent : mem;
  uint8_t *pointer;
  {
    std::lock_guard<std::mutex> lock(root->mutex);
    if (mem->host_ptr) {
      pointer = static_cast<uint8_t *>(mem->host_ptr) + offset;
    } else {
      if (!host_mirror(root)) return set_error(errcode_ret, CL_MAP_FAILURE), nullptr;
      pointer = root->mirror + mem->origin + offset;
    }
  }
  err = reads ? host_read(queue, mem, MemSpan::read(offset, size), blocking, HostRegion::contiguous(pointer, size),
                          buffer_transfer(mem, offset, false),
                          num_events, wait_list, event, CL_COMMAND_MAP_BUFFER)
              : enqueue_marker(queue, CL_COMMAND_MAP_BUFFER, false, num_events, wait_list, event);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  {
    std::lock_guard<std::mutex> lock(mem->mutex);
    mem->mappings.push_back({pointer, offset, size, flags});
  }
  set_error(errcode_ret, CL_SUCCESS);
  return pointer;
}

cl_int fedcl::api::clEnqueueUnmapMemObject(cl_command_queue queue, cl_mem mem, void *pointer, cl_uint num_events,
                                           const cl_event *wait_list, cl_event *event) {
  cl_int err = check_queue_mem(queue, mem, MemKind::any);
  if (err != CL_SUCCESS) return err;
  _cl_mem::Mapping mapping{};
  {
    std::lock_guard<std::mutex> lock(mem->mutex);
    auto it = std::find_if(mem->mappings.begin(), mem->mappings.end(), [&](const auto &m) { return m.pointer == pointer; });
    if (it == mem->mappings.end()) return CL_INVALID_VALUE;
    mapping = *it;
    mem->mappings.erase(it);
  }
  bool written = mapping.flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION);
  if (written && mem->is_image()) return image_write_back(queue, mem, mapping, num_events, wait_list, event);
  if (written)
    return host_write(queue, mem, MemSpan::written(mapping.offset, mapping.size),
                      HostRegion::contiguous(pointer, mapping.size), buffer_transfer(mem, mapping.offset, true),
                      num_events, wait_list, event, CL_COMMAND_UNMAP_MEM_OBJECT);
  return enqueue_marker(queue, CL_COMMAND_UNMAP_MEM_OBJECT, false, num_events, wait_list, event);
}

cl_int fedcl::check_launch(cl_command_queue queue, cl_kernel kernel, cl_uint work_dim, const size_t *global_offset,
                           const size_t *global_size, const size_t *local_size, bool *empty, bool args_may_wait) {
  if (!as<_cl_kernel>(kernel)) return CL_INVALID_KERNEL;
  if (kernel->program->context != queue->context) return CL_INVALID_CONTEXT;
  if (!(kernel->present & bit(queue->connection))) return CL_INVALID_PROGRAM_EXECUTABLE;
  cl_int err = check_launch_geometry(kernel, queue->device, work_dim, global_offset, global_size, local_size, empty);
  if (err != CL_SUCCESS) return err;
  std::lock_guard<std::mutex> lock(kernel->mutex);
  for (const auto &arg : kernel->args)
    if (arg.kind == _cl_kernel::Arg::unset && !args_may_wait) return CL_INVALID_KERNEL_ARGS;
  return CL_SUCCESS;
}

cl_int fedcl::api::clEnqueueNDRangeKernel(cl_command_queue queue, cl_kernel kernel, cl_uint work_dim,
                                          const size_t *global_offset, const size_t *global_size,
                                          const size_t *local_size, cl_uint num_events, const cl_event *wait_list,
                                          cl_event *event) {
  if (!as<_cl_command_queue>(queue)) return CL_INVALID_COMMAND_QUEUE;
  bool empty = false;
  cl_int err = check_launch(queue, kernel, work_dim, global_offset, global_size, local_size, &empty);
  if (err != CL_SUCCESS) return err;
  // Nothing to run: the command only orders and completes, as a marker does.
  if (empty) return enqueue_marker(queue, CL_COMMAND_NDRANGE_KERNEL, false, num_events, wait_list, event);
  return kernel_launch(queue, kernel, work_dim, global_offset, global_size, local_size, num_events, wait_list, event);
}

cl_int fedcl::api::clEnqueueTask(cl_command_queue queue, cl_kernel kernel, cl_uint num_events,
                                 const cl_event *wait_list, cl_event *event) {
  const size_t one = 1;
  return api::clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &one, &one, num_events, wait_list, event);
}

cl_int fedcl::api::clEnqueueMarkerWithWaitList(cl_command_queue queue, cl_uint num_events, const cl_event *wait_list,
                                               cl_event *event) {
  if (!as<_cl_command_queue>(queue)) return CL_INVALID_COMMAND_QUEUE;
  return enqueue_marker(queue, CL_COMMAND_MARKER, false, num_events, wait_list, event);
}

cl_int fedcl::api::clEnqueueBarrierWithWaitList(cl_command_queue queue, cl_uint num_events,
                                                const cl_event *wait_list, cl_event *event) {
  if (!as<_cl_command_queue>(queue)) return CL_INVALID_COMMAND_QUEUE;
  return enqueue_marker(queue, CL_COMMAND_BARRIER, true, num_events, wait_list, event);
}

cl_int fedcl::api::clEnqueueMarker(cl_command_queue queue, cl_event *event) {
  if (!as<_cl_command_queue>(queue)) return CL_INVALID_COMMAND_QUEUE;
  if (!event) return CL_INVALID_VALUE;
  return enqueue_marker(queue, CL_COMMAND_MARKER, false, 0, nullptr, event);
}

cl_int fedcl::api::clEnqueueBarrier(cl_command_queue queue) {
  if (!as<_cl_command_queue>(queue)) return CL_INVALID_COMMAND_QUEUE;
  return enqueue_marker(queue, CL_COMMAND_BARRIER, true, 0, nullptr, nullptr);
}

cl_int fedcl::api::clEnqueueWaitForEvents(cl_command_queue queue, cl_uint num_events, const cl_event *events) {
  if (!as<_cl_command_queue>(queue)) return CL_INVALID_COMMAND_QUEUE;
  if (num_events == 0 || !events) return CL_INVALID_VALUE;
  for (cl_uint i = 0; i < num_events; i++)
    if (!as<_cl_event>(events[i])) return CL_INVALID_EVENT;
  return enqueue_marker(queue, CL_COMMAND_BARRIER, true, num_events, events, nullptr);
}

cl_int fedcl::api::clEnqueueMigrateMemObjects(cl_command_queue queue, cl_uint num_mems, const cl_mem *mems,
                                              cl_mem_migration_flags flags, cl_uint num_events,
                                              const cl_event *wait_list, cl_event *event) {
  if (!as<_cl_command_queue>(queue)) return CL_INVALID_COMMAND_QUEUE;
  if (num_mems == 0 || !mems || (flags & ~(CL_MIGRATE_MEM_OBJECT_HOST | CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED)))
    return CL_INVALID_VALUE;
  for (cl_uint i = 0; i < num_mems; i++) {
    cl_int err = check_queue_mem(queue, mems[i], MemKind::any);
    if (err != CL_SUCCESS) return err;
  }
  return mem_migrate(queue, num_mems, mems, flags, num_events, wait_list, event);
}
