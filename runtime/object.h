// The base of every fedcl handle. The ICD loader requires the dispatch table pointer to be the
// first member of every object it is handed, so handles have no virtual functions.
#pragma once

#include <CL/cl_icd.h>

#include <atomic>
#include <cstdint>

namespace fedcl {

// Defined in icd/dispatch.cpp. Weak: the programs that link the runtime without the ICD (the fedcl
// command, the unit tests, a fuzz target) make no objects, and need no table.
extern const cl_icd_dispatch kDispatch __attribute__((weak));

enum class Magic : uint32_t {
  dead = 0,
  platform = 0xfed0c101,
  device,
  context,
  queue,
  mem,
  program,
  kernel,
  event,
  sampler,
  command_buffer,
  mutable_command,
};

// A new object id, unique in the process and therefore on every daemon.
uint64_t new_object_id();
// The first of count consecutive new ids.
uint64_t new_object_ids(uint64_t count);

struct Object {
  const cl_icd_dispatch *dispatch = &kDispatch;
  Magic magic;
  std::atomic<cl_uint> refcount{1};  // the application's references (CL_*_REFERENCE_COUNT)
  std::atomic<cl_uint> lifetime{1};  // 1 while refcount > 0, plus one per runtime-internal hold
  uint64_t id;

  explicit Object(Magic m) : magic(m), id(new_object_id()) {}
  Object(Magic m, uint64_t fixed_id) : magic(m), id(fixed_id) {}
  Object(const Object &) = delete;
  Object &operator=(const Object &) = delete;
};

// The checked cast every entry point does: null, a foreign pointer or a released object fails.
template <typename T>
T *as(const void *handle) {
  auto *object = static_cast<T *>(const_cast<void *>(handle));
  if (!object || object->magic != T::kMagic || object->refcount.load(std::memory_order_relaxed) == 0) return nullptr;
  return object;
}

// Memory objects and samplers are also registered by address, so that bytes which may or may not be
// such a handle (a kernel argument without metadata) can be recognised without reading through them.
void handle_register(const void *handle);
void handle_unregister(const void *handle);
bool handle_registered(const void *handle);

// Internal holds keep an object's memory alive past the application's last release, e.g. an
// event until its completion arrives, or a context while a buffer of it lives.
template <typename T>
void hold(T *object) {
  object->lifetime.fetch_add(1, std::memory_order_relaxed);
}

template <typename T>
void unhold(T *object) {
  if (object->lifetime.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    object->magic = Magic::dead;
    delete object;
  }
}

inline cl_int retain(Object *object) {
  object->refcount.fetch_add(1, std::memory_order_relaxed);
  return CL_SUCCESS;
}

// Drops an application reference; on the last one runs T::last_release() and drops the lifetime.
template <typename T>
cl_int release(T *object) {
  if (object->refcount.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    object->last_release();
    unhold(object);
  }
  return CL_SUCCESS;
}

}  // namespace fedcl
