// What a flood of strangers costs one fedcld (docs/design-decisions.md, "Processes"): N connections
// that never prove themselves, held open (each one the daemon closes is opened again, as an attacker
// would), from K loopback addresses, while an honest client starts sessions. It starts its own fedcld
// (seeing the node's platforms) and measures:
//   - how long an honest session takes to start: a fresh process's first fedcl device (the ICD, a
//     connection, the handshake, the HelloReply), before the flood and during it;
//   - the main process's resident memory idle (after a warm-up), during the flood, and a while after
//     its connections closed;
//   - the daemon's log: lines written during the flood, and the most any one address got per second.
//
//   fedcl_flood_bench --build DIR [--connections N] [--sources K] [--mode idle|tls|hello]
//                     [--hold SECONDS] [--after SECONDS] [--check] [-- FEDCLD_OPTIONS...]
//
// Modes: idle connections say nothing; tls ones send a ClientHello and never answer the daemon's
// flight (fedcld needs --tls yes and a certificate: pass them after --, and set FEDCL_TLS and
// FEDCL_TLS_CA for the honest client); hello ones send a Hello and never answer the challenge
// (fedcld needs a key; the honest client its FEDCL_KEY). Prints `metric value unit` lines
// (bench/README.md). --check exits 1 when an honest session failed or an address got more than one
// log line per second: the CI run (load.flood_short) asserts no time.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <capnp/message.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "auth.h"
#include "bench_platform.h"
#include "fedcl.capnp.h"
#include "frame.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string build;
  size_t connections = 10000;
  size_t sources = 100;
  std::string mode = "idle";
  double hold_s = 30;
  double after_s = 60;
  bool check = false;
  std::vector<std::string> daemon_args;
};

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: fedcl_flood_bench --build DIR [--connections N] [--sources K] [--mode idle|tls|hello]\n"
                       "                         [--hold SECONDS] [--after SECONDS] [--check] [-- FEDCLD_OPTIONS...]\n");
  std::exit(2);
}

long rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// fedcld on a free loopback port, its log (stderr) in log_path; its pid, or -1.
pid_t start_daemon(const Options &options, const std::string &log_path, int *port) {
  std::string dir = "/tmp/fedcl-flood-" + std::to_string(getpid());
  mkdir(dir.c_str(), 0700);
  std::string port_file = dir + "/port";
  std::vector<std::string> args = {options.build + "/bridge-daemon/fedcld", "--config", "/dev/null", "--listen",
                                   "127.0.0.1:0", "--port-file", port_file, "--log-level", "info", "--spare-workers", "4"};
  args.insert(args.end(), options.daemon_args.begin(), options.daemon_args.end());
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(log, STDERR_FILENO);
    unsetenv("OCL_ICD_VENDORS");  // the daemon serves the node's platforms
    std::vector<char *> argv;
    for (auto &arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  for (int i = 0; i < 600; i++) {
    std::ifstream in(port_file);
    if (in >> *port && *port > 0) {
      unlink(port_file.c_str());
      rmdir(dir.c_str());
      return pid;
    }
    if (waitpid(pid, nullptr, WNOHANG) == pid) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGKILL);
  return -1;
}

// A fresh process's first fedcl device, in ms (the real client: the ICD loader, the runtime's
// connection and handshake); -1 when it failed.
double session_start_ms() {
  double us = bench::first_device_us("fedcl", true);
  return us < 0 ? -1 : us / 1000;
}

// What each flood connection sends once connected.
std::string first_bytes(const std::string &mode) {
  if (mode == "idle") return {};
  if (mode == "hello") {
    capnp::MallocMessageBuilder message;
    auto request = message.initRoot<fedcl::wire::Request>();
    request.setSeq(1);
    auto hello = request.initHello();
    hello.setProtocolVersion(fedcl::wire::PROTOCOL_VERSION);
    hello.setClient("flood");
    hello.setNonce(fedcl::as_data(fedcl::fresh_nonce()));
    hello.setDaemon("127.0.0.1");
    std::vector<uint8_t> bytes;
    fedcl::frame_append(bytes, fedcl::wire::FrameKind::REQUEST, message, 0);
    return std::string(bytes.begin(), bytes.end());
  }
  // tls: one ClientHello, sent by every connection (the daemon answers each with a handshake of
  // its own, and waits for a Finished that never comes).
  SSL_CTX *context = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(context, TLS1_3_VERSION);
  SSL *ssl = SSL_new(context);
  BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  SSL_set_connect_state(ssl);
  SSL_do_handshake(ssl);
  char *data = nullptr;
  long size = BIO_get_mem_data(out, &data);
  std::string hello(data, size_t(size));
  SSL_free(ssl);
  SSL_CTX_free(context);
  return hello;
}

// The flood: connections from the sources, each opened again when the daemon closes it, until stop.
class Flood {
 public:
  Flood(int port, size_t target, size_t sources, std::string payload)
      : port_(port), target_(target), payload_(std::move(payload)) {
    for (size_t i = 0; i < sources; i++) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      from.sin_addr.s_addr = htonl((127u << 24) | (1u << 16) | uint32_t(((i / 250) << 8) + i % 250 + 1));
      sources_.push_back(from);
    }
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
  }
  ~Flood() { close(epoll_); }

  // Runs until stop(), then closes every connection.
  void run() {
    for (size_t i = 0; i < target_; i++) open_one(i);
    epoll_event events[1024];
    auto second = Clock::now();
    size_t opened_this_second = 0;
    std::vector<size_t> reopen;
    while (!stopping_) {
      int n = epoll_wait(epoll_, events, 1024, 50);
      for (int e = 0; e < n; e++) {
        int fd = events[e].data.fd;
        Connection &c = connections_[fd];
        if (!c.sent && (events[e].events & EPOLLOUT)) {
          int error = 0;
          socklen_t length = sizeof error;
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
          if (error == 0) {
            c.sent = true;
            if (!payload_.empty()) send(fd, payload_.data(), payload_.size(), MSG_NOSIGNAL);
            epoll_event again{EPOLLIN | EPOLLRDHUP, {}};
            again.data.fd = fd;
            epoll_ctl(epoll_, EPOLL_CTL_MOD, fd, &again);
            established_++;
            continue;
          }
        }
        char sink[4096];
        ssize_t got = (events[e].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) ? recv(fd, sink, sizeof sink, 0) : 1;
        if (got > 0 && !(events[e].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) continue;  // the daemon's answer: ignored
        closed_by_daemon_++;
        reopen.push_back(c.slot);
        epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
        connections_.erase(fd);
        open_now_ = connections_.size();
        close(fd);
      }
      // Opened again at no more than target_ a second: a daemon that closes everything at once
      // (past its cap) gets a steady flood, not a busy loop.
      if (Clock::now() - second >= std::chrono::seconds(1)) {
        second = Clock::now();
        opened_this_second = 0;
      }
      while (!reopen.empty() && opened_this_second < target_) {
        open_one(reopen.back());
        reopen.pop_back();
        opened_this_second++;
      }
    }
    for (auto &[fd, c] : connections_) close(fd);
    connections_.clear();
  }
  void stop() { stopping_ = true; }
  size_t opened() const { return opened_; }
  size_t established() const { return established_; }
  size_t closed_by_daemon() const { return closed_by_daemon_; }
  size_t failed() const { return failed_; }
  size_t open_now() const { return open_now_; }

 private:
  struct Connection {
    size_t slot = 0;
    bool sent = false;
  };

  void open_one(size_t slot) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      failed_++;
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    const sockaddr_in &from = sources_[slot % sources_.size()];
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(uint16_t(port_));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, reinterpret_cast<const sockaddr *>(&from), sizeof from) != 0 ||
        (connect(fd, reinterpret_cast<sockaddr *>(&to), sizeof to) != 0 && errno != EINPROGRESS)) {
      close(fd);
      failed_++;
      return;
    }
    epoll_event event{EPOLLOUT | EPOLLIN | EPOLLRDHUP, {}};
    event.data.fd = fd;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event);
    connections_[fd] = Connection{slot, false};
    opened_++;
    open_now_ = connections_.size();
  }

  int port_;
  size_t target_;
  std::string payload_;
  std::vector<sockaddr_in> sources_;
  int epoll_;
  std::unordered_map<int, Connection> connections_;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> opened_{0}, established_{0}, closed_by_daemon_{0}, failed_{0}, open_now_{0};
};

struct Samples {
  std::vector<double> ms;
  size_t failures = 0;
  void add(double value) {
    if (value < 0) failures++;
    else ms.push_back(value);
  }
  double at(double q) const {
    if (ms.empty()) return -1;
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    return sorted[std::min(sorted.size() - 1, size_t(q * double(sorted.size())))];
  }
};

