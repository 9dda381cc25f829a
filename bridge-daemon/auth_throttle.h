// Slows guessing: the proofs that one address keeps failing for one user (or for the cluster key)
// are checked further and further apart. Each connection gets one proof (exec_handshake.cpp), so
// guesses need connections; each proof takes the next turn of its (address, user), in order, so
// parallel connections do not help either. A proof is checked when it arrives: one that holds is
// answered at once and ends its (address, user)'s burst, one that fails is answered at its turn.
// The first two failures take no turn (a mistyped key), then turns are 100 ms apart, doubling per
// failure up to 8 s; a proof whose turn would come past kMaxWaitMs is refused unchecked. So no more
// proofs are checked than before, and another user behind the same address (a NAT, a login node)
// is not slowed by a stranger's guesses at someone else's key (docs/design-decisions.md,
// "Authentication", says why answering good proofs at once tells a guesser nothing more). A burst
// ends after ten quiet minutes, or when its (address, user) proves the key. Pure logic on
// millisecond clocks.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace fedcld {

// Whose failures count together: the address (address_key: an IPv6 one by its /64) and the user
// the client claims, escaped and cut as the log shows it (log_quote), "" for the cluster key.
std::string auth_throttle_key(const std::string &address, const std::string &user);

class AuthThrottle {
 public:
  // The turn (ms, on the caller's clock) of a proof that arrived now from who (auth_throttle_key):
  // when its refusal may be sent should it fail; the next proof from there waits behind it. kBusy
  // when the wait would pass kMaxWaitMs: the proof is then refused unchecked, and takes no turn.
  static constexpr uint64_t kBusy = UINT64_MAX;
  uint64_t verdict_at(const std::string &who, uint64_t now);
  // The proof failed; returns the burst's count.
  uint64_t failed(const std::string &who, uint64_t now);
  // The proof held: the burst of who (that address and user, no other) is over. How many failures
  // it had (for one closing line).
  uint64_t passed(const std::string &who);
  size_t addresses() const { return bursts_.size(); }

  static constexpr uint64_t kFreeFailures = 2;
  static constexpr uint64_t kFirstDelayMs = 100;
  static constexpr uint64_t kMaxDelayMs = 8000;
  static constexpr uint64_t kMaxWaitMs = 9000;
  static constexpr uint64_t kQuietMs = 10 * 60 * 1000;
  static constexpr size_t kMaxAddresses = 65536;  // bursts; beyond, the quietest are forgotten first

 private:
  struct Burst {
    uint64_t failures = 0;
    uint64_t last_failure = 0;
    uint64_t next_verdict = 0;
  };
  uint64_t delay(uint64_t failures) const;
  void forget_quiet(uint64_t now);

  std::map<std::string, Burst> bursts_;
};

}  // namespace fedcld
