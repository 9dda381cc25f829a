// The node's real OpenCL: which platforms and devices fedcld exports, and their info, read once at
// start-up through the system's ICD loader.
#pragma once

#include <CL/cl.h>

#include <cstdint>
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
};

struct BackendSelection {
  std::string platform;            // index or a substring of the platform name; empty: all
  std::vector<unsigned> devices;   // device indices within each selected platform; empty: all
};

// Fills platforms with the selected platforms and devices; returns an error message or "".
std::string backend_discover(const BackendSelection &selection, std::vector<BackendPlatform> *platforms);
// Every clGetDeviceInfo parameter device answers (sub-devices are described the same way).
std::vector<InfoValue> backend_device_info(cl_device_id device);

}  // namespace fedcld
