#include "exec.h"
#include "command_buffer.h"
#include "trace.h"

#include <algorithm>
#include <capnp/serialize.h>

#include <array>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "log.h"
#include "node_files.h"
#include "off_loop.h"
#include "peer_signal.h"
#include "peer_transfer.h"
#include "session_host.h"
#include "shared_memory.h"
#include "transfer_chunks.h"
#include "worker_board.h"

namespace fedcld {

namespace {
// The request executing on the loop: the first command it has watched is its end, for its time on
// the board (exec_request's own end otherwise).
struct RequestClock {
  unsigned which;
  uint64_t started_ns;
  bool watched = false;
};
RequestClock *g_request = nullptr;

}  // namespace

void fail(cl_int status, const std::string &message) { throw RequestError{status, message}; }

RequestTiming defer_request_count() {
  if (!g_request || g_request->watched) return {};
  g_request->watched = true;
  return {true, g_request->which, g_request->started_ns};
}

void count_deferred_request(Session &session, const RequestTiming &timing, bool failed) {
  if (timing.taken) board_count_request(session.host().board(), timing.which, failed, uv_hrtime() - timing.started_ns);
}

void check(cl_int status, const char *what) {
  if (status != CL_SUCCESS) fail(status, std::string(what) + " failed with " + std::to_string(status));
}

namespace {

struct Watch {
  std::weak_ptr<Session> session;
  Server *server;
  uint64_t queue_id;
  bool profiling;
  CompletionHandler handler;
  cl_event event;  // retained; released on the loop once the completion is processed
  RequestTiming timing;  // taken: the request's time ends with this command's completion
};

// The watches whose completion has not been taken yet, by serial number (the callbacks' user data,
// never reused). PoCL fails the commands that wait for a failed event without calling their
// callbacks, so failures are also looked for (sweep_failed_watches): whichever of the callback and
// the sweep takes a watch out of here first delivers it. No OpenCL call is made under the lock.
std::mutex g_watches_mutex;
std::unordered_map<uintptr_t, Watch *> g_watches;
uintptr_t g_next_watch = 1;

Watch *claim(uintptr_t serial) {
  std::lock_guard<std::mutex> lock(g_watches_mutex);
  auto it = g_watches.find(serial);
  if (it == g_watches.end()) return nullptr;
  Watch *watch = it->second;
  g_watches.erase(it);
  return watch;
}

void deliver(Watch *watch, cl_int status) {
  uint64_t times[4] = {};
  bool have_times = false;
  if (watch->profiling && status == CL_COMPLETE) {
    static const cl_profiling_info params[4] = {CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
                                                CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END};
    have_times = true;
    for (int i = 0; i < 4; i++)
      if (clGetEventProfilingInfo(watch->event, params[i], sizeof(cl_ulong), &times[i], nullptr) != CL_SUCCESS)
        have_times = false;
  }
  fedcl::trace::mark(fedcl::trace::Point::daemon_completion_seen, 0, 0);
  watch->server->post([watch, status, have_times, t0 = times[0], t1 = times[1], t2 = times[2], t3 = times[3]] {
    fedcl::trace::mark(fedcl::trace::Point::daemon_completion_run, 0, 0);
    std::unique_ptr<Watch> owned(watch);
    // Released last: the answers go first (a backend may take microseconds to release an event).
    struct ReleaseLast {
      cl_event event;
      Server *server;
      ~ReleaseLast() {
        if (event) clReleaseEvent(event);
        server->watch_done();
      }
    } release_last{owned->event, owned->server};
    cl_int outcome = failures_settle(owned->event, status);  // a command behind a failure fedcld kept from the backend
    auto session = owned->session.lock();
    if (!session || session->closed()) return;
    if (status < 0) {
      session->objects().keep_failed_event(owned->event);  // ObjectTable::keep_failed_event says why
      release_last.event = nullptr;
    }
    count_deferred_request(*session, owned->timing, outcome < 0);
    const uint64_t times[4] = {t0, t1, t2, t3};
    try {
      owned->handler(*session, outcome, have_times ? times : nullptr);
    } catch (const RequestError &error) {
      session->notify_error(owned->queue_id, 0, error.status, error.message);
    }
    auto &objects = session->objects();
    if (objects.contains(owned->queue_id)) {
      QueueState &queue = *objects.get(owned->queue_id, ObjectKind::queue).queue;
      if (queue.last == owned->event) queue.last_watched = false;
      for (auto it = queue.finish_behind.begin(); it != queue.finish_behind.end();) {
        if (it->first != owned->event) {
          ++it;
          continue;
        }
        queue.finish_waiters.push_back(it->second);
        it = queue.finish_behind.erase(it);
      }
      if (--queue.outstanding == 0 && !queue.finish_waiters.empty()) {
        for (const FinishWaiter &waiter : queue.finish_waiters) answer_finish(*session, queue, waiter);
        queue.finish_waiters.clear();
      }
    }
    if (status < 0) sweep_failed_watches();  // commands that waited for this one failed with it
  });
}

void CL_CALLBACK on_event(cl_event event, cl_int status, void *user_data) {
  // NVIDIA calls back with CL_COMPLETE for a command that failed because an event it waited for
  // failed; the event's execution status tells the truth.
  cl_int execution = status;
  if (status >= 0 &&
      clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof execution, &execution, nullptr) == CL_SUCCESS &&
      execution < 0)
    status = execution;
  if (Watch *watch = claim(reinterpret_cast<uintptr_t>(user_data))) deliver(watch, status);
}

}  // namespace

