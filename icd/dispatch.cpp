// The ICD dispatch table, and the three symbols libfedcl.so exports for the loader (ocl-icd looks
// up clGetPlatformInfo by name to check cl_khr_icd before it trusts the table).
#include <CL/cl_icd.h>

#include <cstring>
#include <type_traits>

#include "api.h"

namespace fedcl {

namespace {

// Entries fedcl does not offer (GL/D3D/EGL sharing, SVM, pipes, IL, device-side queues): a function
// with the entry's exact signature that returns the error the specification prescribes for an
// implementation without the feature.
template <typename F, cl_int Error = CL_INVALID_OPERATION>
struct Unsupported;

template <typename R, typename... Args, cl_int Error>
struct Unsupported<R(CL_API_CALL *)(Args...), Error> {
  static R CL_API_CALL call(Args... args) {
    if constexpr (std::is_same_v<R, cl_int>) {
      return Error;
    } else {
      // Functions that return an object report through their last argument, cl_int *errcode_ret.
      using Last = std::tuple_element_t<sizeof...(Args) - 1, std::tuple<Args...>>;
      if constexpr (std::is_same_v<Last, cl_int *>) {
        Last errcode_ret = std::get<sizeof...(Args) - 1>(std::tuple<Args...>(args...));
        if (errcode_ret) *errcode_ret = Error;
      }
      if constexpr (!std::is_void_v<R>) return R{};
    }
  }
};

// Windows-only entries (D3D) are plain void * slots on this platform; the loader never calls them.
template <cl_int Error>
struct Unsupported<void *, Error> {
  static constexpr void *call = nullptr;
};

cl_icd_dispatch make_table() {
  cl_icd_dispatch table;
  std::memset(&table, 0, sizeof table);
#define FEDCL_SET(name) table.name = api::name;
  FEDCL_IMPLEMENTED(FEDCL_SET)
#undef FEDCL_SET
#define FEDCL_UNSUPPORTED(name) table.name = Unsupported<cl_api_##name>::call;
#define FEDCL_UNSUPPORTED_AS(name, error) table.name = Unsupported<cl_api_##name, error>::call;
  FEDCL_UNSUPPORTED(clSetCommandQueueProperty)
  FEDCL_UNSUPPORTED(clEnqueueNativeKernel)
  FEDCL_UNSUPPORTED_AS(clCreateFromGLBuffer, CL_INVALID_CONTEXT)
  FEDCL_UNSUPPORTED_AS(clCreateFromGLTexture2D, CL_INVALID_CONTEXT)
  FEDCL_UNSUPPORTED_AS(clCreateFromGLTexture3D, CL_INVALID_CONTEXT)
  FEDCL_UNSUPPORTED_AS(clCreateFromGLRenderbuffer, CL_INVALID_CONTEXT)
  FEDCL_UNSUPPORTED_AS(clGetGLObjectInfo, CL_INVALID_MEM_OBJECT)
  FEDCL_UNSUPPORTED_AS(clGetGLTextureInfo, CL_INVALID_MEM_OBJECT)
  FEDCL_UNSUPPORTED_AS(clEnqueueAcquireGLObjects, CL_INVALID_CONTEXT)
  FEDCL_UNSUPPORTED_AS(clEnqueueReleaseGLObjects, CL_INVALID_CONTEXT)
  FEDCL_UNSUPPORTED(clGetGLContextInfoKHR)
  FEDCL_UNSUPPORTED(clGetDeviceIDsFromD3D10KHR)
  FEDCL_UNSUPPORTED(clCreateFromD3D10BufferKHR)
  FEDCL_UNSUPPORTED(clCreateFromD3D10Texture2DKHR)
  FEDCL_UNSUPPORTED(clCreateFromD3D10Texture3DKHR)
  FEDCL_UNSUPPORTED(clEnqueueAcquireD3D10ObjectsKHR)
  FEDCL_UNSUPPORTED(clEnqueueReleaseD3D10ObjectsKHR)
  FEDCL_UNSUPPORTED(clCreateSubDevicesEXT)
  FEDCL_UNSUPPORTED(clRetainDeviceEXT)
  FEDCL_UNSUPPORTED(clReleaseDeviceEXT)
  FEDCL_UNSUPPORTED_AS(clCreateEventFromGLsyncKHR, CL_INVALID_CONTEXT)
  FEDCL_UNSUPPORTED_AS(clCreateFromGLTexture, CL_INVALID_CONTEXT)
  FEDCL_UNSUPPORTED(clGetDeviceIDsFromD3D11KHR)
  FEDCL_UNSUPPORTED(clCreateFromD3D11BufferKHR)
  FEDCL_UNSUPPORTED(clCreateFromD3D11Texture2DKHR)
  FEDCL_UNSUPPORTED(clCreateFromD3D11Texture3DKHR)
  FEDCL_UNSUPPORTED(clCreateFromDX9MediaSurfaceKHR)
  FEDCL_UNSUPPORTED(clEnqueueAcquireD3D11ObjectsKHR)
  FEDCL_UNSUPPORTED(clEnqueueReleaseD3D11ObjectsKHR)
  FEDCL_UNSUPPORTED(clCreateFromEGLImageKHR)
  FEDCL_UNSUPPORTED(clEnqueueAcquireEGLObjectsKHR)
  FEDCL_UNSUPPORTED(clEnqueueReleaseEGLObjectsKHR)
  FEDCL_UNSUPPORTED(clCreateEventFromEGLSyncKHR)
  FEDCL_UNSUPPORTED(clCreatePipe)
  FEDCL_UNSUPPORTED_AS(clGetPipeInfo, CL_INVALID_MEM_OBJECT)
  FEDCL_UNSUPPORTED(clSVMAlloc)
  FEDCL_UNSUPPORTED(clSVMFree)
  FEDCL_UNSUPPORTED(clEnqueueSVMFree)
  FEDCL_UNSUPPORTED(clEnqueueSVMMemcpy)
  FEDCL_UNSUPPORTED(clEnqueueSVMMemFill)
  FEDCL_UNSUPPORTED(clEnqueueSVMMap)
  FEDCL_UNSUPPORTED(clEnqueueSVMUnmap)
  FEDCL_UNSUPPORTED(clSetKernelArgSVMPointer)
  FEDCL_UNSUPPORTED(clSetKernelExecInfo)
  FEDCL_UNSUPPORTED(clEnqueueSVMMigrateMem)
  FEDCL_UNSUPPORTED(clSetDefaultDeviceCommandQueue)
#undef FEDCL_UNSUPPORTED
#undef FEDCL_UNSUPPORTED_AS
  return table;
}

}  // namespace

const cl_icd_dispatch kDispatch = make_table();

}  // namespace fedcl

extern "C" {

__attribute__((visibility("default"))) cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint num_entries,
                                                                                cl_platform_id *platforms,
                                                                                cl_uint *num_platforms) {
  if ((num_entries == 0 && platforms) || (!platforms && !num_platforms)) return CL_INVALID_VALUE;
  if (platforms) platforms[0] = fedcl::Runtime::get().platform();
  if (num_platforms) *num_platforms = 1;
  return CL_SUCCESS;
}

__attribute__((visibility("default"))) void *CL_API_CALL clGetExtensionFunctionAddress(const char *name) {
  return fedcl::api::clGetExtensionFunctionAddress(name);
}

__attribute__((visibility("default"))) cl_int CL_API_CALL clGetPlatformInfo(cl_platform_id platform,
                                                                           cl_platform_info param, size_t size,
                                                                           void *value, size_t *size_ret) {
  return fedcl::api::clGetPlatformInfo(platform, param, size, value, size_ret);
}

}  // extern "C"
