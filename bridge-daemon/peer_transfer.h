// Moving a memory object's bytes between daemons, and signalling events to them, over peer links.
//
// The sending daemon reads the object in chunks on the client's transfer queue and puts each chunk
// on the link as soon as its read completes; the receiving daemon writes each chunk to its device
// as soon as it has landed. Device read, network and device write of successive chunks
// overlap, and no byte passes through the client.
#pragma once

#include "exec.h"

namespace fedcld {

void exec_peer_connect(Call &call, wire::PeerRef::Reader peer);
void exec_send_to_peer(Call &call, wire::Request::SendToPeer::Reader request);
void exec_receive_from_peer(Call &call, wire::Request::ReceiveFromPeer::Reader request);
void exec_signal_peer(Call &call, wire::Request::SignalPeer::Reader request);
// A stand-in event was created for an event of peer instance: a signal that came first sets it now.
void stand_in_created(Session &session, uint64_t event_id, cl_event event, uint64_t instance);

// What peer links deliver (peer_link.cpp calls these). A data frame's bytes land where its receive
// set them aside, if it is known when the frame's message has arrived.
std::shared_ptr<uint8_t[]> peer_data_destination(Server &server, Session &link, wire::PeerData::Reader data,
                                                 uint64_t bytes);
void peer_deliver_data(Server &server, Session &link, wire::PeerData::Reader data, Frame &frame);
void peer_deliver_abort(Server &server, Session &link, wire::PeerAbort::Reader abort);
void peer_deliver_signal(Server &server, Session &link, wire::PeerSignal::Reader signal);
// The link to a peer daemon is gone: the receives and stand-ins that depend on it fail.
void peer_lost(Server &server, uint64_t instance, const std::string &why);

}  // namespace fedcld
