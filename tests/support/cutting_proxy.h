// A loopback TCP proxy that drops the connection through it when a test says so, as a middlebox
// that lost its state or a proxy that restarts would: both sides closed, then, for a while, new
// connections refused (its listening socket closed) before it accepts again. Unlike
// RecordingProxy it keeps no copy of the bytes, so that gigabytes may pass.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>

#include "loopback_proxy.h"

namespace fedcl_test {

class CuttingProxy : public LoopbackProxy {
 public:
  // Listens on a free loopback port and forwards each connection to 127.0.0.1:target_port.
  explicit CuttingProxy(int target_port);
  ~CuttingProxy();

  // Drops the connection once `bytes` more have passed from the client (to_daemon) or from the
  // daemon (0: at once), then refuses connections for refuse_ms.
  void cut_after(bool to_daemon, int64_t bytes, int refuse_ms);
  void cut_now(int refuse_ms) { cut_after(true, 0, refuse_ms); }
  // Where later connections go (a daemon restarted on another port).
  void retarget(int target_port) { target_port_ = target_port; }
  // How many cuts were made, and how many connections were accepted.
  int cuts() const { return cuts_; }
  int connections() const { return connections_; }
  // Waits until `count` cuts were made (false after 60 s): a test's next cut must not merge with one
  // the proxy has not made yet.
  bool wait_for_cuts(int count) const;

 private:
  void serve();
  // Forwards until a cut (true) or either side closes or the proxy stops (false).
  bool forward(int client, int daemon);
  bool listen_again();
  void wake();

  std::atomic<int> target_port_;
  int wake_pipe_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::mutex mutex_;
  bool cut_armed_ = false;
  bool cut_to_daemon_ = true;
  int64_t cut_left_ = 0;
  int refuse_ms_ = 0;
  std::atomic<int> cuts_{0}, connections_{0};
};

}  // namespace fedcl_test
