#include "transfer.h"

#include "coherence.h"

#include <array>
#include <cstdlib>

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

void set_triple(capnp::List<uint64_t>::Builder list, const size_t *values) {
  for (unsigned i = 0; i < 3; i++) list.set(i, values[i]);
}

BuildPiece buffer_transfer(cl_mem buffer, size_t offset, bool write) {
  uint64_t id = buffer->id;
  return [id, offset, write](wire::Request::Builder request, const RegionPiece &piece) {
    auto fill = [&](auto transfer) {
      transfer.setBuffer(id);
      transfer.setOffset(offset + piece.x);
      transfer.setSize(piece.width);
      return transfer.getCommand();
    };
    return write ? fill(request.initWriteBuffer()) : fill(request.initReadBuffer());
  };
}

BuildPiece buffer_rect_transfer(cl_mem buffer, const size_t *origin, size_t row_pitch, size_t slice_pitch,
                                bool write) {
  uint64_t id = buffer->id;
  std::array<size_t, 3> at{origin[0], origin[1], origin[2]};
  return [id, at, row_pitch, slice_pitch, write](wire::Request::Builder request, const RegionPiece &piece) {
    auto fill = [&](auto transfer) {
      transfer.setBuffer(id);
      auto origin_list = transfer.initBufferOrigin(3);
      origin_list.set(0, at[0] + piece.x);
      origin_list.set(1, at[1] + piece.y);
      origin_list.set(2, at[2] + piece.z);
      auto region_list = transfer.initRegion(3);
      region_list.set(0, piece.width);
      region_list.set(1, piece.rows);
      region_list.set(2, piece.slices);
      transfer.setBufferRowPitch(row_pitch);
      transfer.setBufferSlicePitch(slice_pitch);
      return transfer.getCommand();
    };
    return write ? fill(request.initWriteBufferRect()) : fill(request.initReadBufferRect());
  };
}

BuildRequest buffer_copy(cl_mem src, cl_mem dst, size_t src_offset, size_t dst_offset, size_t size) {
  return copy_request(src, dst, &wire::Request::Builder::initCopyBuffer, [=](auto copy) {
    copy.setSrcOffset(src_offset);
    copy.setDstOffset(dst_offset);
    copy.setSize(size);
  });
}

BuildRequest buffer_rect_copy(cl_mem src, cl_mem dst, const size_t *src_origin, const size_t *dst_origin,
                              const size_t *region, size_t src_row_pitch, size_t src_slice_pitch, size_t dst_row_pitch,
                              size_t dst_slice_pitch) {
  auto from = triple(src_origin), to = triple(dst_origin), extent = triple(region);
  return copy_request(src, dst, &wire::Request::Builder::initCopyBufferRect, [=](auto copy) {
    set_triple(copy.initSrcOrigin(3), from.data());
    set_triple(copy.initDstOrigin(3), to.data());
    set_triple(copy.initRegion(3), extent.data());
    copy.setSrcRowPitch(src_row_pitch);
    copy.setSrcSlicePitch(src_slice_pitch);
    copy.setDstRowPitch(dst_row_pitch);
    copy.setDstSlicePitch(dst_slice_pitch);
  });
}

BuildRequest buffer_fill(cl_mem buffer, const void *pattern, size_t pattern_size, size_t offset, size_t size) {
  const auto *bytes = static_cast<const uint8_t *>(pattern);
  std::vector<uint8_t> copy(bytes, bytes + pattern_size);
  uint64_t id = buffer->id;
  return [id, copy, offset, size](wire::Request::Builder request) {
    auto fill = request.initFillBuffer();
    fill.setBuffer(id);
    fill.setPattern(kj::arrayPtr(copy.data(), copy.size()));
    fill.setOffset(offset);
    fill.setSize(size);
    return fill.getCommand();
  };
}

namespace {

size_t transfer_unit(cl_mem mem) { return mem->is_image() ? mem->element_size : 1; }

// Sends one piece of a read; its bytes land in host (through staging, if host is pitched).
std::shared_ptr<PendingReply> send_read_piece(Command &command, const HostRegion &host, const RegionPiece &piece,
                                              const BuildPiece &build) {
  RequestMessage request;
  command.fill(build(request.root, piece));
  HostRegion part = host.piece(piece);
  size_t size = part.packed_size();
  if (part.packed()) return command.send_call(request, part.base, size);
  // The bytes arrive packed: they wait in staging until the receiver spreads them over host.
  std::shared_ptr<uint8_t[]> staging(new (std::nothrow) uint8_t[size]);
  if (!staging) return nullptr;
  return command.send_call(request, staging.get(), size, [staging, part] { part.unpack(staging.get()); });
}

}  // namespace

