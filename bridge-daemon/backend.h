// The node's real OpenCL: which platforms and devices fedcld exports, and their info, read once at
// start-up through the system's ICD loader.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace fedcld {

struct InfoValue {
  cl_uint param;
  std::vector<uint8_t> value;
};

struct BackendDevice {
  cl_device_id handle;
  std::vector<InfoValue> info;
};

struct BackendPlatform {
  cl_platform_id handle;
  std::vector<InfoValue> info;
  std::vector<BackendDevice> devices;
  bool late_callbacks = false;  // its event callbacks lag far behind clWaitForEvents (NVIDIA's do)
  // Kernel names longer than this are not listed through the backend, which corrupts its own heap
  // doing so (NVIDIA: clCreateKernelsInProgram from about 260 characters on); 0: no limit.
  size_t safe_kernel_name_length = 0;
  bool ptx_binaries = false;  // a program's binary is PTX text, which declares its kernels' parameters (NVIDIA)
  // A map of part of a buffer may point at host memory that does not hold the range (NVIDIA 580,
  // a buffer with sub-buffers): transfers stage such ranges instead (peer_chunks.h).
  bool maps_parts_wrongly = false;
  // Transfers larger than this many bytes are staged a window of this size at a time, their device
  // commands enqueued as the transfer goes (peer_chunks.h); 0: never. NVIDIA's first map of a buffer
  // pins a host copy of all of it (6 GiB: 17.8 s on the loop, which lost the daemon), and it orders
  // no command behind another queue's, so the commands may come late.
  uint64_t transfer_window = 0;
  // A buffer made from host memory (CL_MEM_COPY_HOST_PTR) keeps a pinned host copy, uploaded by the
  // first command that uses the buffer, inside that command's enqueue (NVIDIA: a 16 GiB grid held the
  // loop 5.9 s in clEnqueueNDRangeKernel, and the release of its sub-buffers over 10 s). fedcld
  // makes such a buffer empty and writes the contents itself, off the loop (exec_objects.cpp).
  bool uploads_host_copies_late = false;
  // A command one of whose dependencies failed is freed while its other dependencies still list it,
  // and may run meanwhile (PoCL 3.1): fedcld keeps user events' failures from the backend
  // (event_failures.h), and watches every command event it keeps, so that one that fails all the
  // same stays (ObjectTable::keep_failed_event), even an event the client asked it not to watch.
  bool frees_failed_waiters = false;
};

struct BackendSelection {
  std::string platform;            // index or a substring of the platform name; empty: all
  std::vector<unsigned> devices;   // device indices within each selected platform; empty: all
};

// Reads a string a clGet*Info call answers, asking its size first: no name, log, source or option
// string is cut at a fixed size, and a spare byte holds a terminator a backend may leave out.
// query(size, value, size_ret) makes the call; "" when the backend refuses.
template <typename Query>
std::string backend_string(Query query) {
  size_t size = 0;
  if (query(0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string text(size + 1, '\0');
  if (query(size, text.data(), nullptr) != CL_SUCCESS) return {};
  text.resize(strnlen(text.data(), size));
  return text;
}

std::string device_name(cl_device_id device);
// A string parameter from info as read at start-up (a name), or "" when it is not there.
std::string info_string(const std::vector<InfoValue> &info, cl_uint param);
// A cl_ulong parameter (a memory size), or 0 when it is not there.
uint64_t info_ulong(const std::vector<InfoValue> &info, cl_uint param);

// Fills platforms with the selected platforms and devices; returns an error message or "".
std::string backend_discover(const BackendSelection &selection, std::vector<BackendPlatform> *platforms);
// Every clGetDeviceInfo parameter device answers (sub-devices are described the same way).
std::vector<InfoValue> backend_device_info(cl_device_id device);

}  // namespace fedcld
