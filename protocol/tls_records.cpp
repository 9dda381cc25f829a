#include "tls_records.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "host_cores.h"

namespace fedcl {

namespace {

constexpr uint8_t kApplicationData = 0x17, kAlert = 0x15, kHandshake = 0x16;
constexpr unsigned kSuiteAes128GcmSha256 = 0x03001301;  // SSL_CIPHER_get_id of TLS_AES_128_GCM_SHA256
constexpr size_t kKeyBytes = 16, kTagBytes = 16;

// The traffic secrets OpenSSL logged for a connection, wiped when it is freed.
struct TrafficSecrets {
  std::vector<uint8_t> client, server;
  ~TrafficSecrets() {
    OPENSSL_cleanse(client.data(), client.size());
    OPENSSL_cleanse(server.data(), server.size());
  }
};

int secrets_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr,
                                                [](void *, void *data, CRYPTO_EX_DATA *, int, long, void *) {
                                                  delete static_cast<TrafficSecrets *>(data);
                                                });
  return index;
}

// "LABEL <client random> <secret>", hex: the application traffic secrets are kept, the rest ignored.
void keep_secret(const SSL *ssl, const char *line) {
  const char *label_end = std::strchr(line, ' ');
  const char *secret = label_end ? std::strchr(label_end + 1, ' ') : nullptr;
  if (!secret) return;
  std::string label(line, label_end);
  bool client = label == "CLIENT_TRAFFIC_SECRET_0";
  if (!client && label != "SERVER_TRAFFIC_SECRET_0") return;
  long size = 0;
  unsigned char *bytes = OPENSSL_hexstr2buf(secret + 1, &size);
  if (!bytes) return;
  SSL *owner = const_cast<SSL *>(ssl);  // ex_data hangs on the connection OpenSSL hands us
  auto *secrets = static_cast<TrafficSecrets *>(SSL_get_ex_data(owner, secrets_index()));
  if (!secrets) {
    secrets = new TrafficSecrets;
    SSL_set_ex_data(owner, secrets_index(), secrets);
  }
  (client ? secrets->client : secrets->server).assign(bytes, bytes + size);
  OPENSSL_clear_free(bytes, size_t(size));
}

// TLS 1.3's HKDF-Expand-Label(secret, label, "", size) with SHA-256.
bool expand_label(const uint8_t *secret, size_t secret_size, const char *label, uint8_t *out, size_t size) {
  std::string full = std::string("tls13 ") + label;
  std::vector<uint8_t> info{uint8_t(size >> 8), uint8_t(size), uint8_t(full.size())};
  info.insert(info.end(), full.begin(), full.end());
  info.push_back(0);  // no context
  EVP_KDF *kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : nullptr;
  EVP_KDF_free(kdf);
  int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<uint8_t *>(secret), secret_size),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info.data(), info.size()),
      OSSL_PARAM_construct_end(),
  };
  bool ok = ctx && EVP_KDF_derive(ctx, out, size, params) == 1;
  EVP_KDF_CTX_free(ctx);
  return ok;
}

// Threads that seal and open a large span's records beside the thread that asked: one per four
// cores, at most three, none below eight cores (there the other end, the backend and the loop need
// them); FEDCL_TLS_CRYPTO_THREADS sets the number. One span at a time: a second caller while the pool
// is busy does its own work alone.
class CryptoPool {
 public:
  static CryptoPool &get() {
    static CryptoPool *pool = new CryptoPool;  // never destroyed: threads may use it until exit
    return *pool;
  }
  size_t helpers() const { return helpers_; }