void watch_event(Session &session, uint64_t queue_id, cl_event event, CompletionHandler handler) {
  QueueState *queue = queue_id ? session.objects().get(queue_id, ObjectKind::queue).queue.get() : nullptr;
  clRetainEvent(event);
  auto *watch = new Watch{session.weak_from_this(), &session.server(), queue_id, queue && queue->profiling,
                          std::move(handler), event, defer_request_count()};
  session.server().watch_started();
  uintptr_t serial;
  {
    std::lock_guard<std::mutex> lock(g_watches_mutex);
    serial = g_next_watch++;
    g_watches.emplace(serial, watch);
  }
  // A waiter polls every event it watches, so for a backend whose callbacks come late (the waiter
  // always wins) a callback would only cost its registration.
  bool waiter_alone = session.waits_for_events();
  cl_int err = waiter_alone ? CL_SUCCESS : clSetEventCallback(event, CL_COMPLETE, on_event, reinterpret_cast<void *>(serial));
  if (err != CL_SUCCESS) {
    claim(serial);
    clReleaseEvent(event);
    delete watch;
    session.server().watch_done();
    fail(err, "clSetEventCallback failed");
  }
  if (queue) queue->outstanding++;
  if (session.waits_for_events()) {
    std::unique_ptr<EventWaiter> &waiter = queue ? queue->waiter : session.event_waiter;
    if (!waiter) waiter = std::make_unique<EventWaiter>(session.server().busy_poll());
    waiter->watch(event, [serial](cl_int status) {
      if (Watch *watch = claim(serial)) deliver(watch, status);
    });
  }
  // A command behind an event that had already failed may fail at once, and silently. (A waiter
  // finds that at its next poll: on NVIDIA the question cost the loop a driver call per launch.)
  cl_int status = CL_COMPLETE;
  if (!session.waits_for_events() &&
      clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) == CL_SUCCESS &&
      status < 0)
    if (Watch *failed = claim(serial)) deliver(failed, status);
}

void sweep_failed_watches() {
  // Runs on the loop, which alone releases the watches' events: those listed stay valid meanwhile.
  std::vector<std::pair<uintptr_t, cl_event>> pending;
  {
    std::lock_guard<std::mutex> lock(g_watches_mutex);
    for (const auto &entry : g_watches) pending.emplace_back(entry.first, entry.second->event);
  }
  for (const auto &[serial, event] : pending) {
    cl_int status = CL_COMPLETE;
    if (clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) != CL_SUCCESS ||
        status >= 0)
      continue;
    if (Watch *watch = claim(serial)) deliver(watch, status);
  }
}

