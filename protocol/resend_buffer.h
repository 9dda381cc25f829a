// What one side of a session sent and the other side has not acknowledged yet, for resending after
// the connection dropped (docs/design-decisions.md, "Lost daemons"). Offsets count the bytes of the
// session's stream since its first byte. Small pieces are copied into runs of their own; bulk bytes
// that stay valid anyway are kept by reference (their owner's shared_ptr), so keeping them costs no
// copy. Not thread-safe: its owner serialises use.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace fedcl {

class ResendBuffer {
 public:
  // An empty buffer whose stream starts at offset (what another process sent before it): the
  // next byte appended is that offset's.
  void start_at(uint64_t offset) {
    if (pieces_.empty()) begin_ = end_ = offset;
  }
  // Appends a copy of size bytes.
  void append_copy(const void *bytes, size_t size);
  // Appends size bytes at data, kept alive by owner until acknowledged.
  void append_shared(std::shared_ptr<const void> owner, const void *data, size_t size);
  // Forgets what lies before offset `received` (what the other side said it has).
  void acknowledge(uint64_t received);
  // The pieces from offset `from` to the end, in order (pointers stay valid until the next
  // acknowledge); false when from is outside [acknowledged(), sent()].
  bool pieces_from(uint64_t from, std::vector<iovec> *pieces) const;

  uint64_t sent() const { return end_; }
  uint64_t acknowledged() const { return begin_; }
  // Bytes held (sent but not acknowledged).
  uint64_t held() const { return end_ - begin_; }

 private:
  struct Piece {
    uint64_t offset;                   // of its first byte in the stream
    std::vector<uint8_t> copy;         // a copied run, or empty when shared
    std::shared_ptr<const void> owner; // a shared piece's owner
    const uint8_t *data;               // copy.data() once the run is full, or the shared bytes
    size_t size;
  };
  // A copied run takes more small pieces until it holds this many bytes.
  static constexpr size_t kRunBytes = 64 * 1024;

  std::deque<Piece> pieces_;
  uint64_t begin_ = 0, end_ = 0;
};

}  // namespace fedcl
