// The device side of a transfer between daemons (peer_transfer.h): a memory object's range cut into
// chunks, each made reachable in host memory and given back to the device once the network is done
// with it. A buffer's chunks are mapped; an image (whole, one chunk) is staged: read into and
// written from fedcld's host memory. So is part of a buffer on a backend that maps parts wrongly
// (BackendPlatform::maps_parts_wrongly): NVIDIA 580 maps part of a buffer that has sub-buffers at
// host memory that does not hold the range (writing a 2 MiB chunk there crashed fedcld; a send
// would read wrong bytes), and ranges are what coherence by byte range moves.
//
// Every device command of a transfer is enqueued when its request arrives, not as chunks come and
// go: a backend may order the commands that use one buffer by their enqueue order, across queues
// (PoCL does), so a chunk's command enqueued after a command that waits for the transfer would wait
// for that command, which waits for the chunk. The commands that give a chunk back wait for a gate
// (a user event) that opens when the network is done with it.
//
// Except a transfer (not a combining receive) larger than the backend's window
// (BackendPlatform::transfer_window; NVIDIA's first map pins a host copy of a whole buffer, seconds
// of the loop for GiBs): it is staged a window at a time, each chunk read or written as the window
// reaches it, on a queue of the transfer's own (nothing the client enqueues later can stand before
// them there). The client's queue holds a marker that waits for the whole transfer, so that its
// later commands, barriers and clFinish keep their order behind it. Only a backend that orders
// nothing across queues may have a window.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "exec.h"

namespace fedcld {

// The event the client holds for a command fedcld carries out itself: a user event of the queue's
// context under the client's id, set when the work ends (failed, if it ends without an outcome).
class OwnEvent {
 public:
  explicit OwnEvent(Call &call);
  ~OwnEvent();
  OwnEvent(const OwnEvent &) = delete;

  // Whether the client already decided the outcome (it relays a failure of the other side).
  bool settled() const;
  // Sets the event and tells the client: a completion (with the profiling times, if any), or an
  // error about object with message.
  void finish(Session *session, cl_int status, const std::string &message, uint64_t object,
              const uint64_t *profiling = nullptr);
  bool done() const { return done_; }

 private:
  uint64_t id_;
  cl_context context_;
  cl_event event_ = nullptr;
  bool done_ = false;
};

class DeviceChunks {
 public:
  // combine: the received bytes are combined with what the range holds, which is read first.
  enum class Direction { to_network, from_network, combine };
  struct Chunk {
    uint64_t at = 0, bytes = 0;              // from the transfer's start
    uint8_t *host = nullptr;                 // where its bytes are, or are to be put, once ready
    std::shared_ptr<uint8_t[]> staging;      // staged: the host memory (and room for a frame's padding)
    cl_event gate = nullptr;
    cl_event reachable = nullptr;            // the command that makes host usable, until it completed
    bool ready = false;                      // host may be used (the loop has seen reachable complete)
  };
  // Whether chunk k's host memory may be used now: ready, or its command completed already.
  bool usable(size_t k) const;
  // k, and CL_COMPLETE or the failure of the device command.
  using Done = std::function<void(size_t k, cl_int status)>;

  // Checks the range against the object (CL_INVALID_VALUE); throws RequestError.
  DeviceChunks(Call &call, Resolved &resolved, uint64_t mem_id, uint64_t offset, uint64_t size);
  ~DeviceChunks();
  DeviceChunks(const DeviceChunks &) = delete;

  // Enqueues, for every chunk, what makes it reachable in host memory (ready(k) follows) and, behind
  // its gate, what gives it back (released(k) follows: its bytes are on the device, for
  // from_network). A staged chunk sent has nothing to give back: released(k) follows its open_gate.
  // Windowed, the same happens a window of chunks at a time. Throws RequestError if the backend
  // refuses.
  void enqueue(Session &session, Direction direction, Done ready, Done released);
  // The network is done with chunk k: it goes back to the device.
  void open_gate(size_t k);
  // A failed transfer gives every chunk back too: its commands complete normally (what a receive
  // wrote is stale, and the client knows it from the transfer's event), so that fedcl's transfer
  // queue stays usable; a failed command there would fail or stall the ones after it (PoCL). A
  // windowed transfer starts no more chunks.
  void open_all();

  std::vector<Chunk> chunks;
  // Whether the chunks are staged (see above) rather than mapped.
  bool staged() const { return staged_; }
  bool windowed() const { return window_chunks_ != 0; }
  uint64_t size() const { return size_; }
  // Which chunk starts at offset and is bytes long; -1 if none.
  long chunk_at(uint64_t offset, uint64_t bytes) const;
  // The transfer's profiling times on a profiling queue, once every chunk is back (queued, submit and
  // start of the first chunk's command, end of the last): null otherwise.
  const uint64_t *profiling() const { return times_[0] && times_[3] ? times_ : nullptr; }

 private:
  std::weak_ptr<Session> session_;
  uint64_t queue_id_;
  cl_command_queue queue_;
  bool in_order_;
  cl_context context_;
  cl_mem mem_;
  uint64_t offset_, size_;
  bool image_ = false;
  bool staged_ = false;
  size_t region_[3] = {1, 1, 1};
  std::vector<cl_event> waits_;
  PendingEvents behind_;  // a failure fedcld kept from the backend fails the transfer (event_failures.h)
  uint64_t times_[4] = {};
  Direction direction_ = Direction::to_network;
  // Until every chunk is back or the transfer stops: they hold its owner, which holds this.
  Done ready_, released_;
  size_t back_ = 0;  // chunks given back
  // Windowed: at most window_chunks_ chunks started and not back; the next to start.
  size_t window_chunks_ = 0, next_ = 0, in_flight_ = 0;
  bool stopped_ = false;
  cl_command_queue own_queue_ = nullptr;  // windowed: the chunks' commands
  cl_event all_back_ = nullptr;           // windowed: set when every chunk is back, or the transfer stops
  // Holds the session's sub-buffer releases while the transfer is under way (sub_buffer_order.h).
  std::shared_ptr<SubBufferOrder> sub_buffer_order_;

  void watch(Session &session, cl_event event, size_t k, Done done);
  void watch_reachable(Session &session, size_t k, cl_event event, Done ready);
  void read_chunk(Session &session, cl_command_queue queue, size_t k);
  void enqueue_all(Session &session);
  void enqueue_windowed(Session &session);
  void start_chunks(Session &session);
  void advance();
  void write_back(size_t k);
  void chunk_back(size_t k, cl_int status);
  void forget_callbacks();
};

}  // namespace fedcld
