// cl_khr_command_buffer's entry points (with mutable dispatch and multi-device), as an application
// finds them: clGetExtensionFunctionAddressForPlatform on the fedcl platform.
#pragma once

#include <CL/cl_fedcl_command_buffer.h>

#include <type_traits>

#include "cl_harness.h"

namespace fedcl_test {

// The extension's entry points, as the application finds them.
struct CommandBufferApi {
  fedcl_clCreateCommandBufferKHR_fn create = nullptr;
  fedcl_clFinalizeCommandBufferKHR_fn finalize = nullptr;
  fedcl_clRetainCommandBufferKHR_fn retain = nullptr;
  fedcl_clReleaseCommandBufferKHR_fn release = nullptr;
  fedcl_clEnqueueCommandBufferKHR_fn enqueue = nullptr;
  fedcl_clCommandBarrierWithWaitListKHR_fn barrier = nullptr;
  fedcl_clCommandCopyBufferKHR_fn copy = nullptr;
  fedcl_clCommandFillBufferKHR_fn fill = nullptr;
  fedcl_clCommandNDRangeKernelKHR_fn launch = nullptr;
  fedcl_clGetCommandBufferInfoKHR_fn info = nullptr;
  fedcl_clUpdateMutableCommandsKHR_fn update = nullptr;
  fedcl_clGetMutableCommandInfoKHR_fn command_info = nullptr;
  fedcl_clRemapCommandBufferKHR_fn remap = nullptr;

  CommandBufferApi() {
    cl_platform_id platform = fedcl_platform();
    auto find = [&](auto &function, const char *name) {
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(
          clGetExtensionFunctionAddressForPlatform(platform, name));
      EXPECT_NE(nullptr, reinterpret_cast<void *>(function)) << name;
    };
    find(create, "clCreateCommandBufferKHR");
    find(finalize, "clFinalizeCommandBufferKHR");
    find(retain, "clRetainCommandBufferKHR");
    find(release, "clReleaseCommandBufferKHR");
    find(enqueue, "clEnqueueCommandBufferKHR");
    find(barrier, "clCommandBarrierWithWaitListKHR");
    find(copy, "clCommandCopyBufferKHR");
    find(fill, "clCommandFillBufferKHR");
    find(launch, "clCommandNDRangeKernelKHR");
    find(info, "clGetCommandBufferInfoKHR");
    find(update, "clUpdateMutableCommandsKHR");
    find(command_info, "clGetMutableCommandInfoKHR");
    find(remap, "clRemapCommandBufferKHR");
  }

  // Replays buffer on its own queues and waits for the replay's event, which must say it is one.
  void run_and_wait(cl_command_buffer_khr buffer) {
    cl_event done = nullptr;
    ASSERT_CL_OK(enqueue(0, nullptr, buffer, 0, nullptr, &done));
    ASSERT_CL_OK(clWaitForEvents(1, &done));
    cl_command_type type = 0;
    EXPECT_CL(CL_SUCCESS, clGetEventInfo(done, CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr));
    EXPECT_EQ(cl_command_type(CL_COMMAND_COMMAND_BUFFER_KHR), type);
    clReleaseEvent(done);
  }
};

}  // namespace fedcl_test
