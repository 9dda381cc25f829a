// The bytes the interoperability tests send each way: a deterministic stream in which a lost,
// repeated, reordered or changed byte shows, and which the other implementations' command-line tools
// pass through untouched. It is lines of 62 bytes of 0x80 and above and a newline: gnutls-serv's
// echo answers lines, and no byte is NUL, a carriage return or the start of one of openssl's or
// gnutls-cli's interactive commands (all ASCII). What the tools print themselves, on the stdout the
// data also arrives on, is ASCII too, so the data bytes of their output can be told from it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace fedcl_test {

constexpr size_t kPatternLine = 63;  // 62 data bytes and a newline

// The stream's bytes [offset, offset + size), to out.
void pattern_fill(uint64_t offset, uint8_t *out, size_t size);
// How many data bytes (0x80 and above) the stream's first stream_bytes bytes hold.
uint64_t pattern_data_bytes(uint64_t stream_bytes);

// Checks bytes as they arrive, in order, against the stream from its start: all of it, or (for a
// tool's stdout, its messages mixed in) its data bytes only, the others dropped from both. One
// thread takes; any thread may watch.
class StreamCheck {
 public:
  explicit StreamCheck(bool data_bytes_only) : data_bytes_only_(data_bytes_only) {}
  StreamCheck(const StreamCheck &) = delete;
  StreamCheck &operator=(const StreamCheck &) = delete;

  void take(const uint8_t *bytes, size_t size);
  // Bytes found right so far (data bytes, when only those are checked); none after a wrong one.
  uint64_t checked() const { return checked_.load(std::memory_order_acquire); }
  // "" while every byte was right; else where the first wrong one came.
  std::string failure() const;

 private:
  const bool data_bytes_only_;
  std::atomic<uint64_t> checked_{0};
  mutable std::mutex mutex_;
  std::string failure_;
};

}  // namespace fedcl_test
