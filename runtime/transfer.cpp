#include "transfer.h"

#include "coherence.h"

#include <cstdlib>
#include <cstring>

#include "device.h"

namespace fedcl {

cl_int check_queue_mem(cl_command_queue queue, cl_mem mem, MemKind kind) {
  if (!as<_cl_command_queue>(queue)) return CL_INVALID_COMMAND_QUEUE;
  if (!as<_cl_mem>(mem) || (kind != MemKind::any && mem->is_image() != (kind == MemKind::image)))
    return CL_INVALID_MEM_OBJECT;
  if (mem->context != queue->context) return CL_INVALID_CONTEXT;
  if (kind == MemKind::image && !device_supports_images(queue->device)) return CL_INVALID_OPERATION;
  return CL_SUCCESS;
}

cl_int check_map_flags(cl_mem mem, cl_map_flags flags) {
  const cl_map_flags known = CL_MAP_READ | CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION;
  bool invalidate = flags & CL_MAP_WRITE_INVALIDATE_REGION;
  if ((flags & ~known) || (invalidate && (flags & (CL_MAP_READ | CL_MAP_WRITE)))) return CL_INVALID_VALUE;
  bool reads = flags & CL_MAP_READ, writes = flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION);
  if ((reads && (mem->flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS))) ||
      (writes && (mem->flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS))))
    return CL_INVALID_OPERATION;
  return CL_SUCCESS;
}

namespace {
bool multi_daemon(cl_command_queue queue) { return queue->context->parts.size() > 1; }
}  // namespace

bool HostRegion::packed() const {
  return (rows <= 1 || row_pitch == row_bytes) && (slices <= 1 || slice_pitch == row_bytes * rows);
}

void HostRegion::pack(uint8_t *out) const {
  for (size_t z = 0; z < slices; z++)
    for (size_t y = 0; y < rows; y++, out += row_bytes)
      std::memcpy(out, base + z * slice_pitch + y * row_pitch, row_bytes);
}

void HostRegion::unpack(const uint8_t *in) const {
  for (size_t z = 0; z < slices; z++)
    for (size_t y = 0; y < rows; y++, in += row_bytes)
      std::memcpy(base + z * slice_pitch + y * row_pitch, in, row_bytes);
}

cl_int host_read(cl_command_queue queue, cl_mem mem, bool blocking, const HostRegion &host, const BuildRequest &build,
                 cl_uint num_events, const cl_event *wait_list, cl_event *event, cl_command_type type) {
  Command command(queue, type);
  cl_int err = command.begin(num_events, wait_list, event);
  if (err == CL_SUCCESS && blocking && wait_list_failed(num_events, wait_list))
    err = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
  if (err == CL_SUCCESS) err = mem_prepare(mem, command, false);
  if (err != CL_SUCCESS) return err;
  RequestMessage request;
  command.fill(build(request.root));
  size_t size = host.packed_size();
  std::shared_ptr<PendingReply> pending;
  if (host.packed()) {
    pending = command.send_call(request, host.base, size);
  } else {
    // The bytes arrive packed: they wait in staging until the receiver spreads them over host.
    std::shared_ptr<uint8_t[]> staging(new (std::nothrow) uint8_t[size]);
    if (!staging) return CL_OUT_OF_HOST_MEMORY;
    pending = command.send_call(request, staging.get(), size, [staging, host] { host.unpack(staging.get()); });
  }
  if (!blocking) return CL_SUCCESS;
  err = queue->connection->wait(*pending);
  if (err == CL_SUCCESS) err = queue->connection->take_error(mem->id);
  if (err < 0 && err != CL_DEVICE_NOT_AVAILABLE && num_events) return CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
  return err;
}

cl_int host_write(cl_command_queue queue, cl_mem mem, bool overwrites_all, const HostRegion &host,
                  const BuildRequest &build, cl_uint num_events, const cl_event *wait_list, cl_event *event,
                  cl_command_type type) {
  Command command(queue, type);
  cl_int err = command.begin(num_events, wait_list, event, multi_daemon(queue));
  if (err == CL_SUCCESS) err = mem_prepare(mem, command, overwrites_all);
  if (err != CL_SUCCESS) return err;
  std::unique_ptr<uint8_t[]> staging;
  const uint8_t *payload = host.base;
  if (!host.packed()) {
    staging.reset(new (std::nothrow) uint8_t[host.packed_size()]);
    if (!staging) return CL_OUT_OF_HOST_MEMORY;
    host.pack(staging.get());
    payload = staging.get();
  }
  RequestMessage request;
  command.fill(build(request.root));
  err = command.send(request, payload, host.packed_size());
  if (err == CL_SUCCESS && multi_daemon(queue)) mem_written(mem, queue->connection, command.event());
  return err;
}

cl_int device_command(cl_command_queue queue, cl_mem source, cl_mem dest, bool overwrites_all,
                      const BuildRequest &build, cl_uint num_events, const cl_event *wait_list, cl_event *event,
                      cl_command_type type) {
  Command command(queue, type);
  cl_int err = command.begin(num_events, wait_list, event, multi_daemon(queue));
  if (err == CL_SUCCESS && source) err = mem_prepare(source, command, false);
  if (err == CL_SUCCESS) err = mem_prepare(dest, command, overwrites_all);
  if (err != CL_SUCCESS) return err;
  RequestMessage request;
  command.fill(build(request.root));
  err = command.send(request);
  if (err == CL_SUCCESS && multi_daemon(queue)) mem_written(dest, queue->connection, command.event());
  return err;
}

cl_int backend_decides(cl_command_queue queue, cl_mem source, cl_mem dest, const BuildRequest &build,
                       cl_uint num_events, const cl_event *wait_list, cl_event *event, cl_command_type type) {
  Command command(queue, type);
  cl_int err = command.begin(num_events, wait_list, nullptr);
  if (err == CL_SUCCESS) err = mem_prepare(source, command, false);
  if (err == CL_SUCCESS) err = mem_prepare(dest, command, false);
  if (err != CL_SUCCESS) return err;
  RequestMessage request;
  command.fill(build(request.root));
  err = queue->connection->wait(*command.send_call(request, nullptr, 0));
  if (err != CL_SUCCESS || !event) return err;
  // A refused command has no event; an accepted one gets a marker's, which completes after it.
  return enqueue_marker(queue, type, false, 0, nullptr, event);
}

cl_int enqueue_marker(cl_command_queue queue, cl_command_type type, bool barrier, cl_uint num_events,
                      const cl_event *wait_list, cl_event *event) {
  Command command(queue, type);
  cl_int err = command.begin(num_events, wait_list, event);
  if (err != CL_SUCCESS) return err;
  RequestMessage request;
  command.fill(barrier ? request.root.initBarrier() : request.root.initMarker());
  return command.send(request);
}

uint8_t *host_mirror(cl_mem root) {
  if (!root->mirror)
    root->mirror = static_cast<uint8_t *>(std::aligned_alloc(4096, (root->size + 4095) & ~size_t(4095)));
  return root->mirror;
}

}  // namespace fedcl
