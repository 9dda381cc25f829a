// The main process's part in peer links (peer_link.h): their handshakes. A session worker asks for
// a link to a session of another daemon (WorkerDial): this process dials that daemon, proves the
// cluster key and names the session, then hands the link to the worker. A daemon that dials this
// one names the session it wants: once it has proved itself, the link goes to that session's worker.
//
// The handshake: PeerHello (the dialling daemon's instance, the instance it means to reach, the two
// sessions, a nonce); on a daemon with a key, a challenge and the dialling daemon's proof; then the
// answering daemon's welcome, with its own proof. Both instances are in what the proofs sign. A
// daemon with a key tells a peer nothing before its proof holds: not its instance, not whether the
// session named is served (a refusal before then is a welcome with instance 0); peers' proofs take
// the turns of the cluster key's client proofs from the same address (auth_throttle.h).
//
// A daemon with a key dials only an address a daemon holding the daemons' key advertised: the
// client passes on the address with its tag (PeerRef.addressTag, protocol/auth.h peer_address_tag).
// Whatever fails once it dials, the worker (and so the client) hears only that no fedcld could be
// reached there; the log says why. A daemon without keys serves anyone, and dials what it is asked.
#pragma once

#include <uv.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "auth.h"
#include "fedcl.capnp.h"
#include "stranger_log.h"

namespace fedcld {

class Listener;
class Session;
struct Frame;
struct Worker;

class PeerHandshakes {
 public:
  explicit PeerHandshakes(Listener &listener);
  void start();
  void close();

  // Dials for worker's session; the worker gets the link (takeLink) or why not (dialFailed).
  void dial(Worker &worker, fedcl::wire::WorkerDial::Reader dial);
  // A frame of a connection still in its handshake: a peer's hello or proof, or, on a link this
  // process dialled, the other daemon's challenge or welcome.
  void receive(Session &link, Frame &frame);
  // A connection closed during its handshake.
  void link_closed(Session &link, const std::string &reason);
  // A worker ended: its dials in flight are dropped.
  void worker_gone(const Worker &worker);

 private:
  struct Dial {
    uint64_t worker = 0;        // the worker's id in the pool
    std::string address;        // as the client passed it on
    uint64_t id = 0;            // the worker's dial id
    uint64_t instance = 0;      // the daemon dialled
    uint64_t session = 0;       // the session there
    uint64_t from_session = 0;  // the worker's session
    std::shared_ptr<Session> link;
    uint64_t started = 0;
  };
  // The dial failed once under way: the log says why, the worker hears only that no fedcld could
  // be reached there.
  void failed(Dial &dial, const std::string &why);
  // The worker that asked for dial learns why there is no link.
  void tell_failed(const Dial &dial, const std::string &why);
  // "" when this daemon may dial address (local_socket: the path of a local socket) for a link to
  // instance (its tag holds, or this daemon has no keys at all), else why not.
  std::string unadvertised(uint64_t instance, const std::string &address, capnp::Data::Reader tag,
                           bool local_socket = false) const;
  // Refuses a peer's handshake with a welcome of instance 0 (nothing told), logged as a stranger's end.
  void refuse(Session &link, StrangerEnd end, const std::string &why);
  void on_hello(Session &link, fedcl::wire::PeerHello::Reader hello);
  void on_proof(Session &link, fedcl::wire::AuthProof::Reader answer);
  void on_challenge(Session &link, Dial &dial, fedcl::wire::AuthChallenge::Reader challenge);
  void on_welcome(Session &link, Dial &dial, fedcl::wire::PeerWelcome::Reader welcome);
  // The answering side's handshake succeeded: the welcome, then the link goes to its worker.
  void accept(Session &link, const fedcl::Proof *proof);
  void tick();

  Listener &listener_;
  std::map<Session *, Dial> dials_;  // links this process dials, by their connection
  uv_timer_t timer_;
};

}  // namespace fedcld
