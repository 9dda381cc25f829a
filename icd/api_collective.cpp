// The collective commands' entry points (include/CL/cl_fedcl_transfer.h), reached through
// clGetExtensionFunctionAddressForPlatform: their arguments checked here, the collective carried out
// by runtime/collective.
#include <CL/cl_fedcl_transfer.h>

#include <functional>

#include "api.h"
#include "collective.h"
#include "command.h"
#include "transfer.h"

using namespace fedcl;

namespace {

using Combine = CollectiveCombine;
using ElementType = CollectiveElement;

// The participants' queues: valid, of one context.
cl_int take_queues(cl_uint num_queues, const cl_command_queue *queues, Collective *c) {
  if (num_queues == 0 || !queues) return CL_INVALID_VALUE;
  for (cl_uint i = 0; i < num_queues; i++) {
    if (!as<_cl_command_queue>(queues[i])) return CL_INVALID_COMMAND_QUEUE;
    if (queues[i]->context != queues[0]->context) return CL_INVALID_CONTEXT;
    c->members.push_back({queues[i]});
  }
  return CL_SUCCESS;
}

size_t offset_of(const size_t *offsets, size_t i) { return offsets ? offsets[i] : 0; }

cl_int take_reduction(cl_fedcl_reduce_op op, cl_fedcl_element_type type, Collective *c) {
  switch (op) {
    case CL_FEDCL_REDUCE_SUM: c->op = Combine::SUM; break;
    case CL_FEDCL_REDUCE_MIN: c->op = Combine::MIN; break;
    case CL_FEDCL_REDUCE_MAX: c->op = Combine::MAX; break;
    case CL_FEDCL_REDUCE_PRODUCT: c->op = Combine::PRODUCT; break;
    default: return CL_INVALID_VALUE;
  }
  switch (type) {
    case CL_FEDCL_INT32: c->element_type = ElementType::INT32; c->shape.element = 4; break;
    case CL_FEDCL_INT64: c->element_type = ElementType::INT64; c->shape.element = 8; break;
    case CL_FEDCL_FLOAT: c->element_type = ElementType::FLOAT32; c->shape.element = 4; break;
    case CL_FEDCL_DOUBLE: c->element_type = ElementType::FLOAT64; c->shape.element = 8; break;
    default: return CL_INVALID_VALUE;
  }
  return CL_SUCCESS;
}

// A range of the call, in its root buffer's bytes.
struct CallRange {
  cl_mem root;
  size_t begin, end;
  bool written;
  size_t participant;
};

cl_int check_range(cl_context context, cl_mem mem, size_t offset, size_t bytes, size_t element) {
  if (!as<_cl_mem>(mem) || mem->is_image()) return CL_INVALID_MEM_OBJECT;
  if (mem->context != context) return CL_INVALID_CONTEXT;
  if (offset > mem->size || bytes > mem->size - offset || offset % element) return CL_INVALID_VALUE;
  return CL_SUCCESS;
}

// Whether two ranges of the call conflict: one is written and they share a byte, unless they are a
// reduction's in-place source and destination of one participant.
bool conflict(const CallRange &a, const CallRange &b, bool reduction) {
  if (a.root != b.root || !(a.written || b.written) || a.begin >= b.end || b.begin >= a.end) return false;
  bool in_place = reduction && a.participant == b.participant && a.written != b.written && a.begin == b.begin &&
                  a.end == b.end;
  return !in_place;
}

// The checks every collective ends with, then the collective itself.
cl_int check_and_enqueue(Collective &c, cl_uint num_events, const cl_event *wait_list, cl_event *events) {
  const CollectiveShape &shape = c.shape;
  cl_context context = c.members[0].queue->context;
  bool reduction = shape.kind == CollectiveKind::reduce || shape.kind == CollectiveKind::all_reduce;
  if (shape.root >= shape.participants || shape.bytes == 0 || shape.bytes % shape.element) return CL_INVALID_VALUE;
  std::vector<CallRange> ranges;
  for (size_t p = 0; p < shape.participants; p++) {
    const CollectiveMember &m = c.members[p];
    size_t source = collective_source_bytes(shape, p), destination = collective_destination_bytes(shape, p);
    for (auto [mem, offset, bytes, written] : {std::tuple{m.source, m.source_offset, source, false},
                                               std::tuple{m.destination, m.destination_offset, destination, true}}) {
      if (bytes == 0) continue;
      cl_int err = check_range(context, mem, offset, bytes, shape.element);
      if (err != CL_SUCCESS) return err;
      cl_mem root = mem->parent ? mem->parent : mem;
      size_t begin = offset + (mem->parent ? mem->origin : 0);
      ranges.push_back({root, begin, begin + bytes, written, p});
    }
  }
  for (size_t i = 0; i < ranges.size(); i++)
    for (size_t j = i + 1; j < ranges.size(); j++)
      if (conflict(ranges[i], ranges[j], reduction)) return CL_MEM_COPY_OVERLAP;
  cl_int err = check_wait_list(context, num_events, wait_list);
  if (err != CL_SUCCESS) return err;
  return enqueue_collective(c, num_events, wait_list, events);
}

Collective collective(CollectiveKind kind, cl_uint num_queues, cl_uint root, size_t size, cl_command_type type) {
  Collective c;
  c.shape = {kind, num_queues, root, size, 1};
  c.command_type = type;
  return c;
}

// Every participant's source (source set) or destination: buffers[i] at offsets[i].
cl_int take_all(Collective &c, bool source, const cl_mem *buffers, const size_t *offsets) {
  if (!buffers) return CL_INVALID_VALUE;
  for (size_t i = 0; i < c.members.size(); i++) {
    CollectiveMember &m = c.members[i];
    (source ? m.source : m.destination) = buffers[i];
    (source ? m.source_offset : m.destination_offset) = offset_of(offsets, i);
  }
  return CL_SUCCESS;
}

// The root's alone.
cl_int take_root(Collective &c, bool source, cl_mem buffer, size_t offset) {
  if (c.shape.root >= c.members.size()) return CL_INVALID_VALUE;
  CollectiveMember &m = c.members[c.shape.root];
  (source ? m.source : m.destination) = buffer;
  (source ? m.source_offset : m.destination_offset) = offset;
  return CL_SUCCESS;
}

// Runs each step of taking the arguments until one fails, then the checks and the collective.
cl_int enqueue(Collective &c, std::initializer_list<std::function<cl_int()>> takes, cl_uint num_events,
               const cl_event *wait_list, cl_event *events) {
  for (const auto &take : takes) {
    cl_int err = take();
    if (err != CL_SUCCESS) return err;
  }
  return check_and_enqueue(c, num_events, wait_list, events);
}

}  // namespace

