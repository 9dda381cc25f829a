// A client's handshake: Hello (protocol version, platform, who it is, its nonce), then, on a daemon
// with a key, the challenge and the client's proof (protocol/auth.h). Only a client that proved
// itself gets a session: its token, its platform, its devices. `fedcl status` opens its connection
// with a StatusRequest instead, proves itself the same way, and gets the daemon's status. A client
// whose connection dropped opens a new one with Resume instead, proves itself the same way on a
// fresh challenge, and its parked session goes on over the new connection.
#include <capnp/message.h>

#include "auth.h"
#include "exec.h"
#include "keys.h"
#include "log.h"
#include "server.h"

namespace fedcld {

namespace {

// Refuses the session: the client gets status and why, the log warns why (a wrong key may be an
// attack), the connection closes.
void refuse(Call &call, const std::string &why) {
  Session &session = call.session;
  FEDCLD_LOG(warn, "session %llu (%s) refused: %s", (unsigned long long)session.number(), session.peer().c_str(), why.c_str());
  session.send_status(call.seq, CL_INVALID_PLATFORM, "fedcld refused the session: " + why);
  session.close_after_writes("refused");
}

// The session is the client's: its platform, its token for peers, and the HelloReply (with the
// daemon's own proof when there is a key).
void welcome(Call &call, const Session::Handshake &handshake, const fedcl::Proof *proof) {
  Session &session = call.session;
  const ServerOptions &options = session.server().options();
  const auto &platforms = session.server().platforms();
  size_t p = handshake.platform;
  if (p >= platforms.size())
    return refuse(call, "fedcld exports " + std::to_string(platforms.size()) + " platform(s), not platform " + std::to_string(p));
  session.greeted = true;
  session.role = Session::Role::client;
  session.token = session.server().register_token(session);
  session.set_platform(p);
  session.client = handshake.client;
  session.user = handshake.identity;
  uint32_t window = options.resume_window_ms;
  if (window > 0) session.resume_token = session.server().register_resume_token(session);
  FEDCLD_LOG(info, "session %llu: client %s%s%s, platform %zu", (unsigned long long)session.number(),
             handshake.client.c_str(), handshake.identity.empty() ? "" : ", user ", handshake.identity.c_str(), p);

  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setSeq(call.seq);
  auto out = reply.initHello();
  out.setProtocolVersion(wire::PROTOCOL_VERSION);
  out.setNode(options.node);
  out.setPlatformCount(platforms.size());
  out.setInstance(session.server().peers().instance());
  out.setPeerAddress(options.peer_address);
  out.setSessionToken(session.token);
  if (proof) out.setProof(fedcl::as_data(*proof));
  if (window > 0) {
    out.setResumeToken(capnp::Data::Reader(reinterpret_cast<const uint8_t *>(session.resume_token.data()),
                                           session.resume_token.size()));
    out.setResumeWindowMs(window);
  }
  auto platform = out.initPlatforms(1)[0];
  fill_info(platform.initInfo(platforms[p].info.size()), platforms[p].info);
  auto devices = platform.initDevices(platforms[p].devices.size());
  for (size_t d = 0; d < platforms[p].devices.size(); d++) {
    const BackendDevice &device = platforms[p].devices[d];
    uint64_t id = d + 1;
    session.objects().add_device(id, device.handle);
    devices[d].setId(id);
    fill_info(devices[d].initInfo(device.info.size()), device.info);
  }
  session.send_reply(message);
  session.handshake = {};
}

// Why a client speaking plain TCP to a daemon with --tls is refused (tls_stream.h).
constexpr const char kPlainRefused[] =
    "this fedcld takes TLS connections only, and the client connected without TLS (set FEDCL_TLS to cert or psk)";

// "" when the other side speaks this daemon's protocol, else why not.
std::string version_mismatch(uint32_t version) {
  if (version == wire::PROTOCOL_VERSION) return {};
  return "protocol version mismatch: the client speaks fedcl protocol " + std::to_string(version) +
         ", fedcld speaks " + std::to_string(wire::PROTOCOL_VERSION);
}

// On a daemon with a key: remembers the client's nonce and sends the challenge that its proof
// must answer (exec_authenticate).
void send_challenge(Call &call, bool sent_key, capnp::Data::Reader client_nonce) {
  Session::Handshake &handshake = call.session.handshake;
  // An older client sends the key itself: never take it, even when it is right.
  if (sent_key) return refuse(call, "the client sent its key in the clear (an older fedcl?); this fedcld takes only a proof of it");
  if (client_nonce.size() != fedcl::kNonceBytes) return refuse(call, "the client's first request carries no valid nonce");
  handshake.hello_nonce.assign(client_nonce.begin(), client_nonce.end());
  fedcl::Nonce nonce = fedcl::fresh_nonce();
  handshake.challenge_nonce.assign(nonce.begin(), nonce.end());
  handshake.challenged = true;
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setSeq(call.seq);
  reply.initChallenge().setNonce(fedcl::as_data(nonce));
  call.session.send_reply(message);
}

// The parked session named by the Resume goes on over this connection, which proved it may resume
// it (with the daemon's proof where it has a key); the connection's own Session ends here.
void finish_resume(Call &call, const Session::Handshake &handshake, const fedcl::Proof *proof) {
  Session &session = call.session;
  auto parked = session.server().session_by_resume_token(handshake.resume_token);
  if (!parked || parked->closed())
    return refuse(call, "the session cannot be resumed: this fedcld has no such session (it was restarted, or the "
                        "resume window passed)");
  if (parked->user != handshake.identity) return refuse(call, "the session to resume belongs to another user");
  const fedcl::ResendBuffer &sent = parked->sent();
  if (handshake.resume_received < sent.acknowledged() || handshake.resume_received > sent.sent())
    return refuse(call, "the session cannot be resumed: the client says it received " +
                            std::to_string(handshake.resume_received) + " bytes, fedcld kept bytes " +
                            std::to_string(sent.acknowledged()) + " to " + std::to_string(sent.sent()));
  // The client found the old connection dead before this daemon did: it is.
  parked->park("the client resumed the session on a new connection");
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setSeq(call.seq);
  auto resumed = reply.initResumed();
  resumed.setReceived(parked->received());
  if (proof) resumed.setProof(fedcl::as_data(*proof));
  session.send_reply(message);
  parked->adopt_link(session, handshake.resume_received);
  session.close("its connection resumed session " + std::to_string(parked->number()));
}

}  // namespace

void exec_resume(Call &call, wire::Resume::Reader resume) {
  Session &session = call.session;
  call.replied = true;
  if (session.handshake.challenged) return session.close("a Resume during the handshake");
  if (session.plaintext_refused) return refuse(call, kPlainRefused);
  std::string mismatch = version_mismatch(resume.getProtocolVersion());
  if (!mismatch.empty()) return refuse(call, mismatch);
  Session::Handshake &handshake = session.handshake;
  handshake.identity = resume.getUser();
  auto token = resume.getToken();
  handshake.resume_token.assign(reinterpret_cast<const char *>(token.begin()), token.size());
  handshake.resume_received = resume.getReceived();
  handshake.resuming = true;
  if (!session.server().options().requires_key()) return finish_resume(call, handshake, nullptr);
  send_challenge(call, false, resume.getNonce());
}

void exec_hello(Call &call, wire::Hello::Reader hello) {
  Session &session = call.session;
  call.replied = true;
  if (session.handshake.challenged) return session.close("a second Hello during the handshake");
  if (session.plaintext_refused) return refuse(call, kPlainRefused);
  std::string mismatch = version_mismatch(hello.getProtocolVersion());
  if (!mismatch.empty()) return refuse(call, mismatch);
  Session::Handshake &handshake = session.handshake;
  handshake.identity = hello.getUser();
  handshake.client = hello.getClient();
  handshake.platform = hello.getPlatform();
  if (!session.server().options().requires_key()) return welcome(call, handshake, nullptr);
  send_challenge(call, hello.hasKey() && hello.getKey().size() > 0, hello.getNonce());
}

void exec_daemon_status(Call &call, wire::StatusRequest::Reader request) {
  Session &session = call.session;
  call.replied = true;
  if (session.handshake.challenged) return session.close("a status request during the handshake");
  if (session.plaintext_refused) return refuse(call, kPlainRefused);
  std::string mismatch = version_mismatch(request.getProtocolVersion());
  if (!mismatch.empty()) return refuse(call, mismatch);
  session.handshake.identity = request.getUser();
  session.handshake.status_request = true;
  if (!session.server().options().requires_key()) return send_daemon_status(call, nullptr);
  send_challenge(call, request.hasKey() && request.getKey().size() > 0, request.getNonce());
}

void exec_authenticate(Call &call, wire::AuthProof::Reader answer) {
  Session &session = call.session;
  const ServerOptions &options = session.server().options();
  Session::Handshake &handshake = session.handshake;
  call.replied = true;
  if (!handshake.challenged) return session.close("a proof without a challenge");
  std::string why;
  std::string key = key_for_user(options.key, options.key_list, handshake.identity, &why);
  if (key.empty()) return refuse(call, why);
  if (answer.getProof().size() == 0) return refuse(call, "the client has no key (this fedcld requires one)");
  capnp::Data::Reader challenge(handshake.challenge_nonce.data(), handshake.challenge_nonce.size());
  capnp::Data::Reader client_nonce(handshake.hello_nonce.data(), handshake.hello_nonce.size());
  fedcl::Proof expected = fedcl::auth_proof(key, fedcl::AuthRole::client, challenge, client_nonce, handshake.identity);
  if (!fedcl::auth_proof_matches(expected, answer.getProof()))
    return refuse(call, handshake.identity.empty() ? "wrong key" : "wrong key for user '" + handshake.identity + "'");
  fedcl::Proof mine = fedcl::auth_proof(key, fedcl::AuthRole::daemon, challenge, client_nonce, handshake.identity);
  if (handshake.status_request) return send_daemon_status(call, &mine);
  if (handshake.resuming) return finish_resume(call, handshake, &mine);
  welcome(call, handshake, &mine);
}

}  // namespace fedcld
