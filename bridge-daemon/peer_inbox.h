// What peer daemons deliver to one client session: the bytes of its receives (ReceiveFromPeer) and
// the signals of its stand-in events (CreateUserEvent.signalledBy). The client's requests and the
// peer's messages travel on different connections, so either may come first: what a peer delivers
// before the client's request that expects it waits here.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace fedcld {

struct PeerChunk {
  uint64_t offset;                      // from the transfer's start
  uint64_t size;
  std::shared_ptr<uint8_t[]> bytes;
  // Where it came from, for flow control (PeerCredit): the sending daemon and session; 0 for bytes
  // of this daemon or of the client, which no credit paces.
  uint64_t from_instance = 0, from_session = 0;
};

struct PeerReceive;  // peer_transfer.h
struct PeerSend;     // peer_transfer.h

class PeerInbox {
 public:
  // Bytes sender sent before the session's receive expected them from it; false past kMaxHeldBytes
  // (the link is then misbehaving).
  bool hold(uint64_t transfer, uint64_t sender, PeerChunk chunk);
  // A failure sender reported for a transfer whose receive does not expect it yet.
  void hold_failure(uint64_t transfer, uint64_t sender, cl_int status, std::string message);

  // What sender delivered for transfer before the receive expected it: chunks, and a failure if one
  // came. What other senders delivered stays: an MPI receive starts as the client's own and learns
  // its sender later (TransferFrom), and that sender's bytes may come before the receive itself.
  struct Early {
    std::vector<PeerChunk> chunks;
    cl_int status = CL_SUCCESS;
    std::string message;
  };
  Early take_early(uint64_t transfer, uint64_t sender);

  // event: the receive's own event, which the client may settle (its sender failed).
  void add_receive(uint64_t transfer, uint64_t sender, uint64_t event, std::shared_ptr<PeerReceive> receive) {
    receives_[transfer] = {sender, event, std::move(receive)};
  }
  // The receive of transfer if sender is the daemon it expects bytes from.
  std::shared_ptr<PeerReceive> receive(uint64_t transfer, uint64_t sender) const;
  void remove_receive(uint64_t transfer) { receives_.erase(transfer); }
  std::vector<std::shared_ptr<PeerReceive>> receives_from(uint64_t sender) const;
  // The receive whose event is event; null if there is none.
  std::shared_ptr<PeerReceive> receive_with_event(uint64_t event) const;
  // The receive of transfer takes its bytes from sender from now on (TransferFrom); null if there
  // is none.
  std::shared_ptr<PeerReceive> redirect_receive(uint64_t transfer, uint64_t sender);

  // Sends whose destination the client names later (SendToPeer.destinationLater, TransferTo). The
  // inbox holds them until then: a staged send has no device command left that would.
  void add_undirected_send(uint64_t transfer, std::shared_ptr<PeerSend> send) { undirected_sends_[transfer] = std::move(send); }
  std::shared_ptr<PeerSend> take_undirected_send(uint64_t transfer);

  // Sends to peer sessions under way, by the receiving session's token and the transfer as their
  // data frames name it: where that session's credits go.
  void add_send(uint64_t receiver, uint64_t transfer, std::weak_ptr<PeerSend> send) {
    sends_[{receiver, transfer}] = std::move(send);
  }
  std::shared_ptr<PeerSend> send_to(uint64_t receiver, uint64_t transfer) const;
  void remove_send(uint64_t receiver, uint64_t transfer) { sends_.erase({receiver, transfer}); }

  // Signals for stand-in events: an early one waits for the stand-in's creation, with the bytes it
  // carried (SignalPeer.data), if any.
  struct Signal {
    cl_int status = CL_COMPLETE;
    std::shared_ptr<uint8_t[]> bytes;
    uint64_t size = 0;
  };
  void hold_signal(uint64_t event, Signal signal);
  bool take_signal(uint64_t event, Signal *signal);
  // Stand-ins set by a peer's signal, kept (retained) until the signal comes even if the client
  // releases them first; losing that peer fails them instead of leaving the commands behind them
  // waiting forever. landing: where the bytes the signal carries go (CreateUserEvent.data), of
  // landing_size bytes; null where it carries none.
  void add_stand_in(uint64_t event_id, uint64_t instance, cl_event event, std::shared_ptr<uint8_t[]> landing = nullptr,
                    uint64_t landing_size = 0);
  // Where the bytes of a signal for stand-in event_id of instance go; null if it expects none.
  std::shared_ptr<uint8_t[]> landing(uint64_t event_id, uint64_t instance, uint64_t *size) const;
  // The stand-in event_id of instance, handed over with its reference; null if there is none.
  cl_event take_stand_in(uint64_t event_id, uint64_t instance);
  // Any instance's (the client settles it itself).
  cl_event take_stand_in(uint64_t event_id);
  std::vector<std::pair<uint64_t, cl_event>> take_stand_ins_of(uint64_t instance);

  void clear();
  ~PeerInbox() { clear(); }

 private:
  static constexpr uint64_t kMaxHeldBytes = uint64_t(1) << 30;
  std::map<std::pair<uint64_t, uint64_t>, Early> held_;  // by transfer and sender
  uint64_t held_bytes_ = 0;
  struct Expected {
    uint64_t sender, event;
    std::shared_ptr<PeerReceive> receive;
  };
  std::unordered_map<uint64_t, Expected> receives_;
  std::unordered_map<uint64_t, std::shared_ptr<PeerSend>> undirected_sends_;
  std::map<std::pair<uint64_t, uint64_t>, std::weak_ptr<PeerSend>> sends_;
  std::unordered_map<uint64_t, Signal> signals_;
  uint64_t held_signal_bytes_ = 0;  // the bytes of signals_, within kMaxHeldBytes as held_'s are
  struct StandIn {
    uint64_t instance;
    cl_event event;
    std::shared_ptr<uint8_t[]> landing;
    uint64_t landing_size;
  };
  std::unordered_map<uint64_t, StandIn> stand_ins_;
};

}  // namespace fedcld
