/* A backend out of contexts, for the daemon's worker processes (LD_PRELOAD): the real backend's
 * clCreateContext for the first FEDCL_TEST_CONTEXTS_BEFORE_REFUSAL calls of a process, then
 * CL_OUT_OF_HOST_MEMORY, as NVIDIA's driver answers once a GPU holds as many contexts as it can.
 * With FEDCL_TEST_RELEASE_LOG, every clReleaseContext also appends "clReleaseContext PID" there.
 * With FEDCL_TEST_CONTEXTS_LIVE, the process writes there (rewritten at each change) how many of the
 * contexts it made it still holds a reference to of its own (clCreateContext, clRetainContext and
 * clReleaseContext counted): what fedcld keeps alive on the device.
 * With FEDCL_TEST_SUB_BUFFER_DEFECT, NVIDIA 580's sub-buffer defect: the clReleaseMemObject that
 * destroys a sub-buffer aborts the process while a sub-buffer of the same parent created after it,
 * overlapping it, is not destroyed yet (NVIDIA crashes there once kernels used both; the shim does not
 * wait for that). Destructions are learnt from destructor callbacks, so that what the backend itself
 * held counts too; with FEDCL_TEST_SUB_BUFFER_LATE_DESTRUCTION as well, the shim holds each
 * sub-buffer past the caller's last release, as a backend does while a command or a transfer still
 * uses it, the newer ones longer (50 ms more for each sub-buffer made before).
 * With FEDCL_TEST_SLOW_CALLS=DIR, a slow driver: while DIR/slow exists, clBuildProgram,
 * clCreateContext, clCreateProgramWithBinary, clGetProgramInfo(CL_PROGRAM_BINARIES) and
 * clCreateBuffer and clCreateImage from host memory wait a second (or as many as DIR/slow says) before they start,
 * then note in DIR/ended that they ended.
 * With FEDCL_TEST_REFUSE_MAPS_OVER=BYTES, clEnqueueMapBuffer of a buffer larger than BYTES fails
 * (CL_MAP_FAILURE): NVIDIA's first map of a buffer pins a host copy of all of it, seconds for GiBs,
 * which fedcld must not ask for (BackendPlatform::transfer_window).
 * With FEDCL_TEST_SUB_BUFFER_RELEASE_WAITS, clReleaseMemObject of a sub-buffer aborts while an unmap
 * of its parent has not completed (a transfer of the parent is under way): NVIDIA's release waits
 * there for the parent's commands, holding its lock, and a transfer's next commands never come.
 * With FEDCL_TEST_REFUSE_HOST_COPIES_OVER=BYTES, clCreateBuffer from host memory (CL_MEM_COPY_HOST_PTR)
 * larger than BYTES fails (CL_MEM_OBJECT_ALLOCATION_FAILURE): NVIDIA keeps a pinned host copy of such
 * a buffer and uploads it inside the first command that uses it, seconds for GiBs on fedcld's loop
 * (BackendPlatform::uploads_host_copies_late).
 * With FEDCL_TEST_SLOW_WRITES_MS=N, every non-blocking clEnqueueWriteBuffer completes no sooner than N
 * ms after it was enqueued: a device that takes bytes slower than a peer link brings them. */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { kTracked = 4096 };
static struct {
  cl_context context;
  int references;
} g_contexts[kTracked];
static pthread_mutex_t g_contexts_mutex = PTHREAD_MUTEX_INITIALIZER;

/* Adds delta to context's count (a new entry for a context seen first) and rewrites the file. */
static void count_context(cl_context context, int delta) {
  const char *path = getenv("FEDCL_TEST_CONTEXTS_LIVE");
  if (!path || !context) return;
  pthread_mutex_lock(&g_contexts_mutex);
  int slot = -1, live = 0;
  for (int i = 0; i < kTracked && slot < 0; i++)
    if (g_contexts[i].context == context) slot = i;
  for (int i = 0; i < kTracked && slot < 0 && delta > 0; i++)
    if (!g_contexts[i].context) slot = i;
  if (slot >= 0) {
    g_contexts[slot].context = context;
    g_contexts[slot].references += delta;
    if (g_contexts[slot].references <= 0) g_contexts[slot] = (typeof(g_contexts[0])){NULL, 0};
  }
  for (int i = 0; i < kTracked; i++) live += g_contexts[i].context != NULL;
  FILE *file = fopen(path, "w");
  if (file) {
    fprintf(file, "%d\n", live);
    fclose(file);
  }
  pthread_mutex_unlock(&g_contexts_mutex);
}

