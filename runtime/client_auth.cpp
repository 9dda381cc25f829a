#include "client_auth.h"

namespace fedcl {

ClientAuth::ClientAuth(Credentials credentials) : credentials_(std::move(credentials)), nonce_(fresh_nonce()) {}

std::string ClientAuth::answer(wire::AuthChallenge::Reader challenge, wire::AuthProof::Builder out) {
  auto daemon_nonce = challenge.getNonce();
  if (daemon_nonce.size() != kNonceBytes) return "the daemon's challenge carries no valid nonce";
  challenged_ = true;
  if (credentials_.key.empty()) return {};
  const std::string &key = credentials_.key, &user = credentials_.user;
  out.setProof(as_data(auth_proof(key, AuthRole::client, daemon_nonce, nonce(), user)));
  daemon_proof_ = auth_proof(key, AuthRole::daemon, daemon_nonce, nonce(), user);
  return {};
}

std::string ClientAuth::check_daemon(capnp::Data::Reader proof) const {
  if (credentials_.key.empty()) return {};
  if (!challenged_) return "the daemon runs without a key, so it cannot prove it is one this client's key trusts";
  if (!auth_proof_matches(daemon_proof_, proof)) return "the daemon did not prove that it holds the key";
  return {};
}

}  // namespace fedcl
