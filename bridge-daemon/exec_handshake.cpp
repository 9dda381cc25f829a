// A connection's handshake, in fedcld's main process: Hello (protocol version, platform, who it is,
// its nonce, the host it dialled), then, on a daemon with a key, the challenge and the client's
// proof (protocol/auth.h). Only a client that proved itself gets a session: the connection then goes
// to a session worker (Listener::start_session), which answers with the HelloReply. `fedcl status`
// opens its connection with a StatusRequest instead, proves itself the same way, and gets the
// daemon's status. A client whose connection dropped opens a new one with Resume instead, proves
// itself the same way on a fresh challenge, and the connection goes to the worker that keeps its
// session.
//
// A connection gets one proof. Its verdict waits for the address's turn when the address has been
// failing (auth_throttle.h). A wrong key and an unknown user are refused alike: same work
// (KeyStore's decoy key), same answer, same log line. A proof that holds is then checked to name
// this daemon as the host dialled (daemon_names.h): a DNS lookup at worst, and only for a client
// that holds a key, so that strangers cannot make fedcld ask DNS anything.
#include <capnp/message.h>
#include <capnp/serialize.h>

#include <arpa/inet.h>
#include <unistd.h>

#include <cstring>

#include "auth.h"
#include "listener.h"
#include "log.h"

namespace fedcld {

namespace wire = fedcl::wire;

namespace {

// Why a client speaking plain TCP to a daemon with --tls is refused (tls_stream.h).
constexpr const char kPlainRefused[] =
    "this fedcld takes TLS connections only, and the client connected without TLS (set FEDCL_TLS to cert or psk)";

// "" when the other side speaks this daemon's protocol, else why not.
std::string version_mismatch(uint32_t version) {
  if (version == wire::PROTOCOL_VERSION) return {};
  return "protocol version mismatch: the client speaks fedcl protocol " + std::to_string(version) +
         ", fedcld speaks " + std::to_string(wire::PROTOCOL_VERSION);
}

// Whose failures count together (AuthThrottle): the peer's address without its port, an IPv6 one
// by its /64, which one machine can fill with addresses; on the local socket, the user the kernel
// names.
std::string throttle_key(const Session &session) {
  if (session.local()) return "local uid " + std::to_string(session.peer_uid());
  std::string host = fedcl::tls_host_of(session.peer());
  unsigned char bytes[16];
  if (inet_pton(AF_INET6, host.c_str(), bytes) != 1) return host;
  std::memset(bytes + 8, 0, 8);
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, bytes, text, sizeof text);
  return std::string(text) + "/64";
}

// The proof's verdict, once the address's turn has come.
void give_verdict(Listener &listener, Session &session);

struct Handshake {
  Listener &listener;
  Session &session;
  uint64_t seq;

  void refuse(const std::string &why) { listener.refuse(session, seq, CL_INVALID_PLATFORM, why); }

  // On a daemon with a key: remembers the client's nonce and sends the challenge that its proof
  // must answer (authenticate); without one, the handshake is done.
  void challenge_or_done(bool sent_key, capnp::Data::Reader client_nonce) {
    if (!listener.keys().requires_key()) return done(listener, session, seq, nullptr);
    Session::Handshake &state = session.handshake;
    // An older client sends the key itself: never take it, even when it is right.
    if (sent_key) return refuse("the client sent its key in the clear (an older fedcl?); this fedcld takes only a proof of it");
    if (client_nonce.size() != fedcl::kNonceBytes) return refuse("the client's first request carries no valid nonce");
    state.hello_nonce.assign(client_nonce.begin(), client_nonce.end());
    fedcl::Nonce nonce = fedcl::fresh_nonce();
    state.challenge_nonce.assign(nonce.begin(), nonce.end());
    state.challenged = true;
    capnp::MallocMessageBuilder message;
    auto reply = message.initRoot<wire::Reply>();
    reply.setSeq(seq);
    reply.initChallenge().setNonce(fedcl::as_data(nonce));
    session.send_reply(message);
  }

