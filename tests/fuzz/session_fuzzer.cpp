// libFuzzer target: what a stranger may send to fedcld's port. Each input is the bytes of one
// connection; its first byte picks a daemon with a key (odd) or without (even). The bytes go over
// loopback to real fedcld Servers running in this process on PoCL, so fedcld's own framing,
// handshake (client and peer), pre-authentication limits and request handling run exactly as in
// the daemon, until it closes the connection. Inputs end with the connection's end of stream.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>

#include "backend.h"
#include "log.h"
#include "server.h"

// Present when the target is built with a sanitizer (the libFuzzer build), absent in the replay build.
extern "C" void __sanitizer_print_stack_trace() __attribute__((weak));

namespace {

uv_loop_t g_loop;
std::unique_ptr<fedcld::Server> g_open, g_keyed;

std::unique_ptr<fedcld::Server> start_server(const std::vector<fedcld::BackendPlatform> &platforms, const char *key) {
  fedcld::ServerOptions options;
  options.port = 0;
  options.node = "fuzz";
  options.key = key;
  options.max_session_memory = 64 << 20;  // hostile sizes are refused, not allocated
  auto server = std::make_unique<fedcld::Server>(&g_loop, options, platforms);
  if (server->listen() != 0) std::abort();
  return server;
}

int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) std::abort();
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

// Runs the daemons' loop, then waits (1 ms at most) for fd or the loop to have something. Twice:
// libuv adds a new socket (an accepted connection) to its poll set only at the next pass.
void pump(int fd, short events) {
  uv_run(&g_loop, UV_RUN_NOWAIT);
  uv_run(&g_loop, UV_RUN_NOWAIT);
  pollfd fds[2] = {{fd, events, 0}, {uv_backend_fd(&g_loop), POLLIN, 0}};
  poll(fds, 2, 1);
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
  fedcld::log_set_level(fedcld::LogLevel::error);
  std::vector<fedcld::BackendPlatform> platforms;
  std::string problem = fedcld::backend_discover(fedcld::BackendSelection{}, &platforms);
  if (!problem.empty()) {
    std::fprintf(stderr, "session_fuzzer: %s\n", problem.c_str());
    std::abort();
  }
  uv_loop_init(&g_loop);
  g_open = start_server(platforms, "");
  g_keyed = start_server(platforms, "fuzz-key");
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
  return 0;
}
