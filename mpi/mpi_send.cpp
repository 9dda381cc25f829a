// clEnqueueSendBuffer's operation:
//  - below the threshold, a plain non-blocking read brings the range to this process (one request,
//    its reply carries the bytes) and they go as one plain MPI message, which a host MPI_Recv takes
//    as well as a device receive;
//  - from the threshold on, the daemon reads the range when the command may run (a send whose
//    destination is named later, transfer_port.h), and an envelope asks the receiver where the bytes
//    should go (mpi_wire.h): straight to its daemon over the peer link, or staged through the two
//    processes in chunks.
// A blocking send below the threshold, with MPI_THREAD_MULTIPLE, reads the range on the calling
// thread (a blocking read), and its message leaves from that thread too.
// With MPI_THREAD_MULTIPLE the command's event is the daemon's send: it completes once the bytes have
// left the device's daemon (for this process, or the receiving daemon). From then on they are
// fedcl's, as a buffered MPI send's are MPI's, and fedcl's thread moves them: the messages still on
// their way go before MPI_Finalize returns (Progress::drain). At lower levels nothing moves them
// once the program has left fedcl, so the event is a marker behind a user event that this operation
// sets once MPI has taken the message.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>

#include "mpi_operations.h"

namespace fedcl_mpi {

namespace {

class DeviceSend final : public Operation, public std::enable_shared_from_this<DeviceSend> {
 public:
  // A large send names the daemon's transfer; a small one the host memory its read fills.
  DeviceSend(cl_command_queue queue, uint64_t transfer, std::unique_ptr<uint8_t[]> read_into, size_t size, Route to,
             cl_event taken)
      : queue_(queue), transfer_(transfer), size_(size), to_(to), taken_(taken), large_(transfer != 0),
        id_(Progress::get().next_id()), whole_(std::move(read_into)) {
    clRetainCommandQueue(queue_);
  }
  ~DeviceSend() override {
    if (device_) clReleaseEvent(device_);
    clReleaseCommandQueue(queue_);
  }

  // The device's command, kept until the operation ends: its completion comes to device_done on the
  // thread that learns it (TransferPort::when_complete), not through the callback thread.
  void watch(cl_event device) {
    clRetainEvent(device);
    device_ = device;
    Progress::get().port().when_complete(device, on_done, new std::weak_ptr<DeviceSend>(shared_from_this()));
  }

  static void CL_CALLBACK on_done(cl_event, cl_int status, void *user_data) {
    std::unique_ptr<std::weak_ptr<DeviceSend>> send(static_cast<std::weak_ptr<DeviceSend> *>(user_data));
    if (auto alive = send->lock()) alive->device_done(status);
  }

  // A runtime thread: the device's command ended (a small send's read: its bytes are here). wake:
  // fedcl's MPI thread takes it from here (else the caller polls). Not a poll here: this may be a
  // connection's receiver, and a poll's receive that posts its bytes to the daemon waits for that
  // receiver's acknowledgements (mpi_transfer_np2_plain hung 2 runs in 3 so).
  void device_done(cl_int status, bool wake = true) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      device_status_ = status < 0 ? status : CL_COMPLETE;
      if (!large_ && status >= 0) collected_ = size_;
    }
    if (wake) Progress::get().wake();
  }

  bool step(Progress &progress) override {
    if (!large_) return step_eager();
    switch (phase_) {
      case Phase::envelope: return send_envelope(progress);
      case Phase::offer: return await_offer(progress);
      case Phase::direct: return finish_when_sent();
      case Phase::staged: return stream_chunks();
    }
    return false;
  }

