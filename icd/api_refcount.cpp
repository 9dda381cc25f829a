// Every clRetain* and clRelease*: a handle that is not a live object of its type gets the error its
// type names, as at every entry point; otherwise the application's reference count moves.
#include "api.h"
#include "command_buffer.h"

using namespace fedcl;

namespace {

// Only sub-devices are reference counted: for a root device both calls succeed and do nothing, as
// the specification says.
bool counts_references(cl_device_id device) { return device->parent != nullptr; }
bool counts_references(Object *) { return true; }

// Releasing a queue for the last time flushes it, as clFlush would.
void before_release(cl_command_queue queue) {
  if (queue->refcount.load() == 1) api::clFlush(queue);
}
void before_release(Object *) {}

template <typename T>
cl_int checked_retain(T *object, cl_int invalid) {
  if (!as<T>(object)) return invalid;
  return counts_references(object) ? retain(object) : CL_SUCCESS;
}

template <typename T>
cl_int checked_release(T *object, cl_int invalid) {
  if (!as<T>(object)) return invalid;
  if (!counts_references(object)) return CL_SUCCESS;
  before_release(object);
  return release(object);
}

}  // namespace

// Each reference-counted handle: the name after clRetain and clRelease, its type, and the error for
// a handle that is not one.
#define FEDCL_REFCOUNTED(X)                                                 \
  X(Device, cl_device_id, CL_INVALID_DEVICE)                                \
  X(Context, cl_context, CL_INVALID_CONTEXT)                                \
  X(CommandQueue, cl_command_queue, CL_INVALID_COMMAND_QUEUE)               \
  X(MemObject, cl_mem, CL_INVALID_MEM_OBJECT)                               \
  X(Sampler, cl_sampler, CL_INVALID_SAMPLER)                                \
  X(Program, cl_program, CL_INVALID_PROGRAM)                                \
  X(Kernel, cl_kernel, CL_INVALID_KERNEL)                                   \
  X(Event, cl_event, CL_INVALID_EVENT)                                      \
  X(CommandBufferKHR, cl_command_buffer_khr, CL_INVALID_COMMAND_BUFFER_KHR)

#define FEDCL_DEFINE_RETAIN_RELEASE(name, Handle, invalid)                                    \
  cl_int fedcl::api::clRetain##name(Handle object) { return checked_retain(object, invalid); } \
  cl_int fedcl::api::clRelease##name(Handle object) { return checked_release(object, invalid); }
FEDCL_REFCOUNTED(FEDCL_DEFINE_RETAIN_RELEASE)
#undef FEDCL_DEFINE_RETAIN_RELEASE
#undef FEDCL_REFCOUNTED
