// A real fedcld process for end-to-end tests: started on a free loopback port, found through its
// --port-file, and always killed when the object goes.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace fedcl_test {

class DaemonProcess {
 public:
  // Starts FEDCLD_PATH --listen 127.0.0.1:0 --port-file <tmp> plus extra_args and waits (bounded)
  // for the port file. Throws std::runtime_error if the daemon does not come up.
  explicit DaemonProcess(const std::vector<std::string> &extra_args = {});
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess &) = delete;
  DaemonProcess &operator=(const DaemonProcess &) = delete;

  int port() const { return port_; }
  // The port of --metrics (0 without it).
  int metrics_port() const { return metrics_port_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  // Its local socket as --local-socket auto names it (fedcld-PORT.sock in $TMPDIR or /tmp), and the
  // hosts entry that names the daemon by it.
  std::string local_socket() const;
  std::string local_endpoint() const { return "unix:" + local_socket(); }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  // The process has not exited (one that has is reaped, as waitpid does).
  bool alive() const;

  // The daemon's session workers (its child processes), in no order.
  std::vector<pid_t> workers() const;
  // signum to the daemon and every worker, as to a whole node (SIGSTOP: a frozen node).
  void signal_all(int signum) const;
  // The resident memory of the daemon and its workers together (VmRSS), in MiB; -1 if gone.
  long rss_mib() const;

  // SIGKILL to the daemon and its session workers (its process group); returns once the daemon is
  // reaped and no worker runs on (bounded).
  void kill();
  // SIGTERM, waits up to timeout_ms for a clean exit, then SIGKILL. Returns the exit status as
  // waitpid reports it, or -1 if it had to be killed.
  int stop(int timeout_ms = 5000);

 private:
  // Waits (bounded) for the daemon to write its port; returns "" or what went wrong.
  std::string await_port(const std::string &port_file);

  pid_t pid_ = -1;
  int port_ = 0;
  int metrics_port_ = 0;
};

// For the daemons started while it lives: LD_PRELOAD gains library (after what is preloaded already,
// the sanitizers' runtimes in scripts/sanitize.sh) and the variables are set; after, as they were.
// The daemons run with --sandbox no unless confined says otherwise: the backend shims exchange files
// with their tests, which a confined worker may not open (the confinement's own tests say confined).
class DaemonEnvironment {
 public:
  DaemonEnvironment(const std::string &library, const std::vector<std::pair<std::string, std::string>> &variables,
                    bool confined = false);
  ~DaemonEnvironment();
  DaemonEnvironment(const DaemonEnvironment &) = delete;

 private:
  std::string preload_before_;
  std::vector<std::string> names_;
  bool unconfined_before_;
};

// "127.0.0.1:p1,127.0.0.1:p2,..." for FEDCL_HOSTS.
std::string hosts_list(const std::vector<const DaemonProcess *> &daemons);

// A loopback port that nothing listens on (bound, then closed again).
int closed_port();

}  // namespace fedcl_test
