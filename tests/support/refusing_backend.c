/* A backend out of contexts, for the daemon's worker processes (LD_PRELOAD): the real backend's
 * clCreateContext for the first FEDCL_TEST_CONTEXTS_BEFORE_REFUSAL calls of a process, then
 * CL_OUT_OF_HOST_MEMORY, as NVIDIA's driver answers once a GPU holds as many contexts as it can.
 * With FEDCL_TEST_RELEASE_LOG, every clReleaseContext also appends "clReleaseContext PID" there. */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

CL_API_ENTRY cl_int CL_API_CALL clReleaseContext(cl_context context) {
  const char *log = getenv("FEDCL_TEST_RELEASE_LOG");
  if (log) {
    FILE *file = fopen(log, "a");
    if (file) {
      fprintf(file, "clReleaseContext %d\n", (int)getpid());
      fclose(file);
    }
  }
  cl_int (*real)(cl_context) = (cl_int(*)(cl_context))dlsym(RTLD_NEXT, "clReleaseContext");
  return real(context);
}

typedef cl_context (*CreateContext)(const cl_context_properties *, cl_uint, const cl_device_id *,
                                    void(CL_CALLBACK *)(const char *, const void *, size_t, void *), void *,
                                    cl_int *);

CL_API_ENTRY cl_context CL_API_CALL clCreateContext(const cl_context_properties *properties, cl_uint num_devices,
                                                    const cl_device_id *devices,
                                                    void(CL_CALLBACK *notify)(const char *, const void *, size_t,
                                                                              void *),
                                                    void *user_data, cl_int *errcode_ret) {
  static int made;
  const char *allowed = getenv("FEDCL_TEST_CONTEXTS_BEFORE_REFUSAL");
  if (allowed && made >= atoi(allowed)) {
    if (errcode_ret) *errcode_ret = CL_OUT_OF_HOST_MEMORY;
    return NULL;
  }
  made++;
  CreateContext real = (CreateContext)dlsym(RTLD_NEXT, "clCreateContext");
  return real(properties, num_devices, devices, notify, user_data, errcode_ret);
}
