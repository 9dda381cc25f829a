// A session worker's peer links: one per session of another daemon that this session exchanges
// data or event signals with (the same client's session there). The main processes of the two
// daemons make a link (peer_handshake.h: the dial, the challenge-response on the cluster key) and
// hand it to the two workers, which then talk directly. A link carries bulk data and event signals
// only (PeerMessage in fedcl.capnp), never API calls, and is used both ways.
//
// A link that stays silent past the peer timeout (each side sends a heartbeat every second when it
// has nothing else to say) is closed, and what was waiting on it fails.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "fedcl.capnp.h"

namespace fedcld {

class SessionHost;
class Session;
struct Frame;
struct SessionLink;

// A session of another daemon: the daemon (its instance, and where its peers reach it) and the
// session's token there; a daemon of this host also by its local socket (PeerRef.host, localSocket).
struct PeerTarget {
  uint64_t instance = 0;
  std::string address;
  uint64_t session = 0;
  std::string address_tag;  // PeerRef.addressTag: the main process dials the address only with it
  std::string host, local_socket, local_socket_tag;  // PeerRef.host, localSocket, localSocketTag
};
PeerTarget peer_target(fedcl::wire::PeerRef::Reader ref);

class PeerRegistry {
 public:
  explicit PeerRegistry(SessionHost &host);
  void start();
  void close();

  // Runs done(link, "") on the loop once a link to target is up, or done(nullptr, why) when none
  // can be had. Reuses the link if there is one; else asks the main process to dial.
  using LinkDone = std::function<void(Session *link, const std::string &error)>;
  void with_link(const PeerTarget &target, LinkDone done);

  // The main process handed over a link: the one dialled for a with_link (link.dial), or one the
  // other daemon dialled (dial 0).
  void adopt(fedcl::wire::TakeLink::Reader link, SessionLink *socket);
  // The main process could not make the link asked for in dial.
  void dial_failed(uint64_t dial, const std::string &why);

  // A frame that arrived on a peer link.
  void receive(Session &link, Frame &frame);
  // Where the payload of a frame whose message has arrived should land: the memory a receive set
  // aside for those bytes, or null (then the frame gets memory of its own).
  std::shared_ptr<uint8_t[]> payload_destination(Session &link, Frame &frame, std::string *problem);
  // A peer link closed: what waited on it fails.
  void link_closed(Session &link, const std::string &reason);

 private:
  struct Peer {
    uint64_t instance = 0;
    std::vector<std::shared_ptr<Session>> links;  // the first open one is used
    uint64_t dial = 0;                            // the dial asked of the main process, if any
    uint64_t dial_started = 0;
    std::vector<LinkDone> waiting;
  };
  Session *usable_link(Peer &peer);
  void fail_waiting(Peer &peer, const std::string &why);
  void tick();

  SessionHost &host_;
  std::unordered_map<uint64_t, Peer> peers_;  // by the other session's token
  uint64_t next_dial_ = 1;
  uv_timer_t timer_;
};

}  // namespace fedcld