  void control(Progress &, Control message) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (message.bytes.size() >= sizeof(Offer)) offer_ = message.as<Offer>(), offer_came_ = true;
  }

 private:
  enum class Phase { envelope, offer, direct, staged };
  struct Outgoing {
    std::vector<uint8_t> bytes;
    MPI_Request request;
  };

  void route_to_host() {
    std::weak_ptr<DeviceSend> self = shared_from_this();
    Progress::get().port().send_to_host(queue_, transfer_, [self](uint64_t offset, std::unique_ptr<uint8_t[]> bytes, uint64_t size) {
      if (auto send = self.lock()) send->chunk_came(offset, std::move(bytes), size);
    });
  }

  // A runtime thread: a chunk of a staged send came to this process.
  void chunk_came(uint64_t offset, std::unique_ptr<uint8_t[]> bytes, uint64_t size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      chunks_.push_back({offset, std::move(bytes), size});
      collected_ += size;
    }
    Progress::get().wake();
  }

  cl_int device_status() {
    std::lock_guard<std::mutex> lock(mutex_);
    return device_status_;
  }

  // The operation is over: its messages have gone.
  bool finish(cl_int status, const std::string &why = "") {
    if (status < 0 && !why.empty())
      std::fprintf(stderr, "fedcl: clEnqueueSendBuffer to rank %d, tag %d: %s\n", to_.rank, to_.tag, why.c_str());
    if (transfer_) Progress::get().port().end_send(transfer_);
    if (taken_) {
      clSetUserEventStatus(taken_, status < 0 ? status : CL_COMPLETE);
      clReleaseEvent(taken_);
    }
    return true;
  }

  bool must_go_before_finalize() const override { return true; }
  const Route *unsent() const override { return (large_ ? phase_ == Phase::envelope : !posted_) ? &to_ : nullptr; }

  bool all_sent() {
    for (auto it = outgoing_.begin(); it != outgoing_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? outgoing_.erase(it) : std::next(it);
    }
    return outgoing_.empty();
  }

  void post(const void *bytes, size_t size, int tag) {
    outgoing_.push_back({});
    Outgoing &out = outgoing_.back();
    out.bytes.assign(static_cast<const uint8_t *>(bytes), static_cast<const uint8_t *>(bytes) + size);
    MPI_Isend(out.bytes.data(), int(size), MPI_BYTE, to_.rank, tag, to_.comm, &out.request);
  }

  // Below the threshold: one plain message once every byte is here (pieces above 1 GiB).
  bool step_eager() {
    cl_int status;
    bool here;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      status = device_status_;
      here = collected_ == size_;
    }
    if (!posted_) {
      if (status < 0) {
        // The receiver must not wait for a message that will not come: an empty one fails it (the
        // sizes differ) and says why on its side.
        post(nullptr, 0, to_.tag);
        posted_ = true;
        failed_ = status;
      } else if (here) {  // every byte is here: the device's side has done its part
        if (size_ == 0) post(nullptr, 0, to_.tag);
        for (size_t at = 0; at < size_; at += kPieceBytes)
          MPI_Isend(whole_.get() + at, int(std::min(kPieceBytes, size_ - at)), MPI_BYTE, to_.rank, to_.tag, to_.comm,
                    &(outgoing_.emplace_back().request));
        posted_ = true;
      }
    }
    if (!posted_ || !all_sent()) return false;
    return finish(failed_ ? failed_ : CL_COMPLETE, failed_ ? "reading the buffer failed on the device" : "");
  }

  bool send_envelope(Progress &progress) {
    fedcl::PeerEndpoint mine;
    uint64_t instance = Progress::get().port().endpoint(queue_, &mine) ? mine.instance : 0;
    Envelope envelope{kEnvelopeMagic, id_, size_, instance};
    progress.expect(to_.comm, to_.rank, ControlKind::offer, id_, weak_from_this());
    post(&envelope, sizeof envelope, to_.tag);
    phase_ = Phase::offer;
    asked_at_ = std::chrono::steady_clock::now();
    return false;
  }

  bool await_offer(Progress &progress) {
    Offer offer;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!offer_came_) {
        warn_if_unanswered();
        return false;
      }
      offer = offer_;
    }
    progress.unexpect(to_.comm, to_.rank, ControlKind::offer, id_);
    if (offer.status != 0) {
      phase_ = Phase::direct;
      failed_ = offer.status;
      why_ = "the receiving command refused the message: its size differs (" + std::to_string(size_) + " bytes sent)";
      Progress::get().port().abort(queue_, transfer_, failed_, "clEnqueueSendBuffer: " + why_);
      return finish_when_sent();
    }
    fedcl::PeerEndpoint there;
    there.instance = offer.instance;
    there.session = offer.session;
    offer.address[sizeof offer.address - 1] = 0;
    there.address = offer.address;
    there.address_tag.assign(reinterpret_cast<const char *>(offer.address_tag),
                             std::min<size_t>(offer.address_tag_bytes, sizeof offer.address_tag));
    bool direct = offer.direct && device_status() >= 0 && Progress::get().port().can_reach(queue_, there);
    Go go{{kControlMagic, ControlKind::go, id_, 0}, direct ? 1u : 0u, 0};
    post(&go, sizeof go, progress.control_tag(to_.comm));
    if (direct) {
      Progress::get().port().send_to_peer(queue_, transfer_, there, offer.transfer);
      phase_ = Phase::direct;
      return false;
    }
    route_to_host();
    phase_ = Phase::staged;
    return false;
  }

  void warn_if_unanswered() {
    if (warned_ || std::chrono::steady_clock::now() - asked_at_ < std::chrono::seconds(10)) return;
    warned_ = true;
    std::fprintf(stderr, "fedcl: clEnqueueSendBuffer of %zu bytes to rank %d, tag %d has waited 10 s for the receiver: "
                 "a host receives such a message with clFedclIrecvFromDevice, not MPI_Recv (docs/transfer-engine.md)\n",
                 size_, to_.rank, to_.tag);
  }

  // The direct path: the daemons move the bytes; the command ends with the daemon's send.
  bool finish_when_sent() {
    cl_int status = failed_ ? failed_ : device_status();
    if (status > CL_COMPLETE || !all_sent()) return false;
    return finish(status, status < 0 ? (why_.empty() ? "the sending daemon failed" : why_) : "");
  }

  // The staged path: each chunk goes on as it comes; an abort if the device side fails.
  bool stream_chunks() {
    std::deque<Chunk> ready;
    cl_int status;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready.swap(chunks_);
      status = device_status_;
    }
    int tag = Progress::get().control_tag(to_.comm);
    for (Chunk &chunk : ready) {
      outgoing_.push_back({});
      Outgoing &out = outgoing_.back();
      ControlHeader header{kControlMagic, ControlKind::chunk, id_, chunk.offset};
      out.bytes.resize(sizeof header + chunk.size);
      std::memcpy(out.bytes.data(), &header, sizeof header);
      std::memcpy(out.bytes.data() + sizeof header, chunk.bytes.get(), chunk.size);
      MPI_Isend(out.bytes.data(), int(out.bytes.size()), MPI_BYTE, to_.rank, tag, to_.comm, &out.request);
      streamed_ += chunk.size;
    }
    if (status < 0 && !failed_) {
      failed_ = status;
      Abort abort{{kControlMagic, ControlKind::abort, id_, 0}, status, 0};
      post(&abort, sizeof abort, tag);
    }
    if (failed_) return all_sent() && finish(failed_, "reading the buffer failed on the device");
    if (streamed_ < size_ || status != CL_COMPLETE || !all_sent()) return false;
    return finish(CL_COMPLETE);
  }

  struct Chunk {
    uint64_t offset;
    std::unique_ptr<uint8_t[]> bytes;
    uint64_t size;
  };

  cl_command_queue queue_;
  uint64_t transfer_;
  size_t size_;
  Route to_;
  cl_event taken_;  // lower thread levels: set once MPI has the message (null otherwise)
  cl_event device_ = nullptr;
  bool large_;
  uint64_t id_;
  Phase phase_ = Phase::envelope;

  std::mutex mutex_;  // what runtime threads and control messages set
  cl_int device_status_ = CL_QUEUED;
  std::unique_ptr<uint8_t[]> whole_;
  std::deque<Chunk> chunks_;
  uint64_t collected_ = 0;
  Offer offer_{};
  bool offer_came_ = false;

  std::deque<Outgoing> outgoing_;
  bool posted_ = false, warned_ = false;
  cl_int failed_ = 0;
  std::string why_;
  uint64_t streamed_ = 0;
  std::chrono::steady_clock::time_point asked_at_;
};

}  // namespace

