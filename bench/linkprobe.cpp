// fedcl_linkprobe: the raw TCP limits of one link, between two processes that may sit in different
// network namespaces (ip netns exec), as two fedcld nodes or a node and the client do.
//
//   fedcl_linkprobe serve HOST:PORT [--port-file FILE] [--bytes N]   answer one measuring connection, then exit
//   fedcl_linkprobe measure HOST:PORT [--prefix NAME] [--pings N] [--bytes N] [--reps N] [--chunk N]
//
// measure prints "<prefix>.tcp_rtt.median/.p99 us" (an 8-byte ping and its 8-byte echo) and
// "<prefix>.tcp_throughput MiB/s" (a stream of --bytes sent to the server until its 8-byte
// acknowledgement; median of --reps), the direction a migration from this node to the server's takes.
// The stream comes from one buffer of --bytes, or, with --chunk, from one chunk-sized buffer sent
// again and again, as fedcl's transfers send from and land in reused staging chunks; the server
// receives into a buffer of its own --bytes, reused for longer streams. On a loaded machine whose
// memory is the bottleneck, 256 MiB of fresh memory at both ends streams at half the rate of 4 MiB
// chunks that stay in cache (measured on a 2-core VM), and a migration would look faster than the link.
// Both ends set TCP_NODELAY and leave the socket buffers to the kernel's autotuning, as fedcl does.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench_socket.h"
#include "bench_stats.h"

using bench::now_us;
using bench::recv_all;
using bench::send_all;
using bench::set_nodelay;

namespace {

// Requests, one 8-byte word each: kPing (echo it), kQuit, or n > 0: n bytes follow, answer one word.
constexpr uint64_t kPing = 0;
constexpr uint64_t kQuit = ~uint64_t(0);

int die(const std::string &message) {
  std::fprintf(stderr, "fedcl_linkprobe: %s\n", message.c_str());
  return 1;
}

// HOST:PORT (HOST an IPv4 address or name) as a socket address.
bool resolve(const std::string &text, sockaddr_in *addr) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) return false;
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  std::string host = text.substr(0, colon), port = text.substr(colon + 1);
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found) != 0 || !found) return false;
  std::memcpy(addr, found->ai_addr, sizeof *addr);
  freeaddrinfo(found);
  return true;
}

int serve(const std::string &where, const std::string &port_file, size_t max_bytes) {
  sockaddr_in addr{};
  if (!resolve(where, &addr)) return die("cannot resolve " + where);
  int listener = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  socklen_t len = sizeof addr;
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
      listen(listener, 1) != 0 || getsockname(listener, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
    return die("cannot listen on " + where + ": " + std::strerror(errno));
  if (!port_file.empty()) {
    std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << ntohs(addr.sin_port) << "\n";
    std::rename(tmp.c_str(), port_file.c_str());
  }
  int fd = accept(listener, nullptr, nullptr);
  close(listener);
  if (fd < 0) return die(std::string("accept: ") + std::strerror(errno));
  set_nodelay(fd);
  std::vector<uint8_t> buffer(max_bytes);
  for (;;) {
    uint64_t word;
    if (!recv_all(fd, &word, sizeof word)) return die("the measuring end went away");
    if (word == kQuit) return 0;
    bool ok = true;
    if (word != kPing)  // a stream of word bytes, taken in pieces of the buffer's size
      for (uint64_t left = word; ok && left > 0;) {
        size_t piece = left < buffer.size() ? size_t(left) : buffer.size();
        ok = recv_all(fd, buffer.data(), piece);
        left -= piece;
      }
    ok = ok && send_all(fd, &word, sizeof word);
    if (!ok) return die("connection failed while serving");
  }
}

int measure(const std::string &where, const std::string &prefix, int pings, size_t bytes, int reps, size_t chunk) {
  sockaddr_in addr{};
  if (!resolve(where, &addr)) return die("cannot resolve " + where);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0)
    return die("cannot connect to " + where + ": " + std::strerror(errno));
  set_nodelay(fd);

  std::vector<double> rtts;
  for (int i = -pings / 20; i < pings; i++) {
    uint64_t word = kPing;
    double start = now_us();
    if (!send_all(fd, &word, sizeof word) || !recv_all(fd, &word, sizeof word)) return die("ping failed");
    if (i >= 0) rtts.push_back(now_us() - start);
  }

  const size_t piece = chunk ? std::min(chunk, bytes) : bytes;
  std::unique_ptr<uint8_t[]> data(new uint8_t[piece]);
  std::memset(data.get(), 0xa5, piece);  // touched, as a device buffer's staging memory is
  std::vector<double> rates;
  for (int r = -1; r < reps; r++) {  // r = -1 warms pages and socket buffers
    uint64_t size = bytes, ack;
    double start = now_us();
    bool ok = send_all(fd, &size, sizeof size);
    for (size_t sent = 0; ok && sent < bytes; sent += piece) ok = send_all(fd, data.get(), std::min(piece, bytes - sent));
    if (!ok || !recv_all(fd, &ack, sizeof ack)) return die("stream failed");
    if (r >= 0) rates.push_back(bytes / double(1 << 20) / ((now_us() - start) * 1e-6));
  }
  uint64_t quit = kQuit;
  send_all(fd, &quit, sizeof quit);
  close(fd);
  std::printf("%s.tcp_rtt.median %.6g us\n", prefix.c_str(), bench::median(rtts));
  std::printf("%s.tcp_rtt.p99 %.6g us\n", prefix.c_str(), bench::p99(rtts));
  std::printf("%s.tcp_throughput %.6g MiB/s\n", prefix.c_str(), bench::median(rates));
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: fedcl_linkprobe serve HOST:PORT [--port-file FILE] [--bytes N]\n"
               "       fedcl_linkprobe measure HOST:PORT [--prefix NAME] [--pings N] [--bytes N] [--reps N] [--chunk N]\n"
               "  defaults: --prefix link, --pings 20000, --bytes 268435456 (256 MiB), --reps 5,\n"
               "  --chunk: none (the stream from one buffer of --bytes); serve's --bytes: its receive buffer\n");
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) return usage();
  std::string verb = argv[1], where = argv[2], prefix = "link", port_file;
  long pings = 20000, reps = 5;
  size_t bytes = size_t(256) << 20, chunk = 0;
  for (int i = 3; i < argc; i += 2) {
    if (i + 1 >= argc) return usage();
    std::string arg = argv[i];
    const char *value = argv[i + 1];
    if (arg == "--prefix") prefix = value;
    else if (arg == "--port-file") port_file = value;
    else if (arg == "--pings") pings = std::atol(value);
    else if (arg == "--bytes") bytes = std::strtoull(value, nullptr, 10);
    else if (arg == "--reps") reps = std::atol(value);
    else if (arg == "--chunk") chunk = std::strtoull(value, nullptr, 10);
    else return usage();
  }
  if (pings < 1 || reps < 1 || bytes < 1) return usage();
  if (verb == "serve") return serve(where, port_file, bytes);
  if (verb == "measure") {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    return measure(where, prefix, int(pings), bytes, int(reps), chunk);
  }
  return usage();
}
