// Platform and device queries.
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CL/cl_fedcl_transfer.h>

#include "api.h"
#include "device.h"
#include "info.h"
#include "transfer_port.h"

using namespace fedcl;

namespace {

const char kPlatformVersion[] = "OpenCL 3.0 fedcl " FEDCL_VERSION;
const cl_device_type kKnownTypes = CL_DEVICE_TYPE_DEFAULT | CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_GPU |
                                   CL_DEVICE_TYPE_ACCELERATOR | CL_DEVICE_TYPE_CUSTOM;

bool is_platform(cl_platform_id platform) { return platform == nullptr || as<_cl_platform_id>(platform); }

}  // namespace

cl_int fedcl::api::clGetPlatformIDs(cl_uint num_entries, cl_platform_id *platforms, cl_uint *num_platforms) {
  return clIcdGetPlatformIDsKHR(num_entries, platforms, num_platforms);
}

cl_int fedcl::api::clGetPlatformInfo(cl_platform_id platform, cl_platform_info param, size_t size, void *value,
                                     size_t *size_ret) {
  if (!is_platform(platform)) return CL_INVALID_PLATFORM;
  switch (param) {
    case CL_PLATFORM_PROFILE: return info_string(size, value, size_ret, "FULL_PROFILE");
    case CL_PLATFORM_VERSION: return info_string(size, value, size_ret, kPlatformVersion);
    case CL_PLATFORM_NAME: return info_string(size, value, size_ret, "fedcl");
    case CL_PLATFORM_VENDOR: return info_string(size, value, size_ret, "fedcl project");
    case CL_PLATFORM_EXTENSIONS: return info_string(size, value, size_ret, "cl_khr_icd cl_khr_command_buffer cl_khr_command_buffer_mutable_dispatch cl_khr_command_buffer_multi_device " CL_FEDCL_TRANSFER_EXTENSION_NAME);
    case CL_PLATFORM_ICD_SUFFIX_KHR: return info_string(size, value, size_ret, "fedcl");
    case CL_PLATFORM_HOST_TIMER_RESOLUTION: return info_value(size, value, size_ret, cl_ulong(0));
    case CL_PLATFORM_NUMERIC_VERSION: return info_value(size, value, size_ret, cl_version(CL_MAKE_VERSION(3, 0, 0)));
    case CL_PLATFORM_EXTENSIONS_WITH_VERSION: {
      struct {
        cl_name_version icd{CL_MAKE_VERSION(1, 0, 0), "cl_khr_icd"};
        cl_name_version command_buffer{CL_FEDCL_COMMAND_BUFFER_VERSION, "cl_khr_command_buffer"};
        cl_name_version mutable_dispatch{CL_FEDCL_MUTABLE_DISPATCH_VERSION, "cl_khr_command_buffer_mutable_dispatch"};
        cl_name_version multi_device{CL_FEDCL_COMMAND_BUFFER_MULTI_DEVICE_VERSION, "cl_khr_command_buffer_multi_device"};
        cl_name_version transfer{CL_MAKE_VERSION(0, 1, 0), CL_FEDCL_TRANSFER_EXTENSION_NAME};
      } extensions;
      static_assert(sizeof extensions == 5 * sizeof(cl_name_version), "an array of cl_name_version");
      return info_value(size, value, size_ret, extensions);
    }
    // A command buffer's commands may be remapped to other queues, by the application or by fedcl;
    // devices sync with each other through the daemons' peer links or the application's host, not
    // on the device (no universal sync).
    case CL_PLATFORM_COMMAND_BUFFER_CAPABILITIES_KHR:
      return info_value(size, value, size_ret,
                        cl_platform_command_buffer_capabilities_khr(CL_COMMAND_BUFFER_PLATFORM_REMAP_QUEUES_KHR |
                                                                    CL_COMMAND_BUFFER_PLATFORM_AUTOMATIC_REMAP_KHR));
    default: return CL_INVALID_VALUE;
  }
}

cl_int fedcl::api::clGetDeviceIDs(cl_platform_id platform, cl_device_type type, cl_uint num_entries,
                                  cl_device_id *devices, cl_uint *num_devices) {
  if (!is_platform(platform)) return CL_INVALID_PLATFORM;
  // No type at all is no valid value either (the Khronos CTS's negative_get_device_ids asks).
  if (type == 0 || (type != CL_DEVICE_TYPE_ALL && (type & ~kKnownTypes))) return CL_INVALID_DEVICE_TYPE;
  if ((num_entries == 0 && devices) || (!devices && !num_devices)) return CL_INVALID_VALUE;
  std::vector<cl_device_id> found;
  for (cl_device_id device : Runtime::get().devices()) {
    bool match = type == CL_DEVICE_TYPE_ALL || (device->type & type) ||
                 (type == CL_DEVICE_TYPE_DEFAULT && found.empty());
    if (match) found.push_back(device);
  }
  if (found.empty()) return CL_DEVICE_NOT_FOUND;
  for (cl_uint i = 0; devices && i < num_entries && i < found.size(); i++) devices[i] = found[i];
  if (num_devices) *num_devices = static_cast<cl_uint>(found.size());
  return CL_SUCCESS;
}

