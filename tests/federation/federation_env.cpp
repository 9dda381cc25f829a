#include "federation_env.h"

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <thread>

#include "cl_harness.h"

namespace fedcl_federation {

namespace {

std::string env(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

// A list that names one thing for every node, or one thing for all of them.
std::string per_node(const char *name, size_t nodes, std::vector<std::string> *out) {
  *out = split_list(env(name));
  if (out->size() == 1 && nodes > 1) out->assign(nodes, out->front());
  if (!out->empty() && out->size() != nodes)
    return std::string(name) + " names " + std::to_string(out->size()) + " nodes, FEDCL_HOSTS " + std::to_string(nodes);
  return {};
}

// The process state letter from /proc/PID/stat ('Z' for a zombie), or 0 when there is no such process.
char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  try {
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure &) {
    return 0;  // the process went between the open and the read (ESRCH): there is none now
  }
  size_t paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return 0;
  return text[paren + 2];
}

std::string run_ip(const std::string &netns, const std::string &args) {
  std::string command = "ip -n '" + netns + "' " + args, output;
  int status = fedcl_test::run_command(command, &output);
  if (status != 0) return "'" + command + "' failed (" + std::to_string(status) + "): " + output;
  return {};
}

}  // namespace

std::vector<std::string> split_list(const std::string &text) {
  std::vector<std::string> items;
  if (text.empty()) return items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) items.push_back(item);
  if (text.back() == ',') items.push_back("");
  return items;
}

std::string ClusterEnv::load() {
  mode = env("FEDCL_TEST_MODE");
  hosts = split_list(env("FEDCL_HOSTS"));
  if (mode.empty() || hosts.empty())
    return "FEDCL_TEST_MODE or FEDCL_HOSTS is not set: run the federation tests through scripts/netns-cluster.sh "
           "(ctest -L federation does)";
  if (mode != "netns" && mode != "loopback") return "FEDCL_TEST_MODE is '" + mode + "', not netns or loopback";
  std::vector<std::string> pids;
  for (auto [name, list] : {std::pair{"FEDCL_TEST_DAEMON_PIDS", &pids}, {"FEDCL_TEST_NODE_NETNS", &netns},
                            {"FEDCL_TEST_NODE_IFACE", &ifaces}, {"FEDCL_TEST_NODE_LOGS", &logs},
                            {"FEDCL_TEST_NODE_PEER_ADDR", &peer_addrs}, {"FEDCL_TEST_NODE_PEER_IFACE", &peer_ifaces}}) {
    std::string problem = per_node(name, nodes(), list);
    if (!problem.empty()) return problem;
  }
  daemon_pids.clear();
  for (const std::string &pid : pids) daemon_pids.push_back(static_cast<pid_t>(std::atol(pid.c_str())));
  if (daemon_pids.size() != nodes()) return "FEDCL_TEST_DAEMON_PIDS does not name a daemon for every node";
  if (netns_mode() && (netns.size() != nodes() || ifaces.size() != nodes()))
    return "netns mode without FEDCL_TEST_NODE_NETNS and FEDCL_TEST_NODE_IFACE for every node";
  return {};
}

std::string ClusterEnv::kill_daemon(size_t k) const {
  if (k >= daemon_pids.size() || daemon_pids[k] <= 0) return "no daemon pid for node " + std::to_string(k);
  pid_t pid = daemon_pids[k];
  if (::kill(pid, SIGKILL) != 0) return "kill(" + std::to_string(pid) + "): " + std::strerror(errno);
  // The daemon is the script's child, not ours: it is gone once it is a zombie or reaped.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    char state = process_state(pid);
    if (state == 0 || state == 'Z') return {};
    if (std::chrono::steady_clock::now() > deadline)
      return "daemon " + std::to_string(pid) + " still runs (state " + state + ") 5 s after SIGKILL";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string ClusterEnv::cut_link(size_t k) const {
  if (!netns_mode() || k >= nodes()) return "no link to cut: not in netns mode";
  return run_ip(netns[k], "link set '" + ifaces[k] + "' down");
}

std::string ClusterEnv::restore_link(size_t k) const {
  if (!netns_mode() || k >= nodes()) return "no link to restore: not in netns mode";
  return run_ip(netns[k], "link set '" + ifaces[k] + "' up");
}

std::string ClusterEnv::cut_peer_link(size_t k) const {
  if (!netns_mode() || k >= peer_ifaces.size() || peer_ifaces[k].empty())
    return "no peer-network interface (netns-cluster.sh --peer-net) for node " + std::to_string(k);
  return run_ip(netns[k], "link set '" + peer_ifaces[k] + "' down");
}

std::string ClusterEnv::log(size_t k) const {
  if (k >= logs.size() || logs[k].empty()) return "(no log)";
  return fedcl_test::read_file(logs[k]);
}

void CL_CALLBACK Notices::callback(const char *message, const void *, size_t, void *self) {
  auto *notices = static_cast<Notices *>(self);
  std::lock_guard<std::mutex> lock(notices->mutex);
  notices->messages.push_back(message);
  notices->cv.notify_all();
}

bool Notices::wait_for(const std::string &text, std::chrono::seconds limit) {
  std::unique_lock<std::mutex> lock(mutex);
  return cv.wait_for(lock, limit, [&] {
    for (const auto &message : messages)
      if (message.find(text) != std::string::npos) return true;
    return false;
  });
}

std::string Notices::all() {
  std::lock_guard<std::mutex> lock(mutex);
  std::string text;
  for (const auto &message : messages) text += "  " + message + "\n";
  return text.empty() ? "  (none)\n" : text;
}

cl_int wait_for_status(cl_event event, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    cl_int status = CL_QUEUED;
    cl_int err = clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    if (err != CL_SUCCESS) return err;
    if (status <= CL_COMPLETE || std::chrono::steady_clock::now() >= deadline) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Watchdog::Watchdog(std::chrono::seconds limit) {
  thread_ = std::thread([this, limit] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (cv_.wait_for(lock, limit, [this] { return done_; })) return;
    std::fprintf(stderr, "\nFAILURE: the test hung: still running after %lld s, in step: %s\n",
                 static_cast<long long>(limit.count()), step_.c_str());
    std::fflush(stderr);
    std::fflush(stdout);
    std::_Exit(1);
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::step(const std::string &what) {
  std::lock_guard<std::mutex> lock(mutex_);
  step_ = what;
}

std::string Watchdog::current() {
  std::lock_guard<std::mutex> lock(mutex_);
  return step_;
}

void within(std::chrono::seconds limit, const std::string &what, const std::function<void()> &fn) {
  // The thread may outlive this call (when it hangs), so what it shares lives on the heap.
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread([fn, done] {
    fn();
    done->set_value();
  }).detach();
  if (finished.wait_for(limit) == std::future_status::ready) return;
  std::fprintf(stderr, "\nFAILURE: %s did not return within %lld s: a hang, not an error. Ending the test.\n",
               what.c_str(), static_cast<long long>(limit.count()));
  std::fflush(stderr);
  std::fflush(stdout);
  std::_Exit(1);
}

}  // namespace fedcl_federation
