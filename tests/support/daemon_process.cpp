#include "daemon_process.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#ifndef FEDCLD_PATH
#error "FEDCLD_PATH must name the fedcld binary"
#endif

namespace fedcl_test {

namespace {
bool g_unconfined_shim = false;  // a DaemonEnvironment that wants --sandbox no is alive
}  // namespace

namespace {

constexpr auto kStartTimeout = std::chrono::seconds(20);
constexpr auto kPollInterval = std::chrono::milliseconds(5);

std::string make_directory() {
  char pattern[] = "/tmp/fedcl-test-XXXXXX";
  if (!mkdtemp(pattern)) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
  return pattern;
}

// Waits for pid to exit for up to timeout; returns its status or -1 if it is still running.
int wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) return 0;  // already reaped
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(kPollInterval);
  }
}

// Whether a process of group pgid is still running (not a zombie: a zombie has closed its sockets).
bool group_running(pid_t pgid) {
  DIR *proc = opendir("/proc");
  if (!proc) return false;
  bool running = false;
  while (dirent *entry = readdir(proc)) {
    if (running || entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream stat(std::string("/proc/") + entry->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid pgrp ...: the name may hold spaces and parentheses, the last ')' ends it.
    size_t end = line.rfind(')');
    if (end == std::string::npos) continue;
    std::istringstream fields(line.substr(end + 1));
    char state = 0;
    pid_t ppid = 0, group = 0;
    fields >> state >> ppid >> group;
    running = group == pgid && state != 'Z' && state != 'X';
  }
  closedir(proc);
  return running;
}

}  // namespace

DaemonProcess::DaemonProcess(const std::vector<std::string> &extra_args) {
  std::string directory = make_directory();
  std::string port_file = directory + "/port";
  // FEDCL_TEST_DAEMON_LOG=debug shows what the daemons do, when a test needs explaining.
  const char *log_level = std::getenv("FEDCL_TEST_DAEMON_LOG");
  // --config /dev/null: a test's daemon ignores this machine's /etc/fedcl/fedcld.conf. One spare
  // worker, not the default two (a test's extra_args may say otherwise): each loads the backend, 0.1 s
  // of CPU under ASan, and most tests open one session (the worker that listed the devices takes it,
  // and a second starts as it is taken).
  std::vector<std::string> args = {FEDCLD_PATH, "--config", "/dev/null", "--listen", "127.0.0.1:0", "--port-file", port_file,
                                   "--log-level", log_level ? log_level : "warn", "--spare-workers", "1"};
  if (g_unconfined_shim) args.insert(args.end(), {"--sandbox", "no"});
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  // FEDCL_TEST_DAEMON_ARGS: more options for every daemon, e.g. a run of the suite with --busy-poll.
  if (const char *more = std::getenv("FEDCL_TEST_DAEMON_ARGS")) {
    std::istringstream words(more);
    for (std::string word; words >> word;) args.push_back(word);
  }
  std::vector<char *> argv;
  for (auto &arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  // The tests point the loader at fedcl alone; the daemon must see the node's real platforms.
  std::vector<char *> envp;
  for (char **entry = environ; *entry; entry++)
    if (std::strncmp(*entry, "OCL_ICD_VENDORS=", 16) != 0) envp.push_back(*entry);
  envp.push_back(nullptr);

  // FEDCL_TEST_DAEMON_NOFILE=SOFT:HARD: the daemon's open-file limit (a test of what it does near it).
  rlimit files{};
  bool limit_files = false;
  if (const char *limit = std::getenv("FEDCL_TEST_DAEMON_NOFILE")) {
    unsigned long long soft = 0, hard = 0;
    limit_files = std::sscanf(limit, "%llu:%llu", &soft, &hard) == 2;
    files = {rlim_t(soft), rlim_t(hard)};
  }
  pid_t parent = getpid();
  pid_ = fork();
  if (pid_ == 0) {
    // A test that dies (or is killed by ctest's timeout) must not leave its daemons behind.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (limit_files && setrlimit(RLIMIT_NOFILE, &files) != 0) _exit(126);
    setpgid(0, 0);  // a group of its own, with its session workers: kill() ends them together
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  if (pid_ > 0) setpgid(pid_, pid_);  // also here, so that kill() never finds it not yet done
  std::string problem = pid_ < 0 ? std::string("fork: ") + std::strerror(errno) : await_port(port_file);
  // With --metrics, fedcld wrote that port beside (before the main one).
  if (std::ifstream metrics(port_file + ".metrics"); metrics) metrics >> metrics_port_;
  // The port files have done their job: remove them now, so that not even a killed test leaves them.
  for (const char *suffix : {"", ".tmp", ".metrics", ".metrics.tmp"}) unlink((port_file + suffix).c_str());
  rmdir(directory.c_str());
  if (!problem.empty()) {
    kill();
    throw std::runtime_error(problem);
  }
}

DaemonProcess::~DaemonProcess() { kill(); }

bool DaemonProcess::alive() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }

std::string DaemonProcess::await_port(const std::string &port_file) {
  auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(port_file);
    if (in >> port_ && port_ > 0) return {};
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return "fedcld exited before listening (wait status " + std::to_string(status) + ")";
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  return "fedcld did not write its port file in time";
}

void DaemonProcess::kill() {
  if (pid_ <= 0) return;
  // The node dies: the main process and its session workers at once. Killed alone, the main
  // process's workers would follow it only a moment later (PR_SET_PDEATHSIG), still answering
  // their clients while a peer already finds the daemon gone.
  if (::kill(-pid_, SIGKILL) != 0) ::kill(pid_, SIGKILL);
  int status;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  // Until the workers are gone too, as when a node's power goes: a worker tears down its memory
  // before it closes its sockets, and a peer that finds the main process's listener closed could
  // otherwise report the daemon unreachable while its session's connection is still open (seen
  // under ASan, whose shadow memory makes that teardown slow).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (group_running(pid_) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(kPollInterval);
  pid_ = -1;
}

int DaemonProcess::stop(int timeout_ms) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  int status = wait_exit(pid_, std::chrono::milliseconds(timeout_ms));
  if (status == -1) {
    kill();
    return -1;
  }
  pid_ = -1;
  return status;
}

DaemonEnvironment::DaemonEnvironment(const std::string &library,
                                     const std::vector<std::pair<std::string, std::string>> &variables, bool confined)
    : unconfined_before_(std::exchange(g_unconfined_shim, !confined)) {
  const char *preloaded = std::getenv("LD_PRELOAD");
  preload_before_ = preloaded ? preloaded : "";
  setenv("LD_PRELOAD", (preload_before_.empty() ? "" : preload_before_ + ":").append(library).c_str(), 1);
  for (const auto &[name, value] : variables) {
    setenv(name.c_str(), value.c_str(), 1);
    names_.push_back(name);
  }
}

DaemonEnvironment::~DaemonEnvironment() {
  g_unconfined_shim = unconfined_before_;
  if (preload_before_.empty()) unsetenv("LD_PRELOAD");
  else setenv("LD_PRELOAD", preload_before_.c_str(), 1);
  for (const std::string &name : names_) unsetenv(name.c_str());
}

std::vector<pid_t> DaemonProcess::workers() const {
  std::vector<pid_t> found;
  if (pid_ <= 0) return found;
  // Every thread's children: a worker is started from whichever thread libuv's spawn ran on.
  std::string tasks = "/proc/" + std::to_string(pid_) + "/task";
  DIR *dir = opendir(tasks.c_str());
  if (!dir) return found;
  while (dirent *entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream children(tasks + "/" + entry->d_name + "/children");
    for (pid_t child; children >> child;) found.push_back(child);
  }
  closedir(dir);
  return found;
}

void DaemonProcess::signal_all(int signum) const {
  if (pid_ <= 0) return;
  ::kill(pid_, signum);
  for (pid_t worker : workers()) ::kill(worker, signum);
}

namespace {
long process_rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}
}  // namespace

long DaemonProcess::rss_mib() const {
  long kib = pid_ > 0 ? process_rss_kib(pid_) : -1;
  if (kib < 0) return -1;
  for (pid_t worker : workers()) kib += std::max(0L, process_rss_kib(worker));
  return kib / 1024;
}

std::string DaemonProcess::local_socket() const {
  const char *tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/fedcld-" + std::to_string(port_) + ".sock";
}

std::string hosts_list(const std::vector<const DaemonProcess *> &daemons) {
  std::string list;
  for (const DaemonProcess *daemon : daemons) list += (list.empty() ? "" : ",") + daemon->endpoint();
  return list;
}

int closed_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
    throw std::runtime_error(std::string("cannot find a free port: ") + std::strerror(errno));
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace fedcl_test
