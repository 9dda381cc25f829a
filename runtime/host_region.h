// Host memory a transfer reads or writes, and how the transfer is cut into pieces that travel as
// commands of their own. Pure logic: the unit tests take it alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fedcl {

// A box of a host region that travels as one command: bytes [x, x + width) of its rows
// [y, y + rows) of its slices [z, z + slices), counted from the region's start.
struct RegionPiece {
  size_t x, width, y, rows, z, slices;
};

// Host memory a transfer reads from or writes to: slices of rows of row_bytes each, rows row_pitch
// bytes apart and slices slice_pitch bytes apart.
struct HostRegion {
  uint8_t *base;
  size_t row_bytes, rows, slices;
  size_t row_pitch, slice_pitch;

  // size bytes back to back (a buffer's range).
  static HostRegion contiguous(const void *base, size_t size) {
    return {static_cast<uint8_t *>(const_cast<void *>(base)), size, 1, 1, size, size};
  }

  size_t packed_size() const { return row_bytes * rows * slices; }
  // The rows lie back to back, as on the wire.
  bool packed() const;
  void pack(uint8_t *out) const;
  void unpack(const uint8_t *in) const;
  // The host memory of one piece of this region.
  HostRegion piece(const RegionPiece &piece) const;
  // The whole region as one piece.
  RegionPiece whole() const { return {0, row_bytes, 0, rows, 0, slices}; }
};

// How a transfer of host travels: in pieces of about protocol/transfer_chunks.h's chunk, so that
// the network, the daemon's host copy and the device copy of successive pieces overlap. A piece is
// whole slices, else whole rows of one slice, else a part of one row cut on a multiple of unit (an
// image's element). One piece for an out-of-order queue, whose pieces could finish in any order.
std::vector<RegionPiece> cut_region(const HostRegion &host, size_t unit, bool in_order);

}  // namespace fedcl
