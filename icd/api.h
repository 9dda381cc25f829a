// fedcl's implementations of the OpenCL API, one per dispatch-table entry, declared with the
// exact prototypes of the Khronos headers. The loader reaches them through the table in
// dispatch.cpp; none is exported under its own name.
#pragma once

#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <CL/cl_fedcl_command_buffer.h>
#include <CL/cl_fedcl_transfer.h>

#include <cstdio>

#include "runtime.h"
#include "transfer.h"

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
#define FEDCL_COLLECTIVES(X) \
  X(clEnqueueBroadcastBuffer) X(clEnqueueScatterBuffer) X(clEnqueueGatherBuffer) X(clEnqueueAllGatherBuffer) \
  X(clEnqueueReduceBuffer) X(clEnqueueAllReduceBuffer) X(clEnqueueAlltoAllBuffer)
#define FEDCL_DECLARE(name) decltype(::name) name;
FEDCL_COLLECTIVES(FEDCL_DECLARE)
#undef FEDCL_DECLARE
}  // namespace fedcl::api

// cl_khr_command_buffer 0.9.8 (include/CL/cl_fedcl_command_buffer.h), also reached through
// clGetExtensionFunctionAddressForPlatform. Their types are the 0.9.8 ones, which headers older than
// 2024 declare otherwise under the same names.
namespace fedcl::api {
cl_command_buffer_khr CL_API_CALL clCreateCommandBufferKHR(cl_uint num_queues, const cl_command_queue *queues,
                                                           const cl_command_buffer_properties_khr *properties,
                                                           cl_int *errcode_ret);
cl_int CL_API_CALL clFinalizeCommandBufferKHR(cl_command_buffer_khr buffer);
cl_int CL_API_CALL clRetainCommandBufferKHR(cl_command_buffer_khr buffer);
cl_int CL_API_CALL clReleaseCommandBufferKHR(cl_command_buffer_khr buffer);
cl_int CL_API_CALL clEnqueueCommandBufferKHR(cl_uint num_queues, cl_command_queue *queues, cl_command_buffer_khr buffer,
                                             cl_uint num_events, const cl_event *wait_list, cl_event *event);
cl_int CL_API_CALL clCommandBarrierWithWaitListKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                                   const cl_command_properties_khr *properties,
                                                   cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                                   cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle);
cl_int CL_API_CALL clCommandCopyBufferKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                          const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                          size_t src_offset, size_t dst_offset, size_t size, cl_uint num_sync_points,
                                          const cl_sync_point_khr *sync_points, cl_sync_point_khr *sync_point,
                                          cl_mutable_command_khr *handle);
cl_int CL_API_CALL clCommandCopyBufferRectKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                              const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                              const size_t *src_origin, const size_t *dst_origin, const size_t *region,
                                              size_t src_row_pitch, size_t src_slice_pitch, size_t dst_row_pitch,
                                              size_t dst_slice_pitch, cl_uint num_sync_points,
                                              const cl_sync_point_khr *sync_points, cl_sync_point_khr *sync_point,
                                              cl_mutable_command_khr *handle);
cl_int CL_API_CALL clCommandCopyBufferToImageKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                                 const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                                 size_t src_offset, const size_t *dst_origin, const size_t *region,
                                                 cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                                 cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle);
cl_int CL_API_CALL clCommandCopyImageKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                         const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                         const size_t *src_origin, const size_t *dst_origin, const size_t *region,
                                         cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                         cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle);
cl_int CL_API_CALL clCommandCopyImageToBufferKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                                 const cl_command_properties_khr *properties, cl_mem src, cl_mem dst,
                                                 const size_t *src_origin, const size_t *region, size_t dst_offset,
                                                 cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                                 cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle);
cl_int CL_API_CALL clCommandFillBufferKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                          const cl_command_properties_khr *properties, cl_mem mem, const void *pattern,
                                          size_t pattern_size, size_t offset, size_t size, cl_uint num_sync_points,
                                          const cl_sync_point_khr *sync_points, cl_sync_point_khr *sync_point,
                                          cl_mutable_command_khr *handle);
cl_int CL_API_CALL clCommandFillImageKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                         const cl_command_properties_khr *properties, cl_mem image,
                                         const void *fill_color, const size_t *origin, const size_t *region,
                                         cl_uint num_sync_points, const cl_sync_point_khr *sync_points,
                                         cl_sync_point_khr *sync_point, cl_mutable_command_khr *handle);
cl_int CL_API_CALL clCommandNDRangeKernelKHR(cl_command_buffer_khr buffer, cl_command_queue queue,
                                             const cl_command_properties_khr *properties, cl_kernel kernel,
                                             cl_uint work_dim, const size_t *global_offset, const size_t *global_size,
                                             const size_t *local_size, cl_uint num_sync_points,
                                             const cl_sync_point_khr *sync_points, cl_sync_point_khr *sync_point,
                                             cl_mutable_command_khr *handle);
