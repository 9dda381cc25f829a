// A connection's handshake, in fedcld's main process: Hello (protocol version, platform, who it is,
// its nonce), then, on a daemon with a key, the challenge and the client's proof (protocol/auth.h).
// Only a client that proved itself gets a session: the connection then goes to a session worker
// (Listener::start_session), which answers with the HelloReply. `fedcl status` opens its connection
// with a StatusRequest instead, proves itself the same way, and gets the daemon's status. A client
// whose connection dropped opens a new one with Resume instead, proves itself the same way on a
// fresh challenge, and the connection goes to the worker that keeps its session.
#include <capnp/message.h>
#include <capnp/serialize.h>

#include "auth.h"
#include "keys.h"
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

struct Handshake {
  Listener &listener;
  Session &session;
  uint64_t seq;

  void refuse(const std::string &why) { listener.refuse(session, seq, CL_INVALID_PLATFORM, why); }

  // The handshake is done (proof: the daemon's own, where it has a key): what it was for follows.
  void done(const fedcl::Proof *proof) {
    const Session::Handshake &state = session.handshake;
    if (state.status_request) return listener.send_status(session, seq, proof);
    if (state.resuming) return listener.resume_session(session, seq, proof);
    listener.start_session(session, seq, proof);
  }

  // On a daemon with a key: remembers the client's nonce and sends the challenge that its proof
  // must answer (authenticate); without one, the handshake is done.
  void challenge_or_done(bool sent_key, capnp::Data::Reader client_nonce) {
    if (!listener.options().requires_key()) return done(nullptr);
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

  // The first request of a connection: checked alike, whatever it opens.
  bool opening(uint32_t version) {
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
    return mismatch.empty();
  }

  void hello(wire::Hello::Reader hello) {
    if (!opening(hello.getProtocolVersion())) return;
    Session::Handshake &state = session.handshake;
    state.identity = hello.getUser();
    state.client = hello.getClient();
    state.platform = hello.getPlatform();
    challenge_or_done(hello.hasKey() && hello.getKey().size() > 0, hello.getNonce());
  }

  void resume(wire::Resume::Reader resume) {
    if (!opening(resume.getProtocolVersion())) return;
    Session::Handshake &state = session.handshake;
    state.identity = resume.getUser();
    auto token = resume.getToken();
    state.resume_token.assign(reinterpret_cast<const char *>(token.begin()), token.size());
    state.resume_received = resume.getReceived();
    state.resuming = true;
    challenge_or_done(false, resume.getNonce());
  }

  void status(wire::StatusRequest::Reader request) {
    if (!opening(request.getProtocolVersion())) return;
    session.handshake.identity = request.getUser();
    session.handshake.status_request = true;
    challenge_or_done(request.hasKey() && request.getKey().size() > 0, request.getNonce());
  }

  void authenticate(wire::AuthProof::Reader answer) {
    const ServerOptions &options = listener.options();
    Session::Handshake &state = session.handshake;
    if (!state.challenged) return session.close("a proof without a challenge");
    std::string why;
    std::string key = key_for_user(options.key, options.key_list, state.identity, &why);
    if (key.empty()) return refuse(why);
    if (answer.getProof().size() == 0) return refuse("the client has no key (this fedcld requires one)");
    capnp::Data::Reader challenge(state.challenge_nonce.data(), state.challenge_nonce.size());
    capnp::Data::Reader client_nonce(state.hello_nonce.data(), state.hello_nonce.size());
    fedcl::Proof expected = fedcl::auth_proof(key, fedcl::AuthRole::client, challenge, client_nonce, state.identity);
    if (!fedcl::auth_proof_matches(expected, answer.getProof()))
      return refuse(state.identity.empty() ? "wrong key" : "wrong key for user '" + state.identity + "'");
    fedcl::Proof mine = fedcl::auth_proof(key, fedcl::AuthRole::daemon, challenge, client_nonce, state.identity);
    done(&mine);
  }
};

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