CL_API_ENTRY cl_int CL_API_CALL clRetainContext(cl_context context) {
  cl_int (*real)(cl_context) = (cl_int(*)(cl_context))dlsym(RTLD_NEXT, "clRetainContext");
  cl_int err = real(context);
  if (err == CL_SUCCESS) count_context(context, 1);
  return err;
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseContext(cl_context context) {
  count_context(context, -1);
  const char *log = getenv("FEDCL_TEST_RELEASE_LOG");
  if (log) {
    FILE *file = fopen(log, "a");
    if (file) {
      fprintf(file, "clReleaseContext %d\n", (int)getpid());
      fclose(file);
    }
  }
  cl_int (*real)(cl_context) = (cl_int(*)(cl_context))dlsym(RTLD_NEXT, "clReleaseContext");
  return real(context);
}

typedef cl_context (*CreateContext)(const cl_context_properties *, cl_uint, const cl_device_id *,
                                    void(CL_CALLBACK *)(const char *, const void *, size_t, void *), void *,
                                    cl_int *);

/* The slow driver of FEDCL_TEST_SLOW_CALLS, if asked for. */
static void maybe_slow(const char *function) {
  const char *dir = getenv("FEDCL_TEST_SLOW_CALLS");
  if (!dir) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/slow", dir);
  FILE *slow = fopen(path, "r");
  if (!slow) return;
  unsigned seconds = 1;
  if (fscanf(slow, "%u", &seconds) != 1) seconds = 1;
  fclose(slow);
  /* The whole time, as a driver's wait would, though a signal (fedcld's stall report) comes. */
  struct timespec left = {(time_t)seconds, 0};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
  snprintf(path, sizeof path, "%s/ended", dir);
  FILE *file = fopen(path, "a");
  if (file) {
    fprintf(file, "%s\n", function);
    fclose(file);
  }
}

typedef cl_mem (*CreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);

CL_API_ENTRY cl_mem CL_API_CALL clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void *host_ptr,
                                               cl_int *errcode_ret) {
  if (flags & CL_MEM_COPY_HOST_PTR) maybe_slow("clCreateBuffer");
  const char *limit = getenv("FEDCL_TEST_REFUSE_HOST_COPIES_OVER");
  if (limit && (flags & CL_MEM_COPY_HOST_PTR) && size > strtoull(limit, NULL, 10)) {
    if (errcode_ret) *errcode_ret = CL_MEM_OBJECT_ALLOCATION_FAILURE;
    return NULL;
  }
  CreateBuffer real = (CreateBuffer)dlsym(RTLD_NEXT, "clCreateBuffer");
  return real(context, flags, size, host_ptr, errcode_ret);
}

typedef cl_mem (*CreateImage)(cl_context, cl_mem_flags, const cl_image_format *, const cl_image_desc *, void *,
                               cl_int *);

CL_API_ENTRY cl_mem CL_API_CALL clCreateImage(cl_context context, cl_mem_flags flags, const cl_image_format *format,
                                              const cl_image_desc *desc, void *host_ptr, cl_int *errcode_ret) {
  if (flags & CL_MEM_COPY_HOST_PTR) maybe_slow("clCreateImage");
  CreateImage real = (CreateImage)dlsym(RTLD_NEXT, "clCreateImage");
  return real(context, flags, format, desc, host_ptr, errcode_ret);
}

typedef cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *,
                               void(CL_CALLBACK *)(cl_program, void *), void *);

CL_API_ENTRY cl_int CL_API_CALL clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id *devices,
                                               const char *options, void(CL_CALLBACK *notify)(cl_program, void *),
                                               void *user_data) {
  maybe_slow("clBuildProgram");
  BuildProgram real = (BuildProgram)dlsym(RTLD_NEXT, "clBuildProgram");
  return real(program, num_devices, devices, options, notify, user_data);
}

