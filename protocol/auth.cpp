#include "auth.h"

#include <sodium.h>

#include <cstring>

#include "secret.h"

namespace fedcl {

namespace {

const char *label(AuthRole role) {
  switch (role) {
    case AuthRole::client: return "fedcl client proof v2";
    case AuthRole::daemon: return "fedcl daemon proof v2";
    case AuthRole::dialling_peer: return "fedcl dialling peer proof v2";
    case AuthRole::answering_peer: return "fedcl answering peer proof v2";
  }
  return "";
}

void absorb(crypto_auth_hmacsha256_state &state, const void *bytes, uint64_t size) {
  uint8_t length[8];
  for (int i = 0; i < 8; i++) length[i] = uint8_t(size >> (8 * i));
  crypto_auth_hmacsha256_update(&state, length, sizeof length);
  crypto_auth_hmacsha256_update(&state, static_cast<const unsigned char *>(bytes), size);
}

}  // namespace

Nonce fresh_nonce() {
  ensure_sodium();
  Nonce nonce;
  randombytes_buf(nonce.data(), nonce.size());
  return nonce;
}

Proof auth_proof(std::string_view key, AuthRole role, capnp::Data::Reader challenge_nonce,
                 capnp::Data::Reader hello_nonce, const std::string &identity, const AuthBinding &binding) {
  static_assert(kProofBytes == crypto_auth_hmacsha256_BYTES, "a proof is one HMAC-SHA256");
  ensure_sodium();
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char *>(key.data()), key.size());
  const char *text = label(role);
  absorb(state, text, std::strlen(text));
  absorb(state, challenge_nonce.begin(), challenge_nonce.size());
  absorb(state, hello_nonce.begin(), hello_nonce.size());
  absorb(state, identity.data(), identity.size());
  absorb(state, binding.channel.data(), binding.channel.size());
  absorb(state, binding.daemon.data(), binding.daemon.size());
  absorb(state, binding.resume_token.data(), binding.resume_token.size());
  Proof proof;
  crypto_auth_hmacsha256_final(&state, proof.data());
  sodium_memzero(&state, sizeof state);
  return proof;
}

Proof peer_address_tag(std::string_view key, uint64_t instance, const std::string &address) {
  ensure_sodium();
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char *>(key.data()), key.size());
  static const char kLabel[] = "fedcl peer address v1";
  absorb(state, kLabel, sizeof kLabel - 1);
  uint8_t run[8];
  for (int i = 0; i < 8; i++) run[i] = uint8_t(instance >> (8 * i));
  absorb(state, run, sizeof run);
  absorb(state, address.data(), address.size());
  Proof tag;
  crypto_auth_hmacsha256_final(&state, tag.data());
  sodium_memzero(&state, sizeof state);
  return tag;
}

bool auth_proof_matches(const Proof &expected, capnp::Data::Reader received) {
  if (received.size() != expected.size()) return false;
  return sodium_memcmp(expected.data(), received.begin(), expected.size()) == 0;
}

}  // namespace fedcl
