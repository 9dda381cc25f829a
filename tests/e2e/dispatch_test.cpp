// Entries of the ICD dispatch table that no other test reaches, called through the system loader:
// the implemented ones give real results, the unsupported ones the error icd/dispatch.cpp documents.
#include <CL/cl_egl.h>
#include <CL/cl_ext.h>
#include <CL/cl_gl.h>

#include <algorithm>
#include <functional>

#include "cl_harness.h"

// cl.h declares this OpenCL 1.0 entry only under CL_USE_DEPRECATED_OPENCL_1_0_APIS; the loader exports it.
extern "C" CL_API_ENTRY cl_int CL_API_CALL clSetCommandQueueProperty(cl_command_queue, cl_command_queue_properties,
                                                                    cl_bool, cl_command_queue_properties *);

using namespace fedcl_test;

namespace {

struct Dispatch : OneDeviceFixture {
  // Reads the single int at offset 0 of mem (blocking).
  int read_int(cl_mem mem) {
    int value = 0;
    EXPECT_CL(CL_SUCCESS, clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, sizeof value, &value, 0, nullptr, nullptr));
    return value;
  }
};

const char kStoreSource[] = R"(
__kernel void store(__global int *out, int v) { out[0] = v; }
__kernel void twice(__global int *x) { x[get_global_id(0)] *= 2; }
)";

cl_int event_status(cl_event event) {
  cl_int status = -1;
  EXPECT_CL(CL_SUCCESS, clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  return status;
}

cl_command_type event_command(cl_event event) {
  cl_command_type type = 0;
  EXPECT_CL(CL_SUCCESS, clGetEventInfo(event, CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr));
  return type;
}

std::string kernel_name(cl_kernel kernel) {
  char name[64] = {};
  EXPECT_CL(CL_SUCCESS, clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, sizeof name, name, nullptr));
  return name;
}

std::string arg_string(cl_kernel kernel, cl_uint index, cl_kernel_arg_info param) {
  char text[64] = {};
  EXPECT_CL(CL_SUCCESS, clGetKernelArgInfo(kernel, index, param, sizeof text, text, nullptr));
  return text;
}

cl_kernel_arg_address_qualifier arg_address(cl_kernel kernel, cl_uint index) {
  cl_kernel_arg_address_qualifier address = 0;
  EXPECT_CL(CL_SUCCESS,
            clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof address, &address, nullptr));
  return address;
}

// The status a create-style entry reports through errcode_ret; the object it returns must be NULL.
template <typename Create>
cl_int create_error(Create create) {
  cl_int err = CL_SUCCESS;
  EXPECT_EQ(nullptr, create(&err));
  return err;
}

}  // namespace

TEST_F(Dispatch, UnloadCompilers) {
  // ocl-icd answers clUnloadCompiler itself (it takes no handle to dispatch on) unless a layer is
  // installed; clUnloadPlatformCompiler reaches fedcl through the platform.
  EXPECT_CL(CL_SUCCESS, clUnloadCompiler());
  EXPECT_CL(CL_SUCCESS, clUnloadPlatformCompiler(cluster.platform));
  // Unloading is only a hint: building afterwards still works.
  cl_program program = build_program(context, kStoreSource);
  EXPECT_CL(CL_SUCCESS, clReleaseProgram(program));
}

TEST_F(Dispatch, CreateKernelsInProgram) {
  cl_program program = build_program(context, kStoreSource);
  cl_uint count = 0;
  ASSERT_CL_OK(clCreateKernelsInProgram(program, 0, nullptr, &count));
  ASSERT_EQ(2u, count);
  cl_kernel kernels[2] = {};
  ASSERT_CL_OK(clCreateKernelsInProgram(program, 2, kernels, nullptr));
  std::vector<std::string> names = {kernel_name(kernels[0]), kernel_name(kernels[1])};
  std::sort(names.begin(), names.end());
  EXPECT_EQ((std::vector<std::string>{"store", "twice"}), names);
  EXPECT_CL(CL_INVALID_VALUE, clCreateKernelsInProgram(program, 1, kernels, nullptr));  // too few slots
  for (cl_kernel kernel : kernels) clReleaseKernel(kernel);
  clReleaseProgram(program);
}