cl_int settle_user_event(cl_event event, cl_int status) {
  bool backend_failed = false;
  cl_int err = failures_set_user_event(event, status, &backend_failed);
  if (backend_failed) sweep_failed_watches();
  return err;
}

void set_user_event_status(cl_event event, cl_int status) { check(settle_user_event(event, status), "clSetUserEventStatus"); }

void fill_info(capnp::List<wire::InfoEntry>::Builder entries, const std::vector<InfoValue> &info) {
  for (size_t i = 0; i < info.size(); i++) {
    entries[i].setParam(info[i].param);
    entries[i].setValue(kj::arrayPtr(info[i].value.data(), info[i].value.size()));
  }
}

namespace {

template <typename Query>
std::vector<uint8_t> query_bytes(Query query) {
  size_t size = 0;
  check(query(0, nullptr, &size), "info size query");
  std::vector<uint8_t> bytes(size);
  if (size) check(query(size, bytes.data(), nullptr), "info query");
  return bytes;
}

}  // namespace

// CL_PROGRAM_BINARIES takes an array of pointers: answer with the binaries back to back, in
// device order, and let the client split them by CL_PROGRAM_BINARY_SIZES.
std::vector<uint8_t> program_binaries(cl_program program) {
  std::vector<uint8_t> size_bytes = query_bytes([&](size_t n, void *v, size_t *r) {
    return clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, n, v, r);
  });
  std::vector<size_t> sizes(size_bytes.size() / sizeof(size_t));
  std::memcpy(sizes.data(), size_bytes.data(), size_bytes.size());
  size_t total = 0;
  for (size_t s : sizes) total += s;
  std::vector<uint8_t> all(total);
  std::vector<unsigned char *> pointers;
  size_t offset = 0;
  for (size_t s : sizes) {
    pointers.push_back(s ? all.data() + offset : nullptr);
    offset += s;
  }
  check(clGetProgramInfo(program, CL_PROGRAM_BINARIES, pointers.size() * sizeof(void *), pointers.data(), nullptr),
        "clGetProgramInfo(CL_PROGRAM_BINARIES)");
  return all;
}

namespace {

void send_info(Session &session, uint64_t seq, const std::vector<uint8_t> &bytes) {
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setSeq(seq);
  reply.setInfo(kj::arrayPtr(bytes.data(), bytes.size()));
  session.send_reply(message);
}

// A program's binaries, or their sizes, may be made when first asked for (NVIDIA finishes a program
// from PTX there): the query runs off the loop.
class ProgramBinariesWork final : public OffLoopWork {
 public:
  ProgramBinariesWork(cl_program program, cl_uint param) : program_(program), param_(param) { clRetainProgram(program_); }
  ~ProgramBinariesWork() override { clReleaseProgram(program_); }

  void run() override {
    if (param_ == CL_PROGRAM_BINARIES) bytes_ = program_binaries(program_);
    else bytes_ = query_bytes([&](size_t n, void *v, size_t *r) { return clGetProgramInfo(program_, param_, n, v, r); });
  }

  bool finish(Session &session, uint64_t seq) override {
    send_info(session, seq, bytes_);
    return true;
  }

 private:
  cl_program program_;
  cl_uint param_;
  std::vector<uint8_t> bytes_;
};

}  // namespace