cl_int fedcl::api::clEnqueueBroadcastBuffer(cl_uint num_queues, const cl_command_queue *queues, cl_uint root,
                                            const cl_mem *buffers, const size_t *offsets, size_t size,
                                            cl_uint num_events, const cl_event *wait_list, cl_event *events) {
  Collective c = collective(CollectiveKind::broadcast, num_queues, root, size, CL_COMMAND_BROADCAST_BUFFER_FEDCL);
  return enqueue(c, {[&] { return take_queues(num_queues, queues, &c); }, [&] { return take_all(c, false, buffers, offsets); }},
                 num_events, wait_list, events);
}

cl_int fedcl::api::clEnqueueScatterBuffer(cl_uint num_queues, const cl_command_queue *queues, cl_uint root,
                                          cl_mem src_buffer, size_t src_offset, const cl_mem *dst_buffers,
                                          const size_t *dst_offsets, size_t size_per_queue, cl_uint num_events,
                                          const cl_event *wait_list, cl_event *events) {
  Collective c = collective(CollectiveKind::scatter, num_queues, root, size_per_queue, CL_COMMAND_SCATTER_BUFFER_FEDCL);
  return enqueue(c,
                 {[&] { return take_queues(num_queues, queues, &c); }, [&] { return take_root(c, true, src_buffer, src_offset); },
                  [&] { return take_all(c, false, dst_buffers, dst_offsets); }},
                 num_events, wait_list, events);
}