  // Runs part(i) for every i below parts, some on the pool's threads; returns when all are done.
  void run(size_t parts, const std::function<void(size_t)> &part) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy || helpers_ == 0) {
      for (size_t i = 0; i < parts; i++) part(i);
      return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = &part;
    parts_ = parts;
    next_ = 0;
    pending_ = parts;
    jobs_.fetch_add(1, std::memory_order_release);
    work_.notify_all();
    while (next_ < parts_) take(lock);  // this thread works too, and takes what the others have not
    // The others finish within a part's time: sleeping until they do would add a wake-up to every
    // span, as long as a part's work in a virtual machine.
    lock.unlock();
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    while (pending_.load(std::memory_order_acquire) != 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    lock.lock();
    done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
    job_ = nullptr;
  }

 private:
  CryptoPool() {
    unsigned cores = usable_cores();
    const char *asked = std::getenv("FEDCL_TLS_CRYPTO_THREADS");
    helpers_ = asked ? std::min<size_t>(std::strtoul(asked, nullptr, 10), 16) : cores >= 8 ? std::min(3u, cores / 4) : 0;
    for (size_t i = 0; i < helpers_; i++) std::thread([this] { main(); }).detach();
  }

  // Under lock: runs the next part without it.
  void take(std::unique_lock<std::mutex> &lock) {
    size_t i = next_++;
    const auto *job = job_;
    lock.unlock();
    (*job)(i);
    lock.lock();
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.notify_all();
  }

  // A helper stays awake a while after its part: a transfer's next span comes within microseconds,
  // and a wake-up costs more than a part's work.
  void main() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (!(job_ && next_ < parts_)) {
        uint64_t seen = jobs_.load(std::memory_order_acquire);
        lock.unlock();
        auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
        while (jobs_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until) std::this_thread::yield();
        lock.lock();
      }
      work_.wait(lock, [&] { return job_ && next_ < parts_; });
      take(lock);
    }
  }

  size_t helpers_ = 0;
  std::mutex busy_, mutex_;
  std::condition_variable work_, done_;
  const std::function<void(size_t)> *job_ = nullptr;
  size_t parts_ = 0, next_ = 0;
  std::atomic<size_t> pending_{0};  // parts not done; read without the lock by run()'s spin
  std::atomic<uint64_t> jobs_{0};
};

// Records smaller than this end a parallel run and are opened one by one: a KeyUpdate is one (27
// bytes), and the records after it are opened with the next key.
constexpr size_t kRunRecordMin = 256;

// How many parts a run of records is cut in: one per thread, each of at least two records (a
// hand-off costs about what opening one record does).
size_t parts_for(size_t records) { return std::max<size_t>(1, std::min(CryptoPool::get().helpers() + 1, records / 2)); }

size_t record_size_of(const uint8_t *header) { return kTlsRecordHeader + (size_t(header[3]) << 8 | header[4]); }

// After the handshake every record is application data, of a size TLS 1.3 allows.
bool plausible(const uint8_t *header, size_t record_size) {
  return header[0] == kApplicationData && record_size >= kTlsRecordOverhead && record_size <= kTlsRecordMax;
}
constexpr const char kNotARecord[] = "TLS: a record that is not application data, or of a size TLS does not allow";

}  // namespace

void tls_capture_secrets(SSL_CTX *ctx) { SSL_CTX_set_keylog_callback(ctx, keep_secret); }

TlsRecordKey::TlsRecordKey() : ctx_(EVP_CIPHER_CTX_new()) {}

TlsRecordKey::~TlsRecordKey() {
  EVP_CIPHER_CTX_free(ctx_);  // wipes the key schedule
  OPENSSL_cleanse(secret_, sizeof secret_);
  OPENSSL_cleanse(key_, sizeof key_);
  OPENSSL_cleanse(iv_, sizeof iv_);
}

std::string TlsRecordKey::derive(const uint8_t *secret, size_t size, bool sealing) {
  sealing_ = sealing;
  if (size != sizeof secret_) return "a TLS traffic secret of " + std::to_string(size) + " bytes, not SHA-256's";
  std::memcpy(secret_, secret, size);  // kept for key updates
  bool ok = expand_label(secret, size, "key", key_, sizeof key_) && expand_label(secret, size, "iv", iv_, sizeof iv_) && init();
  return ok ? "" : "cannot derive the TLS traffic keys";
}

