#include "peer_handshake.h"

#include <capnp/serialize.h>

#include <algorithm>
#include <cstring>

#include "control_channel.h"
#include "listener.h"
#include "log.h"

namespace fedcld {

namespace wire = fedcl::wire;

namespace {

constexpr uint64_t kTickMs = 1000;

struct Resolve {
  uv_getaddrinfo_t request;
  std::function<void(const sockaddr *address, int status)> done;
};

// Resolves host:port on libuv's thread pool; done runs on the loop.
void resolve_address(uv_loop_t *loop, const std::string &address, std::function<void(const sockaddr *, int)> done) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) return done(nullptr, UV_EINVAL);
  std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  auto *resolve = new Resolve{{}, std::move(done)};
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  int err = uv_getaddrinfo(loop, &resolve->request, [](uv_getaddrinfo_t *req, int status, addrinfo *found) {
    std::unique_ptr<Resolve> resolve(reinterpret_cast<Resolve *>(req));
    resolve->done(status == 0 && found ? found->ai_addr : nullptr, status == 0 && !found ? UV_EAI_NONAME : status);
    uv_freeaddrinfo(found);
  }, host.c_str(), port.c_str(), &hints);
  if (err != 0) {
    auto callback = std::move(resolve->done);
    delete resolve;
    callback(nullptr, err);
  }
}

void send_welcome(Session &link, uint64_t instance, cl_int status, const std::string &message,
                  const fedcl::Proof *proof = nullptr) {
  capnp::MallocMessageBuilder builder;
  auto welcome = builder.initRoot<wire::PeerMessage>().initWelcome();
  welcome.setInstance(instance);
  welcome.setStatus(status);
  welcome.setMessage(message);
  if (proof) welcome.setProof(fedcl::as_data(*proof));
  link.send_peer(builder);
}

// What a peer link's proofs name: which daemon dialled which, for which two sessions.
std::string peer_identity(uint64_t dialling, uint64_t answering, uint64_t from_session, uint64_t session) {
  char text[96];
  std::snprintf(text, sizeof text, "%016llx>%016llx:%016llx>%016llx", (unsigned long long)dialling,
                (unsigned long long)answering, (unsigned long long)from_session, (unsigned long long)session);
  return text;
}

// A proof over the link's handshake as it stands, in role's name, bound to the link's TLS session
// (the instances in the identity name the daemons).
fedcl::Proof handshake_proof(std::string_view key, fedcl::AuthRole role, const Session &link) {
  const Session::Handshake &handshake = link.handshake;
  return fedcl::auth_proof(key, role, capnp::Data::Reader(handshake.challenge_nonce.data(), handshake.challenge_nonce.size()),
                           capnp::Data::Reader(handshake.hello_nonce.data(), handshake.hello_nonce.size()),
                           handshake.identity, fedcl::AuthBinding{link.channel_binding(), {}, {}});
}

}  // namespace

PeerHandshakes::PeerHandshakes(Listener &listener) : listener_(listener) {
  uv_timer_init(listener_.loop(), &timer_);
  timer_.data = this;
}

void PeerHandshakes::start() {
  uv_timer_start(&timer_, [](uv_timer_t *timer) { static_cast<PeerHandshakes *>(timer->data)->tick(); }, kTickMs, kTickMs);
  uv_unref(reinterpret_cast<uv_handle_t *>(&timer_));
}

void PeerHandshakes::close() { uv_close(reinterpret_cast<uv_handle_t *>(&timer_), nullptr); }

