#include "peer_chunks.h"

#include <algorithm>
#include <utility>

#include "transfer_chunks.h"

namespace fedcld {

// ---------------------------------------------------------------------------------------------
// OwnEvent

OwnEvent::OwnEvent(Call &call) : id_(call.event), context_(call.context) {
  if (id_ == 0) return;
  // Before the event exists: a refused id must not leave this object's reference behind.
  if (!call.session.objects().can_add(id_))
    fail(CL_INVALID_VALUE, "event id " + std::to_string(id_) + " is reserved or already in use");
  cl_int err = CL_SUCCESS;
  event_ = clCreateUserEvent(context_, &err);
  check(err, "clCreateUserEvent");
  clRetainEvent(event_);  // one reference for the table, one for this
  call.session.objects().add(id_, ObjectKind::event, event_, context_);
}

OwnEvent::~OwnEvent() {
  if (!event_) return;
  // Work that ended without an outcome (refused after the event existed, or its session closed)
  // must not leave commands waiting for the event forever.
  if (!done_ && !settled()) settle_user_event(event_, CL_OUT_OF_RESOURCES);
  clReleaseEvent(event_);
}

bool OwnEvent::settled() const {
  cl_int status = CL_QUEUED;
  return event_ && clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) ==
                       CL_SUCCESS && status <= CL_COMPLETE;
}

void OwnEvent::finish(Session *session, cl_int status, const std::string &message, uint64_t object,
                      const uint64_t *profiling) {
  if (done_) return;
  done_ = true;
  if (event_ && !settled()) settle_user_event(event_, status);
  if (!session || session->closed()) return;
  if (status == CL_COMPLETE) {
    if (id_) session->notify_completion(id_, CL_COMPLETE, profiling);
  } else {
    session->notify_error(object, id_, status, message, context_);
  }
}

// ---------------------------------------------------------------------------------------------
// DeviceChunks

DeviceChunks::DeviceChunks(Call &call, Resolved &resolved, uint64_t mem_id, uint64_t offset, uint64_t size)
    : session_(call.session.weak_from_this()), queue_id_(call.object), queue_(resolved.queue),
      in_order_(resolved.state->in_order), context_(call.context),
      mem_(call.session.objects().handle<cl_mem>(mem_id, ObjectKind::mem)), offset_(offset), size_(size),
      waits_(resolved.wait), behind_(resolved.behind) {
  cl_mem_object_type type = CL_MEM_OBJECT_BUFFER;
  check(clGetMemObjectInfo(mem_, CL_MEM_TYPE, sizeof type, &type, nullptr), "clGetMemObjectInfo(CL_MEM_TYPE)");
  uint64_t bytes = 0;
  if (type == CL_MEM_OBJECT_BUFFER) {
    size_t buffer_size = 0;
    check(clGetMemObjectInfo(mem_, CL_MEM_SIZE, sizeof buffer_size, &buffer_size, nullptr), "clGetMemObjectInfo(CL_MEM_SIZE)");
    bytes = buffer_size;
  } else {
    image_ = true;
    auto info = [&](cl_image_info param) {
      size_t value = 0;
      check(clGetImageInfo(mem_, param, sizeof value, &value, nullptr), "clGetImageInfo");
      return std::max<size_t>(value, 1);
    };
    region_[0] = info(CL_IMAGE_WIDTH);
    if (type == CL_MEM_OBJECT_IMAGE1D_ARRAY) region_[1] = info(CL_IMAGE_ARRAY_SIZE);
    if (type == CL_MEM_OBJECT_IMAGE2D || type == CL_MEM_OBJECT_IMAGE2D_ARRAY || type == CL_MEM_OBJECT_IMAGE3D)
      region_[1] = info(CL_IMAGE_HEIGHT);
    if (type == CL_MEM_OBJECT_IMAGE2D_ARRAY) region_[2] = info(CL_IMAGE_ARRAY_SIZE);
    if (type == CL_MEM_OBJECT_IMAGE3D) region_[2] = info(CL_IMAGE_DEPTH);
    bytes = info(CL_IMAGE_ELEMENT_SIZE) * region_[0] * region_[1] * region_[2];
  }
  if (image_ ? (offset != 0 || size != bytes) : (offset > bytes || size > bytes - offset))
    fail(CL_INVALID_VALUE, "transfer range " + std::to_string(offset) + "+" + std::to_string(size) +
                               " does not fit the memory object (" + std::to_string(bytes) + " bytes)");
  const BackendPlatform &backend = call.session.backend();
  bool windowed = !image_ && backend.transfer_window != 0 && size > backend.transfer_window;
  staged_ = image_ || windowed || ((offset != 0 || size != bytes) && backend.maps_parts_wrongly);
  uint64_t chunk = image_ ? size : fedcl::transfer_chunk_bytes(size);  // an image moves whole
  for (uint64_t at = 0; at < size; at += chunk) {
    chunks.emplace_back();
    chunks.back().at = at;
    chunks.back().bytes = std::min(chunk, size - at);
  }
  if (windowed) {
    window_chunks_ = std::max<uint64_t>(2, backend.transfer_window / chunk);
    // Its commands are on a queue of their own: an out-of-order queue's latest barrier must still
    // stand before them (an in-order queue's earlier commands do too: enqueue_windowed).
    if (!in_order_ && resolved.state->barrier) waits_.push_back(resolved.state->barrier);
  }
  clRetainCommandQueue(queue_);
  clRetainMemObject(mem_);
  for (cl_event wait : waits_) clRetainEvent(wait);
  sub_buffer_order_ = call.session.objects().sub_buffer_order();
  if (sub_buffer_order_) sub_buffer_order_->transfer_started();
}