typedef cl_program (*CreateProgramWithBinary)(cl_context, cl_uint, const cl_device_id *, const size_t *,
                                              const unsigned char **, cl_int *, cl_int *);

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithBinary(cl_context context, cl_uint num_devices,
                                                              const cl_device_id *devices, const size_t *lengths,
                                                              const unsigned char **binaries, cl_int *statuses,
                                                              cl_int *errcode_ret) {
  maybe_slow("clCreateProgramWithBinary");
  CreateProgramWithBinary real = (CreateProgramWithBinary)dlsym(RTLD_NEXT, "clCreateProgramWithBinary");
  return real(context, num_devices, devices, lengths, binaries, statuses, errcode_ret);
}

typedef cl_int (*GetProgramInfo)(cl_program, cl_program_info, size_t, void *, size_t *);

CL_API_ENTRY cl_int CL_API_CALL clGetProgramInfo(cl_program program, cl_program_info param, size_t size, void *value,
                                                 size_t *size_ret) {
  if (param == CL_PROGRAM_BINARIES) maybe_slow("clGetProgramInfo(CL_PROGRAM_BINARIES)");
  GetProgramInfo real = (GetProgramInfo)dlsym(RTLD_NEXT, "clGetProgramInfo");
  return real(program, param, size, value, size_ret);
}

CL_API_ENTRY cl_context CL_API_CALL clCreateContext(const cl_context_properties *properties, cl_uint num_devices,
                                                    const cl_device_id *devices,
                                                    void(CL_CALLBACK *notify)(const char *, const void *, size_t,
                                                                              void *),
                                                    void *user_data, cl_int *errcode_ret) {
  static int made;
  const char *allowed = getenv("FEDCL_TEST_CONTEXTS_BEFORE_REFUSAL");
  if (allowed && made >= atoi(allowed)) {
    if (errcode_ret) *errcode_ret = CL_OUT_OF_HOST_MEMORY;
    return NULL;
  }
  made++;
  maybe_slow("clCreateContext");
  CreateContext real = (CreateContext)dlsym(RTLD_NEXT, "clCreateContext");
  cl_context context = real(properties, num_devices, devices, notify, user_data, errcode_ret);
  count_context(context, 1);
  return context;
}

enum { kSubBuffers = 4096 };
static struct {
  cl_mem sub, parent;
  size_t begin, end;
} g_subs[kSubBuffers];  /* in the order of creation; a destroyed one's sub is NULL */
static int g_sub_count;
static pthread_mutex_t g_subs_mutex = PTHREAD_MUTEX_INITIALIZER;

static void CL_CALLBACK sub_buffer_destroyed(cl_mem sub, void *unused) {
  (void)unused;
  pthread_mutex_lock(&g_subs_mutex);
  for (int i = 0; i < g_sub_count; i++)
    if (g_subs[i].sub == sub) g_subs[i].sub = NULL;
  pthread_mutex_unlock(&g_subs_mutex);
}

CL_API_ENTRY cl_mem CL_API_CALL clCreateSubBuffer(cl_mem parent, cl_mem_flags flags, cl_buffer_create_type type,
                                                  const void *info, cl_int *errcode_ret) {
  typedef cl_mem (*CreateSubBuffer)(cl_mem, cl_mem_flags, cl_buffer_create_type, const void *, cl_int *);
  CreateSubBuffer real = (CreateSubBuffer)dlsym(RTLD_NEXT, "clCreateSubBuffer");
  cl_mem sub = real(parent, flags, type, info, errcode_ret);
  if (sub && getenv("FEDCL_TEST_SUB_BUFFER_DEFECT") && type == CL_BUFFER_CREATE_TYPE_REGION) {
    const cl_buffer_region *region = (const cl_buffer_region *)info;
    pthread_mutex_lock(&g_subs_mutex);
    if (g_sub_count < kSubBuffers) {
      g_subs[g_sub_count].sub = sub;
      g_subs[g_sub_count].parent = parent;
      g_subs[g_sub_count].begin = region->origin;
      g_subs[g_sub_count].end = region->origin + region->size;
      g_sub_count++;
    }
    pthread_mutex_unlock(&g_subs_mutex);
    clSetMemObjectDestructorCallback(sub, sub_buffer_destroyed, NULL);
    if (getenv("FEDCL_TEST_SUB_BUFFER_LATE_DESTRUCTION")) clRetainMemObject(sub);
  }
  return sub;
}

typedef cl_int (*ReleaseMemObject)(cl_mem);

