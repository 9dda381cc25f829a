// fedcl's own TLS 1.3 record layer for application data (RFC 8446 section 5.2), used once OpenSSL's
// handshake is done: the same records on the wire, sealed and opened with the session's traffic
// keys (AES-128-GCM), but straight from the sender's bytes into the socket's buffer and from the
// socket's buffer into where the plaintext goes. OpenSSL's record layer copies each record twice
// more (into its buffer, and out of it), which capped a TLS stream near half the rate of plain TCP.
//
// The keys come from OpenSSL's key-log callback (tls_capture_secrets on every fedcl context), the
// only public way to the traffic secrets; nothing else is logged. A connection that OpenSSL has
// used for application data cannot be taken over: fedcl's servers send no session tickets, and
// both ends take over as soon as their handshake returns.
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tls.h"

namespace fedcl {

// Every fedcl context records its connections' traffic secrets for TlsRecords::start.
void tls_capture_secrets(SSL_CTX *ctx);

// One direction's traffic key with its cipher context: one thread at a time seals (or opens) with it.
class TlsRecordKey {
 public:
  TlsRecordKey();
  ~TlsRecordKey();
  TlsRecordKey(const TlsRecordKey &) = delete;
  TlsRecordKey &operator=(const TlsRecordKey &) = delete;

  // From a traffic secret (HKDF-Expand-Label with SHA-256: the suite's "key" and "iv"). "" or why not.
  std::string derive(const uint8_t *secret, size_t size, bool sealing);
  // The next generation's key (RFC 8446 7.2: the secret's "traffic upd"), after a KeyUpdate.
  std::string update();
  // The traffic secret the key was derived from (kSecretBytes), to derive it again elsewhere.
  static constexpr size_t kSecretBytes = 32;  // SHA-256's size: the suite's hash
  const uint8_t *secret() const { return secret_; }
  // The same key, with a context of its own (for another thread); false when OpenSSL fails.
  bool copy_from(const TlsRecordKey &other);
  // Seals size bytes (at most kTlsRecordBytes) of inner content type (application data unless told)
  // as the record numbered seq, header included, at out (size + kTlsRecordOverhead bytes).
  bool seal(uint64_t seq, const uint8_t *in, size_t size, uint8_t *out, uint8_t type = 0x17);
  // Opens the record numbered seq (size bytes, header included): its data to out (size -
  // kTlsRecordOverhead bytes; more when the peer padded it, which the type's place tells), how much in
  // *data_size, its inner content type in *type. false when it is not authentic; what was written to
  // out is then wiped.
  bool open(uint64_t seq, const uint8_t *record, size_t size, uint8_t *out, size_t *data_size, uint8_t *type);

 private:
  bool init();

  EVP_CIPHER_CTX *ctx_;
  uint8_t secret_[kSecretBytes] = {};
  uint8_t key_[16] = {}, iv_[12] = {};
  bool sealing_ = false;
};

constexpr size_t kTlsRecordHeader = 5;
// Header, inner content type and AES-GCM's tag.
constexpr size_t kTlsRecordOverhead = kTlsRecordHeader + 1 + 16;
// The largest record a peer may send (RFC 8446: 2^14 + 256 of ciphertext).
constexpr size_t kTlsRecordMax = kTlsRecordHeader + kTlsRecordBytes + 256;

// A connection's application data after its handshake: both directions. The sending half and the
// receiving half keep no common state (but a flag: the peer asked for a key update), so one thread
// may write while another reads. Each direction changes its key before it has sealed
// kTlsKeyUpdateRecords records with it (RFC 8446 5.5 allows AES-GCM about 2^24.5 full records, some
// 370 GiB): a KeyUpdate record, then the next generation's key, counting from zero again. The
// peer's KeyUpdates are taken the same way.
constexpr uint64_t kTlsKeyUpdateRecords = uint64_t(1) << 23;  // 128 GiB of full records

// A record layer's state between two records, for going on in another process (fedcld hands a
// connection from its main process to a session worker): both traffic secrets and record numbers,
// and what was read but not yet used.
struct TlsRecordState {
  uint8_t send_secret[TlsRecordKey::kSecretBytes] = {};
  uint8_t receive_secret[TlsRecordKey::kSecretBytes] = {};
  uint64_t send_seq = 0, receive_seq = 0;
  bool update_asked = false;
  std::string plaintext;  // data of an opened record not taken yet: comes first
  std::string unopened;   // the beginning of the next record
};

class TlsRecords {
 public:
  // Takes over ssl's traffic keys (its handshake done, no application data sent or read through it).
  // "" or why not.
  std::string start(SSL *ssl);
  // Appends size bytes to out as records.
  bool write(const uint8_t *bytes, size_t size, TlsBytes *out);
  // Up to size bytes of plaintext into dst from the ciphertext span.in holds (span advanced past
  // what was used, partial records kept): how many, 0 when span ran out before a whole record, or -1
  // with why in *error (a record that is not authentic, an alert, a record that is not data; no byte
  // of a record that is not authentic is left in dst).
  // Returns as soon as some plaintext is there, like SSL_read, but takes several records at once when
  // dst has room for them.
  ptrdiff_t read(TlsSpan &span, uint8_t *dst, size_t size, std::string *error);
  // Plaintext or part of a record held from earlier reads.
  bool holding() const { return plain_left_ > 0 || partial_size_ > 0; }
  // The state to go on with elsewhere (the secrets are copied: wipe *state once it is used), and
  // the records taking over that state.
  void save(TlsRecordState *state) const;
  std::string restore(const TlsRecordState &state);
  // Records per sending key, kTlsKeyUpdateRecords unless a test wants to see many updates; never
  // more (AES-GCM's usage limit, and the arithmetic on it, hold only below it).
  void set_key_update_interval(uint64_t records) {
    key_update_records_ = records < 2 ? 2 : records > kTlsKeyUpdateRecords ? kTlsKeyUpdateRecords : records;
  }
  uint64_t key_update_interval() const { return key_update_records_; }

 private:
  // Seals size bytes (whole records but the last) into out, all with the current sending key.
  bool seal_records(const uint8_t *bytes, size_t size, TlsBytes *out);
  // FEDCL_TLS_KEY_UPDATE_RECORDS, for tests that want to see many key updates.
  void interval_from_environment();
  // A KeyUpdate record, then the next sending key.
  bool update_send_key(TlsBytes *out);
  // Opens the whole record at record (size bytes) into out (room for its data); the data's size (0 for
  // the peer's KeyUpdate, taken) or -1.
  ptrdiff_t open(const uint8_t *record, size_t size, uint8_t *out, std::string *error);
  // Opens a run of many whole records at the span's start that fit in room, on several threads: the
  // plaintext's size (span advanced), 0 when there is no such run, or -1.
  ptrdiff_t open_run(TlsSpan &span, uint8_t *dst, size_t room, std::string *error);

  TlsRecordKey send_key_, receive_key_;
  uint64_t send_seq_ = 0, receive_seq_ = 0;
  uint64_t key_update_records_ = kTlsKeyUpdateRecords;
  std::atomic<bool> update_asked_{false};  // the peer's KeyUpdate asked for one of ours
  std::unique_ptr<uint8_t[]> partial_;  // a record that arrived in pieces
  size_t partial_size_ = 0;
  std::unique_ptr<uint8_t[]> plain_;  // a record's data that did not fit where it was asked for
  size_t plain_at_ = 0, plain_left_ = 0;
};

}  // namespace fedcl