std::string TlsRecordKey::update() {
  uint8_t next[sizeof secret_];
  if (!expand_label(secret_, sizeof secret_, "traffic upd", next, sizeof next)) return "cannot derive the next TLS traffic keys";
  std::string why = derive(next, sizeof next, sealing_);
  OPENSSL_cleanse(next, sizeof next);
  return why;
}

bool TlsRecordKey::copy_from(const TlsRecordKey &other) {
  std::memcpy(key_, other.key_, sizeof key_);
  std::memcpy(iv_, other.iv_, sizeof iv_);
  sealing_ = other.sealing_;
  return init();
}

bool TlsRecordKey::init() { return ctx_ && EVP_CipherInit_ex(ctx_, EVP_aes_128_gcm(), nullptr, key_, nullptr, sealing_ ? 1 : 0) == 1; }

namespace {

// The per-record nonce: the IV with the record's number XORed into its last eight bytes.
void nonce_of(const uint8_t iv[12], uint64_t seq, uint8_t nonce[12]) {
  std::memcpy(nonce, iv, 12);
  for (int i = 0; i < 8; i++) nonce[11 - i] ^= uint8_t(seq >> (8 * i));
}

}  // namespace

bool TlsRecordKey::seal(uint64_t seq, const uint8_t *in, size_t size, uint8_t *out, uint8_t type) {
  size_t length = size + 1 + kTagBytes;
  out[0] = kApplicationData;
  out[1] = 0x03;
  out[2] = 0x03;
  out[3] = uint8_t(length >> 8);
  out[4] = uint8_t(length);
  uint8_t nonce[12];
  nonce_of(iv_, seq, nonce);
  uint8_t *body = out + kTlsRecordHeader;
  int n;
  return EVP_EncryptInit_ex(ctx_, nullptr, nullptr, nullptr, nonce) == 1 &&
         EVP_EncryptUpdate(ctx_, nullptr, &n, out, int(kTlsRecordHeader)) == 1 &&
         (size == 0 || EVP_EncryptUpdate(ctx_, body, &n, in, int(size)) == 1) &&
         EVP_EncryptUpdate(ctx_, body + size, &n, &type, 1) == 1 && EVP_EncryptFinal_ex(ctx_, body + size + 1, &n) == 1 &&
         EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_GET_TAG, int(kTagBytes), body + size + 1) == 1;
}

bool TlsRecordKey::open(uint64_t seq, const uint8_t *record, size_t size, uint8_t *out, size_t *data_size, uint8_t *type) {
  if (size < kTlsRecordOverhead || size > kTlsRecordMax) return false;
  size_t inner = size - kTlsRecordHeader - kTagBytes;  // data, content type, padding
  uint8_t nonce[12], last;
  nonce_of(iv_, seq, nonce);
  const uint8_t *body = record + kTlsRecordHeader;
  int n;
  bool ok = EVP_DecryptInit_ex(ctx_, nullptr, nullptr, nullptr, nonce) == 1 &&
            EVP_DecryptUpdate(ctx_, nullptr, &n, record, int(kTlsRecordHeader)) == 1 &&
            (inner == 1 || EVP_DecryptUpdate(ctx_, out, &n, body, int(inner - 1)) == 1) &&
            EVP_DecryptUpdate(ctx_, &last, &n, body + inner - 1, 1) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_SET_TAG, int(kTagBytes), const_cast<uint8_t *>(body + inner)) == 1 &&
            EVP_DecryptFinal_ex(ctx_, nonce, &n) == 1;
  if (!ok) {
    // The data was written before its tag was checked: a flipped bit would otherwise leave a
    // predictably altered copy in the destination (application memory on a client).
    OPENSSL_cleanse(out, inner - 1);
    return false;
  }
  // The content type is the last byte that is not padding (zeros).
  size_t end = inner - 1;
  if (last == 0) {
    while (end > 0 && out[end - 1] == 0) end--;
    if (end == 0) return false;
    last = out[--end];
  }
  *type = last;
  *data_size = end;
  return true;
}

