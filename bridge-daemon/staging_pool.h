// Page-locked staging for the bytes of reads that are answered in one reply (below the size from
// which reads stream). NVIDIA copies a non-blocking read into ordinary (pageable) memory through a
// bounce buffer of its own: enqueueing a 64 KiB read took 18.5 us of fedcld's loop on an H100, and
// a kernel plus that read 35.5 us, against 4.4 and 20.4 us into memory the driver allocated itself
// (a CL_MEM_ALLOC_HOST_PTR buffer, mapped once). So each queue of a GPU keeps a few such slabs and
// lends them to its reads; the memory returns to the pool once the reply carrying it is written.
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

  StagingPool(cl_context context, cl_command_queue queue);
  ~StagingPool();
  StagingPool(const StagingPool &) = delete;

  // Memory for a read of size bytes on the pool's queue, or null (too large, every slab lent, or
  // the backend refused one): the caller stages in ordinary memory then. A slab whose map has not
  // completed yet adds the map to *wait, which the read must wait for.
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
