/* cl_khr_command_buffer as fedcl implements it: version 0.9.8 of the (provisional) extension.
 *
 * Reach the functions with clGetExtensionFunctionAddressForPlatform(platform, "<name>"). Headers
 * older than OpenCL-Headers 2024 (Debian 12's say 0.9.0) declare the same functions without the
 * `properties` parameter that 0.9.5 added, under the same type names; the types below carry fedcl's
 * prefix instead, so that a program can use this version with either header. Check the version a
 * device offers (CL_DEVICE_EXTENSIONS_WITH_VERSION) before calling. docs/command-buffers.md says what
 * fedcl does with a command buffer. */
#ifndef CL_FEDCL_COMMAND_BUFFER_H
#define CL_FEDCL_COMMAND_BUFFER_H

#include <CL/cl.h>
#include <CL/cl_ext.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CL_FEDCL_COMMAND_BUFFER_VERSION CL_MAKE_VERSION(0, 9, 8)

#ifndef cl_khr_command_buffer
/* Headers of 2024 on declare the extension only with CL_ENABLE_BETA_EXTENSIONS. */
#define cl_khr_command_buffer 1
typedef cl_bitfield cl_device_command_buffer_capabilities_khr;
typedef struct _cl_command_buffer_khr *cl_command_buffer_khr;
typedef cl_uint cl_sync_point_khr;
typedef cl_uint cl_command_buffer_info_khr;
typedef cl_uint cl_command_buffer_state_khr;
typedef cl_properties cl_command_buffer_properties_khr;
typedef cl_bitfield cl_command_buffer_flags_khr;
typedef cl_properties cl_command_properties_khr;
typedef struct _cl_mutable_command_khr *cl_mutable_command_khr;
#define CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR 0x12A9
#define CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR 0x12AA
#define CL_COMMAND_BUFFER_CAPABILITY_KERNEL_PRINTF_KHR (1 << 0)
#define CL_COMMAND_BUFFER_CAPABILITY_DEVICE_SIDE_ENQUEUE_KHR (1 << 1)
#define CL_COMMAND_BUFFER_FLAGS_KHR 0x1293
#define CL_INVALID_COMMAND_BUFFER_KHR -1138
#define CL_INVALID_SYNC_POINT_WAIT_LIST_KHR -1139
#define CL_INCOMPATIBLE_COMMAND_QUEUE_KHR -1140
#define CL_COMMAND_BUFFER_QUEUES_KHR 0x1294
#define CL_COMMAND_BUFFER_NUM_QUEUES_KHR 0x1295
#define CL_COMMAND_BUFFER_REFERENCE_COUNT_KHR 0x1296
#define CL_COMMAND_BUFFER_STATE_KHR 0x1297
#define CL_COMMAND_BUFFER_PROPERTIES_ARRAY_KHR 0x1298
#define CL_COMMAND_BUFFER_CONTEXT_KHR 0x1299
#define CL_COMMAND_BUFFER_STATE_RECORDING_KHR 0
#define CL_COMMAND_BUFFER_STATE_EXECUTABLE_KHR 1
#define CL_COMMAND_COMMAND_BUFFER_KHR 0x12A8
#endif
#ifndef CL_COMMAND_BUFFER_CONTEXT_KHR
/* What 0.9.5 and later add to the older headers' definitions. */
typedef cl_properties cl_command_properties_khr;
#define CL_COMMAND_BUFFER_CONTEXT_KHR 0x1299
#endif
#ifndef CL_DEVICE_COMMAND_BUFFER_SUPPORTED_QUEUE_PROPERTIES_KHR
#define CL_DEVICE_COMMAND_BUFFER_SUPPORTED_QUEUE_PROPERTIES_KHR 0x129A
#endif

typedef cl_command_buffer_khr(CL_API_CALL *fedcl_clCreateCommandBufferKHR_fn)(
    cl_uint num_queues, const cl_command_queue *queues, const cl_command_buffer_properties_khr *properties,
    cl_int *errcode_ret);
