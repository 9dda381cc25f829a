#include "record_tally.h"

#include <algorithm>
#include <numeric>

namespace fedcl_test {

namespace {
constexpr size_t kKeyUpdateBody = 5 + 1 + 16;
}

void RecordTally::take(const uint8_t *bytes, size_t size) {
  while (size > 0) {
    if (body_left_ > 0) {
      size_t skip = std::min(size, body_left_);
      body_left_ -= skip;
      bytes += skip;
      size -= skip;
      continue;
    }
    header_[header_have_++] = *bytes++;
    size--;
    if (header_have_ < kHeader) continue;
    header_have_ = 0;
    body_left_ = size_t(header_[3]) << 8 | header_[4];
    per_key_.back()++;
    if (body_left_ == kKeyUpdateBody) per_key_.push_back(0);
  }
}

uint64_t RecordTally::records() const { return std::accumulate(per_key_.begin(), per_key_.end(), uint64_t(0)); }

}  // namespace fedcl_test