cl_int fedcl::api::clGetDeviceInfo(cl_device_id device, cl_device_info param, size_t size, void *value,
                                   size_t *size_ret) {
  if (!as<_cl_device_id>(device)) return CL_INVALID_DEVICE;
  return device_info(device, param, size, value, size_ret);
}

namespace {

// Copies a partition request without its terminating 0. Its shape is checked here and the scheme
// must be one the device lists; whether the device can split that way is the backend's to say.
cl_int partition_request(cl_device_id device, const cl_device_partition_property *properties,
                         std::vector<cl_device_partition_property> *request) {
  if (!properties || properties[0] == 0) return CL_INVALID_VALUE;
  cl_device_partition_property scheme = properties[0];
  if (scheme != CL_DEVICE_PARTITION_EQUALLY && scheme != CL_DEVICE_PARTITION_BY_COUNTS &&
      scheme != CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN)
    return CL_INVALID_VALUE;
  size_t size = 0;
  device_info(device, CL_DEVICE_PARTITION_PROPERTIES, 0, nullptr, &size);
  std::vector<cl_device_partition_property> supported(size / sizeof(cl_device_partition_property));
  device_info(device, CL_DEVICE_PARTITION_PROPERTIES, size, supported.data(), nullptr);
  if (std::find(supported.begin(), supported.end(), scheme) == supported.end()) return CL_INVALID_VALUE;
  request->push_back(scheme);
  if (scheme == CL_DEVICE_PARTITION_BY_COUNTS) {
    // Counts up to CL_DEVICE_PARTITION_BY_COUNTS_LIST_END, which the request keeps.
    const cl_device_partition_property *count = properties + 1;
    for (; *count != CL_DEVICE_PARTITION_BY_COUNTS_LIST_END; count++) request->push_back(*count);
    request->push_back(CL_DEVICE_PARTITION_BY_COUNTS_LIST_END);
    if (count[1] != 0) return CL_INVALID_VALUE;
  } else {
    // One value: the number of compute units, or the affinity domain.
    if (properties[1] == 0 || properties[2] != 0) return CL_INVALID_VALUE;
    request->push_back(properties[1]);
  }
  return CL_SUCCESS;
}

}  // namespace

cl_int fedcl::api::clCreateSubDevices(cl_device_id device, const cl_device_partition_property *properties,
                                      cl_uint num_devices, cl_device_id *out_devices, cl_uint *num_devices_ret) {
  if (!as<_cl_device_id>(device)) return CL_INVALID_DEVICE;
  std::vector<cl_device_partition_property> request;
  cl_int err = partition_request(device, properties, &request);
  if (err != CL_SUCCESS) return err;
  if (out_devices && num_devices == 0) return CL_INVALID_VALUE;  // a partition makes at least one
  if (!device->connection->alive()) return CL_DEVICE_NOT_AVAILABLE;
  return device_partition(device, request, num_devices, out_devices, num_devices_ret);
}

cl_int fedcl::api::clUnloadPlatformCompiler(cl_platform_id platform) {
  return is_platform(platform) ? CL_SUCCESS : CL_INVALID_PLATFORM;
}

cl_int fedcl::api::clUnloadCompiler() { return CL_SUCCESS; }

// The host and device clocks live on different nodes; fedcl does not pretend to relate them.
cl_int fedcl::api::clGetHostTimer(cl_device_id device, cl_ulong *host_timestamp) {
  return as<_cl_device_id>(device) ? CL_INVALID_OPERATION : CL_INVALID_DEVICE;
}

cl_int fedcl::api::clGetDeviceAndHostTimer(cl_device_id device, cl_ulong *device_timestamp, cl_ulong *host_timestamp) {
  return as<_cl_device_id>(device) ? CL_INVALID_OPERATION : CL_INVALID_DEVICE;
}