cl_int host_read(cl_command_queue queue, cl_mem mem, const MemSpan &span, bool blocking, const HostRegion &host,
                 const BuildPiece &build,
                 cl_uint num_events, const cl_event *wait_list, cl_event *event, cl_command_type type) {
  cl_int err = check_wait_list(queue->context, num_events, wait_list);
  if (err == CL_SUCCESS && blocking && wait_list_failed(num_events, wait_list))
    err = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
  if (err != CL_SUCCESS) return err;
  std::vector<RegionPiece> pieces = cut_region(host, transfer_unit(mem), queue->in_order());
  std::vector<std::shared_ptr<PendingReply>> pending;
  for (size_t i = 0; i < pieces.size(); i++) {
    bool first = i == 0, last = i + 1 == pieces.size();
    Command command(queue, type);
    err = command.begin(first ? num_events : 0, first ? wait_list : nullptr, last ? event : nullptr);
    if (err == CL_SUCCESS && first) err = mem_prepare(mem, command, span);
    if (err != CL_SUCCESS) return err;
    auto reply = send_read_piece(command, host, pieces[i], build);
    if (!reply) return CL_OUT_OF_HOST_MEMORY;
    pending.push_back(std::move(reply));
  }
  if (!blocking) return CL_SUCCESS;
  for (auto &reply : pending) {
    err = queue->connection->wait(*reply);
    if (err != CL_SUCCESS) break;
  }
  if (err == CL_SUCCESS) err = queue->connection->take_error(mem->id);
  if (err < 0 && err != CL_DEVICE_NOT_AVAILABLE && num_events) return CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
  return err;
}

cl_int host_write(cl_command_queue queue, cl_mem mem, const MemSpan &span, const HostRegion &host,
                  const BuildPiece &build, cl_uint num_events, const cl_event *wait_list, cl_event *event,
                  cl_command_type type) {
  std::vector<RegionPiece> pieces = cut_region(host, transfer_unit(mem), queue->in_order());
  std::unique_ptr<uint8_t[]> staging;
  for (size_t i = 0; i < pieces.size(); i++) {
    bool first = i == 0, last = i + 1 == pieces.size();
    Command command(queue, type);
    cl_int err = command.begin(first ? num_events : 0, first ? wait_list : nullptr, last ? event : nullptr,
                               last && multi_daemon(queue));
    command.leave_unwatched();  // even a blocking write returns once its bytes have left
    if (err == CL_SUCCESS && first) err = mem_prepare(mem, command, span);
    if (err != CL_SUCCESS) return err;
    HostRegion part = host.piece(pieces[i]);
    const uint8_t *payload = part.base;
    if (!part.packed()) {
      if (!staging) staging.reset(new (std::nothrow) uint8_t[part.packed_size()]);
      if (!staging) return CL_OUT_OF_HOST_MEMORY;
      part.pack(staging.get());
      payload = staging.get();
    }
    RequestMessage request;
    command.fill(build(request.root, pieces[i]));
    err = command.send(request, payload, part.packed_size());
    if (err != CL_SUCCESS) return err;
    if (last && multi_daemon(queue)) mem_written(mem, queue->connection, command.event(), span);
  }
  return CL_SUCCESS;
}

cl_int device_command(cl_command_queue queue, const DeviceOp &op, cl_uint num_events, const cl_event *wait_list,
                      cl_event *event) {
  Command command(queue, op.type);
  cl_int err = command.begin(num_events, wait_list, event, multi_daemon(queue));
  command.leave_unwatched();
  if (err == CL_SUCCESS && op.source) err = mem_prepare(op.source, command, op.source_span);
  if (err == CL_SUCCESS) err = mem_prepare(op.dest, command, op.dest_span);
  if (err != CL_SUCCESS) return err;
  RequestMessage request;
  command.fill(op.build(request.root));
  err = command.send(request);
  if (err == CL_SUCCESS && multi_daemon(queue)) mem_written(op.dest, queue->connection, command.event(), op.dest_span);
  return err;
}

cl_int backend_decides(cl_command_queue queue, const DeviceOp &op, cl_uint num_events, const cl_event *wait_list,
                       cl_event *event) {
  Command command(queue, op.type);
  cl_int err = command.begin(num_events, wait_list, nullptr);
  if (err == CL_SUCCESS && op.source) err = mem_prepare(op.source, command, op.source_span);
  if (err == CL_SUCCESS) err = mem_prepare(op.dest, command, MemSpan::read(op.dest_span.offset, op.dest_span.size));
  if (err != CL_SUCCESS) return err;
  RequestMessage request;
  command.fill(op.build(request.root));
  err = queue->connection->wait(*command.send_call(request, nullptr, 0));
  if (err != CL_SUCCESS || !event) return err;
  // A refused command has no event; an accepted one gets a marker's, which completes after it.
  return enqueue_marker(queue, op.type, false, 0, nullptr, event);
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
