#include "pattern.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <vector>

namespace fedcl_test {

namespace {

constexpr size_t kDataPerLine = kPatternLine - 1;
// The stream repeats after this many lines (about 1 MB): a shift by anything but a multiple of it
// (a lost or repeated record, a record out of place) makes every later byte wrong.
constexpr size_t kPeriodLines = 16001;

// The data byte at column col of line line (both within the period): 0x80 and above.
uint8_t data_byte(uint64_t line, uint64_t col) {
  uint64_t x = (line * kDataPerLine + col + 1) * 0x9e3779b97f4a7c15ull;
  x ^= x >> 29;
  return uint8_t(0x80 | (x & 0x7f));
}

// One period of the stream, and of its data bytes alone.
struct Periods {
  std::vector<uint8_t> stream, data;
  Periods() {
    for (uint64_t line = 0; line < kPeriodLines; line++) {
      for (uint64_t col = 0; col < kDataPerLine; col++) {
        stream.push_back(data_byte(line, col));
        data.push_back(data_byte(line, col));
      }
      stream.push_back('\n');
    }
  }
};

const Periods &periods() {
  static const Periods made;
  return made;
}

// Compares bytes with the periodic base from offset: the index of the first difference, or size.
size_t first_difference(const std::vector<uint8_t> &base, uint64_t offset, const uint8_t *bytes, size_t size) {
  size_t done = 0;
  while (done < size) {
    size_t at = (offset + done) % base.size();
    size_t piece = std::min(size - done, base.size() - at);
    if (std::memcmp(base.data() + at, bytes + done, piece) != 0)
      return done + size_t(std::mismatch(base.data() + at, base.data() + at + piece, bytes + done).first - (base.data() + at));
    done += piece;
  }
  return size;
}

}  // namespace

void pattern_fill(uint64_t offset, uint8_t *out, size_t size) {
  const std::vector<uint8_t> &base = periods().stream;
  size_t done = 0;
  while (done < size) {
    size_t at = (offset + done) % base.size();
    size_t piece = std::min(size - done, base.size() - at);
    std::memcpy(out + done, base.data() + at, piece);
    done += piece;
  }
}

uint64_t pattern_data_bytes(uint64_t stream_bytes) {
  return stream_bytes / kPatternLine * kDataPerLine + std::min<uint64_t>(stream_bytes % kPatternLine, kDataPerLine);
}

void StreamCheck::take(const uint8_t *bytes, size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_.empty()) return;
  std::vector<uint8_t> kept;
  if (data_bytes_only_) {
    std::copy_if(bytes, bytes + size, std::back_inserter(kept), [](uint8_t byte) { return byte >= 0x80; });
    bytes = kept.data();
    size = kept.size();
  }
  const std::vector<uint8_t> &base = data_bytes_only_ ? periods().data : periods().stream;
  uint64_t offset = checked_.load(std::memory_order_relaxed);
  size_t right = first_difference(base, offset, bytes, size);
  if (right < size) {
    uint8_t expected = base[(offset + right) % base.size()];
    char what[64];
    std::snprintf(what, sizeof what, "0x%02x where 0x%02x belongs", bytes[right], expected);
    failure_ = std::string(data_bytes_only_ ? "data byte " : "byte ") + std::to_string(offset + right) + " is " + what;
  }
  checked_.store(offset + right, std::memory_order_release);
}

std::string StreamCheck::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

}  // namespace fedcl_test
