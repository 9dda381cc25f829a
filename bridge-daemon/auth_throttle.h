// Slows guessing: the verdicts on proofs from one address that keeps failing come further and further
// apart. Each connection gets one proof (exec_handshake.cpp), so guesses need connections; this
// spaces the verdicts of all of an address's connections, in order, so parallel connections do not
// help either. An address's first two failures are answered at once (a mistyped key), then each
// verdict waits 100 ms, doubling per failure up to 8 s (within a handshake's 10 s); a burst ends
// after ten quiet minutes, or when the address proves a key. Pure logic on millisecond clocks.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace fedcld {

class AuthThrottle {
 public:
  // When (ms, on the caller's clock) the verdict on a proof that arrived now from address may be
  // given, and reserves that time: the next proof from there waits behind it. kBusy when the wait
  // would pass kMaxWaitMs (the handshake would time out first): the proof is then refused unchecked,
  // and takes no turn.
  static constexpr uint64_t kBusy = UINT64_MAX;
  uint64_t verdict_at(const std::string &address, uint64_t now);
  // The proof failed. The burst's count, and whether this failure starts its slowing (then the
  // caller logs once; later failures of the burst it counts without a line each).
  struct Failure {
    uint64_t failures;
    bool slowing_starts;
  };
  Failure failed(const std::string &address, uint64_t now);
  // The proof held: the address's burst is over. How many failures it had (for one closing line).
  uint64_t passed(const std::string &address);
  size_t addresses() const { return bursts_.size(); }

  static constexpr uint64_t kFreeFailures = 2;
  static constexpr uint64_t kFirstDelayMs = 100;
  static constexpr uint64_t kMaxDelayMs = 8000;
  static constexpr uint64_t kMaxWaitMs = 9000;
  static constexpr uint64_t kQuietMs = 10 * 60 * 1000;
  static constexpr size_t kMaxAddresses = 65536;  // beyond, the quietest bursts are forgotten first

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