void exec_get_info(Call &call, wire::Request::GetInfo::Reader request) {
  ObjectTable &objects = call.session.objects();
  uint64_t id = request.getObject();
  call.object = id;
  cl_uint param = request.getParam();
  std::vector<uint8_t> bytes;
  switch (request.getKind()) {
    case wire::InfoKind::PROGRAM: {
      auto program = objects.handle<cl_program>(id, ObjectKind::program);
      if (param == CL_PROGRAM_BINARIES || param == CL_PROGRAM_BINARY_SIZES) {
        run_off_loop(call, "clGetProgramInfo(CL_PROGRAM_BINARIES)", std::make_unique<ProgramBinariesWork>(program, param));
        return;
      }
      bytes = query_bytes([&](size_t n, void *v, size_t *r) { return clGetProgramInfo(program, param, n, v, r); });
      break;
    }
    case wire::InfoKind::PROGRAM_BUILD: {
      auto program = objects.handle<cl_program>(id, ObjectKind::program);
      auto device = objects.handle<cl_device_id>(request.getDevice(), ObjectKind::device);
      bytes = query_bytes([&](size_t n, void *v, size_t *r) { return clGetProgramBuildInfo(program, device, param, n, v, r); });
      break;
    }
    case wire::InfoKind::KERNEL: {
      auto kernel = objects.handle<cl_kernel>(id, ObjectKind::kernel);
      bytes = query_bytes([&](size_t n, void *v, size_t *r) { return clGetKernelInfo(kernel, param, n, v, r); });
      break;
    }
    case wire::InfoKind::KERNEL_WORK_GROUP: {
      auto kernel = objects.handle<cl_kernel>(id, ObjectKind::kernel);
      auto device = objects.handle<cl_device_id>(request.getDevice(), ObjectKind::device);
      bytes = query_bytes([&](size_t n, void *v, size_t *r) { return clGetKernelWorkGroupInfo(kernel, device, param, n, v, r); });
      break;
    }
    case wire::InfoKind::KERNEL_ARG: {
      auto kernel = objects.handle<cl_kernel>(id, ObjectKind::kernel);
      cl_uint index = request.getArgIndex();
      bytes = query_bytes([&](size_t n, void *v, size_t *r) { return clGetKernelArgInfo(kernel, index, param, n, v, r); });
      break;
    }
    case wire::InfoKind::KERNEL_SUB_GROUP: {
      auto kernel = objects.handle<cl_kernel>(id, ObjectKind::kernel);
      auto device = objects.handle<cl_device_id>(request.getDevice(), ObjectKind::device);
      auto input = request.getInput();
      bytes = query_bytes([&](size_t n, void *v, size_t *r) {
        return clGetKernelSubGroupInfo(kernel, device, param, input.size(), input.size() ? input.begin() : nullptr, n, v, r);
      });
      break;
    }
    case wire::InfoKind::MEM: {
      auto mem = objects.handle<cl_mem>(id, ObjectKind::mem);
      bytes = query_bytes([&](size_t n, void *v, size_t *r) { return clGetMemObjectInfo(mem, param, n, v, r); });
      break;
    }
    case wire::InfoKind::QUEUE: {
      auto queue = objects.handle<cl_command_queue>(id, ObjectKind::queue);
      bytes = query_bytes([&](size_t n, void *v, size_t *r) { return clGetCommandQueueInfo(queue, param, n, v, r); });
      break;
    }
    case wire::InfoKind::CONTEXT: {
      auto context = objects.handle<cl_context>(id, ObjectKind::context);
      bytes = query_bytes([&](size_t n, void *v, size_t *r) { return clGetContextInfo(context, param, n, v, r); });
      break;
    }
    default: fail(CL_INVALID_VALUE, "this fedcld cannot answer that kind of query");
  }
  send_info(call.session, call.seq, bytes);
  call.replied = true;
}

namespace {
// A command that failed before reaching the device still gets its event on the daemon, already
// failed, so that commands waiting for it fail as the specification says instead of finding no event.
void fail_event(Call &call, cl_int status) {
  // Runs while a failure is answered, so it must not fail itself: an id the client may not use is left alone.
  if (call.context == nullptr || !call.session.objects().can_add(call.event)) return;
  cl_int err = CL_SUCCESS;
  cl_event event = clCreateUserEvent(call.context, &err);
  if (err != CL_SUCCESS) return;
  clSetUserEventStatus(event, status < 0 ? status : CL_INVALID_OPERATION);
  call.session.objects().add(call.event, ObjectKind::event, event);
}
}  // namespace

