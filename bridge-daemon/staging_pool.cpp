#include "staging_pool.h"

#include <mutex>

namespace fedcld {

struct StagingPool::Shelf {
  cl_context context;
  cl_command_queue queue;
  std::mutex mutex;  // lent memory may come back on any thread
  std::vector<Slab> free, all;

  ~Shelf() {
    // The buffers go with their mapping: a released buffer's memory is the backend's to reclaim.
    for (Slab &slab : all) {
      if (slab.mapped) clReleaseEvent(slab.mapped);
      clReleaseMemObject(slab.mem);
    }
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }

  bool add_slab() {
    cl_int err = CL_SUCCESS;
    Slab slab;
    slab.mem = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, kSlabBytes, nullptr, &err);
    if (err != CL_SUCCESS) return false;
    // Never blocking: the map waits behind the queue's commands, and the read that first uses the
    // slab waits for the map.
    slab.host = static_cast<uint8_t *>(clEnqueueMapBuffer(queue, slab.mem, CL_FALSE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                                          kSlabBytes, 0, nullptr, &slab.mapped, &err));
    if (err != CL_SUCCESS) {
      clReleaseMemObject(slab.mem);
      return false;
    }
    all.push_back(slab);
    free.push_back(slab);
    return true;
  }
};

StagingPool::StagingPool(cl_context context, cl_command_queue queue) : shelf_(std::make_shared<Shelf>()) {
  clRetainContext(context);
  clRetainCommandQueue(queue);
  shelf_->context = context;
  shelf_->queue = queue;
}

StagingPool::~StagingPool() = default;

std::shared_ptr<uint8_t[]> StagingPool::take(uint64_t size, std::vector<cl_event> *wait) {
  if (size > kSlabBytes) return nullptr;
  Slab slab;
  {
    std::lock_guard<std::mutex> lock(shelf_->mutex);
    if (shelf_->free.empty() && (shelf_->all.size() >= kMaxSlabs || !shelf_->add_slab())) return nullptr;
    slab = shelf_->free.back();
    shelf_->free.pop_back();
  }
  if (slab.mapped) {
    cl_int status = CL_QUEUED;
    clGetEventInfo(slab.mapped, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    if (status < 0) return nullptr;  // the map failed: this slab stays out of use
    if (status > CL_COMPLETE) wait->push_back(slab.mapped);
  }
  return std::shared_ptr<uint8_t[]>(slab.host, [shelf = shelf_, slab](uint8_t *) {
    std::lock_guard<std::mutex> lock(shelf->mutex);
    shelf->free.push_back(slab);
  });
}

}  // namespace fedcld
