// Links to the other daemons of the programs fedcld serves: one per pair of daemons, dialled on
// demand when a client asks this daemon to send or signal to another, and shared by every session.
// A link carries bulk data and event signals only (PeerMessage in fedcl.capnp), never API calls.
//
// Either daemon may dial; a link is used both ways once its handshake is done. Daemons present the
// same key as clients. A link that stays silent past the peer timeout (each side sends a heartbeat
// every second when it has nothing else to say) is closed, and what was waiting on it fails.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "auth.h"
#include "fedcl.capnp.h"

namespace fedcld {

class Server;
class Session;
struct Frame;

class PeerRegistry {
 public:
  explicit PeerRegistry(Server &server);
  void start();
  void close();

  // This run of the daemon, as peers and clients know it.
  uint64_t instance() const { return instance_; }

  // Runs done(link, "") on the loop once a link to the daemon instance at address is up, or
  // done(nullptr, why) when none can be had. Reuses the link if there is one.
  using LinkDone = std::function<void(Session *link, const std::string &error)>;
  void with_link(uint64_t instance, const std::string &address, LinkDone done);

  // A frame that arrived on a peer link, or the first frame of a connection that turns out to be one.
  void receive(Session &link, Frame &frame);
  // Where the payload of a frame whose message has arrived should land: the memory a receive set
  // aside for those bytes, or null (then the frame gets memory of its own).
  std::shared_ptr<uint8_t[]> payload_destination(Session &link, const Frame &frame);
  // A peer link closed: what waited on it fails.
  void link_closed(Session &link, const std::string &reason);

 private:
  struct Peer {
    std::string address;
    std::vector<std::shared_ptr<Session>> links;  // handshake done; the first open one is used
    std::shared_ptr<Session> dialling;
    uint64_t dial_started = 0;
    std::vector<LinkDone> waiting;
  };
  Session *usable_link(Peer &peer);
  void dial(uint64_t instance, Peer &peer);
  void dial_failed(uint64_t instance, const std::string &why);
  // The handshake (challenge-response on the cluster key when there is one; see protocol/auth.h).
  void on_hello(Session &link, Frame &frame);
  void on_challenge(Session &link, fedcl::wire::AuthChallenge::Reader challenge);
  void on_proof(Session &link, fedcl::wire::AuthProof::Reader answer);
  void on_welcome(Session &link, Frame &frame);
  // The link's handshake succeeded: it is the link to instance; proof: this daemon's, if keyed.
  void accept(Session &link, uint64_t instance, const fedcl::Proof *proof);
  void tick();

  Server &server_;
  uint64_t instance_;
  std::unordered_map<uint64_t, Peer> peers_;
  uv_timer_t timer_;
};

// A random 64-bit number, never 0 (daemon instances, session tokens).
uint64_t random_id();

}  // namespace fedcld
