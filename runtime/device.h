// Remote devices: built from a daemon's HelloReply, answered from what it reported.
#pragma once

#include "handles.h"

namespace fedcl {

// Appends the devices that connection's daemon exports.
void devices_from_hello(Connection &connection, std::vector<cl_device_id> *devices);

// clGetDeviceInfo for a remote device; returns CL_SUCCESS or the error code.
cl_int device_info(cl_device_id device, cl_device_info param, size_t size, void *value, size_t *size_ret);

// Whether fedcl forwards an extension of the backend (only those that need no host API fedcl lacks).
bool extension_forwarded(const std::string &name);

}  // namespace fedcl