/* Aborts when releasing mem, a sub-buffer with no other reference, would destroy it before a newer
 * sub-buffer of its parent that overlaps it. */
static void check_destruction_order(cl_mem mem) {
  cl_uint references = 0;
  if (clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof references, &references, NULL) != CL_SUCCESS ||
      references != 1)
    return;
  pthread_mutex_lock(&g_subs_mutex);
  for (int i = 0; i < g_sub_count; i++) {
    if (g_subs[i].sub != mem) continue;
    for (int later = i + 1; later < g_sub_count; later++)
      if (g_subs[later].sub && g_subs[later].parent == g_subs[i].parent && g_subs[later].begin < g_subs[i].end &&
          g_subs[i].begin < g_subs[later].end) {
        fprintf(stderr, "refusing_backend: sub-buffer [%zu, %zu) destroyed before [%zu, %zu), made after it\n",
                g_subs[i].begin, g_subs[i].end, g_subs[later].begin, g_subs[later].end);
        abort();
      }
  }
  pthread_mutex_unlock(&g_subs_mutex);
}

struct LateRelease {
  cl_mem mem;
  int index;  /* in g_subs */
};

static void *release_late(void *data) {
  struct LateRelease late = *(struct LateRelease *)data;
  free(data);
  usleep(50 * 1000 * (late.index + 1));
  check_destruction_order(late.mem);
  ((ReleaseMemObject)dlsym(RTLD_NEXT, "clReleaseMemObject"))(late.mem);
  return NULL;
}

/* mem's index in g_subs, or -1. */
static int sub_index(cl_mem mem) {
  int found = -1;
  pthread_mutex_lock(&g_subs_mutex);
  for (int i = 0; i < g_sub_count && found < 0; i++)
    if (g_subs[i].sub == mem) found = i;
  pthread_mutex_unlock(&g_subs_mutex);
  return found;
}

/* The unmaps enqueued, with their buffers, for FEDCL_TEST_SUB_BUFFER_RELEASE_WAITS. */
enum { kUnmaps = 65536 };
static struct {
  cl_mem mem;
  cl_event event;
} g_unmaps[kUnmaps];
static int g_unmap_count;
static pthread_mutex_t g_unmaps_mutex = PTHREAD_MUTEX_INITIALIZER;

typedef cl_int (*EnqueueUnmap)(cl_command_queue, cl_mem, void *, cl_uint, const cl_event *, cl_event *);

CL_API_ENTRY cl_int CL_API_CALL clEnqueueUnmapMemObject(cl_command_queue queue, cl_mem mem, void *mapped,
                                                        cl_uint num_events, const cl_event *events, cl_event *event) {
  EnqueueUnmap real = (EnqueueUnmap)dlsym(RTLD_NEXT, "clEnqueueUnmapMemObject");
  if (!getenv("FEDCL_TEST_SUB_BUFFER_RELEASE_WAITS")) return real(queue, mem, mapped, num_events, events, event);
  cl_event own = NULL;
  cl_int err = real(queue, mem, mapped, num_events, events, &own);
  if (err != CL_SUCCESS) return err;
  pthread_mutex_lock(&g_unmaps_mutex);
  if (g_unmap_count < kUnmaps) {
    clRetainEvent(own);
    g_unmaps[g_unmap_count].mem = mem;
    g_unmaps[g_unmap_count].event = own;
    g_unmap_count++;
  }
  pthread_mutex_unlock(&g_unmaps_mutex);
  if (event) *event = own;
  else clReleaseEvent(own);
  return CL_SUCCESS;
}

