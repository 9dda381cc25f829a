// Counts the TLS records of one direction of a connection by their headers alone, and which of them
// are KeyUpdates, so that a test can say how many records each key sealed (how far the sequence
// numbers went) and how many key changes there were, as seen on the wire rather than through the
// record layer under test. After the handshake a record whose body is 22 bytes (a KeyUpdate's 5,
// the inner content type, AES-GCM's tag of 16) is taken for a KeyUpdate: the tests see to it that no
// data record is as small (4 KiB pieces from the tools, writes of at least 8 bytes from fedcl).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fedcl_test {

class RecordTally {
 public:
  // The next ciphertext of the direction, in pieces of any size.
  void take(const uint8_t *bytes, size_t size);
  // The records sealed with each key so far, the current one's last (a KeyUpdate counts under the
  // key it ends: its sequence number is that key's last).
  const std::vector<uint64_t> &per_key() const { return per_key_; }
  size_t key_updates() const { return per_key_.size() - 1; }
  uint64_t records() const;

 private:
  static constexpr size_t kHeader = 5;
  uint8_t header_[kHeader] = {};
  size_t header_have_ = 0, body_left_ = 0;
  std::vector<uint64_t> per_key_{0};
};

}  // namespace fedcl_test
