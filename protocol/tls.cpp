#include "tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cstring>

#include "tls_records.h"

namespace fedcl {

namespace {

// One suite, AES-128-GCM with SHA-256: with AES-NI it costs the least per byte, the pre-shared key is
// tied to its hash, and fedcl's record layer (tls_records.h) seals with it.
constexpr const char kSuite[] = "TLS_AES_128_GCM_SHA256";
const unsigned char kSuiteId[] = {0x13, 0x01};
constexpr const char kPskIdentityPrefix[] = "fedcl:";
constexpr const char kPskLabel[] = "fedcl TLS 1.3 external PSK v1";
constexpr size_t kPskBytes = 32;
// The TLS 1.3 pre-shared key for a fedcl key: HMAC-SHA256 under the key of a fixed label, so that the
// key itself serves only as a key of HMACs, as in the challenge-response.
bool derive_psk(std::string_view key, unsigned char out[kPskBytes]) {
  size_t size = 0;
  return EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(),
                   reinterpret_cast<const unsigned char *>(kPskLabel), sizeof kPskLabel - 1, out, kPskBytes,
                   &size) != nullptr &&
         size == kPskBytes;
}

SSL_SESSION *psk_session(SSL *ssl, std::string_view key) {
  const SSL_CIPHER *cipher = SSL_CIPHER_find(ssl, kSuiteId);
  unsigned char psk[kPskBytes];
  if (!cipher || !derive_psk(key, psk)) return nullptr;
  SSL_SESSION *session = SSL_SESSION_new();
  bool ok = session && SSL_SESSION_set1_master_key(session, psk, sizeof psk) && SSL_SESSION_set_cipher(session, cipher) &&
            SSL_SESSION_set_protocol_version(session, TLS1_3_VERSION);
  OPENSSL_cleanse(psk, sizeof psk);
  if (!ok) {
    SSL_SESSION_free(session);
    return nullptr;
  }
  return session;
}

// Data that lives as long as the OpenSSL object it hangs on (ex_data with a free function).
template <typename T>
int ex_index(int class_index) {
  static const int index = CRYPTO_get_ex_new_index(class_index, 0, nullptr, nullptr, nullptr,
                                                   [](void *, void *data, CRYPTO_EX_DATA *, int, long, void *) {
                                                     delete static_cast<T *>(data);
                                                   });
  return index;
}

// A daemon: the key of the user the client's PSK identity names; no PSK (the certificate, if any,
// then decides) for an identity that is not fedcl's or a user without a key.
int find_psk(SSL *ssl, const unsigned char *identity, size_t identity_size, SSL_SESSION **session) {
  *session = nullptr;
  auto *lookup = static_cast<TlsKeyLookup *>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ex_index<TlsKeyLookup>(CRYPTO_EX_INDEX_SSL_CTX)));
  std::string name(reinterpret_cast<const char *>(identity), identity_size);
  size_t prefix = sizeof kPskIdentityPrefix - 1;
  if (!lookup || name.compare(0, prefix, kPskIdentityPrefix) != 0) return 1;
  Secret key = (*lookup)(name.substr(prefix));
  if (key.empty()) return 1;
  *session = psk_session(ssl, key.view());
  return *session ? 1 : 0;
}

// A client's PSK: its identity and key, hung on the connection.
struct ClientPsk {
  std::string identity;
  Secret key;
};

int use_psk(SSL *ssl, const EVP_MD *md, const unsigned char **identity, size_t *identity_size, SSL_SESSION **session) {
  *session = nullptr;
  auto *psk = static_cast<ClientPsk *>(SSL_get_ex_data(ssl, ex_index<ClientPsk>(CRYPTO_EX_INDEX_SSL)));
  // A retried ClientHello for another hash: the key fits SHA-256 only.
  if (!psk || (md && !EVP_MD_is_a(md, "SHA256"))) return 1;
  *session = psk_session(ssl, psk->key.view());
  if (!*session) return 0;
  *identity = reinterpret_cast<const unsigned char *>(psk->identity.data());
  *identity_size = psk->identity.size();
  return 1;
}

SSL_CTX *new_context(const SSL_METHOD *method, const char *suites, std::string *error) {
  // OpenSSL would otherwise free its state at exit, from a handler registered after the runtime's own,
  // so before the runtime's Goodbye still writes to its TLS sessions (a crash at exit). The process's
  // end frees it anyway. A program that set OpenSSL up first keeps its own choice.
  static const bool initialised = OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, nullptr) == 1;
  (void)initialised;
  SSL_CTX *ctx = SSL_CTX_new(method);
  if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) || !SSL_CTX_set_ciphersuites(ctx, suites)) {
    *error = "cannot set up OpenSSL: " + tls_errors();
    SSL_CTX_free(ctx);
    return nullptr;
  }
  // Neither side sends close_notify: a connection ends with the TCP connection, and fedcl's framing
  // tells a cut-off frame from a whole one.
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  tls_capture_secrets(ctx);
  // No read-ahead: OpenSSL then reads no byte past the handshake, and what follows belongs to
  // fedcl's record layer (tls_records.h).
  return ctx;
}

