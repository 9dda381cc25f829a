// TLS for fedcl's links (OpenSSL, TLS 1.3 only), the part both ends share: the contexts, the two
// trust roots and the readable reasons a handshake failed. The transports that carry the bytes live
// with each end: runtime/tls_transport.h (the client's blocking socket) and bridge-daemon/tls_stream.h
// (fedcld's libuv streams).
//
// Trust roots: certificates (the daemon shows a certificate chain, the client checks it against a CA
// file or the system's store and the host name it dialled), or the pre-shared key fedcl already has
// for its challenge-response: TLS 1.3 external PSK, whose identity names the user ("fedcl:USER", or
// "fedcl:" for the cluster key) and whose secret is derived from that user's key, so that a cluster
// with keys needs no PKI. The challenge-response still runs inside the TLS session.
#pragma once

#include <openssl/ssl.h>

#include "secret.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fedcl {

// How a client reaches its daemons (FEDCL_TLS, the hosts file's `tls` line).
enum class TlsMode { off, cert, psk };
// "off", "cert", "psk"; false for anything else.
bool tls_mode_parse(const std::string &text, TlsMode *mode);
const char *tls_mode_name(TlsMode mode);

struct SslCtxFree {
  void operator()(SSL_CTX *ctx) const { SSL_CTX_free(ctx); }
};
using TlsContext = std::unique_ptr<SSL_CTX, SslCtxFree>;
struct SslFree {
  void operator()(SSL *ssl) const { SSL_free(ssl); }
};
using TlsSession = std::unique_ptr<SSL, SslFree>;

// The key a user proves, looked up at each handshake (fedcld's KeyStore::key_for); empty: none.
using TlsKeyLookup = std::function<Secret(const std::string &user)>;

// A daemon's context for the connections it accepts: the certificate chain and private key (PEM)
// when cert_file is set, and pre-shared keys when lookup is set (one of them at least). Null with
// why in *error.
TlsContext tls_server_context(const std::string &cert_file, const std::string &key_file, TlsKeyLookup lookup,
                              std::string *error);
// A context for connections this side dials. cert: the peer's chain is checked against ca_file (the
// system's store when empty); psk: no certificate is asked for or accepted.
TlsContext tls_client_context(TlsMode mode, const std::string &ca_file, std::string *error);

// A connection of a client context to host (a name or an address, checked against the certificate)
// whose key, in psk mode, is key on behalf of user.
TlsSession tls_client_session(SSL_CTX *ctx, TlsMode mode, const std::string &host, std::string_view key,
                              const std::string &user, std::string *error);

// The connection's TLS exporter value for fedcl's proofs (RFC 8446 7.5, SSL_export_keying_material
// with a label of fedcl's): both ends of one TLS session compute the same 32 bytes, and a relay that
// runs a session of its own towards each side gets two different ones. "" when it cannot be had.
std::string tls_channel_binding(SSL *ssl);

// The DNS names and IP addresses a certificate names (subjectAltName; the common name when it has
// none), as text. None for no certificate.
std::vector<std::string> tls_certificate_names(X509 *certificate);

// OpenSSL's queued errors as one line (and the queue emptied).
std::string tls_errors();
// Why a client's handshake with endpoint failed (ret: what SSL_connect or SSL_do_handshake returned),
// in words a person can act on: an untrusted certificate, a name that does not match, a key the daemon
// refused, a daemon that does not speak TLS.
std::string tls_handshake_failure(SSL *ssl, int ret, TlsMode mode, const std::string &endpoint);

// A record's plaintext at most. Writes smaller than this are gathered into one record: each record
// costs a fixed amount to seal and open (and 22 bytes), more than copying a few hundred bytes.
constexpr size_t kTlsRecordBytes = 16384;

// The host part of "host:port" or "[v6]:port": what a daemon's certificate must name.
std::string tls_host_of(const std::string &endpoint);

// Whether bytes start like a TLS handshake record (what a TLS client sends first).
bool tls_record_start(const uint8_t *bytes, size_t size);

// A BIO for a memory transport (fedcld's handshakes under libuv): it reads from a span the caller
// sets (and asks to be retried when that is used up) and appends what is written to a vector the
// caller sets. TlsSpan is also how fedcl's record layer takes ciphertext.
//
// Ciphertext buffers grow without zero-filling what OpenSSL is about to overwrite.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  template <typename U>
  void construct(U *place) noexcept {
    ::new (static_cast<void *>(place)) U;
  }
  template <typename U, typename... Args>
  void construct(U *place, Args &&...args) {
    ::new (static_cast<void *>(place)) U(std::forward<Args>(args)...);
  }
};
using TlsBytes = std::vector<uint8_t, UninitializedAllocator<uint8_t>>;

struct TlsSpan {
  const uint8_t *in = nullptr;
  size_t in_size = 0;
  TlsBytes *out = nullptr;
};
BIO *tls_span_bio(TlsSpan *span);

}  // namespace fedcl
