// Enqueued commands. None of them blocks the loop: completion is learnt from event callbacks.
#include "exec.h"
#include "session_host.h"
#include "shared_memory.h"

namespace fedcld {

Resolved resolve(Call &call, wire::Command::Reader command, Ordering ordering) {
  ObjectTable &objects = call.session.objects();
  call.object = command.getQueue();
  call.event = command.getEvent();
  Object &queue = objects.get(command.getQueue(), ObjectKind::queue);
  // Checked before the command reaches the backend: track() cannot refuse the id once the backend
  // holds the command, whose host memory (a write's payload) must then live until it completes.
  if (call.event != 0 && !objects.can_add(call.event))
    fail(CL_INVALID_VALUE, "event id " + std::to_string(call.event) + " is reserved or already in use");
  call.context = queue.context;
  Resolved resolved;
  resolved.queue = static_cast<cl_command_queue>(queue.handle);
  resolved.state = queue.queue.get();
  resolved.unwatched = command.getUnwatched() && call.event != 0;
  call.session.touch_queue(command.getQueue());
  for (uint64_t id : command.getWaitFor()) {
    if (!objects.contains(id)) fail(CL_INVALID_EVENT_WAIT_LIST, "wait list names unknown event " + std::to_string(id));
    cl_event event = objects.handle<cl_event>(id, ObjectKind::event);
    // PoCL leaves a command queued forever behind an event that has already failed: fail it here.
    cl_int status = failures_status(event);
    if (status < 0)
      fail(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
           "the wait list's event " + std::to_string(id) + " failed with " + std::to_string(status));
    resolved.wait.push_back(event);
  }
  resolved.behind = failures_behind(resolved.wait, resolved.state->in_order, ordering, resolved.state->failures);
  return resolved;
}

// After the backend accepted a command: keep its event under the client's id, tell the client when
// it completes, and remember it as the queue's latest command. extra runs first, on the loop, for
// commands with work of their own to finish.
void track(Call &call, Resolved &resolved, CompletionHandler extra, bool notify) {
  Session &session = call.session;
  cl_event event = resolved.event;
  if (!event) {
    resolved.state->untracked = true;
    return;
  }
  uint64_t event_id = call.event;
  if (event_id != 0) {
    clRetainEvent(event);  // the table's reference; the one the backend gave us is dropped below
    session.objects().add(event_id, ObjectKind::event, event, call.context);
  }
  // An unwatched event is kept under its id for later wait lists, and reported only when the client
  // asks (unreported_events.h): watching it costs the loop a callback and a hand-off, and the client
  // a notice (about 9 us a launch on NVIDIA).
  bool report = notify && event_id != 0 && !resolved.unwatched;
  bool watch = extra || report;
  try {
    if (resolved.unwatched) resolved.state->unreported.add(event_id, event, resolved.behind, session.objects());
    if (watch) {
      failures_remember(event, resolved.behind);
      watch_event(session, call.object, event, [event_id, extra, report](Session &s, cl_int status, const uint64_t *times) {
        if (report) s.completed(event_id, status);
        if (extra) extra(s, status, times);
        if (report) s.notify_completion(event_id, status, times);
      });
      if (report) session.watching(event_id);
    }
  } catch (...) {
    failures_forget(event);
    clReleaseEvent(event);
    throw;
  }
  if (resolved.state->in_order) {
    if (resolved.state->last) clReleaseEvent(resolved.state->last);
    resolved.state->last = event;  // takes over our reference
    resolved.state->last_watched = watch;
    resolved.state->untracked = false;
  } else {
    clReleaseEvent(event);
  }
}

// A backend event only where the client has one: an event costs NVIDIA about 2.3 us a launch (11.1
// against 13.6 us on an H100), a fifth of a tiny kernel's. clFinish pays a marker instead when the
// queue's latest commands have none.
cl_event *event_out(Call &call, Resolved &resolved) { return call.event ? &resolved.event : nullptr; }

std::shared_ptr<uint8_t[]> read_buffer_for(Session &session, uint64_t size) {
  std::shared_ptr<uint8_t[]> data = session.stage(size);
  if (!data) fail(CL_OUT_OF_HOST_MEMORY, "fedcld cannot allocate " + std::to_string(size) + " bytes to read into");
  return data;
}

std::shared_ptr<uint8_t[]> read_buffer_for(Call &call, uint64_t size) {
  if (auto shared = shared_reply_memory(call, size)) return shared;
  return read_buffer_for(call.session, size);
}

void track_read(Call &call, Resolved &resolved, std::shared_ptr<uint8_t[]> data, uint64_t size, Session::Payload kind) {
  // The reply carries the bytes and completes the read's event: the client must not see the event
  // complete before the bytes have landed.
  uint64_t seq = call.seq, event_id = call.event;
  track(call, resolved, [data, size, seq, event_id, kind](Session &s, cl_int status, const uint64_t *times) {
    capnp::MallocMessageBuilder message;
    auto reply = message.initRoot<wire::Reply>();
    reply.setSeq(seq);
    auto completion = reply.initRead();
    completion.setEvent(event_id);
    completion.setStatus(status);
    if (times) {
      auto list = completion.initProfiling(4);
      for (unsigned t = 0; t < 4; t++) list.set(t, times[t]);
    }
    if (status != CL_COMPLETE) {
      reply.setStatus(status);
      reply.setMessage("the read failed on the device");
      s.send_reply(message);
      return;
    }
    s.send_reply(message, data, size, kind);
  }, false);
  call.replied = true;
}

void exec_write_buffer(Call &call, wire::Request::WriteBuffer::Reader request, Frame &frame) {
  Resolved r = resolve(call, request.getCommand());
  auto mem = call.session.objects().handle<cl_mem>(request.getBuffer(), ObjectKind::mem);
  // The payload stays alive until the backend has copied it.
  std::shared_ptr<uint8_t[]> data = take_payload(frame, request.getSize(), "write payload does not match its size");
  check(clEnqueueWriteBuffer(r.queue, mem, CL_FALSE, request.getOffset(), request.getSize(), data.get(),
                             r.wait_count(), r.wait_ptr(), &r.event),
        "clEnqueueWriteBuffer");
  track(call, r, [data](Session &, cl_int, const uint64_t *) {});
}

void exec_read_buffer(Call &call, wire::Request::ReadBuffer::Reader request) {
  Resolved r = resolve(call, request.getCommand());
  auto mem = call.session.objects().handle<cl_mem>(request.getBuffer(), ObjectKind::mem);
  uint64_t size = request.getSize();
  // Where the client asked (its shared memory), else page-locked staging, else memory of its own.
  std::shared_ptr<uint8_t[]> data = shared_reply_memory(call, size);
  if (!data && r.state->staging) data = r.state->staging->take(size, &r.wait);
  Session::Payload kind = data && !call.shared_reply_bytes ? Session::Payload::lent : Session::Payload::owned;
  if (!data) data = read_buffer_for(call, size);
  check(clEnqueueReadBuffer(r.queue, mem, CL_FALSE, request.getOffset(), size, data.get(), r.wait_count(),
                            r.wait_ptr(), &r.event),
        "clEnqueueReadBuffer");
  track_read(call, r, data, size, kind);
}

LaunchGeometry launch_geometry(wire::Request::NDRange::Reader request) {
  auto global = request.getGlobal(), offset = request.getOffset(), local = request.getLocal();
  LaunchGeometry g;
  g.dims = global.size();
  if (g.dims < 1 || g.dims > 3) fail(CL_INVALID_WORK_DIMENSION, "work_dim must be 1, 2 or 3");
  if ((offset.size() && offset.size() != g.dims) || (local.size() && local.size() != g.dims))
    fail(CL_INVALID_VALUE, "offset and local sizes must have work_dim entries");
  g.has_offset = offset.size() != 0;
  g.has_local = local.size() != 0;
  for (cl_uint d = 0; d < g.dims; d++) {
    g.global[d] = global[d];
    if (g.has_offset) g.offset[d] = offset[d];
    if (g.has_local) g.local[d] = local[d];
  }
  return g;
}

void set_kernel_args(ObjectTable &objects, cl_kernel kernel, capnp::List<wire::KernelArg>::Reader args) {
  for (auto arg : args) {
    cl_uint index = arg.getIndex();
    cl_int err = CL_SUCCESS;
    switch (arg.which()) {
      case wire::KernelArg::VALUE: {
        auto bytes = arg.getValue();
        err = clSetKernelArg(kernel, index, bytes.size(), bytes.begin());
        break;
      }
      case wire::KernelArg::MEM_OBJECT: {
        cl_mem mem = arg.getMemObject() ? objects.handle<cl_mem>(arg.getMemObject(), ObjectKind::mem) : nullptr;
        err = clSetKernelArg(kernel, index, sizeof mem, &mem);
        break;
      }
      case wire::KernelArg::LOCAL_SIZE:
        err = clSetKernelArg(kernel, index, arg.getLocalSize(), nullptr);
        break;
      case wire::KernelArg::SAMPLER: {
        cl_sampler sampler = objects.handle<cl_sampler>(arg.getSampler(), ObjectKind::sampler);
        err = clSetKernelArg(kernel, index, sizeof sampler, &sampler);
        break;
      }
    }
    if (err != CL_SUCCESS) fail(err, "clSetKernelArg of argument " + std::to_string(index) + " failed with " + std::to_string(err));
  }
}

namespace {

// A launch of a kernel that may print: it runs only while its session holds the print gate
// (print_gate.h), and its completion carries what it printed.
void enqueue_printing(Call &call, Resolved &r, const std::function<cl_int(cl_event *)> &enqueue) {
  Session &session = call.session;
  // Reported as it completes, so that its output reaches the client first: an unwatched event's
  // report, asked for later, could overtake the output.
  r.unwatched = false;
  PrintGate &gate = session.host().print_gate();
  // Its dependencies: the wait list, on an in-order queue the command before it, on an out-of-order
  // one its latest barrier. A printing command of the session that runs under the gate counts as
  // complete: it finishes without anyone's help, so back-to-back printing kernels go straight on.
  std::vector<cl_event> pending;
  bool dependency_failed = false;
  auto consider = [&](cl_event event) {
    cl_int status = failures_status(event);
    if (status > CL_COMPLETE && !gate.runs(session.number(), event)) pending.push_back(event);
    if (status < 0) dependency_failed = true;
  };
  for (cl_event event : r.wait) consider(event);
  if (r.state->in_order && r.state->last) consider(r.state->last);
  if (!r.state->in_order && r.state->barrier) consider(r.state->barrier);
  uint64_t ticket = gate.open(session.number(), pending.empty());
  cl_event release = nullptr;
  if (!gate.entered(ticket)) {
    cl_int err = CL_SUCCESS;
    release = clCreateUserEvent(call.context, &err);
    if (err != CL_SUCCESS) {
      gate.cancel(ticket);
      fail(err, "clCreateUserEvent for the print gate failed with " + std::to_string(err));
    }
    r.wait.push_back(release);
  }
  cl_int err = enqueue(&r.event);
  if (err != CL_SUCCESS) {
    gate.cancel(ticket);
    if (release) clReleaseEvent(release);
    check(err, "clEnqueueNDRangeKernel");
  }
  gate.attach(ticket, r.event, release, pending.size());
  if (release) clReleaseEvent(release);  // the gate holds it
  for (cl_event event : pending) {
    try {
      watch_event(session, call.object, event, [ticket](Session &s, cl_int status, const uint64_t *) {
        s.host().print_gate().dependency_done(ticket, status);
      });
    } catch (const RequestError &) {
      gate.dependency_done(ticket, CL_COMPLETE);  // cannot be watched: do not hold the command for ever
    }
  }
  try {
    // The output goes out before the completion, so the client has written it before the
    // application can see the command complete.
    track(call, r, [ticket](Session &s, cl_int status, const uint64_t *) {
      std::string printed = s.host().print_gate().command_done(ticket);
      // A command behind a failure fedcld kept from the backend ran: what it printed is not the application's.
      if (status == CL_COMPLETE) s.notify_printf(printed);
    });
  } catch (...) {
    gate.orphan(ticket);
    throw;
  }
  // PoCL may fail a command behind a failed one at once and without calling back.
  if (dependency_failed) sweep_failed_watches();
}

}  // namespace

void exec_nd_range(Call &call, wire::Request::NDRange::Reader request) {
  Resolved r = resolve(call, request.getCommand());
  ObjectTable &objects = call.session.objects();
  Object &kernel_object = objects.get(request.getKernel(), ObjectKind::kernel);
  auto kernel = static_cast<cl_kernel>(kernel_object.handle);
  set_kernel_args(objects, kernel, request.getArgs());
  LaunchGeometry g = launch_geometry(request);
  if (kernel_object.may_print && call.session.host().print_gate().enabled()) {
    enqueue_printing(call, r, [&](cl_event *event) {
      return clEnqueueNDRangeKernel(r.queue, kernel, g.dims, g.offset_or_null(), g.global, g.local_or_null(),
                                    r.wait_count(), r.wait_ptr(), event);
    });
    return;
  }
  check(clEnqueueNDRangeKernel(r.queue, kernel, g.dims, g.offset_or_null(), g.global, g.local_or_null(),
                               r.wait_count(), r.wait_ptr(), event_out(call, r)),
        "clEnqueueNDRangeKernel");
  track(call, r);
}

void exec_marker(Call &call, wire::Command::Reader command, bool barrier) {
  Resolved r = resolve(call, command, barrier ? Ordering::barrier : Ordering::marker);
  if (barrier) {
    // Later commands of an out-of-order queue wait for its latest barrier: a printing one counts it
    // among its dependencies.
    bool keep = !r.state->in_order;
    check(clEnqueueBarrierWithWaitList(r.queue, r.wait_count(), r.wait_ptr(), keep ? &r.event : event_out(call, r)),
          "clEnqueueBarrierWithWaitList");
    if (keep) {
      if (r.state->barrier) clReleaseEvent(r.state->barrier);
      clRetainEvent(r.event);
      r.state->barrier = r.event;
    }
  } else {
    check(clEnqueueMarkerWithWaitList(r.queue, r.wait_count(), r.wait_ptr(), event_out(call, r)),
          "clEnqueueMarkerWithWaitList");
  }
  track(call, r);
}

void exec_flush(Call &call, uint64_t queue) {
  call.object = queue;
  check(clFlush(call.session.objects().handle<cl_command_queue>(queue, ObjectKind::queue)), "clFlush");
}

void exec_finish(Call &call, uint64_t queue_id) {
  call.object = queue_id;
  Object &queue = call.session.objects().get(queue_id, ObjectKind::queue);
  QueueState &state = *queue.queue;
  FinishWaiter waiter{call.seq, state.unreported.mark()};
  auto answer_when_processed = [waiter, queue_id](Session &s, cl_int, const uint64_t *) {
    if (s.objects().contains(queue_id)) s.objects().get(queue_id, ObjectKind::queue).queue->finish_waiters.push_back(waiter);
  };
  call.replied = true;
  if (state.in_order && !state.untracked) {
    // The latest command completing means the whole queue did: no marker, no extra trip through
    // the backend, and an idle queue answers at once. A watched command answers the clFinish from
    // its own watch: a second one would cost the backend a callback (or the waiter a poll) and the
    // loop a hand-off for the same completion, and asking its status costs NVIDIA microseconds
    // while the waiter polls it.
    if (state.last_watched) {
      state.finish_behind.emplace_back(state.last, waiter);
      call.session.touch_queue(queue_id);
      return;
    }
    cl_int status = CL_COMPLETE;
    if (state.last) clGetEventInfo(state.last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    if (status > CL_COMPLETE) {
      watch_event(call.session, queue_id, state.last, answer_when_processed);
      call.session.touch_queue(queue_id);
    } else if (state.outstanding > 0) {
      state.finish_waiters.push_back(waiter);
    } else {
      answer_finish(call.session, state, waiter);
    }
    return;
  }
  // An out-of-order queue, or an in-order one whose latest commands have no event: a marker.
  cl_event marker = nullptr;
  check(clEnqueueMarkerWithWaitList(static_cast<cl_command_queue>(queue.handle), 0, nullptr, &marker),
        "clEnqueueMarkerWithWaitList");
  if (state.in_order) {
    if (state.last) clReleaseEvent(state.last);
    clRetainEvent(marker);
    state.last = marker;
    state.last_watched = false;  // its watch answers this clFinish alone
    state.untracked = false;
  }
  try {
    watch_event(call.session, queue_id, marker, answer_when_processed);
  } catch (...) {
    clReleaseEvent(marker);
    throw;
  }
  clReleaseEvent(marker);
  call.session.touch_queue(queue_id);
}

void answer_finish(Session &session, QueueState &queue, const FinishWaiter &waiter) {
  auto failed = queue.unreported.take_ended(waiter.mark, session.objects());
  if (failed.empty()) return session.send_status(waiter.seq, CL_SUCCESS, "");
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setSeq(waiter.seq);
  auto list = reply.initFinished(failed.size());
  for (size_t i = 0; i < failed.size(); i++) {
    list[i].setEvent(failed[i].first);
    list[i].setStatus(failed[i].second);
  }
  session.send_reply(message);
}

void exec_watch_event(Call &call, wire::Request::WatchEvent::Reader request) {
  Session &session = call.session;
  ObjectTable &objects = session.objects();
  uint64_t event_id = request.getEvent(), queue_id = request.getQueue();
  call.object = queue_id;
  // Its reference is ours now. The queue may be gone (the client released it): its commands' events
  // stay while the client holds them.
  bool queue_kept = objects.contains(queue_id);
  cl_event listed = queue_kept ? objects.get(queue_id, ObjectKind::queue).queue->unreported.take(event_id) : nullptr;
  if (!queue_kept) queue_id = 0;
  // Not listed: it ended and was dropped from the list, or it is reported anyway (a command that
  // may print), or the client released it.
  if (!listed && (session.reporting(event_id) || !objects.contains(event_id))) return;
  cl_event event = listed ? listed : objects.handle<cl_event>(event_id, ObjectKind::event);
  cl_int status = CL_QUEUED;
  clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  if (status <= CL_COMPLETE) {
    // Ended already: reported before this request's reply, so that a client waiting for that reply
    // finds the event's status current.
    session.notify_completion(event_id, listed ? failures_settle(event, status) : failures_status(event), nullptr);
    if (listed) objects.release_ended_event(listed, status);
    return;
  }
  // The watch settles what the command ran behind (failures_settle).
  try {
    watch_event(session, queue_id, event, [event_id](Session &s, cl_int outcome, const uint64_t *times) {
      s.completed(event_id, outcome);
      s.notify_completion(event_id, outcome, times);
    });
    session.watching(event_id);
  } catch (...) {
    if (listed) clReleaseEvent(listed);
    throw;
  }
  if (listed) clReleaseEvent(listed);  // the watch holds its own
}

}  // namespace fedcld
