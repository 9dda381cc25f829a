// The seam through which a transport that lives outside the ICD moves a command's bytes: the MPI
// commands (libfedcl_mpi.so, mpi/) are built against MPI, which libfedcl.so must never load, so the
// ICD hands them this interface when it loads them (fedcl_mpi_attach). Both libraries are built
// from this tree together; kVersion guards against a stray copy of the other.
//
// A transfer is two commands whose other end is named only after both were enqueued: a send reads
// the range when its queue and wait list let it run and holds the chunks until told where they go
// (another daemon, or this process); a receive writes the range as its bytes land, from this
// process or from another daemon's send.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace fedcl {

// A daemon session as another daemon addresses it (wire PeerRef).
struct PeerEndpoint {
  uint64_t instance = 0;  // the daemon's run; 0: none
  uint64_t session = 0;   // the session's token there
  std::string address;    // host:port of its peer listener
  std::string address_tag;  // its daemon's tag of the address (PeerRef.addressTag), passed on as it came
};

class TransferPort {
 public:
  static constexpr int kVersion = 2;
  virtual int version() const { return kVersion; }

  // The daemon of queue as its peers reach it; false when it takes no part in direct transfers
  // (FEDCL_PEER_LINKS=0).
  virtual bool endpoint(cl_command_queue queue, PeerEndpoint *out) = 0;
  // Whether the daemon of queue can open a peer link to the daemon of `to` (asked once per daemon).
  virtual bool can_reach(cl_command_queue queue, const PeerEndpoint &to) = 0;

  // Sending. Arguments are checked here as clEnqueueReadBuffer checks them. *device_event: the
  // daemon's command, complete once every byte has left it (for this process or a peer daemon).
  virtual cl_int enqueue_send(cl_command_queue queue, cl_mem buffer, size_t offset, size_t size, cl_uint num_events,
                              const cl_event *wait_list, uint64_t *transfer, cl_event *device_event) = 0;
  // The bytes go to the receive of peer_transfer in the session `to` names.
  virtual void send_to_peer(cl_command_queue queue, uint64_t transfer, const PeerEndpoint &to, uint64_t peer_transfer) = 0;
  // The chunks come to this process: sink gets each (in any order; offsets from the range's start)
  // on a runtime thread, and must not block. It is dropped once size bytes came or end_send().
  using ChunkSink = std::function<void(uint64_t offset, std::unique_ptr<uint8_t[]> bytes, uint64_t size)>;
  virtual void send_to_host(cl_command_queue queue, uint64_t transfer, ChunkSink sink) = 0;
  virtual void end_send(uint64_t transfer) = 0;

  // Receiving. Arguments are checked as clEnqueueWriteBuffer checks them. *device_event completes
  // when every byte is in the buffer.
  virtual cl_int enqueue_receive(cl_command_queue queue, cl_mem buffer, size_t offset, size_t size,
                                 cl_uint num_events, const cl_event *wait_list, uint64_t *transfer,
                                 cl_event *device_event) = 0;
  // The bytes come from a peer daemon's send.
  virtual void receive_from_peer(cl_command_queue queue, uint64_t transfer, uint64_t sender_instance) = 0;
  // Or from this process: size bytes at offset from the start of the range of range_size bytes. A
  // piece starts and ends on the range's chunk boundaries (protocol/transfer_chunks.h) or its end:
  // the whole range, or one chunk as a daemon's send cut it.
  virtual cl_int receive_bytes(cl_command_queue queue, uint64_t transfer, uint64_t range_size, uint64_t offset,
                               const uint8_t *bytes, uint64_t size) = 0;
  // Ends a receive (no more bytes will come) or a send still waiting for its destination: its event
  // fails with status, and why goes to the context's notify callback.
  virtual void abort(cl_command_queue queue, uint64_t transfer, cl_int status, const std::string &why) = 0;

  // done(event, status, user_data) once event completes (status: CL_COMPLETE or its failure), on the
  // thread that learns it (a connection's receiver), or on this one if it has already: done must
  // not block (it may do non-blocking work there, such as posting an MPI message, or wake whoever
  // acts on it). The caller keeps event alive until then.
  virtual void when_complete(cl_event event, void(CL_CALLBACK *done)(cl_event, cl_int, void *), void *user_data) = 0;

  // Called while the application waits in fedcl (clWaitForEvents, clFinish, blocking commands):
  // how MPI progresses when only the application's thread may call it, and how a waiting thread
  // takes a message as soon as it comes. hook returns whether work is in flight (wait_hook.h).
  virtual void set_wait_hook(bool (*hook)()) = 0;

 protected:
  ~TransferPort() = default;
};

}  // namespace fedcl

// Exported by libfedcl_mpi.so; the ICD calls it once, right after loading the library.
extern "C" int fedcl_mpi_attach(fedcl::TransferPort *port);

namespace fedcl {
// The runtime's port, handed to libfedcl_mpi.so.
TransferPort &transfer_port();
}  // namespace fedcl
