// How a transfer is cut into chunks. Both ends of a transfer cut it alike, so that each chunk's
// bytes land whole in the memory the receiving end set aside for that chunk.
#pragma once

#include <algorithm>
#include <cstdint>

namespace fedcl {

// The largest chunk: a receiver refuses a larger one before taking memory for it.
constexpr uint64_t kMaxTransferChunkBytes = 4 << 20;

// size/16, between 1 and 4 MiB (and never more than the transfer): enough chunks for the device
// copy, the network and the other end's copy to overlap, few enough that each costs little. A
// multiple of 8 bytes, so that no element of a combining receive is cut in two.
inline uint64_t transfer_chunk_bytes(uint64_t size) {
  uint64_t chunk = std::clamp<uint64_t>(size / 16, 1 << 20, kMaxTransferChunkBytes) & ~uint64_t(7);
  return std::min<uint64_t>(size, chunk);
}

}  // namespace fedcl
