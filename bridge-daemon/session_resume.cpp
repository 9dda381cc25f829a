// A client session outliving its connection (session.h, "Resumption"): parking it when the
// connection drops, and going on over the connection that resumed it.
#include <algorithm>
#include <vector>

#include "log.h"
#include "server.h"
#include "session.h"

namespace fedcld {

namespace {

// Past this many bytes read since the client was last told, a Notice tells it how far this daemon
// read, so that what it keeps for resending stays bounded while it streams a large write.
constexpr uint64_t kAckBytes = 4ull << 20;

struct ResendRequest {
  uv_write_t req;
  std::vector<uv_buf_t> bufs;
  std::vector<uint8_t> first;
  std::weak_ptr<Session> session;
};

}  // namespace

bool Session::resumable() const {
  return role == Role::client && greeted && !resume_token.empty();
}

bool Session::keeps_sent() const {
  // From the first byte (the client counts its handshake too), until it is known that the
  // connection is not a resumable client session.
  return server_.options().resume_window_ms > 0 && role != Role::peer && !handshake.status_request &&
         (!greeted || resumable());
}

void Session::connection_lost(const std::string &reason) {
  if (resumable()) return park(reason);
  close(reason);
}

void Session::park(const std::string &reason) {
  if (parked_ || closing_) return;
  parked_ = true;
  parked_at_ = uv_now(server_.loop());
  FEDCLD_LOG(info, "session %llu (%s): connection lost (%s); kept %u ms for the client to resume it",
             (unsigned long long)number_, peer_.c_str(), reason.c_str(), server_.options().resume_window_ms);
  drop_link();
}

void Session::drop_link() {
  if (!link_) return;
  SessionLink *link = link_;
  link_ = nullptr;
  uv_read_stop(link->stream());
  // Writes still queued on it are cancelled first (their bytes are kept in sent_).
  session_link_discard(link);
}

std::string Session::resume_over(SessionLink *link, fedcl::wire::HandedConnection::Reader state, std::vector<uint8_t> first,
                                 uint64_t client_received) {
  park("the client resumed the session on a new connection");  // it found the old one dead first
  std::string why = install_link(link, state);
  if (!why.empty()) return why;
  parked_ = false;
  FEDCLD_LOG(info, "session %llu resumed from %s: resending %llu bytes, reading on from byte %llu",
             (unsigned long long)number_, peer_.c_str(), (unsigned long long)(sent_.sent() - client_received),
             (unsigned long long)received_);
  std::vector<iovec> pieces;
  sent_.pieces_from(client_received, &pieces);  // the caller checked the range
  // The bytes stay in sent_ until the client acknowledges them, which it can only do for bytes
  // that were written; so they outlive the part of the write that reads them.
  auto *request = new ResendRequest{{}, {}, std::move(first), weak_from_this()};
  request->bufs.push_back(uv_buf_init(reinterpret_cast<char *>(request->first.data()), request->first.size()));
  for (const iovec &piece : pieces)
    for (size_t off = 0; off < piece.iov_len; off += (1u << 30))
      request->bufs.push_back(uv_buf_init(static_cast<char *>(piece.iov_base) + off,
                                          std::min<size_t>(1u << 30, piece.iov_len - off)));
  int err = link_->transport->write(&request->req, request->bufs.data(), request->bufs.size(), [](uv_write_t *req, int status) {
    auto *request = reinterpret_cast<ResendRequest *>(req);
    // A failed resend is one more dropped connection.
    if (status < 0 && status != UV_ECANCELED) {
      if (auto session = request->session.lock()) session->connection_lost(std::string("resend failed: ") + uv_strerror(status));
    }
    delete request;
  });
  if (err != 0) {
    delete request;
    return std::string("resend failed: ") + uv_strerror(err);
  }
  return take_handed_bytes(state);
}

void Session::acknowledge_if_due() {
  if (!resumable() || closing_ || parked_) return;
  if (received_ - received_told_ >= kAckBytes || large_frame_read_) send_heartbeat();
  large_frame_read_ = false;
}

}  // namespace fedcld