void PeerHandshakes::dial(Worker &worker, wire::WorkerDial::Reader request) {
  auto peer = request.getPeer();
  Dial asked{worker.id, peer.getAddress(), request.getId(), peer.getInstance(), peer.getSession(), worker.token, nullptr,
             uv_now(listener_.loop())};
  // A daemon of this host is dialled at its local socket (docs/design-decisions.md, "Same node"):
  // the client named it, having seen both daemons' hosts in their HelloReplies. What is dialled is
  // what must carry its daemon's tag: the socket's path, or the address.
  const std::string &host = listener_.options().host_identity;
  auto peer_host = peer.getHost();
  std::string local_socket = peer.getLocalSocket();
  bool local = !local_socket.empty() && !host.empty() && peer_host.size() == host.size() &&
               std::memcmp(peer_host.begin(), host.data(), host.size()) == 0;
  std::string why = asked.instance == listener_.instance() ? "the peer named is this daemon itself"
                    : local ? unadvertised(asked.instance, local_socket, peer.getLocalSocketTag(), true)
                            : unadvertised(asked.instance, asked.address, peer.getAddressTag());
  if (!why.empty()) {
    FEDCLD_LOG(warn, "peer link to instance %016llx not dialled: %s", (unsigned long long)asked.instance, why.c_str());
    return tell_failed(asked, why);
  }
  auto link = listener_.add_session();
  std::string address = asked.address;
  asked.link = link;
  dials_[link.get()] = std::move(asked);
  std::weak_ptr<Session> weak = link;
  auto connected = [this, weak, address](int connected) {
    auto link = weak.lock();
    if (!link) return;
    auto it = dials_.find(link.get());
    if (it == dials_.end()) return;
    Dial &dial = it->second;
    if (connected != 0) return failed(dial, "cannot connect to " + log_quote(address) + ": " + uv_strerror(connected));
    fedcl::Nonce nonce = fedcl::fresh_nonce();
    link->handshake.hello_nonce.assign(nonce.begin(), nonce.end());
    link->handshake.identity = peer_identity(listener_.instance(), dial.instance, dial.from_session, dial.session);
    capnp::MallocMessageBuilder builder;
    auto hello = builder.initRoot<wire::PeerMessage>().initHello();
    hello.setProtocolVersion(wire::PROTOCOL_VERSION);
    hello.setInstance(listener_.instance());
    hello.setExpect(dial.instance);
    hello.setNonce(fedcl::as_data(nonce));
    hello.setSession(dial.session);
    hello.setFromSession(dial.from_session);
    link->send_peer(builder);
  };
  if (local) {
    FEDCLD_LOG(info, "peer link for session %llu: dialling %s at its local socket %s", (unsigned long long)worker.number,
               log_quote(address).c_str(), log_quote(local_socket).c_str());
    return link->connect_local(local_socket, address, std::move(connected));
  }
  FEDCLD_LOG(info, "peer link for session %llu: dialling %s", (unsigned long long)worker.number, log_quote(address).c_str());
  resolve_address(listener_.loop(), address, [this, weak, address, connected](const sockaddr *resolved, int status) {
    auto link = weak.lock();
    if (!link || link->closed()) return;
    auto it = dials_.find(link.get());
    if (it == dials_.end()) return;
    if (!resolved) return failed(it->second, "cannot resolve " + log_quote(address) + ": " + uv_strerror(status));
    link->connect(resolved, address, connected);
  });
}

std::string PeerHandshakes::unadvertised(uint64_t instance, const std::string &address, capnp::Data::Reader tag,
                                         bool local_socket) const {
  // A daemon without keys takes any client: it has nothing to tell a daemon's address by.
  if (!listener_.options().requires_key()) return {};
  const fedcl::Secret &key = listener_.daemons_key();
  if (key.empty())
    return "this fedcld has no key of the daemons (--key-file) to tell a peer daemon's address by, so it dials none";
  fedcl::Proof expected = local_socket ? fedcl::local_socket_tag(key.view(), instance, address)
                                       : fedcl::peer_address_tag(key.view(), instance, address);
  if (!fedcl::auth_proof_matches(expected, tag))
    return std::string(local_socket ? "the local socket " : "the address ") + log_quote(address) +
           " was not advertised by a fedcld that holds this one's key";
  return {};
}