  // A client of this host that dialled TCP is sent to the local socket (LocalRedirect): nothing is
  // said but where that is, which every process of the host may see anyway; the session starts
  // there, with the handshake from the start.
  bool redirect_local(capnp::Data::Reader host) {
    const std::string &mine = listener.options().host_identity;
    if (session.local() || listener.local_socket().empty() || mine.empty() || host.size() != mine.size() ||
        std::memcmp(host.begin(), mine.data(), mine.size()) != 0)
      return false;
    capnp::MallocMessageBuilder message;
    auto reply = message.initRoot<wire::Reply>();
    reply.setSeq(seq);
    auto local = reply.initLocal();
    local.setSocket(listener.local_socket());
    local.setPid(uint32_t(getpid()));
    session.send_reply(message);
    session.close_after_writes("sent to the local socket");
    return true;
  }

  // The first request of a connection: checked alike, whatever it opens.
  bool opening(uint32_t version, capnp::Text::Reader daemon) {
    if (session.handshake.challenged) {
      session.close("a second opening request during the handshake");
      return false;
    }
    if (session.plaintext_refused) {
      refuse(kPlainRefused);
      return false;
    }
    std::string mismatch = version_mismatch(version);
    if (!mismatch.empty()) refuse(mismatch);
    session.handshake.daemon = daemon;
    return mismatch.empty();
  }

  void hello(wire::Hello::Reader hello) {
    if (!opening(hello.getProtocolVersion(), hello.getDaemon())) return;
    if (redirect_local(hello.getHost())) return;
    Session::Handshake &state = session.handshake;
    state.identity = hello.getUser();
    state.client = hello.getClient();
    state.platform = hello.getPlatform();
    challenge_or_done(hello.hasKey() && hello.getKey().size() > 0, hello.getNonce());
  }

  void resume(wire::Resume::Reader resume) {
    if (!opening(resume.getProtocolVersion(), resume.getDaemon())) return;
    Session::Handshake &state = session.handshake;
    state.identity = resume.getUser();
    auto token = resume.getToken();
    state.resume_token.assign(reinterpret_cast<const char *>(token.begin()), token.size());
    state.resume_received = resume.getReceived();
    state.resuming = true;
    challenge_or_done(false, resume.getNonce());
  }

  void status(wire::StatusRequest::Reader request) {
    if (!opening(request.getProtocolVersion(), request.getDaemon())) return;
    session.handshake.identity = request.getUser();
    session.handshake.status_request = true;
    challenge_or_done(request.hasKey() && request.getKey().size() > 0, request.getNonce());
  }

  void authenticate(wire::AuthProof::Reader answer) {
    Session::Handshake &state = session.handshake;
    if (!state.challenged) return session.close("a proof without a challenge");
    if (state.proved) return session.close("a second proof on one connection");
    state.proved = true;
    state.proof.assign(answer.getProof().begin(), answer.getProof().end());
    state.proof_seq = seq;
    uint64_t now = uv_now(listener.loop());
    uint64_t at = listener.throttle().verdict_at(throttle_key(session), now);
    if (at == AuthThrottle::kBusy)
      return listener.refuse(session, seq, CL_INVALID_PLATFORM,
                             "too many wrong keys from this address lately: its proofs are not checked for a while", true);
    if (at <= now) return give_verdict(listener, session);
    struct Wait {
      uv_timer_t timer;
      Listener *listener;
      std::weak_ptr<Session> session;
    };
    auto *wait = new Wait{{}, &listener, session.shared_from_this()};
    uv_timer_init(listener.loop(), &wait->timer);
    wait->timer.data = wait;
    uv_timer_start(&wait->timer, [](uv_timer_t *timer) {
      auto *wait = static_cast<Wait *>(timer->data);
      if (auto session = wait->session.lock(); session && !session->closed()) give_verdict(*wait->listener, *session);
      uv_close(reinterpret_cast<uv_handle_t *>(timer), [](uv_handle_t *h) { delete static_cast<Wait *>(h->data); });
    }, at - now, 0);
  }

