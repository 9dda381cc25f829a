// Request execution in a session worker, shared by the handler files: exec.cpp (the dispatch table,
// queries), exec_objects.cpp (object creation and release), exec_commands.cpp (enqueued commands),
// exec_programs.cpp (building, compiling and linking programs; sub-devices).
#pragma once

#include <functional>

#include "auth.h"
#include "backend.h"
#include "event_failures.h"
#include "print_gate.h"
#include "session.h"

namespace fedcld {

namespace wire = fedcl::wire;

// The request being executed: where its errors go.
struct Call {
  Session &session;
  uint64_t seq;
  uint64_t object = 0;   // the queue or object the request names, for AsyncError
  uint64_t event = 0;    // the command's event id, if it has one
  cl_context context = nullptr;  // the queue's context, once known: a failed command's event lives there
  bool replied = false;  // the handler sent the reply itself or will send it later
  uint32_t shared_reply_slot = 0;  // the request's Request.sharedReply, if shared_reply_bytes
  uint64_t shared_reply_bytes = 0;
};

[[noreturn]] void fail(cl_int status, const std::string &message);

// A request's time on the board, for a handler that answers later (a build on libuv's threads):
// taken while the request runs, counted once the answer goes.
struct RequestTiming {
  bool taken = false;
  unsigned which = 0;
  uint64_t started_ns = 0;
};
RequestTiming defer_request_count();
void count_deferred_request(Session &session, const RequestTiming &timing, bool failed);
// A request's payload, of expected bytes: fails with mismatch when it has another size, and as out
// of memory when it was more than the session may hold and never kept (Frame::payload_refused).
std::shared_ptr<uint8_t[]> take_payload(Frame &frame, uint64_t expected, const char *mismatch);
// Throws RequestError if status is not CL_SUCCESS.
void check(cl_int status, const char *what);

// Called on the loop once a backend event completed; status is CL_COMPLETE or negative.
using CompletionHandler = std::function<void(Session &, cl_int status, const uint64_t *profiling)>;
// Watches event (which must already be flushed towards the device) on behalf of queue queue_id
// (0: of no queue; clFinish does not wait for it).
void watch_event(Session &session, uint64_t queue_id, cl_event event, CompletionHandler handler);
// Delivers the watches whose events failed without calling back (PoCL does that to commands that
// wait for a failed event). On the loop.
void sweep_failed_watches();
// clSetUserEventStatus (through event_failures.h), then the sweep when the backend saw a failure.
// set_user_event_status throws where the backend refuses; settle_user_event returns its error.
void set_user_event_status(cl_event event, cl_int status);
cl_int settle_user_event(cl_event event, cl_int status);

// What every enqueued command shares (exec_commands.cpp): its queue and wait list, resolved
// against the session's objects.
struct Resolved {
  cl_command_queue queue = nullptr;
  QueueState *state = nullptr;
  std::vector<cl_event> wait;
  cl_event event = nullptr;
  bool unwatched = false;  // the client's bookkeeping alone (wire::Command.unwatched): no watch, no notice
  PendingEvents behind;    // the user events it runs behind (event_failures.h)
  const cl_event *wait_ptr() const { return wait.empty() ? nullptr : wait.data(); }
  cl_uint wait_count() const { return static_cast<cl_uint>(wait.size()); }
};
Resolved resolve(Call &call, wire::Command::Reader command, Ordering ordering = Ordering::command);
// After the backend accepted a command: keep its event under the client's id, tell the client when
// it completes, and remember it as the queue's latest command. extra runs first, on the loop, for
// commands with work of their own to finish.
void track(Call &call, Resolved &resolved, CompletionHandler extra = nullptr, bool notify = true);
// A backend event is needed when the client has one, and on in-order queues to know the latest command.
cl_event *event_out(Call &call, Resolved &resolved);
// Reads: the host memory the backend reads into, and the reply that carries it back once the
// backend's event completed (that reply also completes the client's event).
// The slot of the session's shared memory the request named for its reply (shared_memory.h), else
// memory of its own.
std::shared_ptr<uint8_t[]> read_buffer_for(Call &call, uint64_t size);
// Memory of the session's own, whatever the request asked (bytes that go to a peer, not the client).
std::shared_ptr<uint8_t[]> read_buffer_for(Session &session, uint64_t size);
void track_read(Call &call, Resolved &resolved, std::shared_ptr<uint8_t[]> data, uint64_t size,
                Session::Payload kind = Session::Payload::owned);

// Copies a device's or platform's info into a DeviceDesc or PlatformDesc list of n = info.size() entries.
void fill_info(capnp::List<wire::InfoEntry>::Builder entries, const std::vector<InfoValue> &info);
// CL_PROGRAM_BINARIES: every device's binary of program, back to back in the order of
// CL_PROGRAM_DEVICES (the client splits them by CL_PROGRAM_BINARY_SIZES).
std::vector<uint8_t> program_binaries(cl_program program);
// The devices named by ids, as backend handles.
std::vector<cl_device_id> devices_of(ObjectTable &objects, capnp::List<uint64_t>::Reader ids);

void exec_get_info(Call &call, wire::Request::GetInfo::Reader request);

void exec_create_context(Call &call, wire::Request::CreateContext::Reader request);
void exec_create_queue(Call &call, wire::Request::CreateQueue::Reader request);
void exec_create_buffer(Call &call, wire::Request::CreateBuffer::Reader request, Frame &frame);
void exec_create_sub_buffer(Call &call, wire::Request::CreateSubBuffer::Reader request);
void exec_create_program(Call &call, wire::Request::CreateProgramWithSource::Reader request);
void exec_create_kernel(Call &call, wire::Request::CreateKernel::Reader request);
void exec_create_user_event(Call &call, wire::Request::CreateUserEvent::Reader request);
void exec_set_user_event_status(Call &call, wire::Request::SetUserEventStatus::Reader request);
void exec_release(Call &call, uint64_t id);

void exec_write_buffer(Call &call, wire::Request::WriteBuffer::Reader request, Frame &frame);
void exec_read_buffer(Call &call, wire::Request::ReadBuffer::Reader request);
void exec_nd_range(Call &call, wire::Request::NDRange::Reader request);
// A launch's sizes, checked.
struct LaunchGeometry {
  cl_uint dims = 0;
  size_t offset[3] = {}, global[3] = {}, local[3] = {};
  bool has_offset = false, has_local = false;
  const size_t *offset_or_null() const { return has_offset ? offset : nullptr; }
  const size_t *local_or_null() const { return has_local ? local : nullptr; }
};
LaunchGeometry launch_geometry(wire::Request::NDRange::Reader request);
// Sets args on kernel, the handles they name resolved in objects.
void set_kernel_args(ObjectTable &objects, cl_kernel kernel, capnp::List<wire::KernelArg>::Reader args);
void exec_marker(Call &call, wire::Command::Reader command, bool barrier);
void exec_flush(Call &call, uint64_t queue);
void exec_finish(Call &call, uint64_t queue);
// The reply to a clFinish, once the commands before it have completed: with those of its unreported
// commands that failed (Reply.finished).
void answer_finish(Session &session, QueueState &queue, const FinishWaiter &waiter);
void exec_watch_event(Call &call, wire::Request::WatchEvent::Reader request);

// exec_images.cpp: images, samplers, rectangular buffer transfers.
void exec_create_image(Call &call, wire::Request::CreateImage::Reader request, Frame &frame);
void exec_create_sampler(Call &call, wire::Request::CreateSampler::Reader request);
void exec_get_supported_image_formats(Call &call, wire::Request::GetSupportedImageFormats::Reader request);
void exec_read_image(Call &call, wire::Request::ReadImage::Reader request);
void exec_write_image(Call &call, wire::Request::WriteImage::Reader request, Frame &frame);
void exec_read_buffer_rect(Call &call, wire::Request::ReadBufferRect::Reader request);
void exec_write_buffer_rect(Call &call, wire::Request::WriteBufferRect::Reader request, Frame &frame);

// exec_programs.cpp: programs from binaries and IL, build, compile and link; sub-devices.
void exec_build_program(Call &call, wire::Request::BuildProgram::Reader request);
void exec_create_program_with_binary(Call &call, wire::Request::CreateProgramWithBinary::Reader request);
void exec_create_program_with_il(Call &call, wire::Request::CreateProgramWithIL::Reader request);
void exec_create_program_with_built_in_kernels(Call &call, wire::Request::CreateProgramWithBuiltInKernels::Reader request);
void exec_compile_program(Call &call, wire::Request::CompileProgram::Reader request);
void exec_link_program(Call &call, wire::Request::LinkProgram::Reader request);
void exec_set_specialization_constant(Call &call, wire::Request::SetSpecializationConstant::Reader request);
void exec_create_sub_devices(Call &call, wire::Request::CreateSubDevices::Reader request);

}  // namespace fedcld
