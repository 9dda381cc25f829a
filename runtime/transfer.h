// What the rectangle and image commands share: host memory laid out with pitches, while the wire
// always carries it tightly packed, and the shape of a read, a write and a device-side command.
#pragma once

#include <array>
#include <functional>
#include <vector>

#include "command.h"
#include "host_region.h"

namespace fedcl {

// The checks every command on a memory object starts with: a valid queue, a memory object of the
// kind the entry point takes, in the queue's context (and a device that takes images, for images).
enum class MemKind { buffer, image, any };
cl_int check_queue_mem(cl_command_queue queue, cl_mem mem, MemKind kind);

// The map flags of clEnqueueMapBuffer and clEnqueueMapImage: CL_INVALID_VALUE for unknown bits or
// CL_MAP_WRITE_INVALIDATE_REGION with another flag, CL_INVALID_OPERATION for an access the object's
// host-access flags forbid (reading: CL_MAP_READ; writing: CL_MAP_WRITE or CL_MAP_WRITE_INVALIDATE_REGION).
cl_int check_map_flags(cl_mem mem, cl_map_flags flags);

// Builds one piece's request (its own member of the Request union) and returns the wire Command
// inside it for the runtime to fill.
using BuildPiece = std::function<wire::Command::Builder(wire::Request::Builder, const RegionPiece &)>;

// Builds a command's request and returns the wire Command inside it for the runtime to fill.
using BuildRequest = std::function<wire::Command::Builder(wire::Request::Builder)>;

// The three values of an origin or a region: kept (by a builder that runs later), and set in a request.
inline std::array<size_t, 3> triple(const size_t *values) { return {values[0], values[1], values[2]}; }
void set_triple(capnp::List<uint64_t>::Builder list, const size_t *values);

// A copy between two memory objects: the request that init makes, naming src and dst, and what
// fill_rest adds for its kind of copy (offsets or origins, region, pitches).
template <typename Copy, typename FillRest>
BuildRequest copy_request(cl_mem src, cl_mem dst, Copy (wire::Request::Builder::*init)(), FillRest fill_rest) {
  uint64_t src_id = src->id, dst_id = dst->id;
  return [=](wire::Request::Builder request) {
    Copy copy = (request.*init)();
    copy.setSrc(src_id);
    copy.setDst(dst_id);
    fill_rest(copy);
    return copy.getCommand();
  };
}

// The pieces of a buffer's bytes [offset, offset + size) as reads (write false) or writes.
BuildPiece buffer_transfer(cl_mem buffer, size_t offset, bool write);

// The pieces of a rectangle of a buffer at origin (bytes, rows, slices) with the given pitches.
BuildPiece buffer_rect_transfer(cl_mem buffer, const size_t *origin, size_t row_pitch, size_t slice_pitch,
                                bool write);

// The device commands on buffers, for device_command and backend_decides.
BuildRequest buffer_copy(cl_mem src, cl_mem dst, size_t src_offset, size_t dst_offset, size_t size);
BuildRequest buffer_rect_copy(cl_mem src, cl_mem dst, const size_t *src_origin, const size_t *dst_origin,
                              const size_t *region, size_t src_row_pitch, size_t src_slice_pitch, size_t dst_row_pitch,
                              size_t dst_slice_pitch);
BuildRequest buffer_fill(cl_mem buffer, const void *pattern, size_t pattern_size, size_t offset, size_t size);

// A read of span of mem into host memory: the bytes land (unpacked, if host is pitched) before the
// command's event completes; a blocking read returns once they have. The wait list goes with the
// first piece, the event with the last.
cl_int host_read(cl_command_queue queue, cl_mem mem, const MemSpan &span, bool blocking, const HostRegion &host,
                 const BuildPiece &build,
                 cl_uint num_events, const cl_event *wait_list, cl_event *event, cl_command_type type);

// A write of span of mem from host memory: the bytes leave this process before the call returns,
// so even a non-blocking write leaves host free for reuse.
cl_int host_write(cl_command_queue queue, cl_mem mem, const MemSpan &span, const HostRegion &host,
                  const BuildPiece &build, cl_uint num_events, const cl_event *wait_list, cl_event *event,
                  cl_command_type type);

// A command that runs on the device alone, once checked: it reads source (if any) and writes dest.
// clEnqueue* sends it at once (device_command); clCommand*KHR records it into a command buffer.
struct DeviceOp {
  cl_command_type type;
  cl_mem source;  // may be null
  MemSpan source_span;
  cl_mem dest;
  MemSpan dest_span;
  BuildRequest build;
};
cl_int device_command(cl_command_queue queue, const DeviceOp &op, cl_uint num_events, const cl_event *wait_list,
                      cl_event *event);

// A device command whose validity the backends disagree on, where the specification leaves it open
// and a program may rely on its backend's answer: it waits for the backend's verdict (a round trip,
// for rare cases only) and returns it; the event, if asked for, completes after the command.
cl_int backend_decides(cl_command_queue queue, const DeviceOp &op, cl_uint num_events, const cl_event *wait_list,
                       cl_event *event);

// A command with nothing to do on the daemon but to order and to complete (markers, maps that
// need no data).
cl_int enqueue_marker(cl_command_queue queue, cl_command_type type, bool barrier, cl_uint num_events,
                      const cl_event *wait_list, cl_event *event);

// The host copy that maps of mem point into (the root buffer's or image's), allocated on first use;
// null if it cannot be. Call with root->mutex held.
uint8_t *host_mirror(cl_mem root);

}  // namespace fedcl