TEST_F(Dispatch, EnqueueTaskRunsOneWorkItem) {
  cl_mem out = create_buffer(context, CL_MEM_READ_WRITE, sizeof(int));
  cl_kernel kernel = create_kernel(build_program(context, kStoreSource), "store");
  set_arg(kernel, 0, out);
  set_arg(kernel, 1, 1234);
  ASSERT_CL_OK(clEnqueueTask(queue, kernel, 0, nullptr, nullptr));
  EXPECT_EQ(1234, read_int(out));
}

TEST_F(Dispatch, BarrierOrdersKernelBeforeRead) {
  cl_mem out = create_buffer(context, CL_MEM_READ_WRITE, sizeof(int));
  cl_kernel kernel = create_kernel(build_program(context, kStoreSource), "store");
  set_arg(kernel, 0, out);
  set_arg(kernel, 1, -77);
  ASSERT_CL_OK(clEnqueueTask(queue, kernel, 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueBarrier(queue));
  EXPECT_EQ(-77, read_int(out));
}

TEST_F(Dispatch, WaitForEventsAndMarkerAreGatedByUserEvent) {
  const int before = 1, after = 2;
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(int), (void *)&before);
  cl_int err;
  cl_event gate = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  ASSERT_CL_OK(clEnqueueWaitForEvents(queue, 1, &gate));
  cl_event write = nullptr, marker = nullptr;
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, mem, CL_FALSE, 0, sizeof after, &after, 0, nullptr, &write));
  ASSERT_CL_OK(clEnqueueMarker(queue, &marker));
  ASSERT_CL_OK(clFlush(queue));
  // Nothing behind the gate may run before the user event completes.
  EXPECT_GT(event_status(write), CL_COMPLETE);
  EXPECT_GT(event_status(marker), CL_COMPLETE);
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  ASSERT_CL_OK(clWaitForEvents(1, &marker));
  EXPECT_EQ(CL_COMPLETE, event_status(write));  // the marker completes only after what precedes it
  EXPECT_EQ(cl_command_type(CL_COMMAND_MARKER), event_command(marker));
  EXPECT_EQ(after, read_int(mem));
  for (cl_event event : {gate, write, marker}) clReleaseEvent(event);
}

TEST_F(Dispatch, BarrierWithWaitListIsGatedByUserEvent) {
  const int before = 5, after = 6;
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(int), (void *)&before);
  cl_int err;
  cl_event gate = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  cl_event barrier = nullptr, write = nullptr;
  ASSERT_CL_OK(clEnqueueBarrierWithWaitList(queue, 1, &gate, &barrier));
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, mem, CL_FALSE, 0, sizeof after, &after, 0, nullptr, &write));
  ASSERT_CL_OK(clFlush(queue));
  EXPECT_GT(event_status(barrier), CL_COMPLETE);
  EXPECT_GT(event_status(write), CL_COMPLETE);
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  ASSERT_CL_OK(clWaitForEvents(1, &write));
  EXPECT_EQ(CL_COMPLETE, event_status(barrier));
  EXPECT_EQ(cl_command_type(CL_COMMAND_BARRIER), event_command(barrier));
  EXPECT_EQ(after, read_int(mem));
  for (cl_event event : {gate, barrier, write}) clReleaseEvent(event);
}