cl_int CL_API_CALL clGetCommandBufferInfoKHR(cl_command_buffer_khr buffer, cl_command_buffer_info_khr param,
                                             size_t size, void *value, size_t *size_ret);
cl_command_buffer_khr CL_API_CALL clRemapCommandBufferKHR(cl_command_buffer_khr buffer, cl_bool automatic,
                                                          cl_uint num_queues, const cl_command_queue *queues,
                                                          cl_uint num_handles, const cl_mutable_command_khr *handles,
                                                          cl_mutable_command_khr *handles_ret, cl_int *errcode_ret);
cl_int CL_API_CALL clUpdateMutableCommandsKHR(cl_command_buffer_khr buffer, cl_uint num_configs,
                                              const fedcl_command_buffer_update_type_khr *config_types,
                                              const void **configs);
cl_int CL_API_CALL clGetMutableCommandInfoKHR(cl_mutable_command_khr command, fedcl_mutable_command_info_khr param,
                                              size_t size, void *value, size_t *size_ret);
}  // namespace fedcl::api

namespace fedcl {
// The checks of the device commands that clEnqueue* runs at once and clCommand*KHR records, against
// queue (a command buffer's own): the error the specification names, or CL_SUCCESS and *op.
cl_int copy_buffer_op(cl_command_queue queue, cl_mem src, cl_mem dst, size_t src_offset, size_t dst_offset,
                      size_t size, DeviceOp *op);
cl_int fill_buffer_op(cl_command_queue queue, cl_mem mem, const void *pattern, size_t pattern_size, size_t offset,
                      size_t size, DeviceOp *op);
cl_int copy_buffer_rect_op(cl_command_queue queue, cl_mem src, cl_mem dst, const size_t *src_origin,
                           const size_t *dst_origin, const size_t *region, size_t src_row_pitch,
                           size_t src_slice_pitch, size_t dst_row_pitch, size_t dst_slice_pitch, DeviceOp *op);
cl_int copy_image_op(cl_command_queue queue, cl_mem src, cl_mem dst, const size_t *src_origin,
                     const size_t *dst_origin, const size_t *region, DeviceOp *op);
cl_int fill_image_op(cl_command_queue queue, cl_mem image, const void *fill_color, const size_t *origin,
                     const size_t *region, DeviceOp *op);
cl_int copy_image_to_buffer_op(cl_command_queue queue, cl_mem src, cl_mem dst, const size_t *src_origin,
                               const size_t *region, size_t dst_offset, DeviceOp *op);
cl_int copy_buffer_to_image_op(cl_command_queue queue, cl_mem src, cl_mem dst, size_t src_offset,
                               const size_t *dst_origin, const size_t *region, DeviceOp *op);
// clSetKernelArg's checks: on success *arg holds the argument (its generation untouched), else it is
// unchanged.
cl_int make_kernel_arg(cl_kernel kernel, cl_uint index, size_t size, const void *value, _cl_kernel::Arg *arg);
// Everything clEnqueueNDRangeKernel refuses about a launch's sizes on device. *empty: nothing to run
// (a zero or NULL global size, allowed from OpenCL 2.1 on).
cl_int check_launch_geometry(cl_kernel kernel, cl_device_id device, cl_uint work_dim, const size_t *offset,
                             const size_t *global, const size_t *local, bool *empty);
// A launch of kernel on queue (valid); *empty: nothing to run. args_may_wait: arguments not set yet
// are no error (a mutable launch's, set by an update before the buffer runs).
cl_int check_launch(cl_command_queue queue, cl_kernel kernel, cl_uint work_dim, const size_t *global_offset,
                    const size_t *global_size, const size_t *local_size, bool *empty, bool args_may_wait = false);

// CL_MEM_PROPERTIES answers the list given to clCreateBufferWithProperties or
// clCreateImageWithProperties, terminator included (an empty list is {0}); none without a list.
void keep_properties(cl_mem mem, const cl_mem_properties *properties);
}  // namespace fedcl

// Sets *errcode_ret when the application passed one.
inline void set_error(cl_int *errcode_ret, cl_int err) {
  if (errcode_ret) *errcode_ret = err;
}

// The end of a clCreate*: the new object, or, when its creation failed, NULL after releasing what was
// made (nothing where the checks failed first). *errcode_ret says which.
template <typename T>
T *finish_create(T *object, cl_int err, cl_int *errcode_ret) {
  if (err != CL_SUCCESS && object) fedcl::release(object);
  set_error(errcode_ret, err);
  return err == CL_SUCCESS ? object : nullptr;
}
