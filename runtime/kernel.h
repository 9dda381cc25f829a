// Kernels on the daemons: created where their program was built, launched with the arguments that
// changed since their last launch there, and asked what only the backend knows.
#pragma once

#include <vector>

#include "command_buffer.h"
#include "handles.h"

namespace fedcl {

// Creates kernel on every daemon where its program was built for a device; marks it present there.
// Call with kernel->program->mutex held.
void kernel_create(cl_kernel kernel);

// Enqueues a launch of kernel on queue, once its geometry and arguments are checked: the buffers it
// uses are made ready on the queue's daemon, and only the arguments that changed since the kernel
// last ran there travel. A launch leaves whole or changes nothing.
cl_int kernel_launch(cl_command_queue queue, cl_kernel kernel, cl_uint work_dim, const size_t *global_offset,
                     const size_t *global_size, const size_t *local_size, cl_uint num_events,
                     const cl_event *wait_list, cl_event *event);

// Records a launch of kernel into buffer (command_buffer.h), on queue (one of the buffer's), with
// every argument as it is now: later clSetKernelArg calls leave the recorded launch alone. handle
// (if not null): the launch's mutable command, for clUpdateMutableCommandsKHR.
cl_int kernel_record(cl_command_buffer_khr buffer, cl_command_queue queue, cl_kernel kernel, cl_uint work_dim,
                     const size_t *global_offset, const size_t *global_size, const size_t *local_size,
                     cl_uint num_sync_points, const cl_sync_point_khr *wait_for, cl_sync_point_khr *sync_point,
                     _cl_mutable_command_khr **handle);

// An argument as a launch or an update sends it.
void kernel_arg_to_wire(wire::KernelArg::Builder out, size_t index, const _cl_kernel::Arg &arg);
// Whether kernel may write buffer, given as its argument index (not const, not read-only).
bool kernel_may_write(cl_kernel kernel, size_t index, cl_mem buffer);

// Queries the daemon answers: a clGetKernelInfo one (of the first daemon that holds the kernel),
// clGetKernelWorkGroupInfo and clGetKernelSubGroupInfo (input: its input value) for device.
cl_int kernel_info(cl_kernel kernel, cl_kernel_info param, std::vector<uint8_t> *bytes);
cl_int kernel_work_group_info(cl_kernel kernel, cl_device_id device, cl_kernel_work_group_info param,
                              std::vector<uint8_t> *bytes);
cl_int kernel_sub_group_info(cl_kernel kernel, cl_device_id device, cl_kernel_sub_group_info param,
                             const void *input, size_t input_size, std::vector<uint8_t> *bytes);

}  // namespace fedcl