namespace {

// Every request fedcld serves: its member of the Request union, whether a payload may travel with
// it, and what runs it. Requests not listed are refused.
struct RequestHandler {
  wire::Request::Which which;
  bool carries_payload;
  const char *call;  // the backend call it makes, named should the backend crash in it; null: none
  void (*run)(Call &call, wire::Request::Reader request, Frame &frame);
};

#define HANDLE(WHICH, PAYLOAD, CALL, ...) \
  {wire::Request::WHICH, PAYLOAD, CALL, [](Call &c, wire::Request::Reader r, Frame &f) { (void)f; __VA_ARGS__; }}

const RequestHandler kHandlers[] = {
    HANDLE(ACK, false, nullptr, c.session.acknowledged(r.getAck())),
    HANDLE(GOODBYE, false, nullptr, c.session.close("the client said goodbye")),
    HANDLE(CREATE_CONTEXT, false, "clCreateContext", exec_create_context(c, r.getCreateContext())),
    HANDLE(CREATE_QUEUE, false, "clCreateCommandQueueWithProperties", exec_create_queue(c, r.getCreateQueue())),
    HANDLE(CREATE_BUFFER, true, "clCreateBuffer", exec_create_buffer(c, r.getCreateBuffer(), f)),
    HANDLE(CREATE_SUB_BUFFER, false, "clCreateSubBuffer", exec_create_sub_buffer(c, r.getCreateSubBuffer())),
    HANDLE(CREATE_PROGRAM_WITH_SOURCE, false, "clCreateProgramWithSource", exec_create_program(c, r.getCreateProgramWithSource())),
    HANDLE(BUILD_PROGRAM, false, "clBuildProgram", exec_build_program(c, r.getBuildProgram())),
    HANDLE(CREATE_KERNEL, false, "clCreateKernel", exec_create_kernel(c, r.getCreateKernel())),
    HANDLE(CREATE_USER_EVENT, false, "clCreateUserEvent", exec_create_user_event(c, r.getCreateUserEvent())),
    HANDLE(SET_USER_EVENT_STATUS, false, "clSetUserEventStatus", exec_set_user_event_status(c, r.getSetUserEventStatus())),
    HANDLE(RELEASE, false, "clRelease*", exec_release(c, r.getRelease())),
    HANDLE(WRITE_BUFFER, true, "clEnqueueWriteBuffer", exec_write_buffer(c, r.getWriteBuffer(), f)),
    HANDLE(READ_BUFFER, false, "clEnqueueReadBuffer", exec_read_buffer(c, r.getReadBuffer())),
    HANDLE(COPY_BUFFER, false, "clEnqueueCopyBuffer", exec_device_command(c, r.getCopyBuffer().getCommand(), r)),
    HANDLE(FILL_BUFFER, false, "clEnqueueFillBuffer", exec_device_command(c, r.getFillBuffer().getCommand(), r)),
    HANDLE(ND_RANGE, false, "clEnqueueNDRangeKernel", exec_nd_range(c, r.getNdRange())),
    HANDLE(MARKER, false, "clEnqueueMarkerWithWaitList", exec_marker(c, r.getMarker(), false)),
    HANDLE(BARRIER, false, "clEnqueueBarrierWithWaitList", exec_marker(c, r.getBarrier(), true)),
    HANDLE(FLUSH, false, "clFlush", exec_flush(c, r.getFlush())),
    HANDLE(FINISH, false, "clFinish", exec_finish(c, r.getFinish())),
    HANDLE(GET_INFO, false, "clGet*Info", exec_get_info(c, r.getGetInfo())),
    HANDLE(CREATE_IMAGE, true, "clCreateImage", exec_create_image(c, r.getCreateImage(), f)),
    HANDLE(CREATE_SAMPLER, false, "clCreateSamplerWithProperties", exec_create_sampler(c, r.getCreateSampler())),
    HANDLE(GET_SUPPORTED_IMAGE_FORMATS, false, "clGetSupportedImageFormats", exec_get_supported_image_formats(c, r.getGetSupportedImageFormats())),
    HANDLE(READ_IMAGE, false, "clEnqueueReadImage", exec_read_image(c, r.getReadImage())),
    HANDLE(WRITE_IMAGE, true, "clEnqueueWriteImage", exec_write_image(c, r.getWriteImage(), f)),
    HANDLE(COPY_IMAGE, false, "clEnqueueCopyImage", exec_device_command(c, r.getCopyImage().getCommand(), r)),
    HANDLE(FILL_IMAGE, false, "clEnqueueFillImage", exec_device_command(c, r.getFillImage().getCommand(), r)),
    HANDLE(COPY_IMAGE_TO_BUFFER, false, "clEnqueueCopyImageToBuffer", exec_device_command(c, r.getCopyImageToBuffer().getCommand(), r)),
    HANDLE(COPY_BUFFER_TO_IMAGE, false, "clEnqueueCopyBufferToImage", exec_device_command(c, r.getCopyBufferToImage().getCommand(), r)),
    HANDLE(READ_BUFFER_RECT, false, "clEnqueueReadBufferRect", exec_read_buffer_rect(c, r.getReadBufferRect())),
    HANDLE(WRITE_BUFFER_RECT, true, "clEnqueueWriteBufferRect", exec_write_buffer_rect(c, r.getWriteBufferRect(), f)),
    HANDLE(COPY_BUFFER_RECT, false, "clEnqueueCopyBufferRect", exec_device_command(c, r.getCopyBufferRect().getCommand(), r)),
    HANDLE(CREATE_PROGRAM_WITH_BINARY, false, "clCreateProgramWithBinary", exec_create_program_with_binary(c, r.getCreateProgramWithBinary())),
    HANDLE(CREATE_PROGRAM_WITH_I_L, false, "clCreateProgramWithIL", exec_create_program_with_il(c, r.getCreateProgramWithIL())),
    HANDLE(CREATE_PROGRAM_WITH_BUILT_IN_KERNELS, false, "clCreateProgramWithBuiltInKernels", exec_create_program_with_built_in_kernels(c, r.getCreateProgramWithBuiltInKernels())),
    HANDLE(COMPILE_PROGRAM, false, "clCompileProgram", exec_compile_program(c, r.getCompileProgram())),
    HANDLE(LINK_PROGRAM, false, "clLinkProgram", exec_link_program(c, r.getLinkProgram())),
    HANDLE(SET_SPECIALIZATION_CONSTANT, false, "clSetProgramSpecializationConstant", exec_set_specialization_constant(c, r.getSetSpecializationConstant())),
    HANDLE(CREATE_SUB_DEVICES, false, "clCreateSubDevices", exec_create_sub_devices(c, r.getCreateSubDevices())),
    HANDLE(PEER_CONNECT, false, nullptr, exec_peer_connect(c, r.getPeerConnect())),
    HANDLE(SEND_TO_PEER, false, "clEnqueueReadBuffer (a transfer to a peer)", exec_send_to_peer(c, r.getSendToPeer())),
    HANDLE(RECEIVE_FROM_PEER, false, "clEnqueueWriteBuffer (a transfer from a peer)", exec_receive_from_peer(c, r.getReceiveFromPeer())),
    HANDLE(SIGNAL_PEER, false, "clSetEventCallback (a signal to a peer)", exec_signal_peer(c, r.getSignalPeer())),
    HANDLE(TRANSFER_DATA, true, "clEnqueueWriteBuffer (a transfer from the client)", exec_transfer_data(c, r.getTransferData(), f)),
    HANDLE(TRANSFER_ABORT, false, nullptr, exec_transfer_abort(c, r.getTransferAbort())),
    HANDLE(NODE_FILE, false, "a node file transfer", exec_node_file(c, r.getNodeFile())),
    HANDLE(TRANSFER_TO, false, nullptr, exec_transfer_to(c, r.getTransferTo())),
    HANDLE(TRANSFER_FROM, false, nullptr, exec_transfer_from(c, r.getTransferFrom())),
    HANDLE(CREATE_COMMAND_BUFFER, false, nullptr, exec_create_command_buffer(c, r.getCreateCommandBuffer())),
    HANDLE(RECORD_COMMAND, false, "clCreateKernel (a command buffer's launch)", exec_record_command(c, r.getRecordCommand())),
    HANDLE(UPDATE_COMMAND, false, "clSetKernelArg (a command buffer's launch)", exec_update_command(c, r.getUpdateCommand())),
    HANDLE(ENQUEUE_COMMAND_BUFFER, false, "clEnqueue* (a command buffer's replay)", exec_enqueue_command_buffer(c, r.getEnqueueCommandBuffer())),
    HANDLE(WATCH_EVENT, false, "clSetEventCallback (an event the client asks about)", exec_watch_event(c, r.getWatchEvent())),
    HANDLE(SHARED_MEMORY, false, nullptr, exec_shared_memory(c, r.getSharedMemory())),
};

#undef HANDLE

const RequestHandler *handler_for(wire::Request::Which which) {
  static const auto table = [] {
    std::array<const RequestHandler *, 128> by_which{};
    for (const RequestHandler &handler : kHandlers) by_which.at(size_t(handler.which)) = &handler;
    return by_which;
  }();
  return size_t(which) < table.size() ? table[size_t(which)] : nullptr;
}

// The requests that may run while work of their session runs off the loop (a build, a context:
// off_loop.h): commands on queues that exist, the calls that complete or wait for them, and
// transfers. None names a program or makes an object, so none needs what that work makes, and none
// is needed by it (the first request that is not listed waits, and every one after it). So a
// thread's kernels and copies go on while another thread of the program builds, as they do on a
// driver directly.
constexpr wire::Request::Which kOvertakeBackgroundWork[] = {
    wire::Request::ACK, wire::Request::WRITE_BUFFER, wire::Request::READ_BUFFER, wire::Request::COPY_BUFFER,
    wire::Request::FILL_BUFFER, wire::Request::ND_RANGE, wire::Request::MARKER, wire::Request::BARRIER,
    wire::Request::FLUSH, wire::Request::FINISH, wire::Request::SET_USER_EVENT_STATUS, wire::Request::READ_IMAGE,
    wire::Request::WRITE_IMAGE, wire::Request::COPY_IMAGE, wire::Request::FILL_IMAGE,
    wire::Request::COPY_IMAGE_TO_BUFFER, wire::Request::COPY_BUFFER_TO_IMAGE, wire::Request::READ_BUFFER_RECT,
    wire::Request::WRITE_BUFFER_RECT, wire::Request::COPY_BUFFER_RECT, wire::Request::SEND_TO_PEER,
    wire::Request::RECEIVE_FROM_PEER, wire::Request::SIGNAL_PEER, wire::Request::TRANSFER_DATA,
    wire::Request::TRANSFER_ABORT, wire::Request::TRANSFER_TO, wire::Request::TRANSFER_FROM,
    wire::Request::WATCH_EVENT,
};

}  // namespace