  // The handshake is done (proof: the daemon's own, where it has a key): what it was for follows.
  static void done(Listener &listener, Session &session, uint64_t seq, const fedcl::Proof *proof) {
    const Session::Handshake &state = session.handshake;
    if (state.status_request) return listener.send_status(session, seq, proof);
    if (state.resuming) return listener.resume_session(session, seq, proof);
    listener.start_session(session, seq, proof);
  }
};

void give_verdict(Listener &listener, Session &session) {
  const Session::Handshake &state = session.handshake;
  uint64_t seq = state.proof_seq;
  std::string address = throttle_key(session);
  if (state.proof.empty()) return listener.refuse(session, seq, CL_INVALID_PLATFORM, "the client has no key (this fedcld requires one)");
  capnp::Data::Reader challenge(state.challenge_nonce.data(), state.challenge_nonce.size());
  capnp::Data::Reader client_nonce(state.hello_nonce.data(), state.hello_nonce.size());
  fedcl::AuthBinding binding{session.channel_binding(), state.daemon, state.resuming ? state.resume_token : std::string()};
  fedcl::Secret key = listener.keys().key_for(state.identity);
  fedcl::Proof expected = fedcl::auth_proof(key.view(), fedcl::AuthRole::client, challenge, client_nonce, state.identity, binding);
  capnp::Data::Reader received(state.proof.data(), state.proof.size());
  if (!fedcl::auth_proof_matches(expected, received)) {
    AuthThrottle::Failure failure = listener.throttle().failed(address, uv_now(listener.loop()));
    bool slowed = failure.failures > AuthThrottle::kFreeFailures;
    if (failure.slowing_starts)
      FEDCLD_LOG(warn, "%s: %llu failed proofs in a row; its handshakes' verdicts are slowed from now on (the "
                       "failures of this burst are not logged one by one)", address.c_str(),
                 (unsigned long long)failure.failures);
    std::string who = state.identity.empty() ? std::string("the cluster key") : "user " + log_quote(state.identity);
    return listener.refuse(session, seq, CL_INVALID_PLATFORM, "wrong key for " + who + " (or no key here for it)", slowed);
  }
  if (uint64_t failures = listener.throttle().passed(address); failures > AuthThrottle::kFreeFailures)
    FEDCLD_LOG(warn, "%s proved a key after %llu failed proofs: its handshakes are no longer slowed", address.c_str(),
               (unsigned long long)failures);
  fedcl::Proof mine = fedcl::auth_proof(key.view(), fedcl::AuthRole::daemon, challenge, client_nonce, state.identity, binding);
  std::weak_ptr<Session> weak = session.shared_from_this();
  listener.names().check(listener.loop(), state.daemon, [&listener, weak, seq, mine](bool here) {
    auto session = weak.lock();
    if (!session || session->closed()) return;
    if (here) return Handshake::done(listener, *session, seq, &mine);
    listener.refuse(*session, seq, CL_INVALID_PLATFORM,
                    "the client dialled " + log_quote(session->handshake.daemon) +
                        ", which is not a name or address of this fedcld: a machine in between passed the handshake "
                        "on? If it is a name of this host, give it to fedcld with --aliases");
  });
}

}  // namespace

void execute_handshake(Listener &listener, Session &session, Frame &frame) {
  capnp::FlatArrayMessageReader reader(frame.message.asPtr());
  auto request = reader.getRoot<wire::Request>();
  Handshake handshake{listener, session, request.getSeq()};
  switch (request.which()) {
    case wire::Request::HELLO: return handshake.hello(request.getHello());
    case wire::Request::RESUME: return handshake.resume(request.getResume());
    case wire::Request::DAEMON_STATUS: return handshake.status(request.getDaemonStatus());
    case wire::Request::AUTHENTICATE: return handshake.authenticate(request.getAuthenticate());
    default: session.close("a request before the handshake was done");
  }
}

}  // namespace fedcld
