// The cl_mem_flags rules that buffers and images share.
#pragma once

#include <CL/cl.h>

namespace fedcl {

const cl_mem_flags kAccessFlags = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY;
const cl_mem_flags kHostPtrFlags = CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR;
const cl_mem_flags kHostAccessFlags = CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS;

inline bool at_most_one(cl_mem_flags flags) { return (flags & (flags - 1)) == 0; }

// CL_INVALID_VALUE for unknown bits or combinations the specification forbids.
inline cl_int check_flags(cl_mem_flags flags) {
  if (flags & ~(kAccessFlags | kHostPtrFlags | kHostAccessFlags | CL_MEM_KERNEL_READ_AND_WRITE))
    return CL_INVALID_VALUE;
  if (!at_most_one(flags & kAccessFlags) || !at_most_one(flags & kHostAccessFlags)) return CL_INVALID_VALUE;
  if ((flags & CL_MEM_USE_HOST_PTR) && (flags & (CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR)))
    return CL_INVALID_VALUE;
  return CL_SUCCESS;
}

// A memory object made from parent (a sub-buffer, or an image over a buffer) cannot be granted
// access that parent forbids: CL_INVALID_VALUE if flags asks for it.
inline cl_int check_inherited_flags(cl_mem_flags parent, cl_mem_flags flags) {
  if (((parent & CL_MEM_WRITE_ONLY) && (flags & (CL_MEM_READ_WRITE | CL_MEM_READ_ONLY))) ||
      ((parent & CL_MEM_READ_ONLY) && (flags & (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY))) ||
      ((parent & CL_MEM_HOST_WRITE_ONLY) && (flags & CL_MEM_HOST_READ_ONLY)) ||
      ((parent & CL_MEM_HOST_READ_ONLY) && (flags & CL_MEM_HOST_WRITE_ONLY)) ||
      ((parent & CL_MEM_HOST_NO_ACCESS) && (flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_WRITE_ONLY))))
    return CL_INVALID_VALUE;
  return CL_SUCCESS;
}

// The flags of a memory object made from parent: what flags leaves unsaid comes from parent.
inline cl_mem_flags inherit_flags(cl_mem_flags parent, cl_mem_flags flags) {
  if (!(flags & kAccessFlags)) flags |= parent & kAccessFlags;
  if (!(flags & kHostAccessFlags)) flags |= parent & kHostAccessFlags;
  return flags | (parent & kHostPtrFlags);
}

}  // namespace fedcl
