// How many connections fedcld's main process holds for strangers: connections accepted that have
// not proved themselves yet (docs/design-decisions.md, "Processes"). At most `total` at once, and
// `per_address` from one address (an IPv6 one by its /64, as the auth throttle counts). A new
// connection past a cap closes a stranger of its address (past the per-address cap) or of all: the
// oldest that has not sent a whole frame yet (an idle flood's connection, a TLS handshake left
// half-open), else the oldest. An honest handshake speaks within a round trip and is done in a few,
// so a flood can push it out only by opening `total` connections within that time, or by speaking
// itself. Pure logic: the caller closes what admit() names.
#pragma once

#include <sys/resource.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

namespace fedcld {

struct ServerOptions;

// A stranger must have sent its proof (on a daemon without keys: its Hello) this long after its
// connection was accepted, else the connection closes: three round trips (TLS, Hello, proof), a
// second or two over a slow WAN with a lost packet resent. It was 10 s, which let idle connections
// pile up twice as high. Once the proof is in, its refusal may wait its turn (auth_throttle.h: up
// to AuthThrottle::kMaxWaitMs), and a proof that holds a lookup of the name the client dialled
// (daemon_names.h): the deadline moves to that turn and kVerdictDeadlineMs beyond.
constexpr uint64_t kProofDeadlineMs = 5000;
constexpr uint64_t kVerdictDeadlineMs = 2000;
// The deadline of each connection comes up to this much earlier, at random: a flood's connections,
// opened together, otherwise closed together and came back together, and an honest client's
// connection waited in the kernel's queue behind thousands (bench/flood_bench.cpp).
constexpr uint64_t kProofDeadlineJitterMs = 1000;

// Whose connections count together: the address without its port, an IPv6 one by its /64.
std::string address_key(const std::string &peer);

struct HandshakeCaps {
  size_t total = 0, per_address = 0;
  // File descriptors kept for everything but strangers: a control channel per session worker,
  // peer links being dialled, scrapes, the listeners, the loop's own.
  size_t reserved = 0;
};
// The caps the options set, or (an option at 0): in all, as many as kStrangersBytes holds at what a
// stranger costs at most (some 4 KiB on plain TCP, some 53 KiB in a TLS handshake left half-open:
// OpenSSL's state between ClientHello and Finished), so 16384 on plain TCP and 1024 with TLS, within
// what the open-file limit leaves beside the sessions; per address, as many as the daemon has
// sessions (at least 64). A cap below what a flood holds makes the daemon close one for each that
// comes (work), one above it costs memory.
HandshakeCaps handshake_caps(const ServerOptions &options, rlim_t open_files);
constexpr size_t kStrangersBytes = size_t(64) << 20;
constexpr size_t kPlainStrangerBytes = 4096, kTlsStrangerBytes = 64 * 1024;
constexpr size_t kMinHandshakes = 16;

class HandshakeLimits {
 public:
  explicit HandshakeLimits(HandshakeCaps caps) : caps_(caps) {}
  // Connection number, from address, starts its handshake. Returns the connections to close to
  // stay within the caps, oldest first; never number itself.
  std::vector<uint64_t> admit(uint64_t number, const std::string &address);
  // The connection sent a whole frame (a Hello, a ClientHello's handshake done): it is closed to make
  // room only after every one that has not.
  void spoke(uint64_t number);
  // The connection proved itself or closed (unknown numbers are ignored).
  void leave(uint64_t number);
  size_t count() const { return entries_.size(); }
  size_t addresses() const { return by_address_.size(); }
  const HandshakeCaps &caps() const { return caps_; }

 private:
  // Connections in the order they came (or spoke), those that have not spoken apart.
  struct Queues {
    std::list<uint64_t> silent, spoken;
    size_t size() const { return silent.size() + spoken.size(); }
    uint64_t first_to_close() const { return silent.empty() ? spoken.front() : silent.front(); }
  };
  struct Entry {
    std::string address;
    bool spoken = false;
    std::list<uint64_t>::iterator in_all, in_address;
  };
  HandshakeCaps caps_;
  Queues all_;
  std::unordered_map<std::string, Queues> by_address_;
  std::unordered_map<uint64_t, Entry> entries_;
};

}  // namespace fedcld