void PeerHandshakes::tell_failed(const Dial &dial, const std::string &why) {
  Worker *worker = listener_.workers().by_id(dial.worker);
  if (!worker || !worker->channel) return;  // the session that asked has ended
  capnp::MallocMessageBuilder message;
  auto failure = message.initRoot<wire::WorkerMessage>().initDialFailed();
  failure.setId(dial.id);
  failure.setMessage("no link to the peer daemon: " + why);
  worker->channel->send(message);
}

void PeerHandshakes::failed(Dial &dial, const std::string &why) {
  FEDCLD_LOG(warn, "peer link to instance %016llx failed: %s", (unsigned long long)dial.instance, why.c_str());
  // What happened past the dial is not the client's to learn: an address's open and closed ports
  // would tell apart.
  tell_failed(dial, "could not reach a fedcld at " + log_quote(dial.address));
  std::shared_ptr<Session> link = std::move(dial.link);
  dials_.erase(link.get());  // dial is gone from here on
  link->close(why);
}

void PeerHandshakes::receive(Session &link, Frame &frame) {
  capnp::FlatArrayMessageReader reader(frame.message.asPtr());
  auto message = reader.getRoot<wire::PeerMessage>();
  auto it = dials_.find(&link);
  switch (message.which()) {
    case wire::PeerMessage::HELLO:
      if (it == dials_.end()) return on_hello(link, message.getHello());
      break;
    case wire::PeerMessage::PROOF:
      if (it == dials_.end()) return on_proof(link, message.getProof());
      break;
    case wire::PeerMessage::CHALLENGE:
      if (it != dials_.end()) return on_challenge(link, it->second, message.getChallenge());
      break;
    case wire::PeerMessage::WELCOME:
      if (it != dials_.end()) return on_welcome(link, it->second, message.getWelcome());
      break;
    default: break;
  }
  if (it != dials_.end()) return failed(it->second, "the daemon there broke the handshake");
  link.stranger_end = StrangerEnd::frame;
  link.close("a peer message before the handshake was done");
}

void PeerHandshakes::refuse(Session &link, StrangerEnd end, const std::string &why) {
  listener_.counters().refused(CL_INVALID_PLATFORM);
  listener_.log_stranger_end(link, end, "peer refused: " + why);
  send_welcome(link, 0, CL_INVALID_PLATFORM, why);
  link.close_after_writes("peer refused: " + why);
}

void PeerHandshakes::on_hello(Session &link, wire::PeerHello::Reader hello) {
  if (link.role != Session::Role::undecided) {
    link.stranger_end = StrangerEnd::frame;
    return link.close("a second peer hello");
  }
  link.role = Session::Role::peer;
  if (link.plaintext_refused)
    return refuse(link, StrangerEnd::plaintext, "this fedcld takes TLS connections only, and the peer connected without TLS (--tls yes on both)");
  if (hello.getProtocolVersion() != wire::PROTOCOL_VERSION)
    return refuse(link, StrangerEnd::version, "protocol version mismatch: the peer speaks " + std::to_string(hello.getProtocolVersion()) +
                                                  ", this fedcld " + std::to_string(wire::PROTOCOL_VERSION));
  bool keyed = listener_.options().requires_key() || !listener_.daemons_key().empty();
  if (keyed && hello.hasKey() && hello.getKey().size() > 0)
    return refuse(link, StrangerEnd::refused, "the peer sent its key in the clear (an older fedcld?); this fedcld takes only a proof of it");
  Session::Handshake &handshake = link.handshake;
  handshake.dialling_instance = hello.getInstance();
  handshake.expected_instance = hello.getExpect();
  handshake.session = hello.getSession();
  handshake.from_session = hello.getFromSession();
  if (!keyed) return accept(link, nullptr);
  // Users' keys are for clients: daemons prove the daemons' key, which this one lacks.
  if (listener_.daemons_key().empty())
    return refuse(link, StrangerEnd::key, "wrong or missing key: this fedcld takes peer links only with the daemons' key (--peer-key-file)");
  if (hello.getNonce().size() != fedcl::kNonceBytes) return refuse(link, StrangerEnd::frame, "the peer's hello carries no valid nonce");
  handshake.hello_nonce.assign(hello.getNonce().begin(), hello.getNonce().end());
  // What the dialling daemon signs: the instance it means to reach, which is checked once it proved
  // the key (until then, a stranger learns nothing of this daemon).
  handshake.identity = peer_identity(hello.getInstance(), hello.getExpect(), handshake.from_session, handshake.session);
  fedcl::Nonce challenge = fedcl::fresh_nonce();
  handshake.challenge_nonce.assign(challenge.begin(), challenge.end());
  handshake.challenged = true;
  capnp::MallocMessageBuilder builder;
  builder.initRoot<wire::PeerMessage>().initChallenge().setNonce(fedcl::as_data(challenge));
  link.send_peer(builder);
}