cl_int start_device_send(cl_command_queue queue, cl_mem buffer, size_t offset, size_t size, Route to, bool blocking,
                         cl_uint num_events, const cl_event *wait_list, cl_event *done) {
  uint64_t transfer = 0;
  cl_event device = nullptr;
  std::unique_ptr<uint8_t[]> read_into;
  bool read_here = false;
  cl_int err;
  if (size == 0) {
    err = clEnqueueMarkerWithWaitList(queue, num_events, wait_list, &device);  // an empty message
  } else if (size < Progress::get().direct_threshold()) {
    read_into.reset(new (std::nothrow) uint8_t[size]);
    if (!read_into) return CL_OUT_OF_HOST_MEMORY;
    // A blocking send's thread would only wait: where it may call MPI, it reads the bytes itself, as
    // a program staging by hand does, and the message leaves from here (clEnqueueSendBuffer's
    // poll_here). No completion is handed from one thread to another.
    if (blocking && Progress::get().multiple()) {
      err = clEnqueueReadBuffer(queue, buffer, CL_TRUE, offset, size, read_into.get(), num_events, wait_list, &device);
      read_here = device != nullptr;
    }
    if (!read_here)
      err = clEnqueueReadBuffer(queue, buffer, CL_FALSE, offset, size, read_into.get(), num_events, wait_list, &device);
  } else {
    err = Progress::get().port().enqueue_send(queue, buffer, offset, size, num_events, wait_list, &transfer, &device);
  }
  cl_int read_status = err == CL_SUCCESS ? CL_COMPLETE : err;  // a read made here: how it ended
  if (err != CL_SUCCESS && !read_here) return err;
  cl_event taken = nullptr;
  if (Progress::get().multiple()) {
    *done = device;
  } else {
    cl_context context = nullptr;
    clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof context, &context, nullptr);
    taken = clCreateUserEvent(context, &err);
    cl_event behind[2] = {device, taken};
    if (err == CL_SUCCESS) err = clEnqueueMarkerWithWaitList(queue, 2, behind, done);
    if (err != CL_SUCCESS) {
      if (taken) clSetUserEventStatus(taken, CL_OUT_OF_RESOURCES), clReleaseEvent(taken);
      return clReleaseEvent(device), err;  // the daemon's send goes nowhere; it ends with its session
    }
  }
  // A read has left already (its reply brings the bytes): a flush would only cost the daemon a
  // request. A daemon's send, or the marker at lower thread levels, is queued.
  if (!read_into || !Progress::get().multiple()) clFlush(queue);
  auto send = std::make_shared<DeviceSend>(queue, transfer, std::move(read_into), size, to, taken);
  if (read_here) {
    // Its message leaves from this thread (clEnqueueSendBuffer polls next): fedcl's MPI thread is
    // woken only if it is still under way then.
    send->device_done(read_status, false);
    Progress::get().add(send, false);
    return CL_SUCCESS;
  }
  send->watch(device);
  if (taken) clReleaseEvent(device);  // the marker stands for it
  Progress::get().add(send);
  return CL_SUCCESS;
}

}  // namespace fedcl_mpi
