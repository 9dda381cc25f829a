#include "peer_signal.h"

#include <capnp/message.h>

#include "log.h"
#include "peer_transfer.h"
#include "session_host.h"

namespace fedcld {

namespace {

// Sets a stand-in user event, unless it has its status already (the client relays failures too).
void settle_stand_in(cl_event event, cl_int status) {
  cl_int now = CL_QUEUED;
  if (clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof now, &now, nullptr) == CL_SUCCESS && now <= CL_COMPLETE)
    return;
  settle_user_event(event, status);
}

void send_signal(SessionHost &host, const PeerTarget &peer, uint64_t event_id, cl_int status) {
  uint64_t token = peer.session;
  host.peers().with_link(peer, [token, event_id, status](Session *link, const std::string &error) {
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
    link->send_peer(builder);
  });
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
  auto signal = [host_ptr, peer, event_id](cl_int status) { send_signal(*host_ptr, peer, event_id, status); };
  // With the command's own completion watch if it is still pending, else with one of its own (the
  // event is complete, or it has no command here: a stand-in or a transfer's event).
  if (call.session.on_completion(event_id, signal)) return;
  watch_event(call.session, 0, objects.handle<cl_event>(event_id, ObjectKind::event),
              [signal](Session &, cl_int status, const uint64_t *) { signal(status); });
}

void stand_in_created(Session &session, uint64_t event_id, cl_event event, uint64_t instance) {
  cl_int status;
  if (session.inbox().take_signal(event_id, &status)) return settle_stand_in(event, status);
  session.inbox().add_stand_in(event_id, instance, event);
}

void peer_deliver_signal(SessionHost &host, Session &link, wire::PeerSignal::Reader signal) {
  auto session = host.session_by_token(signal.getSession());
  if (!session || session->closed()) return;
  uint64_t event_id = signal.getEvent();
  cl_int status = signal.getStatus() <= CL_COMPLETE ? signal.getStatus() : CL_COMPLETE;
  FEDCLD_LOG(debug, "event %llu: signalled %d by %s", (unsigned long long)event_id, status, link.peer().c_str());
  if (cl_event event = session->inbox().take_stand_in(event_id, link.peer_instance)) {
    settle_stand_in(event, status);
    clReleaseEvent(event);
    return;
  }
  // Before the client's request that creates the stand-in (or after the client settled it).
  if (!session->objects().contains(event_id)) session->inbox().hold_signal(event_id, status);
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
