#include "cutting_proxy.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace fedcl_test {

CuttingProxy::CuttingProxy(int target_port) : LoopbackProxy("cutting proxy"), target_port_(target_port) {
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) throw failure();
  thread_ = std::thread([this] { serve(); });
}

CuttingProxy::~CuttingProxy() {
  stopping_ = true;
  wake();
  thread_.join();
  close(wake_pipe_[0]);
  close(wake_pipe_[1]);
}

void CuttingProxy::wake() { (void)!write(wake_pipe_[1], "x", 1); }

void CuttingProxy::cut_after(bool to_daemon, int64_t bytes, int refuse_ms) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cut_armed_ = true;
    cut_to_daemon_ = to_daemon;
    cut_left_ = bytes;
    refuse_ms_ = refuse_ms;
  }
  wake();
}

bool CuttingProxy::wait_for_cuts(int count) const {
  for (int waited = 0; cuts_ < count; waited += 10) {
    if (waited > 60000) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool CuttingProxy::listen_again() {
  // The port may take a moment to be free again; a test's proxy keeps its address.
  for (int attempt = 0; attempt < 100 && !stopping_; attempt++) {
    listener_ = listen_on(port_);
    if (listener_ >= 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

void CuttingProxy::serve() {
  while (!stopping_) {
    pollfd fds[2] = {{listener_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
    char drain[64];
    while (read(wake_pipe_[0], drain, sizeof drain) > 0) {}
    if (!(fds[0].revents & POLLIN)) continue;
    int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    connections_++;
    int daemon = dial(target_port_);
    bool cut = daemon >= 0 && forward(client, daemon);
    close(client);
    if (daemon >= 0) close(daemon);
    if (!cut) continue;
    cuts_++;
    int refuse_ms;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      refuse_ms = refuse_ms_;
    }
    if (refuse_ms > 0) {
      // Refused, not accepted and closed: the client's dial fails as against a proxy that is down.
      close(listener_);
      listener_ = -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(refuse_ms));
      if (!listen_again()) return;
    }
  }
}

bool CuttingProxy::forward(int client, int daemon) {
  static thread_local uint8_t buffer[256 * 1024];
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cut_armed_ && cut_left_ <= 0) {
        cut_armed_ = false;
        return true;
      }
    }
    pollfd fds[3] = {{client, POLLIN, 0}, {daemon, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (stopping_) return false;
    if (fds[2].revents) {
      char drain[64];
      while (read(wake_pipe_[0], drain, sizeof drain) > 0) {}
    }
    for (int side = 0; side < 2; side++) {
      if (!fds[side].revents) continue;
      size_t room = sizeof buffer;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        // A cut in this direction falls exactly where the test asked.
        if (cut_armed_ && cut_to_daemon_ == (side == 0)) room = std::min<int64_t>(room, std::max<int64_t>(cut_left_, 1));
      }
      ssize_t got = recv(fds[side].fd, buffer, room, 0);
      if (got <= 0) return false;
      if (!send_all(side == 0 ? daemon : client, buffer, size_t(got))) return false;
      std::lock_guard<std::mutex> lock(mutex_);
      if (cut_armed_ && cut_to_daemon_ == (side == 0)) cut_left_ -= got;
      if (cut_armed_ && cut_left_ <= 0) {
        cut_armed_ = false;
        return true;
      }
    }
  }
}

}  // namespace fedcl_test
