// How a host transfer is cut into pieces (runtime/transfer.h: cut_region): the pieces cover the
// region exactly once, in order, each within a chunk, on the unit's boundaries.
#include "host_region.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "transfer_chunks.h"

using fedcl::cut_region;
using fedcl::HostRegion;
using fedcl::RegionPiece;

namespace {

constexpr size_t kMiB = 1 << 20;

HostRegion region(size_t row_bytes, size_t rows, size_t slices) {
  return {nullptr, row_bytes, rows, slices, row_bytes + 64, (row_bytes + 64) * rows + 128};
}

// Marks each byte of the region that a piece covers; every byte must be covered once, pieces in
// increasing order, none larger than the chunk.
void expect_exact_cover(const HostRegion &host, const std::vector<RegionPiece> &pieces, size_t unit) {
  size_t chunk = fedcl::transfer_chunk_bytes(host.packed_size());
  std::vector<uint8_t> covered(host.packed_size(), 0);
  size_t previous_end = 0;
  for (const RegionPiece &p : pieces) {
    ASSERT_GT(p.width * p.rows * p.slices, 0u);
    EXPECT_LE(p.width * p.rows * p.slices, std::max(chunk, unit));
    EXPECT_EQ(0u, p.x % unit);
    EXPECT_EQ(0u, p.width % unit);
    ASSERT_LE(p.x + p.width, host.row_bytes);
    ASSERT_LE(p.y + p.rows, host.rows);
    ASSERT_LE(p.z + p.slices, host.slices);
    size_t start = (p.z * host.rows + p.y) * host.row_bytes + p.x;
    EXPECT_GE(start, previous_end);
    for (size_t z = 0; z < p.slices; z++)
      for (size_t y = 0; y < p.rows; y++)
        for (size_t x = 0; x < p.width; x++) covered[((p.z + z) * host.rows + p.y + y) * host.row_bytes + p.x + x]++;
    previous_end = start + 1;
  }
  EXPECT_EQ(covered.size(), size_t(std::count(covered.begin(), covered.end(), 1)));
}

}  // namespace

TEST(RegionPieces, SmallTransfersAndOutOfOrderQueuesTravelWhole) {
  HostRegion small = region(1000, 100, 10);  // under a MiB
  auto pieces = cut_region(small, 4, true);
  ASSERT_EQ(1u, pieces.size());
  EXPECT_EQ(0u, pieces[0].x + pieces[0].y + pieces[0].z);
  EXPECT_EQ(1000u, pieces[0].width);
  EXPECT_EQ(100u, pieces[0].rows);
  EXPECT_EQ(10u, pieces[0].slices);
  EXPECT_EQ(1u, cut_region(region(64 * kMiB, 1, 1), 1, false).size());
}

TEST(RegionPieces, WholeSlicesWhenASliceFitsAChunk) {
  HostRegion host = region(128 * 4, 64, 67);  // 32 KiB slices, 2.1 MiB: 1 MiB chunks of 32 slices
  auto pieces = cut_region(host, 4, true);
  ASSERT_EQ(3u, pieces.size());
  EXPECT_EQ(32u, pieces[0].slices);
  EXPECT_EQ(3u, pieces[2].slices);
  for (const auto &p : pieces) EXPECT_EQ(64u, p.rows);
  expect_exact_cover(host, pieces, 4);
}

TEST(RegionPieces, WholeRowsOfOneSliceWhenARowFitsAChunk) {
  HostRegion host = region(16 * 1024, 600, 2);  // 9.4 MiB slices of 16 KiB rows
  auto pieces = cut_region(host, 16, true);
  for (const auto &p : pieces) {
    EXPECT_EQ(1u, p.slices);
    EXPECT_EQ(host.row_bytes, p.width);
  }
  EXPECT_GT(pieces.size(), 2u * 600 * 16 * 1024 / (4 * kMiB));
  expect_exact_cover(host, pieces, 16);
}

TEST(RegionPieces, PartsOfARowOnTheElementsBoundaries) {
  // A buffer's range is one row; an image row longer than a chunk is cut between elements.
  expect_exact_cover(region(3 * kMiB + 5, 1, 1), cut_region(region(3 * kMiB + 5, 1, 1), 1, true), 1);
  HostRegion wide = region(12 * (kMiB / 12 * 2 + 7), 3, 1);  // rows of 2 MiB and a bit, 12-byte elements
  auto pieces = cut_region(wide, 12, true);
  EXPECT_GT(pieces.size(), 3u);
  expect_exact_cover(wide, pieces, 12);
}
