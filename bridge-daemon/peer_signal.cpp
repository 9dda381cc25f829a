#include "peer_signal.h"

#include <capnp/message.h>

#include <cstring>

#include "log.h"
#include "peer_transfer.h"
#include "session_host.h"
#include "trace.h"

namespace fedcld {

namespace {

// Sets a stand-in user event, unless it has its status already (the client relays failures too).
void settle_stand_in(cl_event event, cl_int status) {
  cl_int now = CL_QUEUED;
  if (clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof now, &now, nullptr) == CL_SUCCESS && now <= CL_COMPLETE)
    return;
  settle_user_event(event, status);
  fedcl::trace::mark(fedcl::trace::Point::daemon_stand_in_set, 0, 0);
}

// Puts the bytes a signal carried where its stand-in's data lands (landing, of landing_size bytes;
// null: none expected), then sets the stand-in: the write behind it takes them to the device. A
// signal of success without those bytes fails the stand-in: what waits for it must not run on
// bytes that never came.
void land_and_settle(cl_event event, cl_int status, const std::shared_ptr<uint8_t[]> &landing, uint64_t landing_size,
                     const uint8_t *bytes, uint64_t size) {
  if (landing && status == CL_COMPLETE) {
    if (size != landing_size || !bytes) {
      FEDCLD_LOG(warn, "a peer's signal carried %llu bytes where %llu were expected", (unsigned long long)size,
                 (unsigned long long)landing_size);
      status = CL_OUT_OF_RESOURCES;
    } else if (bytes != landing.get()) {
      std::memcpy(landing.get(), bytes, size);
    }
  }
  settle_stand_in(event, status);
}

// A signal's payload, with room for the frame's padding (the socket reads and writes it whole).
std::shared_ptr<uint8_t[]> signal_bytes(Session &session, uint64_t size) {
  if (size > wire::SIGNAL_DATA_MAX_BYTES)
    fail(CL_INVALID_VALUE, "a signal carries at most " + std::to_string(wire::SIGNAL_DATA_MAX_BYTES) + " bytes, not " +
                               std::to_string(size));
  return read_buffer_for(session, size + 8);
}

// The signal's bytes (bytes, size) go only with a success.
void send_signal(SessionHost &host, const PeerTarget &peer, uint64_t event_id, cl_int status,
                 std::shared_ptr<uint8_t[]> bytes = nullptr, uint64_t size = 0) {
  if (status != CL_COMPLETE) bytes.reset(), size = 0;
  uint64_t token = peer.session;
  host.peers().with_link(peer, [token, event_id, status, bytes, size](Session *link, const std::string &error) {
    if (!link) {
      FEDCLD_LOG(warn, "event %llu: cannot signal the peer: %s", (unsigned long long)event_id, error.c_str());
      return;
    }
    FEDCLD_LOG(debug, "event %llu: signalling %d to %s", (unsigned long long)event_id, status, link->peer().c_str());
    capnp::MallocMessageBuilder builder;
    auto signal = builder.initRoot<wire::PeerMessage>().initSignal();
    signal.setSession(token);
    signal.setEvent(event_id);
    signal.setStatus(status);
    link->send_peer(builder, bytes, size);
  });
}

// SignalPeer.data: a read of the range behind the event (in its wait list), whose completion sends
// the signal and the bytes in one message; the read's event is the client's, like any command's.
void signal_with_data(Call &call, wire::Request::SignalPeer::Reader request,
                      std::function<void(cl_int, std::shared_ptr<uint8_t[]>, uint64_t)> signal) {
  auto data = request.getData();
  uint64_t size = data.getSize();
  std::shared_ptr<uint8_t[]> bytes = signal_bytes(call.session, size);
  Resolved r = resolve(call, data.getCommand());
  auto mem = call.session.objects().handle<cl_mem>(data.getMemObject(), ObjectKind::mem);
  check(clEnqueueReadBuffer(r.queue, mem, CL_FALSE, data.getOffset(), size, bytes.get(), r.wait_count(), r.wait_ptr(),
                            &r.event),
        "clEnqueueReadBuffer (the bytes a signal carries)");
  track(call, r, [signal, bytes, size](Session &, cl_int status, const uint64_t *) { signal(status, bytes, size); });
}

}  // namespace

void exec_signal_peer(Call &call, wire::Request::SignalPeer::Reader request) {
  SessionHost &host = call.session.host();
  uint64_t event_id = request.getEvent();
  PeerTarget peer = peer_target(request.getPeer());
  call.object = event_id;
  ObjectTable &objects = call.session.objects();
  if (!objects.contains(event_id)) {
    send_signal(host, peer, event_id, CL_INVALID_EVENT);
    fail(CL_INVALID_EVENT, "signal for unknown event " + std::to_string(event_id));
  }
  SessionHost *host_ptr = &host;
  auto signal = [host_ptr, peer, event_id](cl_int status, std::shared_ptr<uint8_t[]> bytes = nullptr, uint64_t size = 0) {
    send_signal(*host_ptr, peer, event_id, status, std::move(bytes), size);
  };
  if (request.getData().getSize()) {
    try {
      return signal_with_data(call, request, signal);
    } catch (const RequestError &error) {
      signal(error.status < 0 ? error.status : CL_OUT_OF_RESOURCES);  // the stand-in must not wait for ever
      throw;
    }
  }
  // With the command's own completion watch if it is still pending, else with one of its own (the
  // event is complete, or it has no command here: a stand-in or a transfer's event).
  if (call.session.on_completion(event_id, [signal](cl_int status) { signal(status); })) return;
  watch_event(call.session, 0, objects.handle<cl_event>(event_id, ObjectKind::event),
              [signal](Session &, cl_int status, const uint64_t *) { signal(status); });
}

