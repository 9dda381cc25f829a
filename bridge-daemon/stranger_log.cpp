#include "stranger_log.h"

#include <algorithm>

namespace fedcld {

const char *stranger_end_name(StrangerEnd end) {
  switch (end) {
    case StrangerEnd::key: return "wrong keys";
    case StrangerEnd::tls: return "TLS handshakes failed";
    case StrangerEnd::plaintext: return "plain-TCP clients of this TLS daemon";
    case StrangerEnd::frame: return "malformed first frames";
    case StrangerEnd::version: return "other protocol versions";
    case StrangerEnd::refused: return "handshakes refused";
    case StrangerEnd::over_cap: return "closed to make room for newer handshakes";
    case StrangerEnd::deadline: return "handshakes past their deadline";
    case StrangerEnd::gone: return "clients gone mid-handshake";
  }
  return "?";
}

LogLevel stranger_end_level(StrangerEnd end) {
  switch (end) {
    case StrangerEnd::deadline:
    case StrangerEnd::gone: return LogLevel::info;
    default: return LogLevel::warn;
  }
}

bool StrangerLog::note(const std::string &address, StrangerEnd kind, uint64_t now) {
  auto found = intervals_.find(address);
  if (found == intervals_.end()) {
    bool full = intervals_.size() >= kMaxAddresses;
    Interval &interval = intervals_[full ? kOtherAddresses : address];
    if (interval.started == 0 && !full) {
      interval.started = now ? now : 1;
      return true;
    }
    if (interval.started == 0) interval.started = now ? now : 1;
    interval.counted[size_t(kind)]++;
    return false;
  }
  found->second.counted[size_t(kind)]++;
  return false;
}

std::vector<StrangerLog::Line> StrangerLog::ended(uint64_t now, bool all) {
  std::vector<Line> lines;
  for (auto it = intervals_.begin(); it != intervals_.end();) {
    const Interval &interval = it->second;
    if (!all && now - interval.started < kIntervalMs) {
      ++it;
      continue;
    }
    uint64_t total = 0;
    LogLevel level = LogLevel::info;
    std::string kinds;
    for (size_t k = 0; k < kStrangerEnds; k++) {
      if (interval.counted[k] == 0) continue;
      total += interval.counted[k];
      if (stranger_end_level(StrangerEnd(k)) < level) level = stranger_end_level(StrangerEnd(k));
      kinds += (kinds.empty() ? "" : ", ") + std::to_string(interval.counted[k]) + " " + stranger_end_name(StrangerEnd(k));
    }
    if (total > 0) {
      uint64_t seconds = (std::max(now, interval.started) - interval.started + 999) / 1000;
      lines.push_back({level, it->first + ": " + std::to_string(total) + " more connections ended without a session in " +
                                  std::to_string(seconds) + " s (" + kinds + ")"});
    }
    it = intervals_.erase(it);
  }
  return lines;
}

}  // namespace fedcld