bool request_overtakes_background_work(const Frame &frame) {
  if (frame.header.kind != uint16_t(wire::FrameKind::REQUEST)) return false;
  try {
    capnp::FlatArrayMessageReader reader(frame.message.asPtr());
    wire::Request::Which which = reader.getRoot<wire::Request>().which();
    return std::find(std::begin(kOvertakeBackgroundWork), std::end(kOvertakeBackgroundWork), which) !=
           std::end(kOvertakeBackgroundWork);
  } catch (const kj::Exception &) {
    return false;  // malformed: it waits its turn, and execute_request() answers it
  }
}

std::string request_payload_problem(wire::Request::Reader request, uint64_t payload_bytes) {
  const RequestHandler *handler = handler_for(request.which());
  if (!handler || !handler->carries_payload) return "a payload with a request that takes none";
  auto differs = [&](uint64_t stated) {
    return "a payload of " + std::to_string(payload_bytes) + " bytes with a request for " + std::to_string(stated);
  };
  switch (request.which()) {
    case wire::Request::WRITE_BUFFER:
      if (payload_bytes != request.getWriteBuffer().getSize()) return differs(request.getWriteBuffer().getSize());
      break;
    case wire::Request::CREATE_BUFFER:
      if (payload_bytes != request.getCreateBuffer().getSize()) return differs(request.getCreateBuffer().getSize());
      break;
    case wire::Request::TRANSFER_DATA:
      if (payload_bytes > fedcl::kMaxTransferChunkBytes) return differs(fedcl::kMaxTransferChunkBytes) + " at most";
      break;
    default: break;  // images and rectangles: their exact size is checked against the object as they run
  }
  return {};
}