std::string TlsRecords::start(SSL *ssl) {
  const SSL_CIPHER *cipher = SSL_get_current_cipher(ssl);
  if (!cipher || SSL_CIPHER_get_id(cipher) != kSuiteAes128GcmSha256)
    return std::string("TLS: the session's suite is ") + (cipher ? SSL_CIPHER_get_name(cipher) : "none") +
           ", fedcl seals records with TLS_AES_128_GCM_SHA256 only";
  auto *secrets = static_cast<TrafficSecrets *>(SSL_get_ex_data(ssl, secrets_index()));
  if (!secrets || secrets->client.empty() || secrets->server.empty())
    return "TLS: OpenSSL gave no traffic secrets for this session";
  const auto &sending = SSL_is_server(ssl) ? secrets->server : secrets->client;
  const auto &receiving = SSL_is_server(ssl) ? secrets->client : secrets->server;
  std::string why = send_key_.derive(sending.data(), sending.size(), true);
  if (why.empty()) why = receive_key_.derive(receiving.data(), receiving.size(), false);
  SSL_set_ex_data(ssl, secrets_index(), nullptr);
  delete secrets;  // the keys are derived: the secrets are wiped
  interval_from_environment();
  return why;
}

// Fewer records per key than kTlsKeyUpdateRecords only: a value that is larger, or does not parse,
// leaves the limit.
void TlsRecords::interval_from_environment() {
  const char *every = std::getenv("FEDCL_TLS_KEY_UPDATE_RECORDS");
  if (!every || *every < '0' || *every > '9') return;
  char *end = nullptr;
  errno = 0;
  uint64_t records = std::strtoull(every, &end, 10);
  if (errno == 0 && *end == '\0') set_key_update_interval(records);
}

void TlsRecords::save(TlsRecordState *state) const {
  std::memcpy(state->send_secret, send_key_.secret(), TlsRecordKey::kSecretBytes);
  std::memcpy(state->receive_secret, receive_key_.secret(), TlsRecordKey::kSecretBytes);
  state->send_seq = send_seq_;
  state->receive_seq = receive_seq_;
  state->update_asked = update_asked_.load();
  state->plaintext.assign(reinterpret_cast<const char *>(plain_.get()) + plain_at_, plain_left_);
  state->unopened.assign(reinterpret_cast<const char *>(partial_.get()), partial_size_);
}

std::string TlsRecords::restore(const TlsRecordState &state) {
  std::string why = send_key_.derive(state.send_secret, sizeof state.send_secret, true);
  if (why.empty()) why = receive_key_.derive(state.receive_secret, sizeof state.receive_secret, false);
  if (!why.empty()) return why;
  send_seq_ = state.send_seq;
  receive_seq_ = state.receive_seq;
  update_asked_ = state.update_asked;
  plain_left_ = state.plaintext.size();
  plain_at_ = 0;
  if (plain_left_ > kTlsRecordMax || state.unopened.size() > kTlsRecordMax) return "TLS: a handed-over record is too large";
  if (plain_left_) {
    plain_.reset(new uint8_t[kTlsRecordMax]);
    std::memcpy(plain_.get(), state.plaintext.data(), plain_left_);
  }
  partial_size_ = state.unopened.size();
  if (partial_size_) {
    partial_.reset(new uint8_t[kTlsRecordMax]);
    std::memcpy(partial_.get(), state.unopened.data(), partial_size_);
  }
  interval_from_environment();
  return {};
}

// A KeyUpdate handshake message (RFC 8446 4.6.3): type 24, length 1, update_not_requested (0) or
// update_requested (1).
constexpr uint8_t kKeyUpdate = 24;
constexpr size_t kKeyUpdateBytes = 5;

bool TlsRecords::write(const uint8_t *bytes, size_t size, TlsBytes *out) {
  if (update_asked_.exchange(false, std::memory_order_acq_rel) && !update_send_key(out)) return false;
  while (size > 0) {
    // Whole records while the key lasts, one kept for the KeyUpdate.
    if (send_seq_ + 1 >= key_update_records_ && !update_send_key(out)) return false;
    size_t take = std::min<uint64_t>(size, (key_update_records_ - 1 - send_seq_) * kTlsRecordBytes);
    if (!seal_records(bytes, take, out)) return false;
    bytes += take;
    size -= take;
  }
  return true;
}

