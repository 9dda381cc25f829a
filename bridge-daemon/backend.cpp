#include "backend.h"

#include <algorithm>

namespace fedcld {

namespace {

// Every parameter the backend answers is forwarded, including ones this build does not know by
// name, so new device properties reach the client without a protocol change. These ranges hold the
// core (0x1000, 0x0900) and the vendor extension parameters (0x4000 on).
struct ParamRange {
  cl_uint first, last;
};
const ParamRange kDeviceRanges[] = {{0x1000, 0x10ff}, {0x4000, 0x42ff}};
const ParamRange kPlatformRanges[] = {{0x0900, 0x09ff}, {0x4000, 0x40ff}};
// Enough chunks in flight for the device copies and the network to overlap; little to hold.
constexpr uint64_t kNvidiaTransferWindow = 64 << 20;

template <typename Handle, typename Query>
std::vector<InfoValue> read_info(Handle handle, Query query, const ParamRange *ranges, size_t count) {
  std::vector<InfoValue> info;
  for (size_t r = 0; r < count; r++) {
    for (cl_uint param = ranges[r].first; param <= ranges[r].last; param++) {
      size_t size = 0;
      if (query(handle, param, 0, nullptr, &size) != CL_SUCCESS) continue;
      InfoValue value{param, std::vector<uint8_t>(size)};
      if (size && query(handle, param, size, value.value.data(), nullptr) != CL_SUCCESS) continue;
      info.push_back(std::move(value));
    }
  }
  return info;
}

std::string platform_name(cl_platform_id platform) {
  return backend_string([&](size_t size, void *value, size_t *size_ret) {
    return clGetPlatformInfo(platform, CL_PLATFORM_NAME, size, value, size_ret);
  });
}

bool platform_selected(const std::string &wanted, size_t index, cl_platform_id platform) {
  if (wanted.empty()) return true;
  if (std::all_of(wanted.begin(), wanted.end(), ::isdigit)) return std::stoul(wanted) == index;
  return platform_name(platform).find(wanted) != std::string::npos;
}

}  // namespace

std::string info_string(const std::vector<InfoValue> &info, cl_uint param) {
  for (const InfoValue &value : info) {
    if (value.param != param) continue;
    const char *text = reinterpret_cast<const char *>(value.value.data());
    return std::string(text, strnlen(text, value.value.size()));
  }
  return {};
}

uint64_t info_ulong(const std::vector<InfoValue> &info, cl_uint param) {
  cl_ulong number = 0;
  for (const InfoValue &value : info)
    if (value.param == param && value.value.size() == sizeof number) std::memcpy(&number, value.value.data(), sizeof number);
  return number;
}

std::string device_name(cl_device_id device) {
  return backend_string([&](size_t size, void *value, size_t *size_ret) {
    return clGetDeviceInfo(device, CL_DEVICE_NAME, size, value, size_ret);
  });
}

std::vector<InfoValue> backend_device_info(cl_device_id device) {
  return read_info(device, clGetDeviceInfo, kDeviceRanges, 2);
}

std::string backend_discover(const BackendSelection &selection, std::vector<BackendPlatform> *platforms) {
  cl_uint count = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &count);
  if (err != CL_SUCCESS || count == 0)
    return "no OpenCL platform on this node (clGetPlatformIDs returned " + std::to_string(err) + ")";
  std::vector<cl_platform_id> ids(count);
  clGetPlatformIDs(count, ids.data(), nullptr);

  for (size_t p = 0; p < ids.size(); p++) {
    if (!platform_selected(selection.platform, p, ids[p])) continue;
    // Never re-export fedcl itself: a daemon whose node also registers fedcl would loop.
    if (platform_name(ids[p]) == "fedcl") continue;
    cl_uint ndev = 0;
    if (clGetDeviceIDs(ids[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &ndev) != CL_SUCCESS || ndev == 0) continue;
    std::vector<cl_device_id> devices(ndev);
    clGetDeviceIDs(ids[p], CL_DEVICE_TYPE_ALL, ndev, devices.data(), nullptr);

    BackendPlatform platform{ids[p], read_info(ids[p], clGetPlatformInfo, kPlatformRanges, 2), {}};
    bool nvidia = platform_name(ids[p]).find("NVIDIA") != std::string::npos;
    platform.late_callbacks = nvidia;
    platform.safe_kernel_name_length = nvidia ? 256 : 0;
    platform.ptx_binaries = nvidia;
    platform.maps_parts_wrongly = nvidia;
    platform.transfer_window = nvidia ? kNvidiaTransferWindow : 0;
    platform.uploads_host_copies_late = nvidia;
    platform.frees_failed_waiters = platform_name(ids[p]) == "Portable Computing Language";
    for (unsigned d = 0; d < ndev; d++) {
      if (!selection.devices.empty() &&
          std::find(selection.devices.begin(), selection.devices.end(), d) == selection.devices.end())
        continue;
      platform.devices.push_back({devices[d], backend_device_info(devices[d])});
    }
    if (!platform.devices.empty()) platforms->push_back(std::move(platform));
  }
  if (platforms->empty()) return "no OpenCL device matches the --platform/--devices selection";
  return {};
}

}  // namespace fedcld