void exec_create_stand_in(Call &call, wire::Request::CreateUserEvent::Reader request, cl_event event) {
  uint64_t event_id = request.getId(), instance = request.getSignalledBy();
  auto data = request.getData();
  uint64_t size = data.getSize();
  std::shared_ptr<uint8_t[]> landing;
  try {
    if (size) {
      // The write of the bytes the signal brings, behind the stand-in (in its wait list).
      landing = signal_bytes(call.session, size);
      Resolved r = resolve(call, data.getCommand());
      auto mem = call.session.objects().handle<cl_mem>(data.getMemObject(), ObjectKind::mem);
      check(clEnqueueWriteBuffer(r.queue, mem, CL_FALSE, data.getOffset(), size, landing.get(), r.wait_count(),
                                 r.wait_ptr(), &r.event),
            "clEnqueueWriteBuffer (the bytes a signal brings)");
      track(call, r, [landing](Session &, cl_int, const uint64_t *) {});
    }
  } catch (const RequestError &) {
    stand_in_created(call.session, event_id, event, instance, nullptr, 0);  // its signal still sets it
    throw;
  }
  stand_in_created(call.session, event_id, event, instance, std::move(landing), size);
}

void stand_in_created(Session &session, uint64_t event_id, cl_event event, uint64_t instance,
                      std::shared_ptr<uint8_t[]> landing, uint64_t landing_size) {
  PeerInbox::Signal held;
  if (session.inbox().take_signal(event_id, &held))
    return land_and_settle(event, held.status, landing, landing_size, held.bytes.get(), held.size);
  session.inbox().add_stand_in(event_id, instance, event, std::move(landing), landing_size);
}

std::shared_ptr<uint8_t[]> peer_signal_destination(SessionHost &host, Session &link, wire::PeerSignal::Reader signal,
                                                   uint64_t bytes) {
  auto session = host.session_by_token(signal.getSession());
  if (!session || session->closed()) return nullptr;
  uint64_t size = 0;
  auto landing = session->inbox().landing(signal.getEvent(), link.peer_instance, &size);
  return landing && size == bytes ? landing : nullptr;
}

void peer_deliver_signal(SessionHost &host, Session &link, wire::PeerSignal::Reader signal, Frame &frame) {
  auto session = host.session_by_token(signal.getSession());
  if (!session || session->closed()) return;
  uint64_t event_id = signal.getEvent(), size = frame.header.payload_bytes;
  cl_int status = signal.getStatus() <= CL_COMPLETE ? signal.getStatus() : CL_COMPLETE;
  FEDCLD_LOG(debug, "event %llu: signalled %d by %s", (unsigned long long)event_id, status, link.peer().c_str());
  uint64_t landing_size = 0;
  auto landing = session->inbox().landing(event_id, link.peer_instance, &landing_size);
  if (cl_event event = session->inbox().take_stand_in(event_id, link.peer_instance)) {
    land_and_settle(event, status, landing, landing_size, frame.payload.get(), size);
    clReleaseEvent(event);
    return;
  }
  // Before the client's request that creates the stand-in (or after the client settled it).
  if (!session->objects().contains(event_id))
    session->inbox().hold_signal(event_id, {status, size ? std::move(frame.payload) : nullptr, size});
}

void peer_lost(SessionHost &host, uint64_t instance, const std::string &why) {
  if (auto session = host.client()) {
    peer_receives_lost(*session, instance, why);
    for (auto [event_id, event] : session->inbox().take_stand_ins_of(instance)) {
      settle_stand_in(event, CL_DEVICE_NOT_AVAILABLE);
      clReleaseEvent(event);
      session->notify_error(event_id, 0, CL_DEVICE_NOT_AVAILABLE, "the event a command waits for was on a peer daemon: " + why);
    }
  }
}

void exec_peer_connect(Call &call, wire::PeerRef::Reader peer) {
  call.replied = true;
  uint64_t seq = call.seq;
  std::weak_ptr<Session> weak = call.session.weak_from_this();
  call.session.host().peers().with_link(peer_target(peer), [weak, seq](Session *link, const std::string &error) {
    auto session = weak.lock();
    if (!session || session->closed()) return;
    session->send_status(seq, link ? CL_SUCCESS : CL_DEVICE_NOT_AVAILABLE, error);
  });
}

}  // namespace fedcld