TEST_F(Dispatch, SubBufferWritesLandInParent) {
  cl_uint align_bits = 0;
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, nullptr));
  const size_t align = align_bits / 8, count = 16, parent_size = 4 * align;
  std::vector<int> zeros(parent_size / sizeof(int), 0);
  cl_mem parent = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, parent_size, zeros.data());
  cl_buffer_region region = {align, count * sizeof(int)};
  cl_int err;
  cl_mem sub = clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  ASSERT_CL_OK(err);
  size_t offset = 0;
  cl_mem associated = nullptr;
  ASSERT_CL_OK(clGetMemObjectInfo(sub, CL_MEM_OFFSET, sizeof offset, &offset, nullptr));
  ASSERT_CL_OK(clGetMemObjectInfo(sub, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof associated, &associated, nullptr));
  EXPECT_EQ(align, offset);
  EXPECT_EQ(parent, associated);

  std::vector<int> values(count);
  for (size_t i = 0; i < count; i++) values[i] = int(i * 3 + 1);
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, sub, CL_TRUE, 0, count * sizeof(int), values.data(), 0, nullptr, nullptr));
  std::vector<int> whole(zeros.size(), -1);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, parent, CL_TRUE, 0, parent_size, whole.data(), 0, nullptr, nullptr));
  const size_t first = align / sizeof(int);
  for (size_t i = 0; i < whole.size(); i++) {
    bool inside = i >= first && i < first + count;
    ASSERT_EQ(inside ? values[i - first] : 0, whole[i]) << "at " << i;
  }

  if (align > sizeof(int)) {
    cl_buffer_region misaligned = {sizeof(int), sizeof(int)};
    EXPECT_CL(CL_MISALIGNED_SUB_BUFFER_OFFSET, create_error([&](cl_int *e) {
                return clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &misaligned, e);
              }));
  }
  cl_buffer_region beyond = {align, parent_size};  // ends past the parent
  EXPECT_CL(CL_INVALID_VALUE, create_error([&](cl_int *e) {
              return clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &beyond, e);
            }));
  clReleaseMemObject(sub);
  clReleaseMemObject(parent);
}

TEST_F(Dispatch, KernelArgInfo) {
  cl_kernel kernel = create_kernel(build_program(context, kStoreSource, "-cl-kernel-arg-info"), "store");
  EXPECT_EQ("out", arg_string(kernel, 0, CL_KERNEL_ARG_NAME));
  EXPECT_EQ("int*", arg_string(kernel, 0, CL_KERNEL_ARG_TYPE_NAME));
  EXPECT_EQ(cl_kernel_arg_address_qualifier(CL_KERNEL_ARG_ADDRESS_GLOBAL), arg_address(kernel, 0));
  EXPECT_EQ("v", arg_string(kernel, 1, CL_KERNEL_ARG_NAME));
  EXPECT_EQ("int", arg_string(kernel, 1, CL_KERNEL_ARG_TYPE_NAME));
  EXPECT_EQ(cl_kernel_arg_address_qualifier(CL_KERNEL_ARG_ADDRESS_PRIVATE), arg_address(kernel, 1));
  EXPECT_CL(CL_INVALID_ARG_INDEX, clGetKernelArgInfo(kernel, 2, CL_KERNEL_ARG_NAME, 0, nullptr, nullptr));
}

TEST_F(Dispatch, MigrateMemObjectsKeepsData) {
  std::vector<int> data(1000);
  for (size_t i = 0; i < data.size(); i++) data[i] = int(i * i);
  const size_t bytes = data.size() * sizeof(int);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, data.data());
  cl_event migrated = nullptr;
  ASSERT_CL_OK(clEnqueueMigrateMemObjects(queue, 1, &mem, CL_MIGRATE_MEM_OBJECT_HOST, 0, nullptr, &migrated));
  ASSERT_CL_OK(clWaitForEvents(1, &migrated));
  EXPECT_EQ(CL_COMPLETE, event_status(migrated));
  EXPECT_EQ(cl_command_type(CL_COMMAND_MIGRATE_MEM_OBJECTS), event_command(migrated));
  ASSERT_CL_OK(clEnqueueMigrateMemObjects(queue, 1, &mem, 0, 0, nullptr, nullptr));  // back to the device
  std::vector<int> back(data.size(), 0);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, bytes, back.data(), 0, nullptr, nullptr));
  EXPECT_EQ(data, back);
  clReleaseEvent(migrated);
}

