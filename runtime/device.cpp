#include "device.h"

#include <CL/cl_ext.h>
#include <CL/cl_fedcl_command_buffer.h>

#include <cstdio>
#include <cstring>
#include <sstream>

#include "info.h"
#include "runtime.h"

namespace fedcl {

namespace {

// Extensions that only change the kernel language or add device queries work through fedcl as
// they are. Extensions that add host API functions are forwarded only once fedcl implements them.
const char *const kForwardedExtensions[] = {
    "cl_khr_fp64", "cl_khr_fp16", "cl_khr_global_int32_base_atomics", "cl_khr_global_int32_extended_atomics",
    "cl_khr_local_int32_base_atomics", "cl_khr_local_int32_extended_atomics", "cl_khr_int64_base_atomics",
    "cl_khr_int64_extended_atomics", "cl_khr_byte_addressable_store", "cl_khr_3d_image_writes",
    "cl_khr_depth_images", "cl_khr_image2d_from_buffer",
    "cl_khr_srgb_image_writes", "cl_khr_device_uuid", "cl_khr_pci_bus_info", "cl_khr_extended_versioning",
    "cl_khr_integer_dot_product", "cl_khr_spirv_no_integer_wrap_decoration", "cl_khr_subgroup_ballot",
    "cl_khr_subgroup_shuffle", "cl_khr_subgroup_shuffle_relative", "cl_khr_subgroup_extended_types",
    "cl_khr_subgroup_non_uniform_arithmetic", "cl_khr_subgroup_non_uniform_vote", "cl_khr_subgroup_clustered_reduce",
    "cl_khr_subgroup_rotate", "cl_khr_subgroups", "cl_khr_expect_assume", "cl_khr_extended_async_copies", "cl_khr_extended_bit_ops",
    "cl_khr_int64", "cl_khr_kernel_clock", "cl_khr_work_group_uniform_arithmetic", "cl_ext_float_atomics", "cl_ext_atomic_counters_32",
    "cl_ext_cxx_for_opencl", "cl_nv_compiler_options", "cl_nv_device_attribute_query", "cl_nv_pragma_unroll",
    "cl_amd_device_attribute_query", "cl_intel_subgroups", "cl_intel_required_subgroup_size",
    "cl_khr_priority_hints", "cl_khr_throttle_hints",
};

// Extensions fedcl implements itself, whatever the backend offers: the daemon replays command buffers
// on any backend (command_buffer.h).
const cl_name_version kOwnExtensions[] = {
    {CL_FEDCL_COMMAND_BUFFER_VERSION, "cl_khr_command_buffer"},
    {CL_FEDCL_MUTABLE_DISPATCH_VERSION, "cl_khr_command_buffer_mutable_dispatch"},
    {CL_FEDCL_COMMAND_BUFFER_MULTI_DEVICE_VERSION, "cl_khr_command_buffer_multi_device"},
};

std::string filter_extensions(const std::vector<uint8_t> &raw) {
  std::string text(raw.begin(), raw.end());
  text = text.c_str();  // drop the terminator
  std::istringstream words(text);
  std::string word, kept;
  while (words >> word) {
    if (!extension_forwarded(word)) continue;
    if (!kept.empty()) kept += ' ';
    kept += word;
  }
  for (const cl_name_version &own : kOwnExtensions) kept += std::string(kept.empty() ? "" : " ") + own.name;
  return kept;
}

std::vector<cl_name_version> filter_extensions_with_version(const std::vector<uint8_t> &raw) {
  std::vector<cl_name_version> all(raw.size() / sizeof(cl_name_version)), kept;
  std::memcpy(all.data(), raw.data(), all.size() * sizeof(cl_name_version));
  for (const auto &entry : all)
    if (extension_forwarded(entry.name)) kept.push_back(entry);
  kept.insert(kept.end(), std::begin(kOwnExtensions), std::end(kOwnExtensions));
  return kept;
}

// CL_DEVICE_VERSION ("OpenCL 3.0 <vendor text>") as major * 10 + minor; 0 if it does not parse.
unsigned device_version(const std::vector<uint8_t> &raw) {
  std::string text(raw.begin(), raw.end());
  unsigned major = 0, minor = 0;
  if (sscanf(text.c_str(), "OpenCL %u.%u", &major, &minor) != 2) return 0;
  return major * 10 + minor;
}

// A device as its daemon described it; sub-devices have a parent.
cl_device_id device_from_desc(Connection &connection, wire::DeviceDesc::Reader desc, cl_device_id parent) {
  auto *device = new _cl_device_id(&connection, desc.getId());
  for (auto entry : desc.getInfo()) {
    auto bytes = entry.getValue();
    device->info[entry.getParam()] = std::vector<uint8_t>(bytes.begin(), bytes.end());
  }
  auto name = device->info[CL_DEVICE_NAME];
  device->name = std::string(reinterpret_cast<const char *>(name.data()), name.size()).c_str();
  device->name += " @ " + connection.node();
  device->extensions = filter_extensions(device->info[CL_DEVICE_EXTENSIONS]);
  device->type = device_scalar<cl_device_type>(device, CL_DEVICE_TYPE, CL_DEVICE_TYPE_DEFAULT);
  device->address_bits = device_scalar<cl_uint>(device, CL_DEVICE_ADDRESS_BITS, 64);
  device->max_work_group_size = device_scalar<size_t>(device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  device->mem_base_addr_align = device_scalar<cl_uint>(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN);
  device->version = device_version(device->info[CL_DEVICE_VERSION]);
  // Devices before OpenCL 2.0 have no such query and no non-uniform work-groups.
  device->non_uniform_work_groups = device_scalar<cl_bool>(device, CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT);
  auto sizes = device->info.find(CL_DEVICE_MAX_WORK_ITEM_SIZES);
  if (sizes != device->info.end())
    std::memcpy(device->max_work_item_sizes, sizes->second.data(),
                std::min(sizes->second.size(), sizeof device->max_work_item_sizes));
  if (parent) {
    device->parent = parent;
    hold(parent);  // CL_DEVICE_PARENT_DEVICE stays readable while the sub-device lives
  }
  return device;
}

}  // namespace

bool extension_forwarded(const std::string &name) {
  for (const char *known : kForwardedExtensions)
    if (name == known) return true;
  return false;
}

void devices_from_hello(Connection &connection, std::vector<cl_device_id> *devices) {
  for (auto platform : connection.hello().getPlatforms())
    for (auto desc : platform.getDevices()) devices->push_back(device_from_desc(connection, desc, nullptr));
}

cl_int device_partition(cl_device_id device, const std::vector<cl_device_partition_property> &properties,
                        cl_uint num_devices, cl_device_id *out_devices, cl_uint *num_devices_ret) {
  RequestMessage request;
  auto create = request.root.initCreateSubDevices();
  create.setDevice(device->remote_id);
  auto list = create.initProperties(properties.size());
  for (size_t i = 0; i < properties.size(); i++) list.set(i, properties[i]);
  if (out_devices) {
    // The daemon numbers the sub-devices from the first id, so the ids are reserved as one block.
    create.setFirstId(new_object_ids(num_devices));
    create.setMaxDevices(num_devices);
  }
  auto pending = device->connection->call(request);
  if (pending->status != CL_SUCCESS) return pending->status;
  auto reply = pending->reply();
  if (!out_devices) {
    if (reply.which() != wire::Reply::INFO || reply.getInfo().size() != sizeof(cl_uint)) return CL_OUT_OF_RESOURCES;
    if (num_devices_ret) std::memcpy(num_devices_ret, reply.getInfo().begin(), sizeof(cl_uint));
    return CL_SUCCESS;
  }
  if (reply.which() != wire::Reply::SUB_DEVICES || reply.getSubDevices().size() > num_devices) return CL_OUT_OF_RESOURCES;
  auto descs = reply.getSubDevices();
  for (unsigned i = 0; i < descs.size(); i++) out_devices[i] = device_from_desc(*device->connection, descs[i], device);
  if (num_devices_ret) *num_devices_ret = descs.size();
  return CL_SUCCESS;
}

cl_int device_info(cl_device_id device, cl_device_info param, size_t size, void *value, size_t *size_ret) {
  switch (param) {
    // What names a fedcl object rather than a backend one.
    case CL_DEVICE_PLATFORM: return info_value(size, value, size_ret, static_cast<cl_platform_id>(Runtime::get().platform()));
    case CL_DEVICE_PARENT_DEVICE: return info_value(size, value, size_ret, device->parent);
    case CL_DEVICE_REFERENCE_COUNT: return info_value(size, value, size_ret, device->parent ? device->refcount.load() : 1u);
    case CL_DEVICE_NAME: return info_string(size, value, size_ret, device->name);
    case CL_DEVICE_EXTENSIONS: return info_string(size, value, size_ret, device->extensions);
    case CL_DEVICE_EXTENSIONS_WITH_VERSION: {
      auto it = device->info.find(param);
      if (it == device->info.end()) return CL_INVALID_VALUE;
      return info_vector(size, value, size_ret, filter_extensions_with_version(it->second));
    }
    case CL_DEVICE_AVAILABLE: return info_value(size, value, size_ret, cl_bool(device->connection->alive()));
    // The device's memory is on another node: the host does not share it, and SVM cannot be
    // offered honestly.
    case CL_DEVICE_HOST_UNIFIED_MEMORY: return info_value(size, value, size_ret, cl_bool(CL_FALSE));
    case CL_DEVICE_SVM_CAPABILITIES: return info_value(size, value, size_ret, cl_device_svm_capabilities(0));
    case CL_DEVICE_IL_VERSION: return info_string(size, value, size_ret, "");
    case CL_DEVICE_ILS_WITH_VERSION: return info_bytes(size, value, size_ret, nullptr, 0);
    case CL_DEVICE_MAX_ON_DEVICE_QUEUES:
    case CL_DEVICE_MAX_ON_DEVICE_EVENTS: return info_value(size, value, size_ret, cl_uint(0));
    case CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES: return info_value(size, value, size_ret, cl_command_queue_properties(0));
    case CL_DEVICE_QUEUE_ON_DEVICE_PREFERRED_SIZE:
    case CL_DEVICE_QUEUE_ON_DEVICE_MAX_SIZE: return info_value(size, value, size_ret, cl_uint(0));
    case CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES: return info_value(size, value, size_ret, cl_device_device_enqueue_capabilities(0));
    case CL_DEVICE_EXECUTION_CAPABILITIES: return info_value(size, value, size_ret, cl_device_exec_capabilities(CL_EXEC_KERNEL));
    // Command buffers as the daemon replays them: on in-order and out-of-order queues, with or
    // without profiling, several replays of one at once; a kernel's printf output is not captured
    // during a replay; a launch's arguments and sizes can be updated (no SVM exec info); a command
    // buffer may hold several queues of the device (multi-device), which syncs on the device only
    // with itself.
    case CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR:
      return info_value(size, value, size_ret,
                        cl_device_command_buffer_capabilities_khr(CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR |
                                                                  CL_COMMAND_BUFFER_CAPABILITY_MULTIPLE_QUEUE_KHR));
    case CL_DEVICE_COMMAND_BUFFER_NUM_SYNC_DEVICES_KHR: return info_value(size, value, size_ret, cl_uint(1));
    case CL_DEVICE_COMMAND_BUFFER_SYNC_DEVICES_KHR: return info_value(size, value, size_ret, device);
    case CL_DEVICE_MUTABLE_DISPATCH_CAPABILITIES_KHR:
      return info_value(size, value, size_ret,
                        fedcl_mutable_dispatch_fields_khr(CL_MUTABLE_DISPATCH_GLOBAL_OFFSET_KHR | CL_MUTABLE_DISPATCH_GLOBAL_SIZE_KHR |
                                                          CL_MUTABLE_DISPATCH_LOCAL_SIZE_KHR | CL_MUTABLE_DISPATCH_ARGUMENTS_KHR));
    case CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR:
      return info_value(size, value, size_ret, cl_command_queue_properties(0));
    case CL_DEVICE_COMMAND_BUFFER_SUPPORTED_QUEUE_PROPERTIES_KHR:
      return info_value(size, value, size_ret,
                        cl_command_queue_properties(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE));
    default: break;
  }
  auto it = device->info.find(param);
  if (it == device->info.end()) return CL_INVALID_VALUE;
  return info_bytes(size, value, size_ret, it->second.data(), it->second.size());
}

bool device_supports_images(cl_device_id device) { return device_scalar<cl_bool>(device, CL_DEVICE_IMAGE_SUPPORT); }

}  // namespace fedcl
