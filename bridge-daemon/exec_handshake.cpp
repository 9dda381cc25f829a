// A connection's handshake, in fedcld's main process: Hello (protocol version, platform, who it is,
// its nonce, the host it dialled), then, on a daemon with a key, the challenge and the client's
// proof (protocol/auth.h). Only a client that proved itself gets a session: the connection then goes
// to a session worker (Listener::start_session), which answers with the HelloReply. `fedcl status`
// opens its connection with a StatusRequest instead, proves itself the same way, and gets the
// daemon's status. A client whose connection dropped opens a new one with Resume instead, proves
// itself the same way on a fresh challenge, and the connection goes to the worker that keeps its
// session.
//
// A connection gets one proof, checked when it arrives. One that holds is answered at once; one
// that fails is answered at its turn when its address has been failing for that user
// (auth_throttle.h). A wrong key and an unknown user are refused alike: same work (KeyStore's decoy
// key), same answer, same log line. A proof that holds is then checked to name this daemon as the
// host dialled (daemon_names.h): a DNS lookup at worst, and only for a client that holds a key, so
// that strangers cannot make fedcld ask DNS anything.
#include <capnp/message.h>
#include <capnp/serialize.h>

#include <unistd.h>

#include <algorithm>
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

// How a refusal names the key a proof was checked against.
std::string whose_key(const std::string &user) { return user.empty() ? std::string("the cluster key") : "user " + log_quote(user); }

// "" when the other side speaks this daemon's protocol, else why not.
std::string version_mismatch(uint32_t version) {
  if (version == wire::PROTOCOL_VERSION) return {};
  return "protocol version mismatch: the client speaks fedcl protocol " + std::to_string(version) +
         ", fedcld speaks " + std::to_string(wire::PROTOCOL_VERSION);
}

// The proof's verdict: at once when it holds, at turn (AuthThrottle) when it fails.
void give_verdict(Listener &listener, Session &session, const std::string &who, uint64_t turn);

// Refuses the proof at its turn (logged as a stranger's end: a line per address and interval).
void refuse_at(Listener &listener, Session &session, uint64_t turn, StrangerEnd end, const std::string &why);

struct Handshake {
  Listener &listener;
  Session &session;
  uint64_t seq;

  void refuse(StrangerEnd end, const std::string &why) { listener.refuse_stranger(session, seq, end, why); }

  // On a daemon with a key: remembers the client's nonce and sends the challenge that its proof
  // must answer (authenticate); without one, the handshake is done.
  void challenge_or_done(bool sent_key, capnp::Data::Reader client_nonce) {
    if (!listener.keys().requires_key()) return done(listener, session, seq, nullptr);
    Session::Handshake &state = session.handshake;
    // An older client sends the key itself: never take it, even when it is right.
    if (sent_key)
      return refuse(StrangerEnd::refused, "the client sent its key in the clear (an older fedcl?); this fedcld takes only a proof of it");
    if (client_nonce.size() != fedcl::kNonceBytes) return refuse(StrangerEnd::frame, "the client's first request carries no valid nonce");
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
      session.stranger_end = StrangerEnd::frame;
      session.close("a second opening request during the handshake");
      return false;
    }
    if (session.plaintext_refused) {
      refuse(StrangerEnd::plaintext, kPlainRefused);
      return false;
    }
    std::string mismatch = version_mismatch(version);
    if (!mismatch.empty()) refuse(StrangerEnd::version, mismatch);
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
    if (!state.challenged || state.proved) {
      session.stranger_end = StrangerEnd::frame;
      return session.close(state.proved ? "a second proof on one connection" : "a proof without a challenge");
    }
    state.proved = true;
    state.proof.assign(answer.getProof().begin(), answer.getProof().end());
    state.proof_seq = seq;
    uint64_t now = uv_now(listener.loop());
    std::string who = auth_throttle_key(session.address_key(), state.identity);
    uint64_t turn = listener.throttle().verdict_at(who, now);
    if (turn == AuthThrottle::kBusy)
      return listener.refuse_stranger(session, seq, StrangerEnd::key,
                                      "too many wrong keys for " + whose_key(state.identity) +
                                          " from this address lately: its proofs are not checked for a while");
    // The proof is in: the connection waits for its verdict's turn (and a lookup), not longer.
    session.handshake_deadline = std::max(session.handshake_deadline, turn + kVerdictDeadlineMs);
    give_verdict(listener, session, who, turn);
  }

  // The handshake is done (proof: the daemon's own, where it has a key): what it was for follows.
  static void done(Listener &listener, Session &session, uint64_t seq, const fedcl::Proof *proof) {
    listener.verified(session);
    const Session::Handshake &state = session.handshake;
    if (state.status_request) return listener.send_status(session, seq, proof);
    if (state.resuming) return listener.resume_session(session, seq, proof);
    listener.start_session(session, seq, proof);
  }
};

void refuse_at(Listener &listener, Session &session, uint64_t turn, StrangerEnd end, const std::string &why) {
  listener.at_turn(session, turn, [&listener, end, why](Session &session) {
    listener.refuse_stranger(session, session.handshake.proof_seq, end, why);
  });
}

void give_verdict(Listener &listener, Session &session, const std::string &who, uint64_t turn) {
  const Session::Handshake &state = session.handshake;
  uint64_t seq = state.proof_seq;
  if (state.proof.empty())
    return refuse_at(listener, session, turn, StrangerEnd::refused, "the client has no key (this fedcld requires one)");
  capnp::Data::Reader challenge(state.challenge_nonce.data(), state.challenge_nonce.size());
  capnp::Data::Reader client_nonce(state.hello_nonce.data(), state.hello_nonce.size());
  fedcl::AuthBinding binding{session.channel_binding(), state.daemon, state.resuming ? state.resume_token : std::string()};
  fedcl::Secret key = listener.keys().key_for(state.identity);
  fedcl::Proof expected = fedcl::auth_proof(key.view(), fedcl::AuthRole::client, challenge, client_nonce, state.identity, binding);
  capnp::Data::Reader received(state.proof.data(), state.proof.size());
  if (!fedcl::auth_proof_matches(expected, received)) {
    listener.throttle().failed(who, uv_now(listener.loop()));
    return refuse_at(listener, session, turn, StrangerEnd::key, "wrong key for " + whose_key(state.identity) + " (or no key here for it)");
  }
  if (uint64_t failures = listener.throttle().passed(who); failures > AuthThrottle::kFreeFailures)
    FEDCLD_LOG(warn, "%s proved a key after %llu failed proofs: its handshakes are no longer slowed", who.c_str(),
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
    default:
      session.stranger_end = StrangerEnd::frame;
      session.close("a request before the handshake was done");
  }
}

}  // namespace fedcld
