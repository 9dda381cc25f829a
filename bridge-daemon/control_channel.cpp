#include "control_channel.h"

#include <capnp/serialize.h>

#include <cstring>

#include "session.h"

namespace fedcld {

namespace wire = fedcl::wire;

namespace {

struct SendRequest {
  uv_write_t req;
  std::vector<uint8_t> bytes;
  std::function<void(int)> sent;
};

constexpr size_t kReadBytes = 64 * 1024;

}  // namespace

bool carries_connection(wire::WorkerMessage::Which which) {
  return which == wire::WorkerMessage::TAKE_SESSION || which == wire::WorkerMessage::RESUME_SESSION ||
         which == wire::WorkerMessage::TAKE_LINK;
}

ControlChannel::ControlChannel(uv_loop_t *loop, OnMessage on_message, OnClosed on_closed)
    : loop_(loop), on_message_(std::move(on_message)), on_closed_(std::move(on_closed)), read_buffer_(kReadBytes) {
  uv_pipe_init(loop_, &pipe_, 1);
  pipe_.data = this;
}

ControlChannel::~ControlChannel() {
  for (SessionLink *link : links_) session_link_discard(link);
}

int ControlChannel::open(int fd) { return uv_pipe_open(&pipe_, fd); }

int ControlChannel::start() { return uv_read_start(reinterpret_cast<uv_stream_t *>(&pipe_), on_alloc, on_read); }

void ControlChannel::close() {
  if (closing_) return;
  closing_ = true;
  uv_close(reinterpret_cast<uv_handle_t *>(&pipe_), [](uv_handle_t *handle) { delete static_cast<ControlChannel *>(handle->data); });
}

void ControlChannel::send(capnp::MessageBuilder &message, uv_stream_t *handle, std::function<void(int)> sent) {
  auto *request = new SendRequest{{}, {}, std::move(sent)};
  fedcl::frame_append(request->bytes, wire::FrameKind::WORKER, message, 0);
  uv_buf_t buf = uv_buf_init(reinterpret_cast<char *>(request->bytes.data()), request->bytes.size());
  auto done = [](uv_write_t *req, int status) {
    auto *request = reinterpret_cast<SendRequest *>(req);
    if (request->sent) request->sent(status);
    delete request;
  };
  int err = closing_ ? UV_ECANCELED
            : handle ? uv_write2(&request->req, reinterpret_cast<uv_stream_t *>(&pipe_), &buf, 1, handle, done)
                     : uv_write(&request->req, reinterpret_cast<uv_stream_t *>(&pipe_), &buf, 1, done);
  if (err != 0) {
    if (request->sent) request->sent(err);
    delete request;
  }
}

void ControlChannel::on_alloc(uv_handle_t *handle, size_t, uv_buf_t *buf) {
  auto *self = static_cast<ControlChannel *>(handle->data);
  *buf = uv_buf_init(reinterpret_cast<char *>(self->read_buffer_.data()), self->read_buffer_.size());
}

void ControlChannel::on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  auto *self = static_cast<ControlChannel *>(stream->data);
  if (self->closing_) return;
  // A process that ends (or dies) closes its end, or resets it with bytes unread.
  if (nread < 0) return self->fail(nread == UV_EOF || nread == UV_ECONNRESET ? kClosed : uv_strerror(int(nread)));
  self->accept_handles();
  self->in_.insert(self->in_.end(), reinterpret_cast<uint8_t *>(buf->base), reinterpret_cast<uint8_t *>(buf->base) + nread);
  std::string why = self->deliver();
  if (!why.empty()) self->fail(why);
}

void ControlChannel::accept_handles() {
  while (uv_pipe_pending_count(&pipe_) > 0) {
    uv_handle_type type = uv_pipe_pending_type(&pipe_);
    auto *link = new SessionLink;
    // A worker's local client session may pass descriptors (its shared memory); a peer link or a
    // TCP connection never does.
    link->init(loop_, type == UV_NAMED_PIPE, type == UV_NAMED_PIPE);
    if ((type != UV_TCP && type != UV_NAMED_PIPE) || uv_accept(reinterpret_cast<uv_stream_t *>(&pipe_), link->stream()) != 0) {
      session_link_discard(link);
      continue;  // the message it came with finds none and fails the channel
    }
    links_.push_back(link);
  }
}

std::string ControlChannel::deliver() {
  size_t at = 0;
  std::string why;
  while (!closing_ && in_.size() - at >= sizeof(fedcl::FrameHeader)) {
    fedcl::FrameHeader header;
    std::memcpy(&header, in_.data() + at, sizeof header);
    why = fedcl::frame_check(header);
    if (why.empty() && (header.kind != uint16_t(wire::FrameKind::WORKER) || header.payload_bytes != 0))
      why = "not a worker message";
    if (!why.empty()) break;
    size_t bytes = sizeof header + size_t(header.message_words) * sizeof(capnp::word);
    if (in_.size() - at < bytes) break;
    kj::Array<capnp::word> words = kj::heapArray<capnp::word>(header.message_words);
    std::memcpy(words.begin(), in_.data() + at + sizeof header, words.size() * sizeof(capnp::word));
    at += bytes;
    try {
      capnp::FlatArrayMessageReader reader(words.asPtr());
      auto message = reader.getRoot<wire::WorkerMessage>();
      SessionLink *link = nullptr;
      if (carries_connection(message.which())) {
        if (links_.empty()) {
          why = "a hand-over without its socket";
          break;
        }
        link = links_.front();
        links_.pop_front();
      }
      on_message_(message, link);
    } catch (const kj::Exception &e) {
      why = std::string("malformed worker message: ") + e.getDescription().cStr();
      break;
    }
  }
  in_.erase(in_.begin(), in_.begin() + at);
  return why;
}

void ControlChannel::fail(const std::string &why) {
  if (closing_) return;
  uv_read_stop(reinterpret_cast<uv_stream_t *>(&pipe_));
  auto closed = std::move(on_closed_);
  if (closed) closed(why);
}

}  // namespace fedcld
