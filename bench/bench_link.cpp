#include "bench_link.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <signal.h>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_socket.h"
#include "bench_stats.h"

namespace bench {

namespace {

// Each request to the peer is one 8-byte word:
//   kPing            echo one word back
//   n (1 .. 2^62)    n bytes follow; answer one word once they have all arrived
//   kDownload | n    send n bytes
//   kQuit            exit
constexpr uint64_t kPing = 0;
constexpr uint64_t kDownload = uint64_t(1) << 63;
constexpr uint64_t kQuit = ~uint64_t(0);
constexpr int kConnectTimeoutMs = 10000;

// The peer's side over fd (connected).
[[noreturn]] void serve_peer(int fd, size_t buffer_bytes) {
  // A buffer as large as the stream, touched once, like the device buffer fedcld copies from.
  std::vector<uint8_t> buffer(buffer_bytes, 0x5a);
  for (;;) {
    uint64_t word;
    if (!recv_all(fd, &word, sizeof word)) _exit(3);
    if (word == kQuit) _exit(0);
    bool ok = true;
    if (word == kPing) {
      ok = send_all(fd, &word, sizeof word);
    } else if (word & kDownload) {
      uint64_t size = word & ~kDownload;
      ok = size <= buffer.size() && send_all(fd, buffer.data(), size);
    } else {
      ok = word <= buffer.size() && recv_all(fd, buffer.data(), word) && send_all(fd, &word, sizeof word);
    }
    if (!ok) _exit(4);
  }
}

[[noreturn]] void peer_main(uint16_t port, size_t buffer_bytes) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) _exit(2);
  set_nodelay(fd);
  serve_peer(fd, buffer_bytes);
}

// The measuring end of the connection and the peer process behind it; reaps the peer on exit.
class Link {
 public:
  // A Unix socket pair to the forked peer.
  Link(size_t buffer_bytes, bool local) {
    if (!local) {
      connect_tcp(buffer_bytes);
      return;
    }
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
      throw std::runtime_error(std::string("link: socketpair: ") + std::strerror(errno));
    peer_ = fork();
    if (peer_ < 0) throw std::runtime_error(std::string("link: fork: ") + std::strerror(errno));
    if (peer_ == 0) {
      close(ends[0]);
      serve_peer(ends[1], buffer_bytes);
    }
    close(ends[1]);
    fd_ = ends[0];
  }

  void connect_tcp(size_t buffer_bytes) {
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listener < 0 || bind(listener, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
        listen(listener, 1) != 0 || getsockname(listener, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
      throw std::runtime_error(std::string("link: cannot listen on loopback: ") + std::strerror(errno));
    peer_ = fork();
    if (peer_ < 0) throw std::runtime_error(std::string("link: fork: ") + std::strerror(errno));
    if (peer_ == 0) {
      close(listener);
      peer_main(ntohs(addr.sin_port), buffer_bytes);
    }
    pollfd ready{listener, POLLIN, 0};
    int polled = poll(&ready, 1, kConnectTimeoutMs);
    fd_ = polled == 1 ? accept4(listener, nullptr, nullptr, SOCK_CLOEXEC) : -1;
    std::string why = polled == 0 ? "the peer did not connect" : std::strerror(errno);
    close(listener);
    if (fd_ < 0) {
      kill(peer_, SIGKILL);
      waitpid(peer_, nullptr, 0);
      throw std::runtime_error("link: accept: " + why);
    }
    set_nodelay(fd_);
  }

  ~Link() {
    uint64_t quit = kQuit;
    if (fd_ >= 0 && !send_all(fd_, &quit, sizeof quit)) kill(peer_, SIGKILL);
    if (fd_ >= 0) close(fd_);
    waitpid(peer_, nullptr, 0);
  }

  // Returns the round-trip time of one 8-byte ping in microseconds.
  double ping() {
    uint64_t word = kPing;
    double start = now_us();
    if (!send_all(fd_, &word, sizeof word) || !recv_all(fd_, &word, sizeof word)) fail("ping");
    return now_us() - start;
  }

  // Sends size bytes and waits for the peer to confirm they all arrived; returns microseconds.
  double upload(const uint8_t *data, uint64_t size) {
    uint64_t ack;
    double start = now_us();
    if (!send_all(fd_, &size, sizeof size) || !send_all(fd_, data, size) || !recv_all(fd_, &ack, sizeof ack))
      fail("upload");
    return now_us() - start;
  }

  // Asks for size bytes and receives them; returns microseconds.
  double download(uint8_t *data, uint64_t size) {
    uint64_t word = kDownload | size;
    double start = now_us();
    if (!send_all(fd_, &word, sizeof word) || !recv_all(fd_, data, size)) fail("download");
    return now_us() - start;
  }

 private:
  [[noreturn]] void fail(const char *what) {
    throw std::runtime_error(std::string("link: ") + what + " failed: " + std::strerror(errno));
  }

  pid_t peer_ = -1;
  int fd_ = -1;
};

double mib_per_s(uint64_t bytes, double us) { return bytes / double(1 << 20) / (us * 1e-6); }

}  // namespace

LinkResult measure_link(const LinkPlan &plan) {
  Link link(plan.stream_bytes, plan.local);
  LinkResult result;

  std::vector<double> rtts;
  for (int i = 0; i < plan.pings / 20; i++) link.ping();  // warm-up
  for (int i = 0; i < plan.pings; i++) rtts.push_back(link.ping());
  result.rtt_median_us = median(rtts);
  result.rtt_p99_us = p99(rtts);

  std::unique_ptr<uint8_t[]> data(new uint8_t[plan.stream_bytes]);
  std::memset(data.get(), 0xa5, plan.stream_bytes);
  std::vector<double> up, down;
  link.upload(data.get(), plan.stream_bytes);  // warm-up: pages, socket buffers
  link.download(data.get(), plan.stream_bytes);
  for (int i = 0; i < plan.stream_reps; i++) {
    up.push_back(link.upload(data.get(), plan.stream_bytes));
    down.push_back(link.download(data.get(), plan.stream_bytes));
  }
  result.upload_mib_s = mib_per_s(plan.stream_bytes, median(up));
  result.download_mib_s = mib_per_s(plan.stream_bytes, median(down));
  return result;
}

}  // namespace bench
