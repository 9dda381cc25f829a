// The objects behind fedcl's OpenCL handles. A handle lives in the application's process and names
// the same object id on every daemon that holds a copy of it.
#pragma once

#include <CL/cl.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>
#include <string>
#include <unordered_map>
#include <vector>

#include "connection.h"
#include "object.h"
#include "validity_map.h"

namespace fedcl {

// A bit per daemon connection (a context spans at most 64 daemons): ConnectionMask.
inline ConnectionMask bit(const Connection *connection) { return ConnectionMask(1) << connection->index(); }

// Where a context lives on one daemon: that daemon's devices of the context.
struct ContextPart {
  Connection *connection;
  std::vector<uint64_t> device_ids;
  uint64_t transfer_queue = 0;  // fedcl's own queue there, for moving buffers between daemons
};

using ContextNotify = void(CL_CALLBACK *)(const char *, const void *, size_t, void *);

struct Callback {
  void(CL_CALLBACK *function)(void *object, void *user_data);
  void *user_data;
};

struct KernelArgDesc {
  cl_kernel_arg_address_qualifier address;
  cl_kernel_arg_access_qualifier access;
  cl_kernel_arg_type_qualifier type_qualifier;
  std::string type_name;
  std::string name;
  size_t value_size = 0;  // by-value bytes the daemon read from the binary; 0: from type_name
};

struct KernelDesc {
  std::string name;
  std::vector<KernelArgDesc> args;  // for the checks; may come from the daemon's metadata twin
  bool arg_info_available = false;  // whether the backend answers clGetKernelArgInfo
  size_t compile_work_group_size[3] = {};  // reqd_work_group_size; 0,0,0 without one
};

// Tells connection's daemon that object id is let go of (nothing if the daemon is gone).
void post_release(Connection *connection, uint64_t id);

// How clSetKernelArg checks one argument, worked out once per kernel from its KernelArgDesc.
enum class ArgClass { memory, local, sampler, value, unknown };
struct ArgCheck {
  ArgClass kind;
  size_t value_size;   // the by-value size the type requires, 0 if unknown
  bool image = false;  // a memory argument of an image type: a buffer is refused
};

}  // namespace fedcl

struct _cl_platform_id : fedcl::Object {
  static constexpr fedcl::Magic kMagic = fedcl::Magic::platform;
  _cl_platform_id() : Object(kMagic, 0) {}
};

struct _cl_device_id : fedcl::Object {
  static constexpr fedcl::Magic kMagic = fedcl::Magic::device;
  fedcl::Connection *connection;
  uint64_t remote_id;                                     // the device's id in that session
  std::unordered_map<cl_uint, std::vector<uint8_t>> info; // as the backend answered
  cl_device_id parent = nullptr;                          // sub-devices: the device partitioned
  std::string name;                                       // the backend's name, then " @ node"
  std::string extensions;                                 // the extensions fedcl forwards
  cl_device_type type = 0;
  cl_uint address_bits = 64;
  size_t max_work_group_size = 0;
  size_t max_work_item_sizes[3] = {};
  cl_uint mem_base_addr_align = 0;                        // bits
  unsigned version = 0;                                   // CL_DEVICE_VERSION as major * 10 + minor
  bool non_uniform_work_groups = false;                   // CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT
  explicit _cl_device_id(fedcl::Connection *c, uint64_t id) : Object(kMagic, 0), connection(c), remote_id(id) {}
  ~_cl_device_id();
  void last_release();
};

struct _cl_context : fedcl::Object {
  static constexpr fedcl::Magic kMagic = fedcl::Magic::context;
  std::vector<cl_device_id> devices;
  std::vector<fedcl::ContextPart> parts;                  // one per daemon
  std::vector<cl_context_properties> properties;          // as given, 0-terminated, or empty
  fedcl::ContextNotify notify = nullptr;
  void *notify_data = nullptr;
  // notify is not called once the application released the context, and its last release waits
  // for a call under way: the application may free notify_data when clReleaseContext returns.
  std::mutex notify_mutex;
  std::condition_variable notify_done;
  bool notify_closed = false;
  int notifying = 0;
  std::mutex mutex;
  std::vector<fedcl::Callback> destructor_callbacks;
  // What each daemon answered to clGetSupportedImageFormats, by (connection index, flags as asked, image type).
  std::map<std::tuple<size_t, cl_mem_flags, cl_mem_object_type>, std::vector<cl_image_format>> image_formats;
  _cl_context() : Object(kMagic) {}
  ~_cl_context();
  void last_release();
  fedcl::ContextPart *part(const fedcl::Connection *connection);
  // fedcl's own queue on a daemon of the context, created on first use.
  uint64_t transfer_queue(fedcl::ContextPart &part);
  bool has_device(cl_device_id device) const;
};

