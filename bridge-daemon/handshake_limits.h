// How many connections fedcld's main process holds for strangers: connections accepted that have
// not proved themselves yet (docs/design-decisions.md, "Processes"). At most `total` at once, and
// `per_address` from one address (an IPv6 one by its /64, as the auth throttle counts). A new
// connection past a cap closes the oldest stranger (of its address past the per-address cap, else
// of all): an honest handshake takes a few round trips, a flood's connections sit idle, so the
// oldest is nearly always the flood's, and a flood can push an honest handshake out only by
// opening `total` connections within that handshake's few round trips. Pure logic: the caller
// closes what admit() names.
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

// Whose connections count together: the address without its port, an IPv6 one by its /64.
std::string address_key(const std::string &peer);

struct HandshakeCaps {
  size_t total = 0, per_address = 0;
  // File descriptors kept for everything but strangers: a control channel per session worker,
  // peer links being dialled, scrapes, the listeners, the loop's own.
  size_t reserved = 0;
};
// The caps the options set, or (an option at 0): in all, four per session the daemon may serve (at
// least kMinDefaultHandshakes, at most kMaxDefaultHandshakes), within what the open-file limit
// leaves beside the sessions; per address, as many as the daemon has sessions (at least 64). A
// stranger costs some 4 KiB on plain TCP, some 50 KiB in a TLS handshake (OpenSSL's state between
// ClientHello and Finished): 1024 of them, 50 MiB at worst.
HandshakeCaps handshake_caps(const ServerOptions &options, rlim_t open_files);
constexpr size_t kMinDefaultHandshakes = 1024;
constexpr size_t kMaxDefaultHandshakes = 16384;
constexpr size_t kMinHandshakes = 16;

class HandshakeLimits {
 public:
  explicit HandshakeLimits(HandshakeCaps caps) : caps_(caps) {}
  // Connection number, from address, starts its handshake. Returns the connections to close to
  // stay within the caps, oldest first; never number itself.
  std::vector<uint64_t> admit(uint64_t number, const std::string &address);
  // The connection proved itself or closed (unknown numbers are ignored).
  void leave(uint64_t number);
  size_t count() const { return entries_.size(); }
  size_t addresses() const { return by_address_.size(); }
  const HandshakeCaps &caps() const { return caps_; }

 private:
  struct Entry {
    std::string address;
    std::list<uint64_t>::iterator in_all, in_address;
  };
  HandshakeCaps caps_;
  std::list<uint64_t> all_;  // oldest first
  std::unordered_map<std::string, std::list<uint64_t>> by_address_;
  std::unordered_map<uint64_t, Entry> entries_;
};

}  // namespace fedcld