bool is_address(const std::string &host) {
  unsigned char bytes[16];
  return inet_pton(AF_INET, host.c_str(), bytes) == 1 || inet_pton(AF_INET6, host.c_str(), bytes) == 1;
}

// BIO callbacks of tls_span_bio.
int span_read(BIO *bio, char *out, size_t size, size_t *done) {
  auto *span = static_cast<TlsSpan *>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  if (span->in_size == 0) {
    BIO_set_retry_read(bio);
    return 0;
  }
  size_t take = std::min(size, span->in_size);
  std::memcpy(out, span->in, take);
  span->in += take;
  span->in_size -= take;
  *done = take;
  return 1;
}

int span_write(BIO *bio, const char *in, size_t size, size_t *done) {
  auto *span = static_cast<TlsSpan *>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  if (!span->out) return 0;
  // resize (no zero-fill, TlsBytes) and memcpy: insert() from a char range copies byte by byte.
  size_t used = span->out->size();
  span->out->resize(used + size);
  std::memcpy(span->out->data() + used, in, size);
  *done = size;
  return 1;
}

long span_ctrl(BIO *, int command, long, void *) { return command == BIO_CTRL_FLUSH ? 1 : 0; }

}  // namespace

bool tls_mode_parse(const std::string &text, TlsMode *mode) {
  if (text == "off") *mode = TlsMode::off;
  else if (text == "cert") *mode = TlsMode::cert;
  else if (text == "psk") *mode = TlsMode::psk;
  else return false;
  return true;
}

const char *tls_mode_name(TlsMode mode) {
  switch (mode) {
    case TlsMode::off: return "off";
    case TlsMode::cert: return "cert";
    case TlsMode::psk: return "psk";
  }
  return "?";
}

std::string tls_errors() {
  std::string text;
  while (unsigned long code = ERR_get_error()) {
    char line[256];
    ERR_error_string_n(code, line, sizeof line);
    const char *reason = ERR_reason_error_string(code);
    if (!text.empty()) text += "; ";
    text += reason ? reason : line;
  }
  return text.empty() ? "no detail from OpenSSL" : text;
}

TlsContext tls_server_context(const std::string &cert_file, const std::string &key_file, TlsKeyLookup lookup,
                              std::string *error) {
  TlsContext ctx(new_context(TLS_server_method(), kSuite, error));
  if (!ctx) return nullptr;
  // No session tickets: every connection proves itself afresh, and nothing but fedcl's own bytes
  // follows the handshake.
  SSL_CTX_set_num_tickets(ctx.get(), 0);
  if (!cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert_file.c_str()) != 1) {
      *error = "cannot load the certificate " + cert_file + ": " + tls_errors();
      return nullptr;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx.get(), key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx.get()) != 1) {
      *error = "cannot load the private key " + key_file + " of " + cert_file + ": " + tls_errors();
      return nullptr;
    }
  }
  if (lookup) {
    SSL_CTX_set_ex_data(ctx.get(), ex_index<TlsKeyLookup>(CRYPTO_EX_INDEX_SSL_CTX), new TlsKeyLookup(std::move(lookup)));
    SSL_CTX_set_psk_find_session_callback(ctx.get(), find_psk);
  }
  return ctx;
}

TlsContext tls_client_context(TlsMode mode, const std::string &ca_file, std::string *error) {
  TlsContext ctx(new_context(TLS_client_method(), kSuite, error));
  if (!ctx) return nullptr;
  // In psk mode the store stays empty: a daemon that answers with a certificate instead of taking the
  // key fails the handshake.
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (mode == TlsMode::cert) {
    int loaded = ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx.get())
                                 : SSL_CTX_load_verify_locations(ctx.get(), ca_file.c_str(), nullptr);
    if (loaded != 1) {
      *error = "cannot load the CA certificates " + (ca_file.empty() ? std::string("of the system") : ca_file) + ": " +
               tls_errors();
      return nullptr;
    }
  }
  return ctx;
}

TlsSession tls_client_session(SSL_CTX *ctx, TlsMode mode, const std::string &host, std::string_view key,
                              const std::string &user, std::string *error) {
  TlsSession ssl(SSL_new(ctx));
  if (!ssl) {
    *error = "cannot set up a TLS connection: " + tls_errors();
    return nullptr;
  }
  bool ok = true;
  if (mode == TlsMode::cert) {
    if (is_address(host)) {
      ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), host.c_str()) == 1;
    } else {
      ok = SSL_set1_host(ssl.get(), host.c_str()) == 1 && SSL_set_tlsext_host_name(ssl.get(), host.c_str()) == 1;
    }
  } else {
    if (key.empty()) {
      *error = "TLS with the pre-shared key (psk) needs a key: FEDCL_KEY, FEDCL_KEY_FILE or a 'key' line";
      return nullptr;
    }
    SSL_set_ex_data(ssl.get(), ex_index<ClientPsk>(CRYPTO_EX_INDEX_SSL), new ClientPsk{kPskIdentityPrefix + user, Secret(key)});
    SSL_set_psk_use_session_callback(ssl.get(), use_psk);
  }
  if (!ok) {
    *error = "cannot set the host name " + host + " to check: " + tls_errors();
    return nullptr;
  }
  return ssl;
}

