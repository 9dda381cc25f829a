#include "resend_buffer.h"

#include <algorithm>

namespace fedcl {

void ResendBuffer::append_copy(const void *bytes, size_t size) {
  if (size == 0) return;
  auto *from = static_cast<const uint8_t *>(bytes);
  if (pieces_.empty() || pieces_.back().owner || pieces_.back().copy.size() + size > kRunBytes) {
    pieces_.push_back(Piece{end_, {}, nullptr, nullptr, 0});
    pieces_.back().copy.reserve(std::max(size, kRunBytes));
  }
  Piece &run = pieces_.back();
  // Reserved up front, so a run's bytes never move while it grows within kRunBytes; a larger
  // single copy gets a run of its own.
  run.copy.insert(run.copy.end(), from, from + size);
  run.data = run.copy.data();
  run.size = run.copy.size();
  end_ += size;
}

void ResendBuffer::append_shared(std::shared_ptr<const void> owner, const void *data, size_t size) {
  if (size == 0) return;
  pieces_.push_back(Piece{end_, {}, std::move(owner), static_cast<const uint8_t *>(data), size});
  end_ += size;
}

void ResendBuffer::acknowledge(uint64_t received) {
  received = std::min(received, end_);
  if (received <= begin_) return;
  begin_ = received;
  while (!pieces_.empty() && pieces_.front().offset + pieces_.front().size <= begin_) pieces_.pop_front();
}

bool ResendBuffer::pieces_from(uint64_t from, std::vector<iovec> *pieces) const {
  if (from < begin_ || from > end_) return false;
  for (const Piece &piece : pieces_) {
    uint64_t piece_end = piece.offset + piece.size;
    if (piece_end <= from) continue;
    uint64_t skip = from > piece.offset ? from - piece.offset : 0;
    pieces->push_back({const_cast<uint8_t *>(piece.data + skip), size_t(piece.size - skip)});
  }
  return true;
}

}  // namespace fedcl
