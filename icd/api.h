// fedcl's implementations of the OpenCL API, one per dispatch-table entry, declared with the
// exact prototypes of the Khronos headers. The loader reaches them through the table in
// dispatch.cpp; none is exported under its own name.
#pragma once

#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <cstdio>

#include "runtime.h"

// Every entry point fedcl implements, in the order of the dispatch table.
#define FEDCL_IMPLEMENTED(X)                                                                       \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo)                    \
  X(clCreateContext)                                                                               \
  X(clCreateContextFromType) X(clRetainContext) X(clReleaseContext) X(clGetContextInfo)            \
  X(clCreateCommandQueue) X(clRetainCommandQueue) X(clReleaseCommandQueue)                         \
  X(clGetCommandQueueInfo)                                                                         \
  X(clCreateBuffer) X(clCreateImage2D) X(clCreateImage3D) X(clRetainMemObject)                     \
  X(clReleaseMemObject)                                                                            \
  X(clGetSupportedImageFormats) X(clGetMemObjectInfo) X(clGetImageInfo) X(clCreateSampler)         \
  X(clRetainSampler) X(clReleaseSampler) X(clGetSamplerInfo) X(clCreateProgramWithSource)          \
  X(clCreateProgramWithBinary)                                                                     \
  X(clRetainProgram) X(clReleaseProgram) X(clBuildProgram) X(clGetProgramInfo)                     \
  X(clGetProgramBuildInfo) X(clCreateKernel) X(clCreateKernelsInProgram) X(clRetainKernel)         \
  X(clReleaseKernel) X(clSetKernelArg) X(clGetKernelInfo) X(clGetKernelWorkGroupInfo)              \
  X(clWaitForEvents) X(clGetEventInfo) X(clRetainEvent) X(clReleaseEvent)                          \
  X(clGetEventProfilingInfo) X(clFlush) X(clFinish) X(clEnqueueReadBuffer) X(clEnqueueWriteBuffer) \
  X(clEnqueueCopyBuffer) X(clEnqueueReadImage) X(clEnqueueWriteImage) X(clEnqueueCopyImage)        \
  X(clEnqueueCopyImageToBuffer) X(clEnqueueCopyBufferToImage) X(clEnqueueMapBuffer)                \
  X(clEnqueueMapImage)                                                                             \
  X(clEnqueueUnmapMemObject)                                                                       \
  X(clEnqueueNDRangeKernel) X(clEnqueueTask) X(clEnqueueMarker) X(clEnqueueWaitForEvents)          \
  X(clEnqueueBarrier) X(clGetExtensionFunctionAddress) X(clSetEventCallback) X(clCreateSubBuffer)  \
  X(clSetMemObjectDestructorCallback) X(clCreateUserEvent) X(clSetUserEventStatus)                 \
  X(clEnqueueReadBufferRect) X(clEnqueueWriteBufferRect) X(clEnqueueCopyBufferRect)                \
  X(clCreateSubDevices) X(clRetainDevice) X(clReleaseDevice) X(clCreateImage)                      \
  X(clCreateProgramWithBuiltInKernels)                                                             \
  X(clCompileProgram) X(clLinkProgram) X(clUnloadPlatformCompiler)                                 \
  X(clGetKernelArgInfo) X(clEnqueueFillBuffer) X(clEnqueueFillImage)                               \
  X(clEnqueueMigrateMemObjects)                                                                    \
  X(clEnqueueMarkerWithWaitList) X(clEnqueueBarrierWithWaitList)                                   \
  X(clCreateCommandQueueWithProperties) X(clCreateSamplerWithProperties)                           \
  X(clGetKernelSubGroupInfoKHR) X(clCloneKernel)                                                   \
  X(clCreateProgramWithIL) X(clGetDeviceAndHostTimer) X(clGetHostTimer) X(clGetKernelSubGroupInfo) \
  X(clSetProgramReleaseCallback) X(clSetProgramSpecializationConstant)                             \
  X(clCreateBufferWithProperties) X(clCreateImageWithProperties)                                   \
  X(clSetContextDestructorCallback)                                                                \
  X(clUnloadCompiler) X(clGetExtensionFunctionAddressForPlatform)

namespace fedcl::api {
#define FEDCL_DECLARE(name) decltype(::name) name;
FEDCL_IMPLEMENTED(FEDCL_DECLARE)
#undef FEDCL_DECLARE
}  // namespace fedcl::api

// The transfer engine's extension functions (include/CL/cl_fedcl_transfer.h): reached through
// clGetExtensionFunctionAddressForPlatform, not through the dispatch table.
namespace fedcl::api {
cl_int CL_API_CALL clEnqueueReadBufferToStdioFile(cl_command_queue queue, cl_mem buffer, cl_bool blocking_read,
                                                  size_t offset, size_t size, FILE *file, cl_uint num_events,
                                                  const cl_event *wait_list, cl_event *event);
cl_int CL_API_CALL clEnqueueWriteBufferFromNodeFile(cl_command_queue queue, cl_mem buffer, cl_bool blocking_write,
                                                    size_t offset, size_t size, const char *path, size_t file_offset,
                                                    cl_uint num_events, const cl_event *wait_list, cl_event *event);
cl_int CL_API_CALL clEnqueueReadBufferToNodeFile(cl_command_queue queue, cl_mem buffer, cl_bool blocking_read,
                                                 size_t offset, size_t size, const char *path, size_t file_offset,
                                                 cl_uint num_events, const cl_event *wait_list, cl_event *event);
cl_int CL_API_CALL clEnqueueWriteBufferFromStdioFile(cl_command_queue queue, cl_mem buffer, cl_bool blocking_write,
                                                     size_t offset, size_t size, FILE *file, cl_uint num_events,
                                                     const cl_event *wait_list, cl_event *event);
}  // namespace fedcl::api

namespace fedcl {
// CL_MEM_PROPERTIES answers the list given to clCreateBufferWithProperties or
// clCreateImageWithProperties, terminator included (an empty list is {0}); none without a list.
void keep_properties(cl_mem mem, const cl_mem_properties *properties);
}  // namespace fedcl

// Sets *errcode_ret when the application passed one.
inline void set_error(cl_int *errcode_ret, cl_int err) {
  if (errcode_ret) *errcode_ret = err;
}