TEST_F(Dispatch, CommandQueueWithProperties) {
  const cl_queue_properties properties[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  cl_int err;
  cl_command_queue profiled = clCreateCommandQueueWithProperties(context, device, properties, &err);
  ASSERT_CL_OK(err);
  cl_command_queue_properties bits = 0;
  ASSERT_CL_OK(clGetCommandQueueInfo(profiled, CL_QUEUE_PROPERTIES, sizeof bits, &bits, nullptr));
  EXPECT_EQ(cl_command_queue_properties(CL_QUEUE_PROFILING_ENABLE), bits);
  cl_queue_properties array[8] = {};
  size_t array_size = 0;
  ASSERT_CL_OK(clGetCommandQueueInfo(profiled, CL_QUEUE_PROPERTIES_ARRAY, sizeof array, array, &array_size));
  ASSERT_EQ(sizeof properties, array_size);
  EXPECT_TRUE(std::equal(properties, properties + 3, array));
  clReleaseCommandQueue(profiled);
}

TEST_F(Dispatch, CloneKernelKeepsArguments) {
  cl_mem first = create_buffer(context, CL_MEM_READ_WRITE, sizeof(int));
  cl_mem second = create_buffer(context, CL_MEM_READ_WRITE, sizeof(int));
  cl_kernel kernel = create_kernel(build_program(context, kStoreSource), "store");
  set_arg(kernel, 0, first);
  set_arg(kernel, 1, 42);
  cl_int err;
  cl_kernel clone = clCloneKernel(kernel, &err);
  ASSERT_CL_OK(err);
  // Changing the original afterwards must not reach the clone.
  set_arg(kernel, 0, second);
  set_arg(kernel, 1, 7);
  ASSERT_CL_OK(clEnqueueTask(queue, clone, 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueTask(queue, kernel, 0, nullptr, nullptr));
  EXPECT_EQ(42, read_int(first));
  EXPECT_EQ(7, read_int(second));
  EXPECT_EQ("store", kernel_name(clone));
  clReleaseKernel(clone);
}

TEST_F(Dispatch, BufferWithProperties) {
  const cl_mem_properties empty[] = {0};
  for (const cl_mem_properties *properties : {static_cast<const cl_mem_properties *>(nullptr), empty}) {
    const int value = 99;
    cl_int err;
    cl_mem mem = clCreateBufferWithProperties(context, properties, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                              sizeof value, (void *)&value, &err);
    ASSERT_CL_OK(err);
    EXPECT_EQ(value, read_int(mem));
    clReleaseMemObject(mem);
  }
  const cl_mem_properties unknown[] = {0x7fff, 1, 0};  // fedcl knows no buffer property
  EXPECT_CL(CL_INVALID_PROPERTY, create_error([&](cl_int *e) {
              return clCreateBufferWithProperties(context, unknown, CL_MEM_READ_WRITE, 64, nullptr, e);
            }));
}

TEST_F(Dispatch, HostTimersAreNotOffered) {
  // The device is on another node: fedcl does not relate its clock to this host's.
  cl_ulong host = 0, device_time = 0, resolution = 1;
  EXPECT_CL(CL_INVALID_OPERATION, clGetHostTimer(device, &host));
  EXPECT_CL(CL_INVALID_OPERATION, clGetDeviceAndHostTimer(device, &device_time, &host));
  ASSERT_CL_OK(clGetPlatformInfo(cluster.platform, CL_PLATFORM_HOST_TIMER_RESOLUTION, sizeof resolution, &resolution,
                                 nullptr));
  EXPECT_EQ(0u, resolution);
}

// Every unsupported entry the loader exports, called with real fedcl handles so that the loader
// dispatches it to fedcl. The D3D10/D3D11/DX9 entries are left out: their table slots are
// Windows-only and ocl-icd does not export them on Linux.
TEST_F(Dispatch, UnsupportedEntriesReturnDocumentedErrors) {
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, 64);
  cl_kernel kernel = create_kernel(build_program(context, kStoreSource), "store");
  cl_event event = nullptr;
  int host[4] = {};
  void *svm = host;
  const size_t svm_size = sizeof host;
  const cl_context_properties gl_properties[] = {CL_CONTEXT_PLATFORM, cl_context_properties(cluster.platform), 0};
  const cl_device_partition_property_ext partition[] = {CL_DEVICE_PARTITION_EQUALLY_EXT, 1,
                                                        CL_PROPERTIES_LIST_END_EXT};
  const cl_uint pattern = 0;
  const cl_command_queue_properties no_properties = 0;
  auto native = [](void *) {};

  struct Case {
    const char *name;
    cl_int expected;
    std::function<cl_int()> call;
  };
  const Case cases[] = {
      {"clCreateFromGLBuffer", CL_INVALID_CONTEXT,
       [&] { return create_error([&](cl_int *e) { return clCreateFromGLBuffer(context, CL_MEM_READ_WRITE, 1, e); }); }},
      {"clCreateFromGLTexture2D", CL_INVALID_CONTEXT,
       [&] {
         return create_error([&](cl_int *e) { return clCreateFromGLTexture2D(context, CL_MEM_READ_WRITE, 0, 0, 1, e); });
       }},
      {"clCreateFromGLTexture3D", CL_INVALID_CONTEXT,
       [&] {
         return create_error([&](cl_int *e) { return clCreateFromGLTexture3D(context, CL_MEM_READ_WRITE, 0, 0, 1, e); });
       }},
      {"clCreateFromGLRenderbuffer", CL_INVALID_CONTEXT,
       [&] {
         return create_error([&](cl_int *e) { return clCreateFromGLRenderbuffer(context, CL_MEM_READ_WRITE, 1, e); });
       }},
      {"clGetGLObjectInfo", CL_INVALID_MEM_OBJECT,
       [&] {
         cl_gl_object_type type;
         cl_GLuint name;
         return clGetGLObjectInfo(mem, &type, &name);
       }},
      {"clGetGLTextureInfo", CL_INVALID_MEM_OBJECT,
       [&] {
         cl_GLenum target;
         return clGetGLTextureInfo(mem, CL_GL_TEXTURE_TARGET, sizeof target, &target, nullptr);
       }},
      {"clEnqueueAcquireGLObjects", CL_INVALID_CONTEXT,
       [&] { return clEnqueueAcquireGLObjects(queue, 1, &mem, 0, nullptr, &event); }},
      {"clEnqueueReleaseGLObjects", CL_INVALID_CONTEXT,
       [&] { return clEnqueueReleaseGLObjects(queue, 1, &mem, 0, nullptr, &event); }},
      {"clGetGLContextInfoKHR", CL_INVALID_OPERATION,
       [&] {
         cl_device_id found;
         return clGetGLContextInfoKHR(gl_properties, CL_CURRENT_DEVICE_FOR_GL_CONTEXT_KHR, sizeof found, &found, nullptr);
       }},
      {"clCreateEventFromGLsyncKHR", CL_INVALID_CONTEXT,
       [&] { return create_error([&](cl_int *e) { return clCreateEventFromGLsyncKHR(context, nullptr, e); }); }},
      {"clCreateFromGLTexture", CL_INVALID_CONTEXT,
       [&] {
         return create_error([&](cl_int *e) { return clCreateFromGLTexture(context, CL_MEM_READ_WRITE, 0, 0, 1, e); });
       }},
      {"clCreateSubDevicesEXT", CL_INVALID_OPERATION,
       [&] {
         cl_device_id sub;
         cl_uint count;
         return clCreateSubDevicesEXT(device, partition, 1, &sub, &count);
       }},
      {"clRetainDeviceEXT", CL_INVALID_OPERATION, [&] { return clRetainDeviceEXT(device); }},
      {"clReleaseDeviceEXT", CL_INVALID_OPERATION, [&] { return clReleaseDeviceEXT(device); }},
      {"clCreateFromEGLImageKHR", CL_INVALID_OPERATION,
       [&] {
         return create_error([&](cl_int *e) {
           return clCreateFromEGLImageKHR(context, nullptr, nullptr, CL_MEM_READ_WRITE, nullptr, e);
         });
       }},
      {"clEnqueueAcquireEGLObjectsKHR", CL_INVALID_OPERATION,
       [&] { return clEnqueueAcquireEGLObjectsKHR(queue, 1, &mem, 0, nullptr, &event); }},
      {"clEnqueueReleaseEGLObjectsKHR", CL_INVALID_OPERATION,
       [&] { return clEnqueueReleaseEGLObjectsKHR(queue, 1, &mem, 0, nullptr, &event); }},
      {"clCreateEventFromEGLSyncKHR", CL_INVALID_OPERATION,
       [&] { return create_error([&](cl_int *e) { return clCreateEventFromEGLSyncKHR(context, nullptr, nullptr, e); }); }},
      {"clCreatePipe", CL_INVALID_OPERATION,
       [&] { return create_error([&](cl_int *e) { return clCreatePipe(context, CL_MEM_READ_WRITE, 4, 16, nullptr, e); }); }},
      {"clGetPipeInfo", CL_INVALID_MEM_OBJECT,
       [&] {
         cl_uint packet;
         return clGetPipeInfo(mem, CL_PIPE_PACKET_SIZE, sizeof packet, &packet, nullptr);
       }},
      {"clSVMAlloc", CL_SUCCESS,
       [&] {
         EXPECT_EQ(nullptr, clSVMAlloc(context, CL_MEM_READ_WRITE, 64, 0));
         return CL_SUCCESS;
       }},
      {"clSVMFree", CL_SUCCESS,
       [&] {
         clSVMFree(context, nullptr);  // reaching fedcl and returning is the whole check
         return CL_SUCCESS;
       }},
      {"clEnqueueSVMFree", CL_INVALID_OPERATION,
       [&] { return clEnqueueSVMFree(queue, 1, &svm, nullptr, nullptr, 0, nullptr, &event); }},
      {"clEnqueueSVMMemcpy", CL_INVALID_OPERATION,
       [&] { return clEnqueueSVMMemcpy(queue, CL_TRUE, host, host + 2, 2 * sizeof(int), 0, nullptr, &event); }},
      {"clEnqueueSVMMemFill", CL_INVALID_OPERATION,
       [&] { return clEnqueueSVMMemFill(queue, svm, &pattern, sizeof pattern, svm_size, 0, nullptr, &event); }},
      {"clEnqueueSVMMap", CL_INVALID_OPERATION,
       [&] { return clEnqueueSVMMap(queue, CL_TRUE, CL_MAP_READ, svm, svm_size, 0, nullptr, &event); }},
      {"clEnqueueSVMUnmap", CL_INVALID_OPERATION, [&] { return clEnqueueSVMUnmap(queue, svm, 0, nullptr, &event); }},
      {"clSetKernelArgSVMPointer", CL_INVALID_OPERATION, [&] { return clSetKernelArgSVMPointer(kernel, 0, svm); }},
      {"clEnqueueSVMMigrateMem", CL_INVALID_OPERATION,
       [&] {
         const void *pointers[] = {svm};
         return clEnqueueSVMMigrateMem(queue, 1, pointers, &svm_size, 0, 0, nullptr, &event);
       }},
      {"clSetKernelExecInfo", CL_INVALID_OPERATION,
       [&] { return clSetKernelExecInfo(kernel, CL_KERNEL_EXEC_INFO_SVM_PTRS, sizeof svm, &svm); }},
      {"clSetDefaultDeviceCommandQueue", CL_INVALID_OPERATION,
       [&] { return clSetDefaultDeviceCommandQueue(context, device, queue); }},
      {"clSetCommandQueueProperty", CL_INVALID_OPERATION,
       [&] { return clSetCommandQueueProperty(queue, no_properties, CL_FALSE, nullptr); }},
      {"clEnqueueNativeKernel", CL_INVALID_OPERATION,
       [&] { return clEnqueueNativeKernel(queue, native, host, sizeof host, 0, nullptr, nullptr, 0, nullptr, &event); }},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_CL(c.expected, c.call());
    EXPECT_EQ(nullptr, event) << "a failed enqueue must not return an event";
  }
  // The queue and objects are still usable after all of that.
  const int value = 31;
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, mem, CL_TRUE, 0, sizeof value, &value, 0, nullptr, nullptr));
  EXPECT_EQ(value, read_int(mem));
}