DeviceChunks::~DeviceChunks() {
  open_all();
  for (Chunk &chunk : chunks)
    if (chunk.reachable) clReleaseEvent(chunk.reachable);
  for (cl_event wait : waits_) clReleaseEvent(wait);
  if (own_queue_) clReleaseCommandQueue(own_queue_);
  clReleaseMemObject(mem_);
  clReleaseCommandQueue(queue_);
}

bool DeviceChunks::usable(size_t k) const {
  const Chunk &chunk = chunks[k];
  if (chunk.ready) return true;
  cl_int status = CL_QUEUED;
  return chunk.reachable &&
         clGetEventInfo(chunk.reachable, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) == CL_SUCCESS &&
         status == CL_COMPLETE;
}

long DeviceChunks::chunk_at(uint64_t offset, uint64_t bytes) const {
  if (chunks.empty()) return -1;
  uint64_t chunk = chunks[0].bytes;
  if (offset % chunk || offset / chunk >= chunks.size()) return -1;
  size_t k = offset / chunk;
  return chunks[k].bytes == bytes ? long(k) : -1;
}

namespace {

// The backend reads or writes host memory of fedcld's (a staged chunk) until its command completed,
// which may be after the transfer was dropped (its session closed): the memory stays until then.
void keep_until_complete(cl_event command, std::shared_ptr<uint8_t[]> memory) {
  auto *kept = new std::shared_ptr<uint8_t[]>(std::move(memory));
  if (clSetEventCallback(command, CL_COMPLETE, [](cl_event, cl_int, void *data) {
        delete static_cast<std::shared_ptr<uint8_t[]> *>(data);
      }, kept) != CL_SUCCESS)
    delete kept;  // not watched: the command is over, or never ran
}

void open_chunk_gate(DeviceChunks::Chunk &chunk) {
  clSetUserEventStatus(chunk.gate, CL_COMPLETE);
  clReleaseEvent(chunk.gate);
  chunk.gate = nullptr;
}

// A chunk's host memory, with room for a frame's padding.
void stage(DeviceChunks::Chunk &chunk) {
  chunk.staging.reset(new (std::nothrow) uint8_t[chunk.bytes + 8]);
  if (!chunk.staging) fail(CL_OUT_OF_HOST_MEMORY, "fedcld cannot stage " + std::to_string(chunk.bytes) + " bytes");
  chunk.host = chunk.staging.get();
}

}  // namespace