struct _cl_command_queue : fedcl::Object {
  static constexpr fedcl::Magic kMagic = fedcl::Magic::queue;
  cl_context context;
  cl_device_id device;
  fedcl::Connection *connection;
  cl_command_queue_properties properties;
  std::vector<cl_queue_properties> properties_array;      // as given to clCreateCommandQueueWithProperties
  // Commands of the queue that end in this process (saves to a file: their events complete after
  // the daemon's side), held until complete: later commands of an in-order queue wait for them,
  // clFinish too.
  std::mutex local_mutex;
  std::vector<_cl_event *> local_pending;
  std::atomic<size_t> local_count{0};  // local_pending's size: every enqueue looks, without the lock
  // The application's events of this queue that its daemon reports only when asked, held, in the
  // order their commands left; clFinish completes them (event_reports.h).
  std::mutex unreported_mutex;
  std::vector<_cl_event *> unreported;
  std::vector<std::pair<uint64_t, cl_int>> unreported_failures;  // a clFinish's, for events not listed yet
  size_t unreported_trim_at = 256;
  _cl_command_queue() : Object(kMagic) {}
  ~_cl_command_queue();
  bool in_order() const { return !(properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE); }
  void last_release();
  void add_local(_cl_event *event);
  // The ones still under way (held: the caller unholds each).
  std::vector<_cl_event *> pending_local();
};

struct _cl_mem : fedcl::Object {
  static constexpr fedcl::Magic kMagic = fedcl::Magic::mem;
  cl_context context;
  cl_mem_object_type type = CL_MEM_OBJECT_BUFFER;
  cl_mem_flags flags;
  size_t size;
  void *host_ptr = nullptr;                               // CL_MEM_USE_HOST_PTR only
  cl_mem parent = nullptr;                                // sub-buffers; the buffer or image an image wraps
  size_t origin = 0;
  // Images: as created, with image_desc's pitches those CL_IMAGE_ROW_PITCH and SLICE_PITCH report
  // (host_ptr's for CL_MEM_USE_HOST_PTR, the wrapped buffer's, or tight) and image_desc.buffer == parent.
  cl_image_format image_format{};
  cl_image_desc image_desc{};
  size_t element_size = 0;
  std::vector<cl_mem_properties> properties;              // as given to clCreate*WithProperties, 0-terminated, or empty
  std::mutex mutex;
  fedcl::ConnectionMask present = 0;                      // daemons that hold the object
  fedcl::ValidityMap validity;                            // which daemons are current on which bytes
  // By connection index: the commands that may have written it there and may still run, each with
  // the bytes it may have written. All of them, not the last alone: two queues of one daemon (or
  // an out-of-order one) finish in any order.
  struct Writer {
    cl_event event;
    size_t begin, end;
  };
  std::map<size_t, std::vector<Writer>> writers;
  std::map<size_t, cl_event> arrivals;                    // by connection index: the last copy on its way there
  // By connection index: the last of fedcl's transfer commands on the object there (a send or a
  // receive). The transfer queue runs out of order; the next transfer of the object waits for it.
  std::map<size_t, cl_event> transfer_tails;
  // A copy through this process (no peer link) is under way, with the lock released for its round
  // trips: other threads that need the object wait on `copied`. `writes` counts mem_written calls,
  // so that the copy can tell an unordered write that came meanwhile.
  bool copying = false;
  std::condition_variable copied;
  uint64_t writes = 0;
  uint8_t *mirror = nullptr;                              // host copy that maps point into
  struct Mapping {
    void *pointer;
    size_t offset, size;
    cl_map_flags flags;
    size_t origin[3] = {}, region[3] = {};    // images
    size_t row_pitch = 0, slice_pitch = 0;  // images: the layout at pointer
  };
  std::vector<Mapping> mappings;
  std::vector<fedcl::Callback> destructor_callbacks;
  _cl_mem();
  ~_cl_mem();
  void last_release();
  bool is_image() const { return type != CL_MEM_OBJECT_BUFFER && type != CL_MEM_OBJECT_PIPE; }
};

