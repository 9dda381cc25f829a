#include "handshake_limits.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "server.h"
#include "tls.h"

namespace fedcld {

namespace {
// Descriptors the main process holds whatever its load: stdio, the loop's epoll, signal and async
// pipes, the listeners, the key list's poll, libuv's thread pool, OpenSSL's random source.
constexpr size_t kFixedDescriptors = 64;
// Scrapes of --metrics at once (metrics_http.cpp) and peer links being dialled per session.
constexpr size_t kMetricsDescriptors = 64;
}  // namespace

std::string address_key(const std::string &peer) {
  std::string host = fedcl::tls_host_of(peer);
  unsigned char bytes[16];
  if (inet_pton(AF_INET6, host.c_str(), bytes) != 1) return host;
  std::memset(bytes + 8, 0, 8);
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, bytes, text, sizeof text);
  return std::string(text) + "/64";
}

HandshakeCaps handshake_caps(const ServerOptions &options, rlim_t open_files) {
  HandshakeCaps caps;
  // Each session costs the main process its worker's control channel, and a link it dials for
  // it while the link's handshake runs; spares have their channel too.
  caps.reserved = 2 * options.max_sessions + options.spare_workers + kFixedDescriptors + kMetricsDescriptors;
  size_t room = open_files > caps.reserved ? size_t(open_files - caps.reserved) : 0;
  size_t wanted = kStrangersBytes / (options.tls ? kTlsStrangerBytes : kPlainStrangerBytes);
  caps.total = options.max_handshakes ? options.max_handshakes : std::max(kMinHandshakes, std::min(room, wanted));
  caps.per_address = options.max_handshakes_per_address
                         ? options.max_handshakes_per_address
                         : std::min(caps.total, std::max<size_t>(64, options.max_sessions));
  return caps;
}

std::vector<uint64_t> HandshakeLimits::admit(uint64_t number, const std::string &address) {
  std::vector<uint64_t> closing;
  const Queues &mine = by_address_[address];
  if (mine.size() >= caps_.per_address && mine.size() > 0) closing.push_back(mine.first_to_close());
  else if (all_.size() >= caps_.total && all_.size() > 0) closing.push_back(all_.first_to_close());
  for (uint64_t gone : closing) leave(gone);
  // leave() may have dropped this address's queues when it emptied them.
  Queues &queues = by_address_[address];
  all_.silent.push_back(number);
  queues.silent.push_back(number);
  entries_[number] = Entry{address, false, std::prev(all_.silent.end()), std::prev(queues.silent.end())};
  return closing;
}

void HandshakeLimits::spoke(uint64_t number) {
  auto found = entries_.find(number);
  if (found == entries_.end() || found->second.spoken) return;
  Entry &entry = found->second;
  Queues &queues = by_address_[entry.address];
  // Iterators stay valid across splice: the entry's now point into the spoken lists.
  all_.spoken.splice(all_.spoken.end(), all_.silent, entry.in_all);
  queues.spoken.splice(queues.spoken.end(), queues.silent, entry.in_address);
  entry.spoken = true;
}

void HandshakeLimits::leave(uint64_t number) {
  auto found = entries_.find(number);
  if (found == entries_.end()) return;
  Entry &entry = found->second;
  (entry.spoken ? all_.spoken : all_.silent).erase(entry.in_all);
  auto queues = by_address_.find(entry.address);
  (entry.spoken ? queues->second.spoken : queues->second.silent).erase(entry.in_address);
  if (queues->second.size() == 0) by_address_.erase(queues);
  entries_.erase(found);
}

}  // namespace fedcld
