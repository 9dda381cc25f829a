// Finding a platform by name, shared by every benchmark program (the ICD loader lists the backend
// and fedcl side by side).
#pragma once

#include <CL/cl.h>

#include <string>

namespace bench {

// A platform's string property ("" if it cannot be had).
std::string platform_text(cl_platform_id platform, cl_platform_info param);
// The platform whose CL_PLATFORM_NAME contains name_part and is (is_fedcl) or is not fedcl's. Throws
// std::runtime_error naming the platforms there are, and hint (how to run the program so that it
// finds one).
cl_platform_id find_platform(const std::string &name_part, bool is_fedcl, const std::string &hint);

// In a child process forked here, fresh: the microseconds from its first OpenCL call to the device
// list of the platform find_platform picks (the loader's start; through fedcl, a connection and a
// handshake per daemon), or -1 when it found none. For a process that has not touched OpenCL yet.
double first_device_us(const std::string &name_part, bool is_fedcl);

}  // namespace bench