void DeviceChunks::watch(Session &session, cl_event event, size_t k, Done done) {
  try {
    watch_event(session, session.objects().contains(queue_id_) ? queue_id_ : 0, event,
                [this, k, done](Session &, cl_int status, const uint64_t *times) {
                  if (times) {
                    if (k == 0 && !times_[0]) std::copy(times, times + 3, times_);
                    times_[3] = std::max(times_[3], times[3]);
                  }
                  done(k, failures_outcome(behind_, status));
                });
  } catch (...) {
    clReleaseEvent(event);
    throw;
  }
  clReleaseEvent(event);
}

// Takes the reference to event, the command that makes chunk k reachable in host memory.
void DeviceChunks::watch_reachable(Session &session, size_t k, cl_event event, Done ready) {
  clRetainEvent(event);
  chunks[k].reachable = event;
  watch(session, event, k, [this, ready](size_t k, cl_int status) {
    if (status == CL_COMPLETE) chunks[k].ready = true;
    clReleaseEvent(chunks[k].reachable);
    chunks[k].reachable = nullptr;
    ready(k, status);
  });
}

void DeviceChunks::read_chunk(Session &session, cl_command_queue queue, size_t k) {
  Chunk &chunk = chunks[k];
  const size_t origin[3] = {0, 0, 0};
  cl_event event = nullptr;
  cl_int err = image_ ? clEnqueueReadImage(queue, mem_, CL_FALSE, origin, region_, 0, 0, chunk.host,
                                           cl_uint(waits_.size()), waits_.data(), &event)
                      : clEnqueueReadBuffer(queue, mem_, CL_FALSE, offset_ + chunk.at, chunk.bytes, chunk.host,
                                            cl_uint(waits_.size()), waits_.data(), &event);
  check(err, direction_ == Direction::to_network ? "making the data to send reachable" : "reading the range to combine with");
  keep_until_complete(event, chunk.staging);
  watch_reachable(session, k, event, ready_);
}

void DeviceChunks::enqueue(Session &session, Direction direction, Done ready, Done released) {
  direction_ = direction;
  ready_ = std::move(ready);
  released_ = std::move(released);
  // A combining receive is a collective's segment, a few MiB: staged at once. The window is for
  // large moves; the commands a collective enqueues next on the same range wait for this one.
  if (direction == Direction::combine) window_chunks_ = 0;
  try {
    if (windowed()) enqueue_windowed(session);
    else enqueue_all(session);
  } catch (...) {
    forget_callbacks();
    throw;
  }
  if (back_ == chunks.size()) forget_callbacks();  // nothing to move
}

