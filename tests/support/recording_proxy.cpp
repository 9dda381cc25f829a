#include "recording_proxy.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace fedcl_test {

RecordingProxy::RecordingProxy(int target_port) : LoopbackProxy("recording proxy"), target_port_(target_port) {
  if (pipe(stop_pipe_) != 0) throw failure();
  thread_ = std::thread([this] { serve(); });
}

RecordingProxy::~RecordingProxy() {
  (void)!write(stop_pipe_[1], "x", 1);
  thread_.join();
  close(stop_pipe_[0]);
  close(stop_pipe_[1]);
}

std::vector<uint8_t> RecordingProxy::client_bytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return from_client_;
}

std::vector<uint8_t> RecordingProxy::daemon_bytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return from_daemon_;
}

void RecordingProxy::flip_bit_in_record(bool to_daemon, size_t min_body, int skip) {
  std::lock_guard<std::mutex> lock(mutex_);
  flip_min_body_[to_daemon] = min_body;
  flip_skip_[to_daemon] = skip;
}

void RecordingProxy::tamper(RecordCursor &cursor, bool to_daemon, uint8_t *bytes, size_t size) {
  for (size_t i = 0; i < size;) {
    if (cursor.body_at == cursor.body_size) {  // in a header
      cursor.header[cursor.header_have++] = bytes[i++];
      if (cursor.header_have < sizeof cursor.header) continue;
      cursor.header_have = 0;
      cursor.body_at = 0;
      cursor.body_size = size_t(cursor.header[3]) << 8 | cursor.header[4];
      std::lock_guard<std::mutex> lock(mutex_);
      size_t &min_body = flip_min_body_[to_daemon];
      cursor.flip = min_body > 0 && cursor.body_size >= min_body && flip_skip_[to_daemon]-- == 0;
      if (cursor.flip) min_body = 0;
      continue;
    }
    size_t take = std::min(cursor.body_size - cursor.body_at, size - i), middle = cursor.body_size / 2;
    if (cursor.flip && middle >= cursor.body_at && middle < cursor.body_at + take) {
      bytes[i + middle - cursor.body_at] ^= 0x40;
      cursor.flip = false;
      flips_++;
    }
    i += take;
    cursor.body_at += take;
  }
}

void RecordingProxy::serve() {
  for (;;) {
    pollfd fds[2] = {{listener_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    int daemon = dial(target_port_);
    if (daemon >= 0) forward(client, daemon);
    close(client);
    if (daemon >= 0) close(daemon);
  }
}

void RecordingProxy::forward(int client, int daemon) {
  uint8_t buffer[64 * 1024];
  RecordCursor cursors[2];  // [side]: from the client, from the daemon
  for (;;) {
    pollfd fds[3] = {{client, POLLIN, 0}, {daemon, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[2].revents) return;
    for (int side = 0; side < 2; side++) {
      if (!fds[side].revents) continue;
      int64_t cut_after = side == 1 ? cut_after_.load() : -1;
      size_t room = cut_after >= 0 ? std::min<size_t>(cut_after, sizeof buffer) : sizeof buffer;
      ssize_t got = room ? recv(fds[side].fd, buffer, room, 0) : 0;
      if (got <= 0) return;
      if (cut_after >= 0) cut_after_ -= got;
      tamper(cursors[side], side == 0, buffer, size_t(got));
      {
        std::lock_guard<std::mutex> lock(mutex_);
        auto &record = side == 0 ? from_client_ : from_daemon_;
        record.insert(record.end(), buffer, buffer + got);
      }
      if (!send_all(side == 0 ? daemon : client, buffer, size_t(got))) return;
      if (cut_after >= 0 && cut_after_ <= 0) return;  // the cut
    }
  }
}

}  // namespace fedcl_test
