/* cl_khr_command_buffer as fedcl implements it: version 0.9.8 of the (provisional) extension, with
 * cl_khr_command_buffer_mutable_dispatch 0.9.5 and cl_khr_command_buffer_multi_device 0.9.2.
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

/* cl_khr_command_buffer_mutable_dispatch 0.9.5, which fedcl offers too. Its update structures carry
 * fedcl's names: Debian 12's headers declare an earlier layout (with `type` and `next` members, and
 * CL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG_KHR = 1) under the Khronos names. The layouts below are
 * 0.9.5's, which the Khronos names have in headers of 2024 on. */
typedef cl_bitfield fedcl_mutable_dispatch_fields_khr;
typedef cl_uint fedcl_mutable_command_info_khr;
typedef cl_uint fedcl_command_buffer_update_type_khr;
typedef struct fedcl_mutable_dispatch_arg_khr {
  cl_uint arg_index;
  size_t arg_size;
  const void *arg_value;
} fedcl_mutable_dispatch_arg_khr;
typedef struct fedcl_mutable_dispatch_exec_info_khr {
  cl_uint param_name;
  size_t param_value_size;
  const void *param_value;
} fedcl_mutable_dispatch_exec_info_khr;
typedef struct fedcl_mutable_dispatch_config_khr {
  cl_mutable_command_khr command;
  cl_uint num_args;
  cl_uint num_svm_args;
  cl_uint num_exec_infos;
  cl_uint work_dim;
  const fedcl_mutable_dispatch_arg_khr *arg_list;
  const fedcl_mutable_dispatch_arg_khr *arg_svm_list;
  const fedcl_mutable_dispatch_exec_info_khr *exec_info_list;
  const size_t *global_work_offset;
  const size_t *global_work_size;
  const size_t *local_work_size;
} fedcl_mutable_dispatch_config_khr;
#define FEDCL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG 0 /* 0.9.5's CL_STRUCTURE_TYPE_MUTABLE_DISPATCH_CONFIG_KHR */
/* 0.9.8's CL_COMMAND_BUFFER_STATE_FINALIZED_KHR (Debian 12's headers give 2 another name): finalized,
 * but a mutable launch still waits for an argument that an update must set before it can run. */
#define FEDCL_COMMAND_BUFFER_STATE_FINALIZED 2
#ifndef CL_COMMAND_BUFFER_MUTABLE_KHR
#define CL_COMMAND_BUFFER_MUTABLE_KHR (1 << 1)
#define CL_INVALID_MUTABLE_COMMAND_KHR -1141
#define CL_DEVICE_MUTABLE_DISPATCH_CAPABILITIES_KHR 0x12B0
#define CL_MUTABLE_DISPATCH_UPDATABLE_FIELDS_KHR 0x12B1
#define CL_MUTABLE_DISPATCH_GLOBAL_OFFSET_KHR (1 << 0)
#define CL_MUTABLE_DISPATCH_GLOBAL_SIZE_KHR (1 << 1)
#define CL_MUTABLE_DISPATCH_LOCAL_SIZE_KHR (1 << 2)
#define CL_MUTABLE_DISPATCH_ARGUMENTS_KHR (1 << 3)
#define CL_MUTABLE_DISPATCH_EXEC_INFO_KHR (1 << 4)
#define CL_MUTABLE_COMMAND_COMMAND_QUEUE_KHR 0x12A0
#define CL_MUTABLE_COMMAND_COMMAND_BUFFER_KHR 0x12A1
#define CL_MUTABLE_COMMAND_COMMAND_TYPE_KHR 0x12AD
#define CL_MUTABLE_DISPATCH_KERNEL_KHR 0x12A3
#define CL_MUTABLE_DISPATCH_DIMENSIONS_KHR 0x12A4
#define CL_MUTABLE_DISPATCH_GLOBAL_WORK_OFFSET_KHR 0x12A5
#define CL_MUTABLE_DISPATCH_GLOBAL_WORK_SIZE_KHR 0x12A6
#define CL_MUTABLE_DISPATCH_LOCAL_WORK_SIZE_KHR 0x12A7
#endif
#ifndef CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR
#define CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR (1 << 0)
#define CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR (1 << 2)
#endif
#ifndef CL_MUTABLE_COMMAND_PROPERTIES_ARRAY_KHR
#define CL_MUTABLE_COMMAND_PROPERTIES_ARRAY_KHR 0x12A2 /* Debian 12: CL_MUTABLE_DISPATCH_PROPERTIES_ARRAY_KHR */
#endif
#ifndef CL_MUTABLE_DISPATCH_ASSERTS_KHR
#define CL_COMMAND_BUFFER_MUTABLE_DISPATCH_ASSERTS_KHR 0x12B7
#define CL_MUTABLE_DISPATCH_ASSERTS_KHR 0x12B8
#define CL_MUTABLE_DISPATCH_ASSERT_NO_ADDITIONAL_WORK_GROUPS_KHR (1 << 0)
#endif
#define CL_FEDCL_MUTABLE_DISPATCH_VERSION CL_MAKE_VERSION(0, 9, 5)

/* cl_khr_command_buffer_multi_device 0.9.2: a command buffer over several queues, of devices on several
 * daemons (headers of 2024 on declare it only with CL_ENABLE_BETA_EXTENSIONS; Debian 12's not at all). */
#define CL_FEDCL_COMMAND_BUFFER_MULTI_DEVICE_VERSION CL_MAKE_VERSION(0, 9, 2)
#ifndef CL_PLATFORM_COMMAND_BUFFER_CAPABILITIES_KHR
typedef cl_bitfield cl_platform_command_buffer_capabilities_khr;
#define CL_PLATFORM_COMMAND_BUFFER_CAPABILITIES_KHR 0x0908
#define CL_COMMAND_BUFFER_PLATFORM_UNIVERSAL_SYNC_KHR (1 << 0)
#define CL_COMMAND_BUFFER_PLATFORM_REMAP_QUEUES_KHR (1 << 1)
#define CL_COMMAND_BUFFER_PLATFORM_AUTOMATIC_REMAP_KHR (1 << 2)
#define CL_DEVICE_COMMAND_BUFFER_NUM_SYNC_DEVICES_KHR 0x12AB
#define CL_DEVICE_COMMAND_BUFFER_SYNC_DEVICES_KHR 0x12AC
#define CL_COMMAND_BUFFER_CAPABILITY_MULTIPLE_QUEUE_KHR (1 << 4)
#define CL_COMMAND_BUFFER_DEVICE_SIDE_SYNC_KHR (1 << 2)
#endif
typedef cl_command_buffer_khr(CL_API_CALL *fedcl_clRemapCommandBufferKHR_fn)(
    cl_command_buffer_khr command_buffer, cl_bool automatic, cl_uint num_queues, const cl_command_queue *queues,
    cl_uint num_handles, const cl_mutable_command_khr *handles, cl_mutable_command_khr *handles_ret,
    cl_int *errcode_ret);

typedef cl_int(CL_API_CALL *fedcl_clUpdateMutableCommandsKHR_fn)(
    cl_command_buffer_khr command_buffer, cl_uint num_configs, const fedcl_command_buffer_update_type_khr *config_types,
    const void **configs);
typedef cl_int(CL_API_CALL *fedcl_clGetMutableCommandInfoKHR_fn)(
    cl_mutable_command_khr command, fedcl_mutable_command_info_khr param_name, size_t param_value_size,
    void *param_value, size_t *param_value_size_ret);

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
