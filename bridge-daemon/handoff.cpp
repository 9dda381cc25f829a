// A connection moving from fedcld's main process to a session worker (session.h: hand_over and
// adopt): the socket travels beside a HandedConnection (protocol/fedcl.capnp), which carries what
// the main process read but did not use, the TLS record layer's state and the stream's byte counts.
#include <cstring>

#include "log.h"
#include "server.h"
#include "session.h"

namespace fedcld {

namespace {

const uint8_t kZeroPadding[8] = {};

void append(std::string &out, const void *bytes, size_t size) { out.append(static_cast<const char *>(bytes), size); }

// A frame read whole, as it was on the wire.
void append_frame(std::string &out, const Frame &frame) {
  append(out, &frame.header, sizeof frame.header);
  append(out, frame.message.begin(), frame.message.size() * sizeof(capnp::word));
  if (frame.header.payload_bytes == 0) return;
  append(out, frame.payload.get(), frame.header.payload_bytes);
  append(out, kZeroPadding, fedcl::frame_padding(frame.header.payload_bytes));
}

}  // namespace

void Session::hand_over(fedcl::wire::HandedConnection::Builder out) {
  uv_read_stop(link_->stream());
  out.setPeer(peer_);
  // What the session read but did not run: the frames after the one that ended the handshake and
  // the one being read (never a payload: none is taken before the handshake is done).
  std::string unread;
  for (const Frame &frame : pending_) append_frame(unread, frame);
  switch (state_) {
    case ReadState::header: append(unread, header_bytes_, have_); break;
    case ReadState::message:
      append(unread, &frame_.header, sizeof frame_.header);
      append(unread, frame_.message.begin(), have_);
      break;
    case ReadState::payload:
    case ReadState::skipped_payload: break;
  }
  unread += unparsed_;
  unparsed_.clear();
  out.setStreamReceived(received_ - unread.size());
  out.setStreamSent(sent_.sent());
  link_->transport->hand_over(out, &unread);
  out.setPlaintext(kj::arrayPtr(reinterpret_cast<const uint8_t *>(unread.data()), unread.size()));
  pending_.clear();
}

void Session::end_handed_over(const std::string &why) {
  if (!why.empty()) return close(why);
  if (closing_) return;
  closing_ = true;  // closing the main process's copy of the socket sends nothing: the worker holds one
  uv_close(link_->handle(), on_closed);
}

std::string Session::install_link(SessionLink *link, fedcl::wire::HandedConnection::Reader state) {
  link_ = link;
  link_open_ = true;
  link_->stream()->data = this;
  peer_ = state.getPeer();
  size_t colon = peer_.rfind(':');
  if (colon != std::string::npos) peer_port_ = uint16_t(std::atoi(peer_.c_str() + colon + 1));
  last_sent = last_heard = uv_now(server_.loop());
  uv_stream_t *stream = link_->stream();
  if (link_->local) {
    if (state.hasTls()) return "TLS state with a local connection";
    std::string why = read_peer_credentials(false);
    if (!why.empty()) return why;
  }
  if (!state.hasTls()) {
    link_->transport = std::make_unique<PlainStream>(stream);
    return {};
  }
  auto tls = std::make_unique<TlsStream>(stream, state.getTls(), server_);
  std::string why = tls->problem();
  link_->transport = std::move(tls);
  return why;
}

std::string Session::take_handed_bytes(fedcl::wire::HandedConnection::Reader state) {
  // What the main process read but did not use is this connection's next bytes (counted from
  // here): what it opened first, then (TLS) what it did not.
  auto plaintext = state.getPlaintext();
  consume(plaintext.begin(), plaintext.size());
  std::string why = link_->transport->start(*this, nullptr);
  if (!why.empty()) return why;
  if (paused_ || throttled()) return {};
  int err = uv_read_start(link_->stream(), on_alloc, on_read);
  return err == 0 ? "" : std::string("cannot read the connection: ") + uv_strerror(err);
}

std::string Session::adopt(SessionLink *link, fedcl::wire::HandedConnection::Reader state) {
  delete link_;  // never opened
  received_ = state.getStreamReceived();
  sent_.start_at(state.getStreamSent());
  std::string why = install_link(link, state);
  return why.empty() ? take_handed_bytes(state) : why;
}

}  // namespace fedcld