void DeviceChunks::enqueue_all(Session &session) {
  bool out = direction_ == Direction::to_network;
  bool reads = direction_ != Direction::from_network;  // the device's bytes are needed in host memory
  // First what makes every chunk reachable, so that the chunks become ready one after the other
  // while the network carries the earlier ones.
  // A buffer's maps, which what gives each chunk back waits for (released however this returns).
  struct HeldEvents {
    std::vector<cl_event> events;
    ~HeldEvents() {
      for (cl_event event : events)
        if (event) clReleaseEvent(event);
    }
  } held{std::vector<cl_event>(chunks.size(), nullptr)};
  std::vector<cl_event> &maps = held.events;
  for (size_t k = 0; k < chunks.size(); k++) {
    Chunk &chunk = chunks[k];
    if (staged_) {
      stage(chunk);
      if (reads) read_chunk(session, queue_, k);
      else chunk.ready = true;  // the bytes go to the staging; the write behind the gate takes them
      continue;
    }
    cl_int err = CL_SUCCESS;
    cl_event event = nullptr;
    cl_map_flags flags = out ? CL_MAP_READ : reads ? CL_MAP_READ | CL_MAP_WRITE : CL_MAP_WRITE_INVALIDATE_REGION;
    chunk.host = static_cast<uint8_t *>(clEnqueueMapBuffer(queue_, mem_, CL_FALSE, flags, offset_ + chunk.at, chunk.bytes,
                                                           cl_uint(waits_.size()), waits_.data(), &event, &err));
    check(err, out ? "making the data to send reachable" : "making room for the data to receive");
    clRetainEvent(event);
    maps[k] = event;
    watch_reachable(session, k, event, ready_);
  }
  // Then what gives each chunk back, behind its gate.
  for (size_t k = 0; k < chunks.size(); k++) {
    Chunk &chunk = chunks[k];
    cl_int err = CL_SUCCESS;
    if (staged_ && out) continue;  // a staged chunk needs nothing back: it is released once sent
    chunk.gate = clCreateUserEvent(context_, &err);
    check(err, "clCreateUserEvent");
    std::vector<cl_event> behind = waits_;
    behind.push_back(chunk.gate);
    cl_event event = nullptr;
    if (staged_) {
      const size_t origin[3] = {0, 0, 0};
      err = image_ ? clEnqueueWriteImage(queue_, mem_, CL_FALSE, origin, region_, 0, 0, chunk.host,
                                         cl_uint(behind.size()), behind.data(), &event)
                   : clEnqueueWriteBuffer(queue_, mem_, CL_FALSE, offset_ + chunk.at, chunk.bytes, chunk.host,
                                          cl_uint(behind.size()), behind.data(), &event);
      if (err == CL_SUCCESS) keep_until_complete(event, chunk.staging);
    } else {
      // After its map as well as its gate: the queue may run out of order (fedcl's transfer queue
      // does), and a failed transfer opens every gate at once, maps still running (PoCL crashed
      // unmapping a chunk whose map had not run yet).
      cl_event unmap_after[2] = {chunk.gate, maps[k]};
      err = clEnqueueUnmapMemObject(queue_, mem_, chunk.host, 2, unmap_after, &event);
    }
    check(err, out ? "enqueueing the release of sent data" : "enqueueing the write of received data");
    watch(session, event, k, released_);
  }
  clFlush(queue_);
  if (staged_ && !reads) {
    Done ready = ready_;  // the callback may stop the transfer, which forgets it
    for (size_t k = 0; k < chunks.size(); k++) ready(k, CL_COMPLETE);
  }
  ready_ = nullptr;  // the watches hold it from now on
  if (!(staged_ && out)) released_ = nullptr;  // else a chunk is back when sent (open_gate)
}

void DeviceChunks::enqueue_windowed(Session &session) {
  cl_device_id device = nullptr;
  cl_command_queue_properties properties = 0;
  check(clGetCommandQueueInfo(queue_, CL_QUEUE_DEVICE, sizeof device, &device, nullptr), "clGetCommandQueueInfo");
  check(clGetCommandQueueInfo(queue_, CL_QUEUE_PROPERTIES, sizeof properties, &properties, nullptr),
        "clGetCommandQueueInfo");
  const cl_queue_properties own[] = {CL_QUEUE_PROPERTIES, properties & CL_QUEUE_PROFILING_ENABLE, 0};
  cl_int err = CL_SUCCESS;
  own_queue_ = clCreateCommandQueueWithProperties(context_, device, own, &err);
  check(err, "clCreateCommandQueueWithProperties (a windowed transfer's queue)");
  if (in_order_) {  // what the client enqueued before the transfer comes first
    cl_event before = nullptr;
    check(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &before), "clEnqueueMarkerWithWaitList");
    waits_.push_back(before);
  }
  // The transfer's stand-in on the client's queue: what comes after it there waits for the transfer.
  all_back_ = clCreateUserEvent(context_, &err);
  check(err, "clCreateUserEvent");
  cl_event stand_in = nullptr;
  check(clEnqueueMarkerWithWaitList(queue_, 1, &all_back_, &stand_in), "clEnqueueMarkerWithWaitList");
  try {
    watch_event(session, queue_id_, stand_in, [](Session &, cl_int, const uint64_t *) {});
  } catch (...) {
    clReleaseEvent(stand_in);
    throw;
  }
  clReleaseEvent(stand_in);
  clFlush(queue_);
  start_chunks(session);
}