cl_int fedcl::api::clEnqueueGatherBuffer(cl_uint num_queues, const cl_command_queue *queues, cl_uint root,
                                         const cl_mem *src_buffers, const size_t *src_offsets, cl_mem dst_buffer,
                                         size_t dst_offset, size_t size_per_queue, cl_uint num_events,
                                         const cl_event *wait_list, cl_event *events) {
  Collective c = collective(CollectiveKind::gather, num_queues, root, size_per_queue, CL_COMMAND_GATHER_BUFFER_FEDCL);
  return enqueue(c,
                 {[&] { return take_queues(num_queues, queues, &c); }, [&] { return take_all(c, true, src_buffers, src_offsets); },
                  [&] { return take_root(c, false, dst_buffer, dst_offset); }},
                 num_events, wait_list, events);
}

cl_int fedcl::api::clEnqueueAllGatherBuffer(cl_uint num_queues, const cl_command_queue *queues, const cl_mem *src_buffers,
                                            const size_t *src_offsets, const cl_mem *dst_buffers,
                                            const size_t *dst_offsets, size_t size_per_queue, cl_uint num_events,
                                            const cl_event *wait_list, cl_event *events) {
  Collective c = collective(CollectiveKind::all_gather, num_queues, 0, size_per_queue, CL_COMMAND_ALL_GATHER_BUFFER_FEDCL);
  return enqueue(c,
                 {[&] { return take_queues(num_queues, queues, &c); }, [&] { return take_all(c, true, src_buffers, src_offsets); },
                  [&] { return take_all(c, false, dst_buffers, dst_offsets); }},
                 num_events, wait_list, events);
}

cl_int fedcl::api::clEnqueueReduceBuffer(cl_uint num_queues, const cl_command_queue *queues, cl_uint root,
                                         const cl_mem *src_buffers, const size_t *src_offsets, cl_mem dst_buffer,
                                         size_t dst_offset, size_t size, cl_fedcl_reduce_op op,
                                         cl_fedcl_element_type type, cl_uint num_events, const cl_event *wait_list,
                                         cl_event *events) {
  Collective c = collective(CollectiveKind::reduce, num_queues, root, size, CL_COMMAND_REDUCE_BUFFER_FEDCL);
  return enqueue(c,
                 {[&] { return take_queues(num_queues, queues, &c); }, [&] { return take_reduction(op, type, &c); },
                  [&] { return take_all(c, true, src_buffers, src_offsets); },
                  [&] { return take_root(c, false, dst_buffer, dst_offset); }},
                 num_events, wait_list, events);
}

cl_int fedcl::api::clEnqueueAllReduceBuffer(cl_uint num_queues, const cl_command_queue *queues, const cl_mem *src_buffers,
                                            const size_t *src_offsets, const cl_mem *dst_buffers,
                                            const size_t *dst_offsets, size_t size, cl_fedcl_reduce_op op,
                                            cl_fedcl_element_type type, cl_uint num_events, const cl_event *wait_list,
                                            cl_event *events) {
  Collective c = collective(CollectiveKind::all_reduce, num_queues, 0, size, CL_COMMAND_ALL_REDUCE_BUFFER_FEDCL);
  return enqueue(c,
                 {[&] { return take_queues(num_queues, queues, &c); }, [&] { return take_reduction(op, type, &c); },
                  [&] { return take_all(c, true, src_buffers, src_offsets); },
                  [&] { return take_all(c, false, dst_buffers, dst_offsets); }},
                 num_events, wait_list, events);
}

cl_int fedcl::api::clEnqueueAlltoAllBuffer(cl_uint num_queues, const cl_command_queue *queues, const cl_mem *src_buffers,
                                           const size_t *src_offsets, const cl_mem *dst_buffers,
                                           const size_t *dst_offsets, size_t size_per_pair, cl_uint num_events,
                                           const cl_event *wait_list, cl_event *events) {
  Collective c = collective(CollectiveKind::all_to_all, num_queues, 0, size_per_pair, CL_COMMAND_ALL_TO_ALL_BUFFER_FEDCL);
  return enqueue(c,
                 {[&] { return take_queues(num_queues, queues, &c); }, [&] { return take_all(c, true, src_buffers, src_offsets); },
                  [&] { return take_all(c, false, dst_buffers, dst_offsets); }},
                 num_events, wait_list, events);
}