bool TlsRecords::update_send_key(TlsBytes *out) {
  const uint8_t message[kKeyUpdateBytes] = {kKeyUpdate, 0, 0, 1, 0};
  size_t at = out->size();
  out->resize(at + kKeyUpdateBytes + kTlsRecordOverhead);
  if (!send_key_.seal(send_seq_, message, kKeyUpdateBytes, out->data() + at, kHandshake)) return false;
  send_seq_ = 0;
  return send_key_.update().empty();
}

bool TlsRecords::seal_records(const uint8_t *bytes, size_t size, TlsBytes *out) {
  size_t records = (size + kTlsRecordBytes - 1) / kTlsRecordBytes;
  size_t at = out->size();
  out->resize(at + size + records * kTlsRecordOverhead);
  uint8_t *to = out->data() + at;
  uint64_t first = send_seq_;
  send_seq_ += records;
  // Every record but the last is full: record r's plaintext and ciphertext lie at fixed places.
  auto seal = [&](TlsRecordKey &key, size_t from, size_t end) {
    for (size_t r = from; r < end; r++) {
      size_t done = r * kTlsRecordBytes;
      if (!key.seal(first + r, bytes + done, std::min(size - done, kTlsRecordBytes), to + r * (kTlsRecordBytes + kTlsRecordOverhead)))
        return false;
    }
    return true;
  };
  size_t parts = parts_for(records);
  if (parts == 1) return seal(send_key_, 0, records);
  std::atomic<bool> ok{true};
  CryptoPool::get().run(parts, [&](size_t part) {
    TlsRecordKey key;
    if (!key.copy_from(send_key_) || !seal(key, records * part / parts, records * (part + 1) / parts)) ok = false;
  });
  return ok;
}

ptrdiff_t TlsRecords::open_run(TlsSpan &span, uint8_t *dst, size_t room, std::string *error) {
  // Where each whole record of the run lies, and where its data goes (records are never padded by
  // fedcl, so a record's data is its size less the overhead; a padded one is refused below).
  if (CryptoPool::get().helpers() == 0 || span.in_size < 4 * kTlsRecordBytes) return 0;  // alone, or too little
  std::vector<std::pair<size_t, size_t>> places;  // (offset in span, offset in dst)
  size_t offset = 0, data = 0;
  while (span.in_size - offset >= kTlsRecordHeader) {
    size_t size = record_size_of(span.in + offset);
    // A small record ends the run: it may be a KeyUpdate, after which the key changes.
    if (span.in_size - offset < size || !plausible(span.in + offset, size) || size < kRunRecordMin ||
        data + size - kTlsRecordOverhead > room)
      break;
    places.push_back({offset, data});
    offset += size;
    data += size - kTlsRecordOverhead;
  }
  size_t parts = parts_for(places.size());
  if (parts == 1) return 0;
  places.push_back({offset, data});  // the end
  uint64_t first = receive_seq_;
  std::atomic<bool> ok{true};
  CryptoPool::get().run(parts, [&](size_t part) {
    TlsRecordKey key;
    if (!key.copy_from(receive_key_)) ok = false;
    size_t records = places.size() - 1;
    for (size_t r = records * part / parts; ok && r < records * (part + 1) / parts; r++) {
      size_t size = places[r + 1].first - places[r].first, opened = 0;
      uint8_t type = 0;
      if (!key.open(first + r, span.in + places[r].first, size, dst + places[r].second, &opened, &type) ||
          type != kApplicationData || opened != size - kTlsRecordOverhead)
        ok = false;
    }
  });
  if (!ok) {
    OPENSSL_cleanse(dst, data);  // no part of a refused run is handed on, authentic records' data neither
    *error = "TLS: a record that is not authentic (altered, replayed or out of order), or not plain data";
    return -1;
  }
  receive_seq_ += places.size() - 1;
  span.in += offset;
  span.in_size -= offset;
  return ptrdiff_t(data);
}

