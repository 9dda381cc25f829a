// Moving a memory object's bytes between daemons over peer links (peer_link.h).
//
// The sending daemon makes each chunk reachable in host memory (peer_chunks.h) and puts it on the
// link as soon as it is, in order and within what the receiving session has granted it; the receiving
// daemon has each chunk's bytes land straight in the memory set aside for them and gives them to the
// device. Device, network and the other device work on successive chunks at once, and no byte passes
// through the client.
#pragma once

#include "exec.h"
#include "peer_inbox.h"

namespace fedcld {

void exec_send_to_peer(Call &call, wire::Request::SendToPeer::Reader request);
void exec_receive_from_peer(Call &call, wire::Request::ReceiveFromPeer::Reader request);
// The other end of a transfer, named once the client knows it (an MPI message's path).
void exec_transfer_to(Call &call, wire::Request::TransferTo::Reader request);
void exec_transfer_from(Call &call, wire::Request::TransferFrom::Reader request);

// What peer links deliver (peer_link.cpp calls these). A data frame's bytes land where its receive
// set them aside, if the receive is known when the frame's message has arrived.
std::shared_ptr<uint8_t[]> peer_data_destination(SessionHost &host, Session &link, wire::PeerData::Reader data,
                                                 uint64_t bytes);
void peer_deliver_data(SessionHost &host, Session &link, wire::PeerData::Reader data, Frame &frame);
void peer_deliver_abort(SessionHost &host, Session &link, wire::PeerAbort::Reader abort);
// The receiving session's word on how far one of this daemon's sends may go (PeerCredit).
void peer_deliver_credit(SessionHost &host, Session &link, wire::PeerCredit::Reader credit);
// The transfer engine's client side: bytes the client streams into a receive of sender 0 itself.
void exec_transfer_data(Call &call, wire::Request::TransferData::Reader request, Frame &frame);
void exec_transfer_abort(Call &call, wire::Request::TransferAbort::Reader request);
std::shared_ptr<uint8_t[]> client_data_destination(Session &session, wire::Request::TransferData::Reader data,
                                                   uint64_t bytes);
// The client set the status of event; if it is a receive's, that receive will get no bytes.
void peer_receive_settled(Session &session, uint64_t event);
// The link to peer daemon instance is gone: session's receives from it fail.
void peer_receives_lost(Session &session, uint64_t instance, const std::string &why);

}  // namespace fedcld
