// What the federation tests know of the cluster they run against. scripts/netns-cluster.sh starts the
// daemons (one network namespace per node, or loopback ports) and describes them in the environment;
// the tests never start daemons themselves. They can kill a node's daemon or cut a node's link.
#pragma once

#include <CL/cl.h>
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

namespace fedcl_federation {

// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {}.
std::vector<std::string> split_list(const std::string &text);

struct ClusterEnv {
  std::string mode;                      // FEDCL_TEST_MODE: "netns" or "loopback"
  std::vector<std::string> hosts;        // FEDCL_HOSTS, in node order
  std::vector<pid_t> daemon_pids;        // FEDCL_TEST_DAEMON_PIDS
  std::vector<std::string> netns;        // FEDCL_TEST_NODE_NETNS (empty in loopback mode)
  std::vector<std::string> ifaces;       // FEDCL_TEST_NODE_IFACE (empty in loopback mode)
  std::vector<std::string> logs;         // FEDCL_TEST_NODE_LOGS
  std::vector<std::string> peer_addrs;   // FEDCL_TEST_NODE_PEER_ADDR (--peer-net only)
  std::vector<std::string> peer_ifaces;  // FEDCL_TEST_NODE_PEER_IFACE (--peer-net only)

  // Reads the environment; "" on success, else what is missing or inconsistent (the tests were run
  // without scripts/netns-cluster.sh, say).
  std::string load();

  size_t nodes() const { return hosts.size(); }
  bool netns_mode() const { return mode == "netns"; }

  // SIGKILLs node k's daemon and waits (bounded) until it is gone (reaped or a zombie of the script).
  // "" on success, else what went wrong.
  std::string kill_daemon(size_t k) const;
  // Sets node k's only link down (`ip -n NS link set IF down`): the node can reach no one, nor be
  // reached. Only in netns mode; "" on success, else what went wrong.
  std::string cut_link(size_t k) const;
  // Sets node k's link up again after cut_link.
  std::string restore_link(size_t k) const;
  // Sets node k's peer-network interface down (scripts/netns-cluster.sh --peer-net): the node keeps
  // its client link but loses its daemon-to-daemon network.
  std::string cut_peer_link(size_t k) const;
  // The daemon's log so far, for failure messages.
  std::string log(size_t k) const;
};

// Collects the messages a context's notify callback receives.
struct Notices {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<std::string> messages;

  static void CL_CALLBACK callback(const char *message, const void *, size_t, void *self);
  // Waits (bounded) for a message containing text.
  bool wait_for(const std::string &text, std::chrono::seconds limit);
  std::string all();
};

// Polls the event's execution status until it is CL_COMPLETE or negative, or until limit has passed;
// returns the last status seen (still positive on a timeout). A query that fails returns its error.
cl_int wait_for_status(cl_event event, std::chrono::milliseconds limit);

// Ends the process (status 1, with a message naming the test's current step) when a test runs
// longer than limit: a hang then reads as a failure with a reason, before ctest's timeout kills the
// process without one. Tests name what they are doing with step().
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds limit);
  ~Watchdog();
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;
  void step(const std::string &what);
  std::string current();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string step_ = "setting up";
  std::thread thread_;
};

// Runs fn on a thread of its own and waits up to limit for it. If it does not return in time the test
// cannot go on (a hung OpenCL call holds the thread): says so on stderr, naming what hung, and ends
// the process with status 1 at once, so a hang reads as a failure with a reason instead of a ctest
// timeout.
void within(std::chrono::seconds limit, const std::string &what, const std::function<void()> &fn);

}  // namespace fedcl_federation