void PeerHandshakes::on_proof(Session &link, wire::AuthProof::Reader answer) {
  Session::Handshake &handshake = link.handshake;
  if (link.role != Session::Role::peer || !handshake.challenged || handshake.proved) {
    link.stranger_end = StrangerEnd::frame;
    return link.close("an unexpected peer proof");
  }
  handshake.proved = true;
  // Guesses at the daemons' key take the turns of the address's user-less proofs.
  uint64_t now = uv_now(listener_.loop());
  std::string who = auth_throttle_key(link.address_key(), "");
  uint64_t turn = listener_.throttle().verdict_at(who, now);
  if (turn == AuthThrottle::kBusy)
    return refuse(link, StrangerEnd::key, "too many wrong keys from this address lately: its proofs are not checked for a while");
  link.handshake_deadline = std::max(link.handshake_deadline, turn + kVerdictDeadlineMs);
  std::string_view key = listener_.daemons_key().view();
  if (answer.getProof().size() == 0 ||
      !fedcl::auth_proof_matches(handshake_proof(key, fedcl::AuthRole::dialling_peer, link), answer.getProof())) {
    listener_.throttle().failed(who, now);
    std::string why = answer.getProof().size() == 0 ? "wrong or missing key: the peer has none"
                                                    : "wrong or missing key: the peer's proof does not match the daemons' key";
    return listener_.at_turn(link, turn, [this, why](Session &link) { refuse(link, StrangerEnd::key, why); });
  }
  listener_.throttle().passed(who);
  fedcl::Proof mine = handshake_proof(key, fedcl::AuthRole::answering_peer, link);
  accept(link, &mine);
}

void PeerHandshakes::accept(Session &link, const fedcl::Proof *proof) {
  // The peer proved the key (or this daemon has none): what it asks for may be answered now.
  const Session::Handshake &handshake = link.handshake;
  if (handshake.expected_instance != listener_.instance())
    return refuse(link, StrangerEnd::refused, "this is not the daemon the peer meant to reach (it restarted?)");
  if (handshake.dialling_instance == 0 || handshake.dialling_instance == listener_.instance())
    return refuse(link, StrangerEnd::refused, "the peer names itself wrongly");
  Worker *worker = listener_.workers().by_token(handshake.session);
  if (!worker) return refuse(link, StrangerEnd::refused, "the session the peer names is not (or no longer) served here");
  listener_.verified(link);
  send_welcome(link, listener_.instance(), CL_SUCCESS, "", proof);
  FEDCLD_LOG(info, "peer link from %s (instance %016llx) for session %llu", link.peer().c_str(),
             (unsigned long long)handshake.dialling_instance, (unsigned long long)worker->number);
  uint64_t instance = handshake.dialling_instance, from_session = handshake.from_session;
  listener_.hand_off(link, *worker, [instance, from_session](wire::WorkerMessage::Builder message) {
    auto take = message.initTakeLink();
    take.setPeerInstance(instance);
    take.setPeerSession(from_session);
    take.setDial(0);
    return take.initConnection();
  });
}

