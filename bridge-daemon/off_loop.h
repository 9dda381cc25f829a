// A request whose backend call can take long (a program build, a program from binaries, a context):
// the call runs on libuv's thread pool and the rest of the request (the objects it made, its reply)
// on the loop once it is done. Meanwhile the session's commands on queues go on, and its other
// requests wait (Session::background_work_started): a slow driver call holds up neither another
// session (each has its process) nor this session's other threads' kernels.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "exec.h"

namespace fedcld {

class OffLoopWork {
 public:
  virtual ~OffLoopWork() = default;
  // On a pool thread: the backend call. May throw RequestError, reported as the request's failure.
  virtual void run() = 0;
  // On the loop, unless the session closed meanwhile (then only the destructor runs): the rest of
  // the request, replying to seq (0: a request without reply, whose failure is a notice). Returns
  // whether the backend call succeeded, for the request counters. May throw RequestError.
  virtual bool finish(Session &session, uint64_t seq) = 0;
};

// The end of work that made one object: the session holds it under id from now on (add releases it
// if it refuses the id), and a request with a reply (seq != 0) is answered with success.
Object &keep_made_object(Session &session, uint64_t seq, uint64_t id, ObjectKind kind, void *handle,
                         cl_context context);

// Makes a memory object (make: clCreateBuffer or clCreateImage, given the host memory to copy or
// null) and keeps it under id, charging `charged` bytes to the session. One made from 16 MiB or more
// of host memory is made off the loop, alone: the backend copies inside the call (NVIDIA pins and
// copies: a 24 GiB grid's create held an H200 session's loop until its client gave the daemon up),
// and any later request may name the object. (Where the backend would upload its host copy late,
// exec_create_buffer has the contents written instead: BackendPlatform::uploads_host_copies_late.)
constexpr uint64_t kOffLoopContentsBytes = 16 << 20;
void make_mem_object(Call &call, uint64_t id, cl_context context, uint64_t contents_bytes, uint64_t charged,
                     std::shared_ptr<uint8_t[]> contents, const char *backend_call,
                     std::function<cl_mem(void *host, cl_int *err)> make);

// Runs work off the loop for call (call.replied is set: the reply comes from finish). backend_call
// names the call should the backend crash in it. alone: no later request of the session overtakes
// the work (it makes an object that any of them may name).
void run_off_loop(Call &call, const char *backend_call, std::unique_ptr<OffLoopWork> work, bool alone = false);

}  // namespace fedcld
