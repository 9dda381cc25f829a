// The receiving operations: clEnqueueRecvBuffer (the bytes land in a buffer on a daemon) and
// clFedclIrecvFromDevice (in host memory). Both take the next message from the route as MPI
// matches it, in the order the receives were started:
//  - a plain message (a host's MPI_Send, or a device send below the threshold) is the data;
//  - an envelope (a device send from the threshold on) is answered with an offer: the direct path
//    to this receive's daemon when there is one, else chunks staged through the two processes.
// A blocking clEnqueueRecvBuffer below the threshold, with MPI_THREAD_MULTIPLE, takes a plain
// message on the calling thread and writes it with a blocking write (start_device_receive); it
// returns then, as that write does.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "mpi_operations.h"

namespace fedcl_mpi {

namespace {

// Where the bytes of a receive go.
class Landing {
 public:
  virtual ~Landing() = default;
  // Memory a plain message can be received into in place; null: put() is given the bytes.
  virtual uint8_t *memory() { return nullptr; }
  virtual void put(uint64_t offset, const uint8_t *bytes, uint64_t size) = 0;
  // The daemon that can take the bytes over a peer link, and the receive's transfer there.
  virtual bool offer_direct(fedcl::PeerEndpoint *, uint64_t *) { return false; }
  virtual void from_peer(uint64_t) {}
  virtual void complete() = 0;
  virtual void fail(cl_int status, const std::string &why) = 0;
};

class DeviceLanding final : public Landing {
 public:
  DeviceLanding(cl_command_queue queue, uint64_t transfer, size_t size) : queue_(queue), transfer_(transfer), size_(size) {
    clRetainCommandQueue(queue_);
  }
  ~DeviceLanding() override { clReleaseCommandQueue(queue_); }
  void put(uint64_t offset, const uint8_t *bytes, uint64_t size) override {
    Progress::get().port().receive_bytes(queue_, transfer_, size_, offset, bytes, size);
  }
  bool offer_direct(fedcl::PeerEndpoint *here, uint64_t *transfer) override {
    *transfer = transfer_;
    return Progress::get().port().endpoint(queue_, here);
  }
  void from_peer(uint64_t instance) override { Progress::get().port().receive_from_peer(queue_, transfer_, instance); }
  void complete() override {}  // the daemon completes the command once the bytes are on the device
  void fail(cl_int status, const std::string &why) override {
    Progress::get().port().abort(queue_, transfer_, status, "clEnqueueRecvBuffer: " + why);
  }

 private:
  cl_command_queue queue_;
  uint64_t transfer_;
  size_t size_;
};

// A generalized MPI request completes when the bytes are in host memory.
class HostLanding final : public Landing {
 public:
  HostLanding(uint8_t *host, Route from) : host_(host), from_(from) {}
  uint8_t *memory() override { return host_; }
  void put(uint64_t offset, const uint8_t *bytes, uint64_t size) override {
    if (bytes != host_ + offset) std::memcpy(host_ + offset, bytes, size);
    received_ += size;
  }
  void complete() override { MPI_Grequest_complete(request_); }
  void fail(cl_int status, const std::string &why) override {
    std::fprintf(stderr, "fedcl: clFedclIrecvFromDevice from rank %d, tag %d: %s\n", from_.rank, from_.tag, why.c_str());
    error_ = status == CL_INVALID_VALUE ? MPI_ERR_TRUNCATE : MPI_ERR_OTHER;
    MPI_Grequest_complete(request_);
  }
  void set_request(MPI_Request request) { request_ = request; }
  void set_source(int source) { source_ = source; }

  static int query(void *state, MPI_Status *status) {
    auto &self = **static_cast<std::shared_ptr<HostLanding> *>(state);
    MPI_Status_set_elements(status, MPI_BYTE, int(std::min<uint64_t>(self.received_, INT32_MAX)));
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = self.source_;
    status->MPI_TAG = self.from_.tag;
    status->MPI_ERROR = self.error_;
    return self.error_;
  }
  static int free(void *state) {
    delete static_cast<std::shared_ptr<HostLanding> *>(state);
    return MPI_SUCCESS;
  }
  static int cancel(void *, int) { return MPI_SUCCESS; }  // a message on its way is not taken back

 private:
  uint8_t *host_;
  Route from_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  int source_ = MPI_ANY_SOURCE;
  int error_ = MPI_SUCCESS;
  uint64_t received_ = 0;
};

class Receive final : public Operation, public std::enable_shared_from_this<Receive> {
 public:
  Receive(std::shared_ptr<Landing> landing, size_t size, Route from)
      : landing_(std::move(landing)), size_(size), from_(from), source_(from.rank) {}

  bool step(Progress &progress) override {
    switch (phase_) {
      case Phase::match: return match(progress);
      case Phase::plain: return take_plain();
      case Phase::negotiated: return after_offer();
    }
    return false;
  }

  const Route *matching() const override { return phase_ == Phase::match ? &from_ : nullptr; }

