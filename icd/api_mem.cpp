// Memory objects.
#include "api.h"
#include "coherence.h"
#include "device.h"
#include "info.h"
#include "mem_flags.h"

using namespace fedcl;

namespace {

cl_ulong max_alloc(cl_context context) {
  cl_ulong limit = 0;
  for (cl_device_id device : context->devices) {
    cl_ulong size = 0;
    device_info(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof size, &size, nullptr);
    limit = std::max(limit, size);
  }
  return limit;
}

}  // namespace

void fedcl::keep_properties(cl_mem mem, const cl_mem_properties *properties) {
  if (!mem || !properties) return;
  const cl_mem_properties *end = properties;
  while (*end) end += 2;
  mem->properties.assign(properties, end + 1);
}

cl_mem fedcl::api::clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void *host_ptr,
                                  cl_int *errcode_ret) {
  if (!as<_cl_context>(context)) return set_error(errcode_ret, CL_INVALID_CONTEXT), nullptr;
  cl_int err = check_flags(flags);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  if (size == 0) return set_error(errcode_ret, CL_INVALID_BUFFER_SIZE), nullptr;
  bool beyond_limit = size > max_alloc(context);
  bool wants_ptr = flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR);
  if (wants_ptr != (host_ptr != nullptr)) return set_error(errcode_ret, CL_INVALID_HOST_PTR), nullptr;

  auto *mem = new _cl_mem();
  mem->context = context;
  mem->flags = (flags & kAccessFlags) ? flags : flags | CL_MEM_READ_WRITE;
  mem->size = size;
  if (flags & CL_MEM_USE_HOST_PTR) mem->host_ptr = host_ptr;
  hold(context);

  // The buffer is made on the context's first daemon now.
  HostRegion contents = HostRegion::contiguous(host_ptr, size);
  err = mem_create_first(mem, context->parts.front().connection, wants_ptr ? &contents : nullptr, beyond_limit);
  return finish_create(mem, err, errcode_ret);
}

cl_mem fedcl::api::clCreateBufferWithProperties(cl_context context, const cl_mem_properties *properties,
                                                cl_mem_flags flags, size_t size, void *host_ptr,
                                                cl_int *errcode_ret) {
  if (properties && properties[0] != 0) return set_error(errcode_ret, CL_INVALID_PROPERTY), nullptr;
  cl_mem mem = api::clCreateBuffer(context, flags, size, host_ptr, errcode_ret);
  keep_properties(mem, properties);
  return mem;
}

cl_mem fedcl::api::clCreateSubBuffer(cl_mem parent, cl_mem_flags flags, cl_buffer_create_type type,
                                     const void *info, cl_int *errcode_ret) {
  if (!as<_cl_mem>(parent) || parent->parent || parent->type != CL_MEM_OBJECT_BUFFER)
    return set_error(errcode_ret, CL_INVALID_MEM_OBJECT), nullptr;
  if (type != CL_BUFFER_CREATE_TYPE_REGION || !info) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  cl_int err = check_flags(flags);
  if (err != CL_SUCCESS || (flags & kHostPtrFlags)) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  if (check_inherited_flags(parent->flags, flags) != CL_SUCCESS) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  const auto *region = static_cast<const cl_buffer_region *>(info);
  if (region->size == 0) return set_error(errcode_ret, CL_INVALID_BUFFER_SIZE), nullptr;
  if (region->origin > parent->size || region->size > parent->size - region->origin)
    return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  bool aligned = false;
  for (cl_device_id device : parent->context->devices)
    if (device->mem_base_addr_align == 0 || region->origin % (device->mem_base_addr_align / 8) == 0) aligned = true;

  auto *mem = new _cl_mem();
  mem->context = parent->context;
  mem->flags = inherit_flags(parent->flags, flags);
  mem->size = region->size;
  mem->parent = parent;
  mem->origin = region->origin;
  if (parent->host_ptr) mem->host_ptr = static_cast<uint8_t *>(parent->host_ptr) + region->origin;
  hold(parent);
  hold(mem->context);
  // Misaligned for every device: CL_MISALIGNED_SUB_BUFFER_OFFSET by the specification, which the
  // backends decide (see mem_create_first).
  err = mem_create_with_parent(mem, !aligned);
  return finish_create(mem, err, errcode_ret);
}

cl_int fedcl::api::clGetMemObjectInfo(cl_mem mem, cl_mem_info param, size_t size, void *value, size_t *size_ret) {
  if (!as<_cl_mem>(mem)) return CL_INVALID_MEM_OBJECT;
  switch (param) {
    case CL_MEM_TYPE: return info_value(size, value, size_ret, mem->type);
    case CL_MEM_FLAGS: return info_value(size, value, size_ret, mem->flags);
    case CL_MEM_SIZE: return info_value(size, value, size_ret, mem->size);
    case CL_MEM_HOST_PTR: return info_value(size, value, size_ret, mem->host_ptr);
    case CL_MEM_MAP_COUNT: {
      std::lock_guard<std::mutex> lock(mem->mutex);
      return info_value(size, value, size_ret, cl_uint(mem->mappings.size()));
    }
    case CL_MEM_REFERENCE_COUNT: return info_value(size, value, size_ret, mem->refcount.load());
    case CL_MEM_CONTEXT: return info_value(size, value, size_ret, mem->context);
    case CL_MEM_ASSOCIATED_MEMOBJECT: return info_value(size, value, size_ret, mem->parent);
    case CL_MEM_OFFSET: return info_value(size, value, size_ret, mem->origin);
    case CL_MEM_USES_SVM_POINTER: return info_value(size, value, size_ret, cl_bool(CL_FALSE));
    case CL_MEM_PROPERTIES: return info_vector(size, value, size_ret, mem->properties);
    default: return CL_INVALID_VALUE;
  }
}

cl_int fedcl::api::clSetMemObjectDestructorCallback(cl_mem mem, void(CL_CALLBACK *notify)(cl_mem, void *),
                                                    void *user_data) {
  if (!as<_cl_mem>(mem)) return CL_INVALID_MEM_OBJECT;
  if (!notify) return CL_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(mem->mutex);
  mem->destructor_callbacks.push_back({reinterpret_cast<void(CL_CALLBACK *)(void *, void *)>(notify), user_data});
  return CL_SUCCESS;
}
