// One side of the comparison: a platform ("direct" = the backend, "fedcl"), its first device, a
// context, an in-order queue and the benchmark program built for it.
#pragma once

#include <CL/cl.h>

#include <memory>
#include <string>

#include "bench_platform.h"

namespace bench {

// Throws std::runtime_error naming the call when err is not CL_SUCCESS.
void check(cl_int err, const char *what);
// clCreateKernel and clCreateBuffer that throw on failure.
cl_kernel make_kernel(cl_program program, const char *name);
cl_mem make_buffer(cl_context context, size_t size, cl_mem_flags flags);
// A device's string property ("" if it cannot be had).
std::string device_text(cl_device_id device, cl_device_info param);

struct Side {
  std::string label;        // "direct" or "fedcl"
  std::string description;  // platform, version and device, for the report
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_program program = nullptr;
  size_t max_work_group_size = 0;
  cl_device_type device_type = 0;
  cl_ulong max_mem_alloc = 0, global_mem = 0;  // bytes

  Side() = default;
  Side(const Side &) = delete;
  ~Side();

  cl_kernel kernel(const char *name) const;
  cl_mem buffer(size_t size, cl_mem_flags flags = CL_MEM_READ_WRITE) const;
  bool is_gpu() const { return device_type & CL_DEVICE_TYPE_GPU; }
};

// Owns one OpenCL object and releases it at scope exit.
template <typename Handle, cl_int (*Release)(Handle)>
class Owned {
 public:
  explicit Owned(Handle handle) : handle_(handle) {}
  Owned(const Owned &) = delete;
  ~Owned() {
    if (handle_) Release(handle_);
  }
  operator Handle() const { return handle_; }
  const Handle *address() const { return &handle_; }

 private:
  Handle handle_;
};
using OwnedMem = Owned<cl_mem, clReleaseMemObject>;
using OwnedKernel = Owned<cl_kernel, clReleaseKernel>;
using OwnedQueue = Owned<cl_command_queue, clReleaseCommandQueue>;

// Opens the platform whose CL_PLATFORM_NAME contains name_part (and, for the backend, is not fedcl).
std::unique_ptr<Side> open_side(const std::string &label, const std::string &name_part, bool is_fedcl);

}  // namespace bench