  // Takes a message probed for this receive (MPI_Mprobe or MPI_Improbe); returns whether the
  // operation is over.
  bool take(Progress &progress, MPI_Message &message, const MPI_Status &status) {
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    source_ = status.MPI_SOURCE;
    if (auto *host = dynamic_cast<HostLanding *>(landing_.get())) host->set_source(source_);
    size_t want = std::min(kPieceBytes, size_ - at_);
    if (count == int(sizeof(Envelope))) {
      Envelope envelope;
      MPI_Mrecv(&envelope, count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
      if (is_envelope(&envelope, count)) return answer(progress, envelope);
      if (want != sizeof envelope) return mismatch(progress, count);
      landing_->put(at_, reinterpret_cast<uint8_t *>(&envelope), sizeof envelope);
      return next_piece(progress, want);
    }
    if (size_t(count) != want) {
      // Taken anyway, so that its sender does not wait for a receive that will not come.
      std::vector<uint8_t> discard(size_t(count) + 1);
      MPI_Mrecv(discard.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
      return mismatch(progress, count);
    }
    uint8_t *memory = landing_->memory();
    if (memory) {
      target_ = memory + at_;
    } else {
      own_.resize(want);
      target_ = own_.data();
    }
    MPI_Imrecv(target_, count, MPI_BYTE, &message, &request_);
    phase_ = Phase::plain;
    return take_plain();
  }

  // Called by the loop (the only thread that runs operations), for the transfer's id.
  void control(Progress &progress, Control message) override {
    if (done_) return;
    const ControlHeader &header = message.as<ControlHeader>();
    switch (header.kind) {
      case ControlKind::go:
        if (message.bytes.size() < sizeof(Go)) return;
        progress.unexpect(from_.comm, source_, ControlKind::go, envelope_.id);
        if (message.as<Go>().direct) {
          landing_->from_peer(envelope_.instance);
          return end(progress);
        }
        progress.expect(from_.comm, source_, ControlKind::chunk, envelope_.id, weak_from_this());
        progress.expect(from_.comm, source_, ControlKind::abort, envelope_.id, weak_from_this());
        return;
      case ControlKind::chunk: {
        uint64_t bytes = message.bytes.size() - sizeof(ControlHeader);
        if (header.offset > size_ || bytes > size_ - header.offset)
          return fail(progress, CL_INVALID_VALUE, "the sender's chunks do not fit the message");
        landing_->put(header.offset, message.bytes.data() + sizeof(ControlHeader), bytes);
        staged_ += bytes;
        if (staged_ == size_) {
          landing_->complete();
          end(progress);
        }
        return;
      }
      case ControlKind::abort:
        return fail(progress, message.bytes.size() >= sizeof(Abort) ? message.as<Abort>().status : CL_OUT_OF_RESOURCES,
                    "the sending side failed");
      case ControlKind::offer: return;
    }
  }

 private:
  enum class Phase { match, plain, negotiated };

  bool match(Progress &progress) {
    int found = 0;
    MPI_Message message;
    MPI_Status status;
    if (MPI_Improbe(from_.rank, from_.tag, from_.comm, &found, &message, &status) != MPI_SUCCESS || !found) return false;
    return take(progress, message, status);
  }

  bool take_plain() {
    int done = 0;
    MPI_Test(&request_, &done, MPI_STATUS_IGNORE);
    if (!done) return false;
    size_t want = std::min(kPieceBytes, size_ - at_);
    landing_->put(at_, target_, want);
    return next_piece(Progress::get(), want);
  }

  bool next_piece(Progress &progress, size_t want) {
    at_ += want;
    phase_ = Phase::match;
    if (at_ < size_) return false;
    landing_->complete();
    return end(progress), true;
  }

  bool mismatch(Progress &progress, int count) {
    fail(progress, CL_INVALID_VALUE,
         "a message of " + std::to_string(at_ + size_t(count)) + " bytes came where " + std::to_string(size_) +
             " were expected" + (size_t(count) > std::min(kPieceBytes, size_ - at_) ? " (truncation)" : ""));
    return true;
  }

  // A device send's envelope: where its bytes should go.
  bool answer(Progress &progress, const Envelope &envelope) {
    envelope_ = envelope;
    phase_ = Phase::negotiated;
    int tag = progress.control_tag(from_.comm);
    Offer &offer = offer_;
    offer.header = {kControlMagic, ControlKind::offer, envelope.id, 0};
    if (envelope.size != size_ || at_ != 0) {
      offer.status = CL_INVALID_VALUE;
      MPI_Isend(&offer, sizeof offer, MPI_BYTE, source_, tag, from_.comm, &request_);
      fail(progress, CL_INVALID_VALUE,
           "a message of " + std::to_string(envelope.size) + " bytes came where " + std::to_string(size_) +
               " were expected" + (envelope.size > size_ ? " (truncation)" : ""));
      return false;  // until the offer has gone
    }
    fedcl::PeerEndpoint here;
    uint64_t transfer = 0;
    bool direct = envelope.instance != 0 && landing_->offer_direct(&here, &transfer) && here.instance != envelope.instance;
    offer.direct = direct;
    if (direct) {
      offer.instance = here.instance;
      offer.session = here.session;
      offer.transfer = transfer;
      std::snprintf(offer.address, sizeof offer.address, "%s", here.address.c_str());
      offer.address_tag_bytes = uint32_t(std::min(here.address_tag.size(), sizeof offer.address_tag));
      std::memcpy(offer.address_tag, here.address_tag.data(), offer.address_tag_bytes);
    }
    progress.expect(from_.comm, source_, ControlKind::go, envelope.id, weak_from_this());
    MPI_Isend(&offer, sizeof offer, MPI_BYTE, source_, tag, from_.comm, &request_);
    return false;
  }

  // Waits for the offer to have gone and the transfer to end (control messages end it).
  bool after_offer() {
    int sent = 0;
    if (request_ != MPI_REQUEST_NULL) MPI_Test(&request_, &sent, MPI_STATUS_IGNORE);
    return request_ == MPI_REQUEST_NULL && done_;
  }

  void fail(Progress &progress, cl_int status, const std::string &why) {
    if (done_) return;
    landing_->fail(status, why);
    end(progress);
  }

  void end(Progress &progress) {
    done_ = true;
    if (phase_ != Phase::negotiated) return;
    for (ControlKind kind : {ControlKind::go, ControlKind::chunk, ControlKind::abort})
      progress.unexpect(from_.comm, source_, kind, envelope_.id);
  }

  std::shared_ptr<Landing> landing_;
  size_t size_;
  Route from_;
  int source_;
  Phase phase_ = Phase::match;
  size_t at_ = 0;  // plain messages: pieces taken so far
  uint8_t *target_ = nullptr;
  std::vector<uint8_t> own_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  Envelope envelope_{};
  Offer offer_{};
  uint64_t staged_ = 0;
  bool done_ = false;
};

}  // namespace

cl_int start_device_receive(cl_command_queue queue, cl_mem buffer, size_t offset, size_t size, Route from,
                            bool blocking, bool wants_event, cl_uint num_events, const cl_event *wait_list,
                            cl_event *done, bool *taken) {
  Progress &progress = Progress::get();
  *taken = false;
  // A blocking receive's thread would only wait: where it may call MPI and no earlier receive may
  // take the message first, it takes the message itself and writes it with a blocking write, as a
  // program staging by hand does. The daemon holds no receive open meanwhile, and no thread hands
  // the message on.
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  if (blocking && progress.multiple() && size < progress.direct_threshold() && !progress.matching_pending(from)) {
    MPI_Mprobe(from.rank, from.tag, from.comm, &message, &status);
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    // Not an envelope's size: a plain message of the receive's size is the data.
    if (size_t(count) == size && size != sizeof(Envelope)) {
      std::unique_ptr<uint8_t[]> bytes(new (std::nothrow) uint8_t[size]);
      if (bytes) {
        MPI_Mrecv(bytes.get(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
        cl_int err = clEnqueueWriteBuffer(queue, buffer, CL_TRUE, offset, size, bytes.get(), num_events, wait_list,
                                          wants_event ? done : nullptr);
        if (err != CL_SUCCESS && *done) clReleaseEvent(*done), *done = nullptr;  // the call failed: no event
        *taken = err == CL_SUCCESS;
        return err;
      }
    }
  }
  uint64_t transfer = 0;
  cl_int err = progress.port().enqueue_receive(queue, buffer, offset, size, num_events, wait_list, &transfer, done);
  if (err != CL_SUCCESS) {
    if (message != MPI_MESSAGE_NULL) {  // taken, so that its sender does not wait for a receive that will not come
      std::vector<uint8_t> discard;
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      discard.resize(size_t(count) + 1);
      MPI_Mrecv(discard.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
    }
    return err;
  }
  clFlush(queue);
  auto receive = std::make_shared<Receive>(std::make_shared<DeviceLanding>(queue, transfer, size), size, from);
  // A message probed here (an envelope, or one of another size) goes the usual way from here.
  if (message != MPI_MESSAGE_NULL && receive->take(progress, message, status)) return CL_SUCCESS;
  progress.add(receive);
  return CL_SUCCESS;
}

int start_host_receive(void *host, size_t size, Route from, MPI_Request *request) {
  auto landing = std::make_shared<HostLanding>(static_cast<uint8_t *>(host), from);
  int err = MPI_Grequest_start(HostLanding::query, HostLanding::free, HostLanding::cancel,
                               new std::shared_ptr<HostLanding>(landing), request);
  if (err != MPI_SUCCESS) return err;
  landing->set_request(*request);
  Progress::get().add(std::make_shared<Receive>(landing, size, from));
  return MPI_SUCCESS;
}

}  // namespace fedcl_mpi
