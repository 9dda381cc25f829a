// Events across daemons over peer links (peer_link.h): a command on this daemon that waits for an
// event of another waits for a stand-in user event, which the other daemon sets with a PeerSignal
// the moment its event completes. Also the client's request to link two daemons up front.
#pragma once

#include "exec.h"

namespace fedcld {

// With SignalPeer.data, the signal carries a range of a buffer (read after the event) to the peer's
// stand-in, which a write there takes to the device before what waits for the stand-in runs: one
// message for the event and the bytes a command of the other daemon needs from it.
void exec_signal_peer(Call &call, wire::Request::SignalPeer::Reader request);
void exec_peer_connect(Call &call, wire::PeerRef::Reader peer);
// CreateUserEvent with signalledBy: event, the stand-in just created under request's id, is set by
// that peer's signal; with request's data, the write of the bytes the signal brings waits for it.
void exec_create_stand_in(Call &call, wire::Request::CreateUserEvent::Reader request, cl_event event);
// A stand-in event was created for an event of peer instance: a signal that came first sets it now
// (its bytes, if any, go to landing first).
void stand_in_created(Session &session, uint64_t event_id, cl_event event, uint64_t instance,
                      std::shared_ptr<uint8_t[]> landing, uint64_t landing_size);
// Where a signal's payload lands: the stand-in's landing when it is there and of that size (else
// the frame gets memory of its own).
std::shared_ptr<uint8_t[]> peer_signal_destination(SessionHost &host, Session &link, wire::PeerSignal::Reader signal,
                                                   uint64_t bytes);
void peer_deliver_signal(SessionHost &host, Session &link, wire::PeerSignal::Reader signal, Frame &frame);
// The link to a peer daemon is gone: the receives and stand-ins that depend on it fail.
void peer_lost(SessionHost &host, uint64_t instance, const std::string &why);

}  // namespace fedcld
