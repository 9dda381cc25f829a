#include "example.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kMaxPlatforms = 16, kNameBytes = 256 };

void example_check(cl_int status, const char *what, const char *file, int line) {
  if (status == CL_SUCCESS) return;
  fprintf(stderr, "%s:%d: %s failed with OpenCL error %d\n", file, line, what, status);
  exit(1);
}

static void platform_name(cl_platform_id platform, char name[kNameBytes]) {
  name[0] = '\0';
  EXAMPLE_CHECK(clGetPlatformInfo(platform, CL_PLATFORM_NAME, kNameBytes, name, NULL));
}

cl_platform_id example_pick_platform(void) {
  cl_platform_id platforms[kMaxPlatforms];
  cl_uint count = 0;
  EXAMPLE_CHECK(clGetPlatformIDs(kMaxPlatforms, platforms, &count));
  if (count > kMaxPlatforms) count = kMaxPlatforms;
  const char *wanted = getenv("FEDCL_EXAMPLE_PLATFORM");
  char name[kNameBytes];
  for (cl_uint i = 0; i < count; i++) {
    platform_name(platforms[i], name);
    if (!wanted || !*wanted || strstr(name, wanted)) return platforms[i];
  }
  fprintf(stderr, "no OpenCL platform whose name contains '%s'\n", wanted ? wanted : "");
  exit(1);
}

void example_pick_device(cl_platform_id *platform, cl_device_id *device) {
  *platform = example_pick_platform();
  char name[kNameBytes];
  platform_name(*platform, name);
  EXAMPLE_CHECK(clGetDeviceIDs(*platform, CL_DEVICE_TYPE_ALL, 1, device, NULL));
  char device_name[kNameBytes] = "";
  EXAMPLE_CHECK(clGetDeviceInfo(*device, CL_DEVICE_NAME, sizeof device_name, device_name, NULL));
  printf("platform: %s\ndevice:   %s\n", name, device_name);
}

cl_program example_build_for(cl_context context, cl_uint count, const cl_device_id *devices, const char *source) {
  cl_int status;
  cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &status);
  EXAMPLE_CHECK(status);
  status = clBuildProgram(program, count, devices, "", NULL, NULL);
  for (cl_uint d = 0; status == CL_BUILD_PROGRAM_FAILURE && d < count; d++) {
    size_t size = 0;
    clGetProgramBuildInfo(program, devices[d], CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
    char *log = calloc(size + 1, 1);
    if (log) clGetProgramBuildInfo(program, devices[d], CL_PROGRAM_BUILD_LOG, size, log, NULL);
    fprintf(stderr, "build log of device %u:\n%s\n", d, log ? log : "(out of memory)");
    free(log);
  }
  EXAMPLE_CHECK(status);
  return program;
}

cl_program example_build(cl_context context, cl_device_id device, const char *source) {
  return example_build_for(context, 1, &device, source);
}

cl_uint example_devices(cl_platform_id platform, cl_device_id *devices, cl_uint max) {
  cl_uint count = 0;
  EXAMPLE_CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, max, devices, &count));
  return count < max ? count : max;
}

double example_now(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

void example_open(cl_device_id *device, cl_context *context, cl_command_queue *queue) {
  cl_platform_id platform;
  example_pick_device(&platform, device);
  cl_context_properties properties[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
  cl_int status;
  *context = clCreateContext(properties, 1, device, NULL, NULL, &status);
  EXAMPLE_CHECK(status);
  *queue = clCreateCommandQueue(*context, *device, 0, &status);
  EXAMPLE_CHECK(status);
}
