#include "peer_link.h"

#include <capnp/serialize.h>

#include <algorithm>
#include <random>

#include "auth.h"
#include "exec.h"
#include "log.h"
#include "peer_signal.h"
#include "peer_transfer.h"
#include "server.h"
#include "session.h"

namespace fedcld {

namespace {

constexpr uint64_t kHeartbeatMs = 1000;

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

// What a peer link's proofs name: which daemon dialled which.
std::string peer_identity(uint64_t dialling, uint64_t answering) {
  char text[48];
  std::snprintf(text, sizeof text, "%016llx>%016llx", (unsigned long long)dialling, (unsigned long long)answering);
  return text;
}

// A proof over the link's handshake as it stands, in role's name.
fedcl::Proof handshake_proof(const std::string &key, fedcl::AuthRole role, const Session::Handshake &handshake) {
  return fedcl::auth_proof(key, role, capnp::Data::Reader(handshake.challenge_nonce.data(), handshake.challenge_nonce.size()),
                           capnp::Data::Reader(handshake.hello_nonce.data(), handshake.hello_nonce.size()),
                           handshake.identity);
}

}  // namespace

uint64_t random_id() {
  static std::random_device device;
  uint64_t id = 0;
  while (id == 0) id = (uint64_t(device()) << 32) | device();
  return id;
}

PeerRegistry::PeerRegistry(Server &server) : server_(server), instance_(random_id()) {
  uv_timer_init(server_.loop(), &timer_);
  timer_.data = this;
}

void PeerRegistry::start() {
  uv_timer_start(&timer_, [](uv_timer_t *timer) { static_cast<PeerRegistry *>(timer->data)->tick(); },
                 kHeartbeatMs, kHeartbeatMs);
  // The timer alone must not keep the loop running once the daemon shuts down.
  uv_unref(reinterpret_cast<uv_handle_t *>(&timer_));
}

void PeerRegistry::close() { uv_close(reinterpret_cast<uv_handle_t *>(&timer_), nullptr); }

Session *PeerRegistry::usable_link(Peer &peer) {
  for (auto &link : peer.links)
    if (!link->closed()) return link.get();
  return nullptr;
}

void PeerRegistry::with_link(uint64_t instance, const std::string &address, LinkDone done) {
  if (instance == instance_) return done(nullptr, "the peer named is this daemon itself");
  if (instance == 0) return done(nullptr, "no peer daemon named");
  Peer &peer = peers_[instance];
  if (!address.empty()) peer.address = address;
  if (Session *link = usable_link(peer)) return done(link, "");
  peer.waiting.push_back(std::move(done));
  if (!peer.dialling) dial(instance, peer);
}

void PeerRegistry::dial(uint64_t instance, Peer &peer) {
  if (peer.address.empty()) return dial_failed(instance, "its address is not known");
  peer.dialling = server_.add_session();
  peer.dial_started = uv_now(server_.loop());
  std::weak_ptr<Session> weak = peer.dialling;
  std::string address = peer.address;
  FEDCLD_LOG(info, "peer link: dialling %s", address.c_str());
  resolve_address(server_.loop(), address, [this, instance, weak, address](const sockaddr *resolved, int status) {
    auto link = weak.lock();
    if (!link || link->closed()) return;
    if (!resolved) {
      dial_failed(instance, std::string("cannot resolve ") + address + ": " + uv_strerror(status));
      return;
    }
    link->connect(resolved, address, [this, instance, weak, address](int connected) {
      auto link = weak.lock();
      if (!link) return;
      if (connected != 0) {
        dial_failed(instance, "cannot connect to " + address + ": " + uv_strerror(connected));
        return;
      }
      fedcl::Nonce nonce = fedcl::fresh_nonce();
      link->handshake.hello_nonce.assign(nonce.begin(), nonce.end());
      link->handshake.identity = peer_identity(instance_, instance);
      capnp::MallocMessageBuilder builder;
      auto hello = builder.initRoot<wire::PeerMessage>().initHello();
      hello.setProtocolVersion(wire::PROTOCOL_VERSION);
      hello.setInstance(instance_);
      hello.setExpect(instance);
      hello.setNonce(fedcl::as_data(nonce));
      link->send_peer(builder);
    });
  });
}

void PeerRegistry::dial_failed(uint64_t instance, const std::string &why) {
  auto it = peers_.find(instance);
  if (it == peers_.end()) return;
  Peer &peer = it->second;
  std::shared_ptr<Session> dialling = std::move(peer.dialling);
  std::vector<LinkDone> waiting;
  waiting.swap(peer.waiting);
  FEDCLD_LOG(warn, "peer link to %s failed: %s", peer.address.c_str(), why.c_str());
  if (dialling) dialling->close(why);
  for (auto &done : waiting) done(nullptr, "no link to peer daemon " + peer.address + ": " + why);
}

void PeerRegistry::receive(Session &link, Frame &frame) {
  capnp::FlatArrayMessageReader reader(frame.message.asPtr());
  auto message = reader.getRoot<wire::PeerMessage>();
  using W = wire::PeerMessage::Which;
  W which = message.which();
  if (which == W::HELLO) return on_hello(link, frame);
  if (which == W::CHALLENGE) return on_challenge(link, message.getChallenge());
  if (which == W::PROOF) return on_proof(link, message.getProof());
  if (which == W::WELCOME) return on_welcome(link, frame);
  if (link.peer_instance == 0) return link.close("peer message before the handshake");
  if (frame.header.payload_bytes != 0 && which != W::DATA) return link.close("unexpected payload on a peer link");
  switch (which) {
    case W::HEARTBEAT: break;
    case W::DATA: peer_deliver_data(server_, link, message.getData(), frame); break;
    case W::ABORT: peer_deliver_abort(server_, link, message.getAbort()); break;
    case W::SIGNAL: peer_deliver_signal(server_, link, message.getSignal()); break;
    default: link.close("unknown peer message " + std::to_string(unsigned(which)));
  }
}

std::shared_ptr<uint8_t[]> PeerRegistry::payload_destination(Session &link, const Frame &frame) {
  if (link.peer_instance == 0) return nullptr;
  try {
    capnp::FlatArrayMessageReader reader(frame.message.asPtr());
    auto message = reader.getRoot<wire::PeerMessage>();
    if (message.which() != wire::PeerMessage::DATA) return nullptr;
    return peer_data_destination(server_, link, message.getData(), frame.header.payload_bytes);
  } catch (const kj::Exception &) {
    return nullptr;  // receive() finds the message malformed and closes the link
  }
}

void PeerRegistry::on_hello(Session &link, Frame &frame) {
  capnp::FlatArrayMessageReader reader(frame.message.asPtr());
  auto hello = reader.getRoot<wire::PeerMessage>().getHello();
  auto refuse = [&](const std::string &why) {
    send_welcome(link, instance_, CL_INVALID_PLATFORM, why);
    link.close_after_writes("peer refused: " + why);
  };
  if (link.role != Session::Role::undecided) return link.close("a second peer hello");
  link.role = Session::Role::peer;
  if (link.plaintext_refused) return refuse("this fedcld takes TLS connections only, and the peer connected without TLS (--tls yes on both)");
  if (hello.getProtocolVersion() != wire::PROTOCOL_VERSION)
    return refuse("protocol version mismatch: the peer speaks " + std::to_string(hello.getProtocolVersion()) +
                  ", this fedcld " + std::to_string(wire::PROTOCOL_VERSION));
  const ServerOptions &options = server_.options();
  bool keyed = options.requires_key();
  if (keyed && hello.hasKey() && hello.getKey().size() > 0)
    return refuse("the peer sent its key in the clear (an older fedcld?); this fedcld takes only a proof of it");
  if (hello.getExpect() != instance_) return refuse("this is not the daemon the peer meant to reach (it restarted?)");
  if (hello.getInstance() == 0 || hello.getInstance() == instance_) return refuse("the peer names itself wrongly");
  if (!keyed) return accept(link, hello.getInstance(), nullptr);
  // Per-user keys are for clients: daemons prove the cluster key, which this one lacks.
  if (options.key.empty()) return refuse("wrong or missing key: this fedcld takes peer links only with the cluster key (--key-file)");
  if (hello.getNonce().size() != fedcl::kNonceBytes) return refuse("the peer's hello carries no valid nonce");
  Session::Handshake &handshake = link.handshake;
  handshake.hello_nonce.assign(hello.getNonce().begin(), hello.getNonce().end());
  handshake.identity = peer_identity(hello.getInstance(), instance_);
  handshake.dialling_instance = hello.getInstance();
  fedcl::Nonce challenge = fedcl::fresh_nonce();
  handshake.challenge_nonce.assign(challenge.begin(), challenge.end());
  handshake.challenged = true;
  capnp::MallocMessageBuilder builder;
  builder.initRoot<wire::PeerMessage>().initChallenge().setNonce(fedcl::as_data(challenge));
  link.send_peer(builder);
}

void PeerRegistry::on_proof(Session &link, wire::AuthProof::Reader answer) {
  Session::Handshake &handshake = link.handshake;
  if (link.dialled || !handshake.challenged || link.peer_instance != 0) return link.close("an unexpected peer proof");
  auto refuse = [&](const std::string &why) {
    send_welcome(link, instance_, CL_INVALID_PLATFORM, why);
    link.close_after_writes("peer refused: " + why);
  };
  const std::string &key = server_.options().key;
  if (answer.getProof().size() == 0) return refuse("wrong or missing key: the peer has none");
  if (!fedcl::auth_proof_matches(handshake_proof(key, fedcl::AuthRole::dialling_peer, handshake), answer.getProof()))
    return refuse("wrong or missing key: the peer's proof does not match the cluster key");
  fedcl::Proof mine = handshake_proof(key, fedcl::AuthRole::answering_peer, handshake);
  accept(link, handshake.dialling_instance, &mine);
}

void PeerRegistry::accept(Session &link, uint64_t instance, const fedcl::Proof *proof) {
  link.peer_instance = instance;
  link.handshake = {};
  send_welcome(link, instance_, CL_SUCCESS, "", proof);
  FEDCLD_LOG(info, "peer link from %s (instance %016llx)", link.peer().c_str(), (unsigned long long)link.peer_instance);
  Peer &peer = peers_[link.peer_instance];
  peer.links.push_back(link.shared_from_this());
  std::vector<LinkDone> waiting;
  waiting.swap(peer.waiting);
  for (auto &done : waiting) done(&link, "");
}

void PeerRegistry::on_challenge(Session &link, wire::AuthChallenge::Reader challenge) {
  Session::Handshake &handshake = link.handshake;
  if (!link.dialled || handshake.challenged || link.peer_instance != 0) return link.close("an unexpected peer challenge");
  if (challenge.getNonce().size() != fedcl::kNonceBytes) return link.close("a peer challenge without a valid nonce");
  handshake.challenge_nonce.assign(challenge.getNonce().begin(), challenge.getNonce().end());
  handshake.challenged = true;
  // Without the cluster key, an empty proof: the other daemon refuses with a welcome that says why.
  const std::string &key = server_.options().key;
  capnp::MallocMessageBuilder builder;
  auto answer = builder.initRoot<wire::PeerMessage>().initProof();
  if (!key.empty()) answer.setProof(fedcl::as_data(handshake_proof(key, fedcl::AuthRole::dialling_peer, handshake)));
  link.send_peer(builder);
}

void PeerRegistry::on_welcome(Session &link, Frame &frame) {
  capnp::FlatArrayMessageReader reader(frame.message.asPtr());
  auto welcome = reader.getRoot<wire::PeerMessage>().getWelcome();
  uint64_t instance = welcome.getInstance();
  auto it = peers_.find(instance);
  if (!link.dialled || link.peer_instance != 0 || it == peers_.end() || it->second.dialling.get() != &link) {
    for (auto &[expected, peer] : peers_)
      if (peer.dialling.get() == &link) {
        dial_failed(expected, "the daemon answering there is another one (instance " + std::to_string(instance) + ")");
        return;
      }
    return link.close("unexpected peer welcome");
  }
  if (welcome.getStatus() != CL_SUCCESS) return dial_failed(instance, welcome.getMessage().cStr());
  // A daemon with the cluster key links only to daemons that proved they hold it too.
  const std::string &key = server_.options().key;
  if (!key.empty() && (!link.handshake.challenged ||
                       !fedcl::auth_proof_matches(handshake_proof(key, fedcl::AuthRole::answering_peer, link.handshake),
                                                  welcome.getProof())))
    return dial_failed(instance, "the daemon there did not prove that it holds the cluster key");
  link.handshake = {};
  Peer &peer = it->second;
  link.peer_instance = instance;
  peer.links.push_back(std::move(peer.dialling));
  FEDCLD_LOG(info, "peer link to %s (instance %016llx) is up", peer.address.c_str(), (unsigned long long)instance);
  std::vector<LinkDone> waiting;
  waiting.swap(peer.waiting);
  for (auto &done : waiting) done(&link, "");
}

void PeerRegistry::link_closed(Session &link, const std::string &reason) {
  for (auto &[instance, peer] : peers_) {
    if (peer.dialling.get() == &link) {
      // The dial's own callbacks report it; a close from elsewhere (timeout, shutdown) does here.
      peer.dialling.reset();
      std::vector<LinkDone> waiting;
      waiting.swap(peer.waiting);
      for (auto &done : waiting) done(nullptr, "no link to peer daemon " + peer.address + ": " + reason);
      return;
    }
  }
  if (link.peer_instance == 0) return;
  auto it = peers_.find(link.peer_instance);
  if (it == peers_.end()) return;
  auto &links = it->second.links;
  links.erase(std::remove_if(links.begin(), links.end(), [&](const auto &l) { return l.get() == &link; }), links.end());
  peer_lost(server_, link.peer_instance, "the link to peer daemon " + link.peer() + " was lost: " + reason);
}

void PeerRegistry::tick() {
  uint64_t now = uv_now(server_.loop());
  uint64_t timeout = server_.options().peer_timeout_ms;
  std::vector<std::pair<std::shared_ptr<Session>, std::string>> dead;
  for (auto &[instance, peer] : peers_) {
    if (peer.dialling && now - peer.dial_started > timeout)
      dead.emplace_back(peer.dialling, "no answer within " + std::to_string(timeout / 1000) + " s");
    for (auto &link : peer.links) {
      if (link->closed()) continue;
      if (now - link->last_heard > timeout) {
        dead.emplace_back(link, "silent for " + std::to_string((now - link->last_heard) / 1000) + " s");
        continue;
      }
      if (now - link->last_sent >= kHeartbeatMs) {
        capnp::MallocMessageBuilder builder;
        builder.initRoot<wire::PeerMessage>().setHeartbeat();
        link->send_peer(builder);
      }
    }
  }
  for (auto &[link, why] : dead) link->close(why);
}

}  // namespace fedcld
