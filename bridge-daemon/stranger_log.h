// How fedcld's main process logs the ends of strangers' connections (handshake_limits.h) that came
// to no session: a TLS handshake that failed, a plain-TCP client of a TLS daemon, a first frame
// that is not a request, another protocol version, a connection closed to make room for newer
// ones, a handshake past its deadline, a client gone mid-handshake, and wrong keys. A flood of them
// wrote two lines each (66 MB for 320,000 refused ClientHellos in a minute). Now each address gets
// one line in full per interval, the first; the others are counted, and one line when the interval
// ends says how many of which kind.
// Pure logic on millisecond clocks; the caller writes the lines.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "log.h"

namespace fedcld {

enum class StrangerEnd : uint8_t { key, tls, plaintext, frame, version, refused, over_cap, deadline, gone };
constexpr size_t kStrangerEnds = 9;
// "TLS handshakes failed", ...: how a summary names a count of the kind.
const char *stranger_end_name(StrangerEnd end);
// warn for what an operator should look at (a refusal, a flood's connections closed), info for a
// client that went away or took too long.
LogLevel stranger_end_level(StrangerEnd end);

class StrangerLog {
 public:
  static constexpr uint64_t kIntervalMs = 10000;
  // Addresses followed at once; past that, further addresses' ends count together as "other
  // addresses" (a flood from many addresses costs bounded memory).
  static constexpr size_t kMaxAddresses = 65536;
  static constexpr const char *kOtherAddresses = "other addresses";

  // An end of kind from address at now: true when the caller logs it in full (the first of the
  // address's interval), false when it was only counted.
  bool note(const std::string &address, StrangerEnd kind, uint64_t now);
  // The summaries of the intervals that ended by now (every interval when all), one per address
  // whose interval counted ends beyond the one logged in full: "ADDRESS: N more connections ...".
  struct Line {
    LogLevel level;
    std::string text;
  };
  std::vector<Line> ended(uint64_t now, bool all = false);
  size_t addresses() const { return intervals_.size(); }

 private:
  struct Interval {
    uint64_t started = 0;
    std::array<uint64_t, kStrangerEnds> counted{};
  };
  std::unordered_map<std::string, Interval> intervals_;
};

}  // namespace fedcld
