/* What every example needs: pick a platform and device, build a program, report OpenCL errors. */
#ifndef FEDCL_EXAMPLE_H
#define FEDCL_EXAMPLE_H

#include <CL/cl.h>

/* Exits with a message naming the failed call when status is not CL_SUCCESS. */
#define EXAMPLE_CHECK(call) example_check((call), #call, __FILE__, __LINE__)
void example_check(cl_int status, const char *what, const char *file, int line);

/* The platform whose name contains $FEDCL_EXAMPLE_PLATFORM, else the first one. Exits when there is
   none; prints nothing. */
cl_platform_id example_pick_platform(void);

/* example_pick_platform, and its first device. Prints what was chosen. Exits when there is none. */
void example_pick_device(cl_platform_id *platform, cl_device_id *device);

/* example_pick_device, then a context on that device and an in-order queue; exits on failure. */
void example_open(cl_device_id *device, cl_context *context, cl_command_queue *queue);

/* Builds source for device; on a build failure prints the build log and exits. */
cl_program example_build(cl_context context, cl_device_id device, const char *source);
/* The same for count devices of context. */
cl_program example_build_for(cl_context context, cl_uint count, const cl_device_id *devices, const char *source);

/* The platform's devices, at most max of them, in its order; returns how many. Exits on an error
   (a platform without devices among them). */
cl_uint example_devices(cl_platform_id platform, cl_device_id *devices, cl_uint max);

/* Monotonic wall-clock time in seconds. */
double example_now(void);

#endif
