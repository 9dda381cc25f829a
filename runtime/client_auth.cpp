#include "client_auth.h"

#include "transport.h"

namespace fedcl {

ClientAuth::ClientAuth(Credentials credentials, const Transport &link, const std::string &endpoint,
                       std::string resume_token)
    : credentials_(std::move(credentials)),
      // A daemon named by its local socket alone is this host's: "localhost" is one of its names.
      binding_{link.channel_binding(), local_endpoint(endpoint) ? "localhost" : tls_host_of(endpoint), std::move(resume_token)},
      nonce_(fresh_nonce()) {}

std::string ClientAuth::answer(wire::AuthChallenge::Reader challenge, wire::AuthProof::Builder out) {
  auto daemon_nonce = challenge.getNonce();
  if (daemon_nonce.size() != kNonceBytes) return "the daemon's challenge carries no valid nonce";
  challenged_ = true;
  if (credentials_.key.empty()) return {};
  std::string_view key = credentials_.key.view();
  const std::string &user = credentials_.user;
  out.setProof(as_data(auth_proof(key, AuthRole::client, daemon_nonce, nonce(), user, binding_)));
  daemon_proof_ = auth_proof(key, AuthRole::daemon, daemon_nonce, nonce(), user, binding_);
  return {};
}

std::string ClientAuth::check_daemon(capnp::Data::Reader proof) const {
  if (credentials_.key.empty()) return {};
  if (!challenged_) return "the daemon runs without a key, so it cannot prove it is one this client's key trusts";
  if (!auth_proof_matches(daemon_proof_, proof)) return "the daemon did not prove that it holds the key";
  return {};
}

}  // namespace fedcl
