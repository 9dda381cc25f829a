// libFuzzer target: what a stranger may send to fedcld's port. Each input is the bytes of one
// connection; its first byte picks a daemon with a key (odd) or without (even). The bytes go over
// loopback to real fedcld main processes (Listeners) running in this process, whose session
// workers run in this process too, on PoCL (WorkerPool::run_in_process: the same channel, hand-over
// and SessionHost as a worker process, on this loop), so fedcld's own framing, handshake (client and
// peer), pre-authentication limits, hand-over and request handling run exactly as in the daemon,
// until it closes the connection. Inputs end with the connection's end of stream.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <thread>

#include "listener.h"
#include "log.h"
#include "session_host.h"

// Present when the target is built with a sanitizer (the libFuzzer build), absent in the replay build.
extern "C" void __sanitizer_print_stack_trace() __attribute__((weak));

namespace {

uv_loop_t g_loop;
std::unique_ptr<fedcld::Listener> g_open, g_keyed;

std::unique_ptr<fedcld::Listener> start_daemon(const char *key) {
  fedcld::DaemonSettings settings;
  settings.log_level = fedcld::LogLevel::error;
  fedcld::ServerOptions &options = settings.server;
  options.port = 0;
  options.node = "fuzz";
  options.key = fedcl::Secret(key ? key : "");
  options.max_session_memory = 64 << 20;  // hostile sizes are refused, not allocated
  auto daemon = std::make_unique<fedcld::Listener>(&g_loop, settings);
  daemon->workers().run_in_process(
      [](int channel_fd, int board_fd) { fedcld::start_worker_in_process(&g_loop, channel_fd, board_fd); });
  if (daemon->bind() != 0) std::abort();
  std::string problem = daemon->enumerate();
  if (!problem.empty()) {
    std::fprintf(stderr, "session_fuzzer: %s\n", problem.c_str());
    std::abort();
  }
  if (daemon->listen() != 0) std::abort();
  return daemon;
}

// Runs the daemons' loop, then waits (1 ms at most) for fd or the loop to have something. Twice:
// libuv adds a new socket (an accepted connection) to its poll set only at the next pass.
void pump(int fd, short events) {
  uv_run(&g_loop, UV_RUN_NOWAIT);
  uv_run(&g_loop, UV_RUN_NOWAIT);
  pollfd fds[2] = {{fd, events, 0}, {uv_backend_fd(&g_loop), POLLIN, 0}};
  poll(fds, 2, 1);
}

[[noreturn]] void give_up(const char *what) {
  std::fprintf(stderr, "session_fuzzer: %s: %s\n", what, std::strerror(errno));
  std::abort();
}

int connect_to(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Each connection from the next of 65,536 loopback addresses (127.77.0.0/16): the end that closes
  // first (this one, at the end of the input's stream) keeps its address and port in TIME_WAIT for a
  // minute, and two thousand inputs a second from 127.0.0.1 alone would hold the whole ephemeral
  // range (28,000 ports): connect() failed with EADDRNOTAVAIL after 1.07 million inputs, and tests
  // beside the run could not connect either. The port is chosen at connect(), by the whole tuple.
  static uint32_t next_source = 0;
  sockaddr_in source{};
  source.sin_family = AF_INET;
  source.sin_addr.s_addr = htonl((127u << 24) | (77u << 16) | (next_source++ & 0xffff));
  // Not blocking: a connect() that waited (once in 474,000 inputs) was interrupted by libFuzzer's
  // timer signal, EINTR. A machine out of local ports (other programs' connections) gets a moment.
  for (int attempt = 0;; attempt++) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) give_up("socket");
    int one = 1;
    setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    if (bind(fd, reinterpret_cast<sockaddr *>(&source), sizeof source) != 0) give_up("bind to a loopback address");
    int error = 0;
    if (connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) error = errno;
    if (error == EINPROGRESS || error == EINTR) {
      // Loopback connects at once unless a SYN was dropped; the daemons accept meanwhile.
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      pollfd connecting{fd, POLLOUT, 0};
      while (poll(&connecting, 1, 0) == 0 && std::chrono::steady_clock::now() < until) pump(fd, POLLOUT);
      socklen_t length = sizeof error;
      if (!(connecting.revents & (POLLOUT | POLLERR | POLLHUP))) error = ETIMEDOUT;
      else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
    }
    if (error == 0) return fd;
    close(fd);
    errno = error;
    if (error != EADDRNOTAVAIL || attempt == 100) give_up("connect to fedcld");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// PoCL's LLVM puts its own handler on SIGABRT (when PoCL starts): it takes the signal and returns,
// and abort() then ends the process with the default action, so that no sanitizer reports the
// abort and libFuzzer saves no input (the first 1,000,000-input run ended so, its connect_to()
// aborting, and an uncaught exception on a pool thread did before). The handler the process had before PoCL came (ASan's, with handle_abort=1 as
// scripts/fuzz.sh sets: a report with the stack, and libFuzzer's death callback saves the input)
// is put back after PoCL's start and after every input. Other fatal signals need nothing: LLVM's
// handler puts back the one before it and returns, and the fault comes again.
struct sigaction g_abort_action;

void save_abort_handler() { sigaction(SIGABRT, nullptr, &g_abort_action); }

void restore_abort_handler() {
  struct sigaction now {};
  sigaction(SIGABRT, nullptr, &now);
  if (now.sa_handler == g_abort_action.sa_handler) return;
  static bool told = false;
  if (!told) {
    Dl_info where{};
    dladdr(reinterpret_cast<void *>(now.sa_handler), &where);
    std::fprintf(stderr, "session_fuzzer: SIGABRT's handler was replaced (by %s); putting back the one before\n",
                 where.dli_fname ? where.dli_fname : "?");
    told = true;
  }
  sigaction(SIGABRT, &g_abort_action, nullptr);
}


}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // An exception no one catches ends the process before unwinding: show where it was thrown (the
  // crash libFuzzer sees then is an abort with no input saved when it came on another thread).
  std::set_terminate([] {
    std::fprintf(stderr, "session_fuzzer: std::terminate, the stack at the throw:\n");
    if (__sanitizer_print_stack_trace) __sanitizer_print_stack_trace();
    std::abort();
  });
  save_abort_handler();
  fedcld::log_set_level(fedcld::LogLevel::error);
  uv_loop_init(&g_loop);
  g_open = start_daemon("");  // PoCL starts in its first worker
  restore_abort_handler();
  g_keyed = start_daemon("fuzz-key");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  int fd = connect_to((data[0] & 1 ? g_keyed : g_open)->port());
  data++, size--;
  // Send it all, then end the stream; meanwhile take what the daemon answers, until it closes.
  bool ended = false;
  uint8_t sink[64 * 1024];
  for (;;) {
    if (!ended) {
      ssize_t sent = size ? send(fd, data, size, MSG_NOSIGNAL) : 0;
      if (sent > 0) data += sent, size -= sent;
      if (size == 0 || (sent < 0 && errno != EAGAIN)) {
        shutdown(fd, SHUT_WR);
        ended = true;
      }
    }
    ssize_t got = recv(fd, sink, sizeof sink, 0);
    if (got == 0 || (got < 0 && errno != EAGAIN)) break;
    if (got < 0) pump(fd, ended ? POLLIN : POLLIN | POLLOUT);
  }
  close(fd);
  uv_run(&g_loop, UV_RUN_NOWAIT);  // the session's close callbacks
  restore_abort_handler();
  return 0;
}
