// Remote devices: built from what a daemon reported (its HelloReply, or the reply that created
// sub-devices), answered from that.
#pragma once

#include "handles.h"

namespace fedcl {

// Appends the devices that connection's daemon exports.
void devices_from_hello(Connection &connection, std::vector<cl_device_id> *devices);

// clGetDeviceInfo for a remote device; returns CL_SUCCESS or the error code.
cl_int device_info(cl_device_id device, cl_device_info param, size_t size, void *value, size_t *size_ret);

// A fixed-size device property, or fallback when the device does not report it.
template <typename T>
T device_scalar(cl_device_id device, cl_device_info param, T fallback = T{}) {
  T value = fallback;
  if (device_info(device, param, sizeof value, &value, nullptr) != CL_SUCCESS) return fallback;
  return value;
}

bool device_supports_images(cl_device_id device);

// Whether fedcl forwards an extension of the backend (only those that need no host API fedcl lacks).
bool extension_forwarded(const std::string &name);

// clCreateSubDevices once the arguments are checked: properties without the terminating 0. With
// out_devices null, only counts.
cl_int device_partition(cl_device_id device, const std::vector<cl_device_partition_property> &properties,
                        cl_uint num_devices, cl_device_id *out_devices, cl_uint *num_devices_ret);

}  // namespace fedcl