std::string tls_handshake_failure(SSL *ssl, int ret, TlsMode mode, const std::string &endpoint) {
  int kind = SSL_get_error(ssl, ret);
  std::string detail = kind == SSL_ERROR_SSL ? tls_errors() : (ERR_clear_error(), std::string());
  long verify = SSL_get_verify_result(ssl);
  std::string head = "TLS handshake with " + endpoint + " failed: ";
  if (verify != X509_V_OK) {
    if (mode == TlsMode::psk)
      return head + "the daemon showed a certificate instead of taking this client's pre-shared key (a fedcld "
                    "without a key, or without one for this user?)";
    return head + "the daemon's certificate is not trusted: " + X509_verify_cert_error_string(verify) +
           " (FEDCL_TLS_CA or the hosts file's tls-ca line names the CA that signed it)";
  }
  if (kind == SSL_ERROR_SYSCALL || kind == SSL_ERROR_ZERO_RETURN || detail.find("unexpected eof") != std::string::npos)
    return head + "the daemon closed the connection (a fedcld that does not use TLS?)";
  // A daemon whose key differs finds the client's PSK binder wrong (OpenSSL answers "illegal
  // parameter"); one without a key for this identity offers nothing the client takes.
  if (mode == TlsMode::psk && (detail.find("illegal parameter") != std::string::npos ||
                               detail.find("decrypt error") != std::string::npos ||
                               detail.find("handshake failure") != std::string::npos))
    return head + "the daemon does not accept this client's pre-shared key (wrong key, or no key for this user "
                  "there): " + detail;
  if (mode == TlsMode::cert && detail.find("handshake failure") != std::string::npos)
    return head + "the daemon has no certificate to show (a fedcld with TLS on the pre-shared key only? then "
                  "FEDCL_TLS=psk): " + detail;
  return head + detail;
}

std::string tls_channel_binding(SSL *ssl) {
  static const char kLabel[] = "EXPORTER-fedcl-proof-binding";
  unsigned char value[32];
  if (SSL_export_keying_material(ssl, value, sizeof value, kLabel, sizeof kLabel - 1, nullptr, 0, 0) != 1) return {};
  std::string binding(reinterpret_cast<const char *>(value), sizeof value);
  OPENSSL_cleanse(value, sizeof value);
  return binding;
}

std::vector<std::string> tls_certificate_names(X509 *certificate) {
  std::vector<std::string> names;
  if (!certificate) return names;
  auto *alternatives = static_cast<GENERAL_NAMES *>(X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; alternatives && i < sk_GENERAL_NAME_num(alternatives); i++) {
    const GENERAL_NAME *name = sk_GENERAL_NAME_value(alternatives, i);
    if (name->type == GEN_DNS) {
      const ASN1_STRING *dns = name->d.dNSName;
      names.emplace_back(reinterpret_cast<const char *>(ASN1_STRING_get0_data(dns)), ASN1_STRING_length(dns));
    } else if (name->type == GEN_IPADD) {
      const ASN1_OCTET_STRING *ip = name->d.iPAddress;
      char text[INET6_ADDRSTRLEN] = {};
      int family = ASN1_STRING_length(ip) == 4 ? AF_INET : ASN1_STRING_length(ip) == 16 ? AF_INET6 : 0;
      if (family && inet_ntop(family, ASN1_STRING_get0_data(ip), text, sizeof text)) names.emplace_back(text);
    }
  }
  if (alternatives) {
    GENERAL_NAMES_free(alternatives);
  } else {
    char common[256] = {};
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(certificate), NID_commonName, common, sizeof common) > 0)
      names.emplace_back(common);
  }
  return names;
}

std::string tls_host_of(const std::string &endpoint) {
  std::string host = endpoint.substr(0, endpoint.rfind(':'));
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return host;
}

bool tls_record_start(const uint8_t *bytes, size_t size) { return size >= 2 && bytes[0] == 0x16 && bytes[1] == 0x03; }

BIO *tls_span_bio(TlsSpan *span) {
  static BIO_METHOD *method = [] {
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "fedcl span");
    BIO_meth_set_read_ex(m, span_read);
    BIO_meth_set_write_ex(m, span_write);
    BIO_meth_set_ctrl(m, span_ctrl);
    BIO_meth_set_create(m, [](BIO *bio) {
      BIO_set_init(bio, 1);
      return 1;
    });
    return m;
  }();
  BIO *bio = BIO_new(method);
  if (bio) BIO_set_data(bio, span);
  return bio;
}

}  // namespace fedcl
