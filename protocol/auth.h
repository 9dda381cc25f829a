// The challenge-response both ends of a connection run on a pre-shared key (see AuthChallenge in
// fedcl.capnp): fresh nonces, and proofs that are HMAC-SHA256 under the key of what was said. The
// key itself never leaves the process.
#pragma once

#include <capnp/blob.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace fedcl {

constexpr size_t kNonceBytes = 32;
constexpr size_t kProofBytes = 32;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Proof = std::array<uint8_t, kProofBytes>;

// Who proves. Each role signs under its own label, so no side's answer can be reflected back as
// another's, and a client's proof is never a peer daemon's.
enum class AuthRole { client, daemon, dialling_peer, answering_peer };

// A nonce from the system's random source.
Nonce fresh_nonce();

// What ties a proof to one connection, so that a machine relaying the handshake between two
// connections (a man in the middle, or a daemon the client dialled that passes its challenge on)
// gains nothing: the other connection's binding differs, and so does the proof it needs.
struct AuthBinding {
  std::string channel;       // the TLS session's exporter value (tls_channel_binding); "" on plain TCP
  std::string daemon;        // a client's proof: the daemon's host as the client dialled it
  std::string resume_token;  // a Resume's proof: the session it continues
};

// HMAC-SHA256 under key of the role's label, the daemon's (challenge) nonce, the nonce of the side
// that opened the connection, who that side says it is, and the binding. Every field is
// length-prefixed.
Proof auth_proof(std::string_view key, AuthRole role, capnp::Data::Reader challenge_nonce,
                 capnp::Data::Reader hello_nonce, const std::string &identity, const AuthBinding &binding);

// A daemon's tag of the address it advertises to peers (HelloReply.peerAddressTag): HMAC-SHA256
// under key (the daemons' key) of its own label, the daemon's instance and the address. Another
// daemon holding the key dials a peer address a client passes on (PeerRef) only when its tag
// matches, so that a client cannot make a daemon dial, and report on, an address of its choosing.
Proof peer_address_tag(std::string_view key, uint64_t instance, const std::string &address);
// The same for the daemon's local socket (HelloReply.localSocketTag), which a daemon of its host
// dials instead of the address: the tag of "unix:PATH" (no host:port is that: PATH is absolute).
inline Proof local_socket_tag(std::string_view key, uint64_t instance, const std::string &path) {
  return peer_address_tag(key, instance, "unix:" + path);
}

// Whether received is exactly expected, compared in constant time.
bool auth_proof_matches(const Proof &expected, capnp::Data::Reader received);

// A nonce or proof as a message field.
template <size_t N>
capnp::Data::Reader as_data(const std::array<uint8_t, N> &bytes) { return capnp::Data::Reader(bytes.data(), N); }

}  // namespace fedcl