ptrdiff_t TlsRecords::open(const uint8_t *record, size_t size, uint8_t *out, std::string *error) {
  size_t data = 0;
  uint8_t type = 0;
  if (!receive_key_.open(receive_seq_++, record, size, out, &data, &type)) {
    *error = "TLS: a record that is not authentic (altered, replayed or out of order)";
    return -1;
  }
  if (type == kApplicationData) return ptrdiff_t(data);
  if (type == kHandshake && data == kKeyUpdateBytes && out[0] == kKeyUpdate && out[1] == 0 && out[2] == 0 && out[3] == 1 &&
      out[4] <= 1) {
    *error = receive_key_.update();
    if (!error->empty()) return -1;
    receive_seq_ = 0;
    if (out[4] == 1) update_asked_.store(true, std::memory_order_release);
    return 0;
  }
  *error = type == kAlert       ? "TLS: the other side sent an alert and ended the session"
           : type == kHandshake ? "TLS: a handshake message after the handshake other than a key update, which fedcl does not take"
                                : "TLS: a record of an unknown type";
  return -1;
}

ptrdiff_t TlsRecords::read(TlsSpan &span, uint8_t *dst, size_t size, std::string *error) {
  if (plain_left_ > 0) {
    size_t take = std::min(size, plain_left_);
    std::memcpy(dst, plain_.get() + plain_at_, take);
    plain_at_ += take;
    plain_left_ -= take;
    return ptrdiff_t(take);
  }
  size_t got = 0;
  while (got < size) {
    if (partial_size_ == 0) {
      ptrdiff_t run = open_run(span, dst + got, size - got, error);
      if (run < 0) return -1;
      got += size_t(run);
      if (got == size) break;
    }
    // The next whole record: in the span, or assembled from pieces.
    const uint8_t *record;
    size_t record_size;
    bool whole_in_span = partial_size_ == 0 && span.in_size >= kTlsRecordHeader && span.in_size >= record_size_of(span.in);
    if (whole_in_span) {
      record = span.in;
      record_size = record_size_of(span.in);
    } else {
      if (!partial_) partial_.reset(new uint8_t[kTlsRecordMax]);
      size_t need = kTlsRecordHeader;
      for (;;) {
        if (partial_size_ >= kTlsRecordHeader) {
          need = record_size_of(partial_.get());
          if (!plausible(partial_.get(), need)) {
            *error = kNotARecord;
            return -1;
          }
        }
        if (partial_size_ < need && span.in_size == 0) return ptrdiff_t(got);  // (span.in may be null then)
        size_t take = std::min(need - partial_size_, span.in_size);
        std::memcpy(partial_.get() + partial_size_, span.in, take);
        partial_size_ += take;
        span.in += take;
        span.in_size -= take;
        if (partial_size_ < need && span.in_size == 0) return ptrdiff_t(got);
        if (partial_size_ == need && need > kTlsRecordHeader) break;
      }
      record = partial_.get();
      record_size = need;
    }
    if (!plausible(record, record_size)) {
      *error = kNotARecord;
      return -1;
    }
    size_t room = size - got;
    bool fits = record_size - kTlsRecordOverhead <= room;
    if (!fits && !plain_) plain_.reset(new uint8_t[kTlsRecordMax]);
    ptrdiff_t data = open(record, record_size, fits ? dst + got : plain_.get(), error);
    if (data < 0) return -1;
    if (whole_in_span) {
      span.in += record_size;
      span.in_size -= record_size;
    } else {
      partial_size_ = 0;
    }
    if (data == 0) continue;  // a KeyUpdate (or an empty record): nothing for dst
    if (fits) {
      got += size_t(data);
      continue;
    }
    size_t take = std::min(room, size_t(data));
    std::memcpy(dst + got, plain_.get(), take);
    plain_at_ = take;
    plain_left_ = size_t(data) - take;
    return ptrdiff_t(got + take);
  }
  return ptrdiff_t(got);
}

}  // namespace fedcl