typedef cl_int(CL_API_CALL *fedcl_clFinalizeCommandBufferKHR_fn)(cl_command_buffer_khr command_buffer);
typedef cl_int(CL_API_CALL *fedcl_clRetainCommandBufferKHR_fn)(cl_command_buffer_khr command_buffer);
typedef cl_int(CL_API_CALL *fedcl_clReleaseCommandBufferKHR_fn)(cl_command_buffer_khr command_buffer);
typedef cl_int(CL_API_CALL *fedcl_clEnqueueCommandBufferKHR_fn)(
    cl_uint num_queues, cl_command_queue *queues, cl_command_buffer_khr command_buffer,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event);
typedef cl_int(CL_API_CALL *fedcl_clCommandBarrierWithWaitListKHR_fn)(
    cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties,
    cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point,
    cl_mutable_command_khr *mutable_handle);
typedef cl_int(CL_API_CALL *fedcl_clCommandCopyBufferKHR_fn)(
    cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties,
    cl_mem src_buffer, cl_mem dst_buffer, size_t src_offset, size_t dst_offset, size_t size,
    cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point,
    cl_mutable_command_khr *mutable_handle);
typedef cl_int(CL_API_CALL *fedcl_clCommandCopyBufferRectKHR_fn)(
    cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties,
    cl_mem src_buffer, cl_mem dst_buffer, const size_t *src_origin, const size_t *dst_origin, const size_t *region,
    size_t src_row_pitch, size_t src_slice_pitch, size_t dst_row_pitch, size_t dst_slice_pitch,
    cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point,
    cl_mutable_command_khr *mutable_handle);
typedef cl_int(CL_API_CALL *fedcl_clCommandCopyBufferToImageKHR_fn)(
    cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties,
    cl_mem src_buffer, cl_mem dst_image, size_t src_offset, const size_t *dst_origin, const size_t *region,
    cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point,
    cl_mutable_command_khr *mutable_handle);
typedef cl_int(CL_API_CALL *fedcl_clCommandCopyImageKHR_fn)(
    cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties,
    cl_mem src_image, cl_mem dst_image, const size_t *src_origin, const size_t *dst_origin, const size_t *region,
    cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point,
    cl_mutable_command_khr *mutable_handle);
typedef cl_int(CL_API_CALL *fedcl_clCommandCopyImageToBufferKHR_fn)(
    cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties,
    cl_mem src_image, cl_mem dst_buffer, const size_t *src_origin, const size_t *region, size_t dst_offset,
    cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point,
    cl_mutable_command_khr *mutable_handle);
typedef cl_int(CL_API_CALL *fedcl_clCommandFillBufferKHR_fn)(
    cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties,
    cl_mem buffer, const void *pattern, size_t pattern_size, size_t offset, size_t size,
    cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point,
    cl_mutable_command_khr *mutable_handle);
typedef cl_int(CL_API_CALL *fedcl_clCommandFillImageKHR_fn)(
    cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties,
    cl_mem image, const void *fill_color, const size_t *origin, const size_t *region,
    cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list, cl_sync_point_khr *sync_point,
    cl_mutable_command_khr *mutable_handle);
typedef cl_int(CL_API_CALL *fedcl_clCommandNDRangeKernelKHR_fn)(
    cl_command_buffer_khr command_buffer, cl_command_queue command_queue, const cl_command_properties_khr *properties,
    cl_kernel kernel, cl_uint work_dim, const size_t *global_work_offset, const size_t *global_work_size,
    const size_t *local_work_size, cl_uint num_sync_points_in_wait_list, const cl_sync_point_khr *sync_point_wait_list,
    cl_sync_point_khr *sync_point, cl_mutable_command_khr *mutable_handle);
typedef cl_int(CL_API_CALL *fedcl_clGetCommandBufferInfoKHR_fn)(
    cl_command_buffer_khr command_buffer, cl_command_buffer_info_khr param_name, size_t param_value_size,
    void *param_value, size_t *param_value_size_ret);

#ifdef __cplusplus
}
#endif

#endif