void PeerHandshakes::on_challenge(Session &link, Dial &dial, wire::AuthChallenge::Reader challenge) {
  Session::Handshake &handshake = link.handshake;
  if (handshake.challenged) return failed(dial, "a second challenge");
  if (challenge.getNonce().size() != fedcl::kNonceBytes) return failed(dial, "a challenge without a valid nonce");
  handshake.challenge_nonce.assign(challenge.getNonce().begin(), challenge.getNonce().end());
  handshake.challenged = true;
  // Without the daemons' key, an empty proof: the other daemon refuses with a welcome that says why.
  std::string_view key = listener_.daemons_key().view();
  capnp::MallocMessageBuilder builder;
  auto answer = builder.initRoot<wire::PeerMessage>().initProof();
  if (!key.empty()) answer.setProof(fedcl::as_data(handshake_proof(key, fedcl::AuthRole::dialling_peer, link)));
  link.send_peer(builder);
}

void PeerHandshakes::on_welcome(Session &link, Dial &dial, wire::PeerWelcome::Reader welcome) {
  if (welcome.getStatus() != CL_SUCCESS) return failed(dial, "refused there: " + log_quote(welcome.getMessage()));
  if (welcome.getInstance() != dial.instance)
    return failed(dial, "the daemon answering there is another one (instance " + std::to_string(welcome.getInstance()) + ")");
  // A daemon with the daemons' key links only to daemons that proved they hold it too.
  std::string_view key = listener_.daemons_key().view();
  if (!key.empty() && (!link.handshake.challenged ||
                       !fedcl::auth_proof_matches(handshake_proof(key, fedcl::AuthRole::answering_peer, link),
                                                  welcome.getProof())))
    return failed(dial, "the daemon there did not prove that it holds the daemons' key");
  Worker *worker = listener_.workers().by_id(dial.worker);
  if (!worker) {
    std::shared_ptr<Session> gone = std::move(dial.link);
    dials_.erase(gone.get());
    return gone->close("the session that asked for the link has ended");
  }
  link.role = Session::Role::peer;
  FEDCLD_LOG(info, "peer link to %s (instance %016llx) for session %llu is up", log_quote(link.peer()).c_str(),
             (unsigned long long)dial.instance, (unsigned long long)worker->number);
  uint64_t instance = dial.instance, session = dial.session, id = dial.id;
  std::shared_ptr<Session> held = std::move(dial.link);
  dials_.erase(held.get());
  listener_.hand_off(*held, *worker, [instance, session, id](wire::WorkerMessage::Builder message) {
    auto take = message.initTakeLink();
    take.setPeerInstance(instance);
    take.setPeerSession(session);
    take.setDial(id);
    return take.initConnection();
  });
}

void PeerHandshakes::link_closed(Session &link, const std::string &reason) {
  auto it = dials_.find(&link);
  if (it == dials_.end()) return;
  Dial dial = it->second;
  dials_.erase(it);
  FEDCLD_LOG(warn, "peer link to instance %016llx failed: %s", (unsigned long long)dial.instance, reason.c_str());
  tell_failed(dial, "could not reach a fedcld at " + log_quote(dial.address));
}

void PeerHandshakes::worker_gone(const Worker &worker) {
  std::vector<std::shared_ptr<Session>> links;
  for (auto &[session, dial] : dials_)
    if (dial.worker == worker.id) links.push_back(dial.link);
  for (auto &link : links) {
    dials_.erase(link.get());
    link->close("the session that asked for the link has ended");
  }
}

void PeerHandshakes::tick() {
  uint64_t now = uv_now(listener_.loop());
  uint64_t timeout = listener_.options().peer_timeout_ms;
  std::vector<Session *> late;
  for (auto &[session, dial] : dials_)
    if (now - dial.started > timeout) late.push_back(session);
  for (Session *session : late) {
    auto it = dials_.find(session);
    if (it != dials_.end()) failed(it->second, "no answer within " + std::to_string(timeout / 1000) + " s");
  }
}

}  // namespace fedcld
