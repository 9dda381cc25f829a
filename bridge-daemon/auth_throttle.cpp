#include "auth_throttle.h"

#include <algorithm>

#include "log.h"

namespace fedcld {

std::string auth_throttle_key(const std::string &address, const std::string &user) {
  return user.empty() ? address : address + " as user " + log_quote(user);
}

uint64_t AuthThrottle::delay(uint64_t failures) const {
  if (failures < kFreeFailures) return 0;
  uint64_t doublings = std::min<uint64_t>(failures - kFreeFailures, 16);
  return std::min(kFirstDelayMs << doublings, kMaxDelayMs);
}

uint64_t AuthThrottle::verdict_at(const std::string &who, uint64_t now) {
  auto found = bursts_.find(who);
  if (found == bursts_.end()) return now;
  Burst &burst = found->second;
  if (now - burst.last_failure > kQuietMs) {
    bursts_.erase(found);
    return now;
  }
  uint64_t wait = delay(burst.failures);
  if (wait == 0) return now;
  uint64_t at = std::max(now, burst.next_verdict) + wait;
  if (at - now > kMaxWaitMs) return kBusy;
  burst.next_verdict = at;
  return at;
}

uint64_t AuthThrottle::failed(const std::string &who, uint64_t now) {
  if (bursts_.size() >= kMaxAddresses) forget_quiet(now);
  Burst &burst = bursts_[who];
  if (now - burst.last_failure > kQuietMs) burst = Burst{};
  burst.failures++;
  burst.last_failure = now;
  return burst.failures;
}

uint64_t AuthThrottle::passed(const std::string &who) {
  auto found = bursts_.find(who);
  if (found == bursts_.end()) return 0;
  uint64_t failures = found->second.failures;
  bursts_.erase(found);
  return failures;
}

void AuthThrottle::forget_quiet(uint64_t now) {
  for (auto it = bursts_.begin(); it != bursts_.end();) {
    if (now - it->second.last_failure > kQuietMs) it = bursts_.erase(it);
    else ++it;
  }
  // Still full (a flood from many addresses): the oldest bursts go, never the newest.
  while (bursts_.size() >= kMaxAddresses) {
    auto oldest = std::min_element(bursts_.begin(), bursts_.end(), [](const auto &a, const auto &b) {
      return a.second.last_failure < b.second.last_failure;
    });
    bursts_.erase(oldest);
  }
}

}  // namespace fedcld