void DeviceChunks::start_chunks(Session &session) {
  std::vector<size_t> started;  // receiving: ready at once
  while (!stopped_ && next_ < chunks.size() && in_flight_ < window_chunks_) {
    size_t k = next_;
    stage(chunks[k]);
    if (direction_ == Direction::from_network) {
      chunks[k].ready = true;
      started.push_back(k);
    } else {
      read_chunk(session, own_queue_, k);
    }
    next_++;
    in_flight_++;
  }
  clFlush(own_queue_);
  for (size_t k : started)
    if (Done ready = ready_; ready) ready(k, CL_COMPLETE);
}

void DeviceChunks::advance() {
  auto session = session_.lock();
  if (stopped_ || !session || session->closed()) return;
  try {
    start_chunks(*session);
  } catch (const RequestError &error) {
    if (Done ready = ready_; ready) ready(next_, error.status);  // the chunk that could not start
  }
}

void DeviceChunks::write_back(size_t k) {
  Chunk &chunk = chunks[k];
  auto session = session_.lock();
  if (!session || session->closed()) return;
  cl_event event = nullptr;
  cl_int err = clEnqueueWriteBuffer(own_queue_, mem_, CL_FALSE, offset_ + chunk.at, chunk.bytes, chunk.host,
                                    cl_uint(waits_.size()), waits_.data(), &event);
  if (err != CL_SUCCESS) return chunk_back(k, err);
  keep_until_complete(event, chunk.staging);
  clFlush(own_queue_);
  try {
    // The owner stays until the write is done: released_ holds it.
    watch(*session, event, k, [this, keep = released_](size_t k, cl_int status) { chunk_back(k, status); });
  } catch (const RequestError &error) {
    chunk_back(k, error.status);
  }
}

void DeviceChunks::chunk_back(size_t k, cl_int status) {
  Chunk &chunk = chunks[k];
  chunk.staging.reset();
  chunk.host = nullptr;
  chunk.ready = false;
  back_++;
  if (windowed()) in_flight_--;
  Done released = released_;  // the callback may stop the transfer, which forgets it
  if (released) released(k, status);
  if (back_ == chunks.size()) return open_all();
  if (windowed()) advance();
}

void DeviceChunks::open_gate(size_t k) {
  Chunk &chunk = chunks[k];
  if (chunk.gate) return open_chunk_gate(chunk);
  // Staged and sent, or windowed: fedcld gives the chunk back itself.
  if (stopped_ || !chunk.ready || !(windowed() || (staged_ && direction_ == Direction::to_network))) return;
  if (direction_ == Direction::to_network) return chunk_back(k, CL_COMPLETE);
  chunk.ready = false;  // its bytes are final: the write takes them
  write_back(k);
}

void DeviceChunks::forget_callbacks() {
  ready_ = nullptr;
  released_ = nullptr;
}

void DeviceChunks::open_all() {
  stopped_ = true;
  for (Chunk &chunk : chunks)
    if (chunk.gate) open_chunk_gate(chunk);
  if (all_back_) {
    clSetUserEventStatus(all_back_, CL_COMPLETE);
    clReleaseEvent(all_back_);
    all_back_ = nullptr;
  }
  forget_callbacks();
  if (sub_buffer_order_) std::exchange(sub_buffer_order_, nullptr)->transfer_ended();
}

}  // namespace fedcld