/* Aborts if mem is a sub-buffer whose parent has an unmap that has not completed. */
static void check_parent_idle(cl_mem mem) {
  cl_mem parent = NULL;
  if (clGetMemObjectInfo(mem, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL) != CL_SUCCESS || !parent) return;
  pthread_mutex_lock(&g_unmaps_mutex);
  for (int i = 0; i < g_unmap_count; i++) {
    cl_int status = CL_COMPLETE;
    if (g_unmaps[i].mem != parent) continue;
    clGetEventInfo(g_unmaps[i].event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    if (status > CL_COMPLETE) {
      fprintf(stderr, "refusing_backend: a sub-buffer released while a transfer of its parent is under way\n");
      abort();
    }
  }
  pthread_mutex_unlock(&g_unmaps_mutex);
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseMemObject(cl_mem mem) {
  ReleaseMemObject real = (ReleaseMemObject)dlsym(RTLD_NEXT, "clReleaseMemObject");
  if (getenv("FEDCL_TEST_SUB_BUFFER_RELEASE_WAITS")) check_parent_idle(mem);
  if (!getenv("FEDCL_TEST_SUB_BUFFER_DEFECT")) return real(mem);
  cl_uint references = 0;
  clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof references, &references, NULL);
  int index = sub_index(mem);
  if (getenv("FEDCL_TEST_SUB_BUFFER_LATE_DESTRUCTION") && references == 2 && index >= 0) {
    /* The caller's last reference: the shim's own goes later. */
    struct LateRelease *late = malloc(sizeof *late);
    pthread_t thread;
    late->mem = mem;
    late->index = index;
    if (pthread_create(&thread, NULL, release_late, late) == 0) pthread_detach(thread);
    return real(mem);
  }
  check_destruction_order(mem);
  return real(mem);
}

typedef void *(*EnqueueMapBuffer)(cl_command_queue, cl_mem, cl_bool, cl_map_flags, size_t, size_t, cl_uint,
                                  const cl_event *, cl_event *, cl_int *);

CL_API_ENTRY void *CL_API_CALL clEnqueueMapBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                                                  cl_map_flags flags, size_t offset, size_t size, cl_uint num_events,
                                                  const cl_event *events, cl_event *event, cl_int *errcode_ret) {
  const char *limit = getenv("FEDCL_TEST_REFUSE_MAPS_OVER");
  size_t bytes = 0;
  if (limit && clGetMemObjectInfo(buffer, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) == CL_SUCCESS &&
      bytes > strtoull(limit, NULL, 10)) {
    if (errcode_ret) *errcode_ret = CL_MAP_FAILURE;
    return NULL;
  }
  EnqueueMapBuffer real = (EnqueueMapBuffer)dlsym(RTLD_NEXT, "clEnqueueMapBuffer");
  return real(queue, buffer, blocking, flags, offset, size, num_events, events, event, errcode_ret);
}

typedef cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *, cl_uint,
                                     const cl_event *, cl_event *);

struct LateGate {
  cl_event gate;
  unsigned ms;
};

static void *open_gate_later(void *arg) {
  struct LateGate *late = arg;
  struct timespec pause = {late->ms / 1000, (long)(late->ms % 1000) * 1000000L};
  nanosleep(&pause, NULL);
  clSetUserEventStatus(late->gate, CL_COMPLETE);
  clReleaseEvent(late->gate);
  free(late);
  return NULL;
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueWriteBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                                                     size_t offset, size_t size, const void *ptr, cl_uint num_events,
                                                     const cl_event *events, cl_event *event) {
  EnqueueWriteBuffer real = (EnqueueWriteBuffer)dlsym(RTLD_NEXT, "clEnqueueWriteBuffer");
  const char *slow = getenv("FEDCL_TEST_SLOW_WRITES_MS");
  enum { kMaxWaits = 63 };
  cl_context context = NULL;
  if (!slow || blocking || num_events > kMaxWaits ||
      clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof context, &context, NULL) != CL_SUCCESS)
    return real(queue, buffer, blocking, offset, size, ptr, num_events, events, event);
  cl_int err = CL_SUCCESS;
  struct LateGate *late = malloc(sizeof *late);
  cl_event gate = late ? clCreateUserEvent(context, &err) : NULL;
  if (!gate) {
    free(late);
    return real(queue, buffer, blocking, offset, size, ptr, num_events, events, event);
  }
  cl_event waits[kMaxWaits + 1];
  for (cl_uint i = 0; i < num_events; i++) waits[i] = events[i];
  waits[num_events] = gate;
  err = real(queue, buffer, blocking, offset, size, ptr, num_events + 1, waits, event);
  late->gate = gate;
  late->ms = (unsigned)strtoul(slow, NULL, 10);
  pthread_t thread;
  if (pthread_create(&thread, NULL, open_gate_later, late) == 0) {
    pthread_detach(thread);
  } else {
    clSetUserEventStatus(gate, CL_COMPLETE);
    clReleaseEvent(gate);
    free(late);
  }
  return err;
}
