// Events across daemons over peer links (peer_link.h): a command on this daemon that waits for an
// event of another waits for a stand-in user event, which the other daemon sets with a PeerSignal
// the moment its event completes. Also the client's request to link two daemons up front.
#pragma once

#include "exec.h"

namespace fedcld {

void exec_signal_peer(Call &call, wire::Request::SignalPeer::Reader request);
void exec_peer_connect(Call &call, wire::PeerRef::Reader peer);
// A stand-in event was created for an event of peer instance: a signal that came first sets it now.
void stand_in_created(Session &session, uint64_t event_id, cl_event event, uint64_t instance);
void peer_deliver_signal(SessionHost &host, Session &link, wire::PeerSignal::Reader signal);
// The link to a peer daemon is gone: the receives and stand-ins that depend on it fail.
void peer_lost(SessionHost &host, uint64_t instance, const std::string &why);

}  // namespace fedcld