std::vector<std::string> log_lines(const std::string &path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

int main(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (arg == "--build") options.build = value();
    else if (arg == "--connections") options.connections = std::stoul(value());
    else if (arg == "--sources") options.sources = std::max<size_t>(1, std::stoul(value()));
    else if (arg == "--mode") options.mode = value();
    else if (arg == "--hold") options.hold_s = std::stod(value());
    else if (arg == "--after") options.after_s = std::stod(value());
    else if (arg == "--check") options.check = true;
    else if (arg == "--") {
      options.daemon_args.assign(argv + i + 1, argv + argc);
      break;
    } else usage();
  }
  if (options.build.empty() || (options.mode != "idle" && options.mode != "tls" && options.mode != "hello")) usage();
  signal(SIGPIPE, SIG_IGN);
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < options.connections + 64) {
    std::fprintf(stderr, "fedcl_flood_bench: the open-file limit (%llu) is below %zu connections\n",
                 (unsigned long long)files.rlim_cur, options.connections);
    return 2;
  }
  // The honest client sees fedcl alone, pointed at this daemon.
  setenv("OCL_ICD_VENDORS", (options.build + "/vendors").c_str(), 1);

  std::string log_path = "/tmp/fedcl-flood-" + std::to_string(getpid()) + ".log";
  int port = 0;
  pid_t daemon = start_daemon(options, log_path, &port);
  if (daemon < 0) {
    std::fprintf(stderr, "fedcl_flood_bench: fedcld did not start (its log: %s)\n", log_path.c_str());
    return 1;
  }
  setenv("FEDCL_HOSTS", ("127.0.0.1:" + std::to_string(port)).c_str(), 1);
  std::string payload = first_bytes(options.mode);
  std::printf("# fedcld on port %d, %zu %s connections from %zu addresses, held %.0f s, measured %.0f s after\n", port,
              options.connections, options.mode.c_str(), options.sources, options.hold_s, options.after_s);

  // Idle: after honest sessions and a small flood of the same kind have paged in their code (300:
  // past the 256 strangers after which the daemon gives its heap back, so idle is after that too).
  Samples before;
  for (int i = 0; i < 5; i++) {
    before.add(session_start_ms());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  {
    Flood warm(port, std::min<size_t>(options.connections, 300), options.sources, payload);
    std::thread runner([&] { warm.run(); });
    std::this_thread::sleep_for(std::chrono::seconds(1));
    warm.stop();
    runner.join();
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  long rss_idle = rss_kib(daemon);
  size_t log_before = log_lines(log_path).size();

  Flood flood(port, options.connections, options.sources, payload);
  auto flood_start = Clock::now();
  std::thread runner([&] { flood.run(); });
  Samples during;
  long rss_during = 0;
  // A sample every 2 s: each ends its session, whose worker the pool replaces (loading the backend
  // takes a CPU's second here); with 4 spares the samples measure the handshake, not a worker's start.
  while (Clock::now() - flood_start < std::chrono::duration<double>(options.hold_s)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    rss_during = std::max(rss_during, rss_kib(daemon));
    if (Clock::now() - flood_start > std::chrono::seconds(2)) during.add(session_start_ms());  // once it is up
  }
  size_t held = flood.open_now();
  flood.stop();
  runner.join();
  double flood_s = std::chrono::duration<double>(Clock::now() - flood_start).count();
  std::vector<std::string> lines = log_lines(log_path);
  size_t log_during = lines.size() - log_before;
  // The busiest address's lines a second.
  std::map<std::string, size_t> per_address;
  for (size_t i = log_before; i < lines.size(); i++) {
    size_t at = lines[i].find("127.1.");
    if (at == std::string::npos) continue;
    size_t end = lines[i].find_first_not_of("0123456789.", at);
    per_address[lines[i].substr(at, end - at)]++;
  }
  size_t busiest = 0;
  for (auto &[address, count] : per_address) busiest = std::max(busiest, count);
  double per_address_per_s = double(busiest) / flood_s;

  std::this_thread::sleep_for(std::chrono::duration<double>(options.after_s));
  long rss_after = rss_kib(daemon);
  Samples after;
  after.add(session_start_ms());
  kill(daemon, SIGTERM);
  waitpid(daemon, nullptr, 0);
  size_t log_total = log_lines(log_path).size();

  std::printf("flood.connections %zu connections\n", options.connections);
  std::printf("flood.held_at_end %zu connections\n", held);
  std::printf("flood.opened %zu connections\n", flood.opened());
  std::printf("flood.established %zu connections\n", flood.established());
  std::printf("flood.closed_by_daemon %zu connections\n", flood.closed_by_daemon());
  std::printf("flood.connect_failures %zu connections\n", flood.failed());
  std::printf("session_start.before.median %.1f ms\n", before.at(0.5));
  std::printf("session_start.during.median %.1f ms\n", during.at(0.5));
  std::printf("session_start.during.p90 %.1f ms\n", during.at(0.9));
  std::printf("session_start.during.max %.1f ms\n", during.at(1.0));
  std::printf("session_start.during.samples %zu sessions\n", during.ms.size());
  std::string each;
  for (double ms : during.ms) each += " " + std::to_string(int(ms + 0.5));
  std::printf("# session starts during the flood, ms:%s\n", each.c_str());
  std::printf("session_start.failures %zu sessions\n", before.failures + during.failures + after.failures);
  std::printf("rss.idle %ld KiB\n", rss_idle);
  std::printf("rss.during %ld KiB\n", rss_during);
  std::printf("rss.after %ld KiB\n", rss_after);
  std::printf("rss.after_over_idle %.3f x\n", rss_idle > 0 ? double(rss_after) / double(rss_idle) : 0.0);
  std::printf("log.lines_during %zu lines\n", log_during);
  std::printf("log.lines_total %zu lines\n", log_total);
  std::printf("log.addresses_logged %zu addresses\n", per_address.size());
  std::printf("log.busiest_address_per_second %.3f lines/s\n", per_address_per_s);
  if (!options.check) {
    std::printf("# the daemon's log: %s\n", log_path.c_str());
    return 0;
  }
  bool ok = before.failures + during.failures + after.failures == 0 && !during.ms.empty() && per_address_per_s <= 1.0;
  if (!ok) std::printf("# check failed: an honest session failed, none ran during the flood, or an address got more than a line a second (the daemon's log: %s)\n", log_path.c_str());
  else unlink(log_path.c_str());
  return ok ? 0 : 1;
}