namespace {

template <typename Handle, typename Info>
cl_uint refcount(Handle handle, Info info, cl_uint param) {
  cl_uint count = 0;
  EXPECT_CL(CL_SUCCESS, info(handle, param, sizeof count, &count, nullptr));
  return count;
}

}  // namespace

TEST_F(Dispatch, RetainsCountExactly) {
  cl_program program = build_program(context, kStoreSource);
  cl_kernel kernel = create_kernel(program, "store");
  cl_event marker = nullptr;
  ASSERT_CL_OK(clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker));
  ASSERT_CL_OK(clRetainCommandQueue(queue));
  ASSERT_CL_OK(clRetainProgram(program));
  ASSERT_CL_OK(clRetainKernel(kernel));
  ASSERT_CL_OK(clRetainEvent(marker));
  EXPECT_EQ(2u, refcount(queue, clGetCommandQueueInfo, CL_QUEUE_REFERENCE_COUNT));
  EXPECT_EQ(2u, refcount(program, clGetProgramInfo, CL_PROGRAM_REFERENCE_COUNT));
  EXPECT_EQ(2u, refcount(kernel, clGetKernelInfo, CL_KERNEL_REFERENCE_COUNT));
  EXPECT_EQ(2u, refcount(marker, clGetEventInfo, CL_EVENT_REFERENCE_COUNT));
  for (int i = 0; i < 2; i++) {
    ASSERT_CL_OK(clReleaseEvent(marker));
    ASSERT_CL_OK(clReleaseKernel(kernel));
  }
  ASSERT_CL_OK(clReleaseProgram(program));
  ASSERT_CL_OK(clReleaseCommandQueue(queue));
  EXPECT_EQ(1u, refcount(program, clGetProgramInfo, CL_PROGRAM_REFERENCE_COUNT));
  EXPECT_EQ(1u, refcount(queue, clGetCommandQueueInfo, CL_QUEUE_REFERENCE_COUNT));
  ASSERT_CL_OK(clReleaseProgram(program));
}