std::shared_ptr<uint8_t[]> take_payload(Frame &frame, uint64_t expected, const char *mismatch) {
  if (!frame.payload_refused.empty()) fail(CL_MEM_OBJECT_ALLOCATION_FAILURE, frame.payload_refused);
  if (frame.header.payload_bytes != expected) fail(CL_INVALID_VALUE, mismatch);
  return std::move(frame.payload);
}

void execute_request(Session &session, Frame &frame) {
  capnp::FlatArrayMessageReader reader(frame.message.asPtr());
  auto request = reader.getRoot<wire::Request>();
  Call call{session, request.getSeq()};
  fedcl::trace::mark(fedcl::trace::Point::daemon_read, session.peer_port(), call.seq);
  wire::Request::Which which = request.which();
  // The handshake was the main process's (exec_handshake.cpp): a session runs it once.
  if (which == wire::Request::HELLO || which == wire::Request::DAEMON_STATUS || which == wire::Request::AUTHENTICATE ||
      which == wire::Request::RESUME) {
    session.close("a second handshake");
    return;
  }
  if (request.hasSharedPayload()) {
    std::string why = take_shared_payload(session, request, frame);
    if (!why.empty()) return session.close("shared memory: " + why);
  }
  if (request.hasSharedReply()) {
    auto span = request.getSharedReply();
    const auto &region = session.shared_memory;
    if (!region || span.getSlot() >= region->slots() || span.getBytes() > region->slot_bytes())
      return session.close("shared memory: a reply asked for in a slot outside it");
    call.shared_reply_slot = span.getSlot();
    call.shared_reply_bytes = span.getBytes();
  }
  const RequestHandler *handler = handler_for(which);
  if (frame.header.payload_bytes != 0 && !(handler && handler->carries_payload)) {
    session.close("unexpected payload");
    return;
  }
  RequestClock clock{unsigned(which), uv_hrtime()};
  g_request = &clock;
  struct CountAtEnd {
    Session &session;
    RequestClock &clock;
    bool failed = true;
    ~CountAtEnd() {
      g_request = nullptr;
      if (!clock.watched)  // else the command's completion counts it
        board_count_request(session.host().board(), clock.which, failed, uv_hrtime() - clock.started_ns);
    }
  } count_at_end{session, clock};
  try {
    if (!handler) fail(CL_INVALID_OPERATION, "request kind " + std::to_string(unsigned(which)) + " is not known to this fedcld");
    BackendCall backend_call(handler->call);
    handler->run(call, request, frame);
    fedcl::trace::mark(fedcl::trace::Point::daemon_executed, session.peer_port(), call.seq);
    count_at_end.failed = false;
    if (call.seq != 0 && !call.replied) session.send_status(call.seq, CL_SUCCESS, "");
  } catch (const RequestError &error) {
    fail_event(call, error.status);
    if (call.seq != 0) {
      // A plain status reply completes no event: a failed read's event must still complete, failed.
      if (call.event != 0) session.notify_completion(call.event, error.status < 0 ? error.status : CL_INVALID_OPERATION, nullptr);
      session.send_status(call.seq, error.status, error.message);
    } else
      session.notify_error(call.object, call.event, error.status, error.message, call.context);
  }
}

}  // namespace fedcld
