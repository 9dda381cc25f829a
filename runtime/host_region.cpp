#include "host_region.h"

#include <algorithm>
#include <cstring>

#include "transfer_chunks.h"

namespace fedcl {

bool HostRegion::packed() const {
  return (rows <= 1 || row_pitch == row_bytes) && (slices <= 1 || slice_pitch == row_bytes * rows);
}

void HostRegion::pack(uint8_t *out) const {
  for (size_t z = 0; z < slices; z++)
    for (size_t y = 0; y < rows; y++, out += row_bytes)
      std::memcpy(out, base + z * slice_pitch + y * row_pitch, row_bytes);
}

void HostRegion::unpack(const uint8_t *in) const {
  for (size_t z = 0; z < slices; z++)
    for (size_t y = 0; y < rows; y++, in += row_bytes)
      std::memcpy(base + z * slice_pitch + y * row_pitch, in, row_bytes);
}

HostRegion HostRegion::piece(const RegionPiece &piece) const {
  return {base + piece.z * slice_pitch + piece.y * row_pitch + piece.x, piece.width, piece.rows, piece.slices,
          row_pitch, slice_pitch};
}

std::vector<RegionPiece> cut_region(const HostRegion &host, size_t unit, bool in_order) {
  size_t size = host.packed_size();
  size_t chunk = in_order ? transfer_chunk_bytes(size) : size;
  if (chunk >= size) return {host.whole()};
  std::vector<RegionPiece> pieces;
  size_t slice_bytes = host.row_bytes * host.rows;
  if (slice_bytes <= chunk) {
    size_t step = chunk / slice_bytes;
    for (size_t z = 0; z < host.slices; z += step)
      pieces.push_back({0, host.row_bytes, 0, host.rows, z, std::min(step, host.slices - z)});
  } else if (host.row_bytes <= chunk) {
    size_t step = chunk / host.row_bytes;
    for (size_t z = 0; z < host.slices; z++)
      for (size_t y = 0; y < host.rows; y += step)
        pieces.push_back({0, host.row_bytes, y, std::min(step, host.rows - y), z, 1});
  } else {
    size_t step = std::max(unit, chunk / unit * unit);
    for (size_t z = 0; z < host.slices; z++)
      for (size_t y = 0; y < host.rows; y++)
        for (size_t x = 0; x < host.row_bytes; x += step)
          pieces.push_back({x, std::min(step, host.row_bytes - x), y, 1, z, 1});
  }
  return pieces;
}

}  // namespace fedcl