namespace {

// The extension functions fedcl itself implements. A backend's function pointer is never handed
// out: it would take fedcl's handles for the backend's own.
struct ExtensionFunction {
  const char *name;
  void *address;
};
const ExtensionFunction kExtensionFunctions[] = {
    {"clIcdGetPlatformIDsKHR", reinterpret_cast<void *>(&::clIcdGetPlatformIDsKHR)},
    {"clGetKernelSubGroupInfoKHR", reinterpret_cast<void *>(&api::clGetKernelSubGroupInfoKHR)},
    {"clEnqueueReadBufferToNodeFile", reinterpret_cast<void *>(&api::clEnqueueReadBufferToNodeFile)},
    {"clEnqueueReadBufferToStdioFile", reinterpret_cast<void *>(&api::clEnqueueReadBufferToStdioFile)},
    {"clEnqueueWriteBufferFromNodeFile", reinterpret_cast<void *>(&api::clEnqueueWriteBufferFromNodeFile)},
    {"clEnqueueWriteBufferFromStdioFile", reinterpret_cast<void *>(&api::clEnqueueWriteBufferFromStdioFile)},
#define FEDCL_ENTRY(name) {#name, reinterpret_cast<void *>(&api::name)},
    FEDCL_COLLECTIVES(FEDCL_ENTRY)
#undef FEDCL_ENTRY
    {"clCreateCommandBufferKHR", reinterpret_cast<void *>(&api::clCreateCommandBufferKHR)},
    {"clFinalizeCommandBufferKHR", reinterpret_cast<void *>(&api::clFinalizeCommandBufferKHR)},
    {"clRetainCommandBufferKHR", reinterpret_cast<void *>(&api::clRetainCommandBufferKHR)},
    {"clReleaseCommandBufferKHR", reinterpret_cast<void *>(&api::clReleaseCommandBufferKHR)},
    {"clEnqueueCommandBufferKHR", reinterpret_cast<void *>(&api::clEnqueueCommandBufferKHR)},
    {"clCommandBarrierWithWaitListKHR", reinterpret_cast<void *>(&api::clCommandBarrierWithWaitListKHR)},
    {"clCommandCopyBufferKHR", reinterpret_cast<void *>(&api::clCommandCopyBufferKHR)},
    {"clCommandCopyBufferRectKHR", reinterpret_cast<void *>(&api::clCommandCopyBufferRectKHR)},
    {"clCommandCopyBufferToImageKHR", reinterpret_cast<void *>(&api::clCommandCopyBufferToImageKHR)},
    {"clCommandCopyImageKHR", reinterpret_cast<void *>(&api::clCommandCopyImageKHR)},
    {"clCommandCopyImageToBufferKHR", reinterpret_cast<void *>(&api::clCommandCopyImageToBufferKHR)},
    {"clCommandFillBufferKHR", reinterpret_cast<void *>(&api::clCommandFillBufferKHR)},
    {"clCommandFillImageKHR", reinterpret_cast<void *>(&api::clCommandFillImageKHR)},
    {"clCommandNDRangeKernelKHR", reinterpret_cast<void *>(&api::clCommandNDRangeKernelKHR)},
    {"clGetCommandBufferInfoKHR", reinterpret_cast<void *>(&api::clGetCommandBufferInfoKHR)},
    {"clRemapCommandBufferKHR", reinterpret_cast<void *>(&api::clRemapCommandBufferKHR)},
    {"clUpdateMutableCommandsKHR", reinterpret_cast<void *>(&api::clUpdateMutableCommandsKHR)},
    {"clGetMutableCommandInfoKHR", reinterpret_cast<void *>(&api::clGetMutableCommandInfoKHR)},
};

const char *const kMpiFunctions[] = {"clEnqueueSendBuffer", "clEnqueueRecvBuffer", "clEnqueueSendrecvBuffer",
                                     "clCreateEventFromMPIRequest", "clFedclIrecvFromDevice"};

// The MPI commands live in libfedcl_mpi.so, loaded the first time a program asks for one: the ICD is
// loaded into every OpenCL program and must not pull in MPI. It is looked for beside libfedcl.so,
// then in the build tree, then where the dynamic linker looks.
void *mpi_function(const char *name) {
  static void *library = [] {
    std::vector<std::string> candidates;
    Dl_info self{};
    if (dladdr(reinterpret_cast<void *>(&mpi_function), &self) && self.dli_fname) {
      std::string path = self.dli_fname;
      candidates.push_back(path.substr(0, path.rfind('/') + 1) + "libfedcl_mpi.so");
    }
#ifdef FEDCL_MPI_BUILD_PATH
    candidates.push_back(FEDCL_MPI_BUILD_PATH);
#endif
    candidates.push_back("libfedcl_mpi.so");
    std::string problems;
    for (const std::string &candidate : candidates) {
      void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        problems += std::string("\n  ") + dlerror();
        continue;
      }
      auto attach = reinterpret_cast<int (*)(TransferPort *)>(dlsym(handle, "fedcl_mpi_attach"));
      if (attach && attach(&transfer_port()) == 0) return handle;
      problems += "\n  " + candidate + ": not built with this libfedcl.so";
      dlclose(handle);
    }
    std::fprintf(stderr, "fedcl: the MPI commands are not available: cannot load libfedcl_mpi.so:%s\n", problems.c_str());
    return static_cast<void *>(nullptr);
  }();
  return library ? dlsym(library, name) : nullptr;
}

}  // namespace

void *fedcl::api::clGetExtensionFunctionAddressForPlatform(cl_platform_id platform, const char *name) {
  if (!as<_cl_platform_id>(platform)) return nullptr;
  return api::clGetExtensionFunctionAddress(name);
}

void *fedcl::api::clGetExtensionFunctionAddress(const char *name) {
  if (!name) return nullptr;
  for (const ExtensionFunction &function : kExtensionFunctions)
    if (std::strcmp(name, function.name) == 0) return function.address;
  for (const char *mpi_name : kMpiFunctions)
    if (std::strcmp(name, mpi_name) == 0) return mpi_function(name);
  return nullptr;
}