struct _cl_program : fedcl::Object {
  static constexpr fedcl::Magic kMagic = fedcl::Magic::program;
  cl_context context;
  std::vector<cl_device_id> devices;                      // the program's devices, a subset of the context's
  bool has_source = false;                                // created from source: it can be compiled
  std::string source;
  std::mutex mutex;
  struct DeviceBuild {
    cl_build_status status = CL_BUILD_NONE;
    cl_program_binary_type binary_type = CL_PROGRAM_BINARY_TYPE_NONE;
    std::string log, options;
    // Whether launches need uniform work-groups, from the options the application gave (OpenCL C
    // before 2.0, or -cl-uniform-work-group-size); the backend reports no such thing.
    bool uniform_work_groups = true;
  };
  std::unordered_map<cl_device_id, DeviceBuild> builds;
  std::vector<fedcl::KernelDesc> kernels;                 // once there is an executable
  std::atomic<cl_uint> attached_kernels{0};
  _cl_program() : Object(kMagic) {}
  ~_cl_program();
  void last_release();
  const fedcl::KernelDesc *kernel(const std::string &name) const;
  bool built() const;
};

struct _cl_kernel : fedcl::Object {
  static constexpr fedcl::Magic kMagic = fedcl::Magic::kernel;
  cl_program program;
  const fedcl::KernelDesc *desc;
  // Arguments live here, as in a local driver, and travel with the next launch that needs them.
  struct Arg {
    enum Kind : uint8_t { unset, value, memory, local, sampler } kind = unset;
    std::vector<uint8_t> bytes;
    uint64_t object = 0;    // mem or sampler id (0: NULL cl_mem)
    cl_mem buffer = nullptr;
    cl_sampler sampler_handle = nullptr;
    uint64_t local_size = 0;
    uint32_t generation = 0;
  };
  std::mutex mutex;
  fedcl::ConnectionMask present = 0;                      // daemons that hold the kernel
  std::vector<Arg> args;
  std::vector<fedcl::ArgCheck> checks;                    // one per argument
  std::vector<cl_device_id> uniform_only;                 // devices whose build needs uniform work-groups
  uint32_t generation = 0;
  std::unordered_map<size_t, std::vector<uint32_t>> sent;  // per connection: generation of each arg sent
  std::unordered_map<cl_device_id, std::unordered_map<cl_uint, std::vector<uint8_t>>> work_group_info;
  _cl_kernel() : Object(kMagic) {}
  ~_cl_kernel();
  void last_release();
};

struct _cl_event : fedcl::Object {
  static constexpr fedcl::Magic kMagic = fedcl::Magic::event;
  cl_context context;
  cl_command_queue queue;                                 // null for user events
  fedcl::Connection *connection;                          // where the command runs; null for user events
  cl_command_type command_type;
  std::mutex mutex;
  std::condition_variable cv;
  std::atomic<cl_int> status;                             // changed under mutex; waits poll it without
  bool has_profiling = false;
  cl_ulong profiling[4] = {};
  // Its daemon reports its completion only when asked (event_reports.h): until then it completes at
  // its queue's clFinish.
  std::atomic<bool> unreported{false};
  fedcl::ConnectionMask proxies = 0;                      // daemons holding a user-event stand-in
  fedcl::ConnectionMask signalled = 0;                    // of those, the ones this event's daemon signals
                                                          // over a peer link (this process relays failures only)
  // A transfer's sending side: its failure fails the receiving side's event too. Held (an
  // application reference) until this event completes: the receiving daemon forgets an event id
  // on its last release, and must still know it when the failure is relayed.
  _cl_event *fails_too = nullptr;
  struct StatusCallback {
    cl_int status;
    void(CL_CALLBACK *function)(cl_event, cl_int, void *);
    void *user_data;
    // Called on the thread that completes the event (TransferPort::when_complete), not the
    // callback thread: it must not block.
    bool on_completing_thread = false;
  };
  std::vector<StatusCallback> callbacks;
  _cl_event() : Object(kMagic) {}
  ~_cl_event();
  void last_release();
  void release_proxies();
};

struct _cl_sampler : fedcl::Object {
  static constexpr fedcl::Magic kMagic = fedcl::Magic::sampler;
  cl_context context;
  cl_bool normalized_coords = CL_TRUE;
  cl_addressing_mode addressing_mode = CL_ADDRESS_CLAMP;
  cl_filter_mode filter_mode = CL_FILTER_NEAREST;
  std::vector<cl_sampler_properties> properties;          // as given to clCreateSamplerWithProperties, or empty
  _cl_sampler();
  ~_cl_sampler();
  void last_release();
};
