// Page-locked staging for the bytes of reads that are answered in one reply (below the size from
// which reads stream), and for the staged chunks of transfers between daemons (peer_chunks.h).
// NVIDIA copies a non-blocking read into ordinary (pageable) memory through a bounce buffer of its
// own: enqueueing a 64 KiB read took 18.5 us of fedcld's loop on an H100, and a kernel plus that
// read 35.5 us, against 4.4 and 20.4 us into memory the driver allocated itself (a
// CL_MEM_ALLOC_HOST_PTR buffer, mapped once). So each queue of a GPU keeps a few such slabs and lends
// them out; the memory returns to the pool once the reply or the chunk is done with it.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace fedcld {

class StagingPool {
 public:
  static constexpr uint64_t kSlabBytes = 1 << 20;  // the client streams reads from 1 MiB on
  static constexpr size_t kMaxSlabs = 4;           // per queue: more reads in flight stage as before
  static constexpr size_t kMaxTransferSlabs = 32;  // an out-of-order queue's, of a transfer chunk each

  // slab_bytes, max_slabs: an out-of-order queue's pool also stages whole transfer chunks, several
  // transfers at a time (fedcl's transfer queue is one).
  StagingPool(cl_context context, cl_command_queue queue, uint64_t slab_bytes = kSlabBytes, size_t max_slabs = kMaxSlabs);
  ~StagingPool();
  StagingPool(const StagingPool &) = delete;

  // Memory for a read of size bytes on the pool's queue, or null (too large, every slab lent, or
  // the backend refused one): the caller stages in ordinary memory then. A slab whose map has not
  // completed yet adds the map to *wait, which the read must wait for; with wait null, only a slab
  // mapped already is lent (memory the network may fill at once).
  std::shared_ptr<uint8_t[]> take(uint64_t size, std::vector<cl_event> *wait);

 private:
  struct Slab {
    cl_mem mem = nullptr;
    uint8_t *host = nullptr;
    cl_event mapped = nullptr;  // until it completed
  };
  struct Shelf;  // the slabs, shared with the memory lent out, which may outlive the pool
  std::shared_ptr<Shelf> shelf_;
};

}  // namespace fedcld