TEST_F(Dispatch, ContextFromTypeHoldsTheMatchingDevices) {
  cl_platform_id platform = nullptr;
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr));
  cl_device_type type = 0;
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, nullptr));
  cl_context_properties properties[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform), 0};
  cl_int err = CL_SUCCESS;
  cl_context typed = clCreateContextFromType(properties, type, nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_device_id got = nullptr;
  ASSERT_CL_OK(clGetContextInfo(typed, CL_CONTEXT_DEVICES, sizeof got, &got, nullptr));
  EXPECT_EQ(device, got);
  ASSERT_CL_OK(clReleaseContext(typed));
  cl_device_type other = (type & CL_DEVICE_TYPE_GPU) ? CL_DEVICE_TYPE_ACCELERATOR : CL_DEVICE_TYPE_GPU;
  EXPECT_EQ(nullptr, clCreateContextFromType(properties, other, nullptr, nullptr, &err));
  EXPECT_CL(CL_DEVICE_NOT_FOUND, err);
}

TEST_F(Dispatch, ExtensionFunctionsAreFedclsOwn) {
  cl_platform_id platform = nullptr;
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr));
  EXPECT_NE(nullptr, clGetExtensionFunctionAddressForPlatform(platform, "clGetKernelSubGroupInfoKHR"));
  EXPECT_EQ(nullptr, clGetExtensionFunctionAddressForPlatform(platform, "clNoSuchFunctionKHR"));
  EXPECT_EQ(nullptr, clGetExtensionFunctionAddress("clNoSuchFunctionKHR"));
  // The device (PoCL) has no sub-groups: the KHR entry reaches fedcl and reports so.
  auto sub_group_info = reinterpret_cast<clGetKernelSubGroupInfoKHR_fn>(
      clGetExtensionFunctionAddressForPlatform(platform, "clGetKernelSubGroupInfoKHR"));
  ASSERT_NE(nullptr, sub_group_info);
  cl_program program = build_program(context, kStoreSource);
  cl_kernel kernel = create_kernel(program, "store");
  size_t local = 1, result = 0;
  cl_int err = sub_group_info(kernel, device, CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE_KHR, sizeof local, &local,
                              sizeof result, &result, nullptr);
  EXPECT_TRUE(err == CL_INVALID_OPERATION || (err == CL_SUCCESS && result > 0)) << err;
  clReleaseKernel(kernel);
  clReleaseProgram(program);
}
