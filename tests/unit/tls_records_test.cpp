// fedcl's TLS record layer (protocol/tls_records.h) against OpenSSL's own, in memory: a real TLS 1.3
// handshake (the pre-shared key), then records fedcl seals must be what OpenSSL reads, records OpenSSL
// seals must be what fedcl reads (in pieces of any size, into destinations of any size), and an
// altered or reordered record must be refused.
#include "tls_records.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

using fedcl::TlsBytes;
using fedcl::TlsRecords;
using fedcl::TlsSpan;

std::vector<uint8_t> pattern(size_t size, unsigned seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; i++) bytes[i] = uint8_t(i * 131 + seed + (i >> 11));
  return bytes;
}

// A client and a daemon connected through a BIO pair, handshake done.
struct Connected {
  fedcl::TlsContext server_ctx, client_ctx;
  fedcl::TlsSession server, client;
  BIO *client_end = nullptr;  // the client's side of the pair: what the server sent is read here

  Connected() {
    std::string error;
    server_ctx = fedcl::tls_server_context("", "", [](const std::string &) { return fedcl::Secret("the key"); }, &error);
    client_ctx = fedcl::tls_client_context(fedcl::TlsMode::psk, "", &error);
    EXPECT_TRUE(server_ctx && client_ctx) << error;
    server.reset(SSL_new(server_ctx.get()));
    client = fedcl::tls_client_session(client_ctx.get(), fedcl::TlsMode::psk, "localhost", "the key", "user", &error);
    EXPECT_TRUE(server && client) << error;
    BIO *server_end = nullptr;
    BIO_new_bio_pair(&client_end, 1 << 22, &server_end, 1 << 22);
    SSL_set_bio(client.get(), client_end, client_end);
    SSL_set_bio(server.get(), server_end, server_end);
    SSL_set_connect_state(client.get());
    SSL_set_accept_state(server.get());
    int client_done = 0, server_done = 0;
    for (int i = 0; i < 20 && (client_done != 1 || server_done != 1); i++) {
      if (client_done != 1) client_done = SSL_do_handshake(client.get());
      if (server_done != 1) server_done = SSL_do_handshake(server.get());
    }
    EXPECT_EQ(1, client_done);
    EXPECT_EQ(1, server_done);
  }

  // What OpenSSL's record layer on the server makes of cipher from the client (size bytes expected;
  // fewer when it refuses a record).
  std::vector<uint8_t> server_reads(const TlsBytes &cipher, size_t size) {
    EXPECT_EQ(int(cipher.size()), BIO_write(client_end, cipher.data(), int(cipher.size())));
    std::vector<uint8_t> got(size);
    size_t have = 0;
    while (have < size) {
      int n = SSL_read(server.get(), got.data() + have, int(size - have));
      if (n <= 0) break;  // OpenSSL refused a record of fedcl's
      have += size_t(n);
    }
    got.resize(have);
    return got;
  }

  // What the server sent to the client, as ciphertext.
  std::vector<uint8_t> to_client() {
    std::vector<uint8_t> bytes(size_t(BIO_ctrl_pending(client_end)));
    if (!bytes.empty()) {
      EXPECT_EQ(int(bytes.size()), BIO_read(client_end, bytes.data(), int(bytes.size())));
    }
    return bytes;
  }
};

// Reads everything from cipher through records, fed in pieces of random sizes into destinations of
// random sizes.
std::vector<uint8_t> read_all(TlsRecords &records, const std::vector<uint8_t> &cipher, size_t expected, unsigned seed,
                              std::string *error, size_t most = 70000) {
  std::mt19937 random(seed);
  std::vector<uint8_t> plain(expected + 1);
  size_t fed = 0, got = 0;
  TlsSpan span;
  while (got < expected) {
    if (span.in_size == 0 && fed < cipher.size()) {
      size_t piece = std::min(cipher.size() - fed, size_t(1 + random() % (most * 4 / 7)));
      span.in = cipher.data() + fed;
      span.in_size = piece;
      fed += piece;
    }
    size_t want = std::min(expected - got, size_t(1 + random() % most));
    ptrdiff_t n = records.read(span, plain.data() + got, want, error);
    if (n < 0 || (n == 0 && fed == cipher.size())) break;
    got += size_t(n);
  }
  plain.resize(got);
  return plain;
}

// Large spans are sealed and opened by several threads where the machine has cores to spare; these
// tests ask for three helpers (the pool is made once per process, and ctest runs each test alone).
void with_helpers() { setenv("FEDCL_TLS_CRYPTO_THREADS", "3", 1); }

TEST(TlsRecords, OpenSslReadsWhatFedclSealsOnSeveralThreads) {
  with_helpers();
  Connected c;
  TlsRecords records;
  ASSERT_EQ("", records.start(c.client.get()));
  auto sent = pattern(3000000, 4);
  TlsBytes cipher;
  for (size_t done = 0; done < sent.size(); done += 600000)
    ASSERT_TRUE(records.write(sent.data() + done, 600000, &cipher));
  EXPECT_EQ(sent, c.server_reads(cipher, sent.size()));
}

TEST(TlsRecords, FedclOpensLargeSpansOnSeveralThreadsAndRefusesAnAlteredRecord) {
  with_helpers();
  for (int damage = 0; damage < 2; damage++) {
    Connected c;
    TlsRecords records;
    ASSERT_EQ("", records.start(c.client.get()));
    auto sent = pattern(2000000, 5);
    for (size_t done = 0; done < sent.size(); done += 100000)
      ASSERT_EQ(100000, SSL_write(c.server.get(), sent.data() + done, 100000));
    auto cipher = c.to_client();
    if (damage) {  // a byte of the data of the record in the middle, inside a run
      size_t at = 0;
      while (at < cipher.size() / 2) at += fedcl::kTlsRecordHeader + (size_t(cipher[at + 3]) << 8 | cipher[at + 4]);
      cipher[at + fedcl::kTlsRecordHeader + 10] ^= 0x40;
    }
    std::string error;
    auto got = read_all(records, cipher, sent.size(), 9, &error, 1500000);
    if (damage) {
      EXPECT_NE(std::string::npos, error.find("not authentic")) << error;
      EXPECT_LT(got.size(), sent.size() / 2 + 20000);
    } else {
      EXPECT_EQ("", error);
      EXPECT_EQ(sent, got);
    }
  }
}

TEST(TlsRecords, OpenSslReadsWhatFedclSeals) {
  Connected c;
  TlsRecords records;
  ASSERT_EQ("", records.start(c.client.get()));
  auto sent = pattern(300000, 1);
  TlsBytes cipher;
  ASSERT_TRUE(records.write(sent.data(), 5, &cipher));  // a small record, then many full ones
  ASSERT_TRUE(records.write(sent.data() + 5, sent.size() - 5, &cipher));
  EXPECT_EQ(sent.size() + 20 * fedcl::kTlsRecordOverhead, cipher.size());
  EXPECT_EQ(sent, c.server_reads(cipher, sent.size()));
}

TEST(TlsRecords, FedclReadsWhatOpenSslSealsInAnyPieces) {
  Connected c;
  TlsRecords records;
  ASSERT_EQ("", records.start(c.client.get()));
  auto sent = pattern(500000, 2);
  for (size_t done = 0; done < sent.size();) {  // records of many sizes
    size_t piece = std::min(sent.size() - done, size_t(1 + (done * 7919) % 30000));
    ASSERT_EQ(int(piece), SSL_write(c.server.get(), sent.data() + done, int(piece)));
    done += piece;
  }
  std::string error;
  auto got = read_all(records, c.to_client(), sent.size(), 5, &error);
  EXPECT_EQ("", error);
  ASSERT_EQ(sent.size(), got.size());
  EXPECT_EQ(sent.end(), std::mismatch(sent.begin(), sent.end(), got.begin()).first) << "first difference at "
      << std::mismatch(sent.begin(), sent.end(), got.begin()).first - sent.begin();
}

TEST(TlsRecords, AnAlteredOrReorderedRecordIsRefused) {
  for (int damage = 0; damage < 2; damage++) {
    Connected c;
    TlsRecords records;
    ASSERT_EQ("", records.start(c.client.get()));
    auto sent = pattern(100, 3);
    ASSERT_EQ(100, SSL_write(c.server.get(), sent.data(), 100));
    ASSERT_EQ(100, SSL_write(c.server.get(), sent.data(), 100));
    auto cipher = c.to_client();
    size_t record = cipher.size() / 2;
    ASSERT_EQ(100 + fedcl::kTlsRecordOverhead, record);
    if (damage == 0) cipher[fedcl::kTlsRecordHeader + 10] ^= 1;  // a bit of the first record's data
    else std::rotate(cipher.begin(), cipher.begin() + record, cipher.end());  // the second first
    std::string error;
    auto got = read_all(records, cipher, 200, 7, &error);
    EXPECT_TRUE(got.empty());
    EXPECT_NE(std::string::npos, error.find("not authentic")) << error;
  }
}

// Records are opened into their destination before their tag is checked: a refused one must leave
// none of its data there (a flipped bit would otherwise leave a predictably altered copy behind). In
// one read into room for everything: a small record alone, and a record inside a run opened by
// several threads. Each byte of the destination is what was sent (a record before the altered
// one), untouched, or wiped.
TEST(TlsRecords, ARefusedRecordLeavesNoneOfItsDataInTheDestination) {
  with_helpers();
  for (size_t size : {size_t(100), size_t(2000000)}) {
    Connected c;
    TlsRecords records;
    ASSERT_EQ("", records.start(c.client.get()));
    auto sent = pattern(size, 6);
    for (size_t done = 0; done < size; done += std::min(size - done, size_t(100000)))
      ASSERT_EQ(int(std::min(size - done, size_t(100000))),
                SSL_write(c.server.get(), sent.data() + done, int(std::min(size - done, size_t(100000)))));
    auto cipher = c.to_client();
    size_t at = 0, data_before = 0;  // the record holding the middle of the ciphertext
    while (at + fedcl::kTlsRecordHeader + (size_t(cipher[at + 3]) << 8 | cipher[at + 4]) < cipher.size() / 2) {
      size_t body = size_t(cipher[at + 3]) << 8 | cipher[at + 4];
      at += fedcl::kTlsRecordHeader + body;
      data_before += body - 1 - 16;
    }
    const size_t offset = 10;
    cipher[at + fedcl::kTlsRecordHeader + offset] ^= 0x40;
    const uint8_t untouched = 0xee;
    std::vector<uint8_t> dst(size, untouched);
    TlsSpan span;
    span.in = cipher.data();
    span.in_size = cipher.size();
    std::string error;
    EXPECT_EQ(-1, records.read(span, dst.data(), dst.size(), &error)) << size;
    EXPECT_NE(std::string::npos, error.find("not authentic")) << error;
    size_t flipped = data_before + offset;
    EXPECT_NE(uint8_t(sent[flipped] ^ 0x40), dst[flipped]) << size << ": the altered byte was left in the destination";
    for (size_t i = 0; i < size; i++)
      ASSERT_TRUE(dst[i] == sent[i] || dst[i] == untouched || dst[i] == 0) << size << ": byte " << i;
  }
}

// How many records of cipher are as small as a KeyUpdate's (and, in these tests, nothing else is).
template <typename Bytes>
size_t key_updates_in(const Bytes &cipher) {
  size_t found = 0;
  for (size_t at = 0; at + fedcl::kTlsRecordHeader <= cipher.size();) {
    size_t body = size_t(cipher[at + 3]) << 8 | cipher[at + 4];
    if (body == 5 + 1 + 16) found++;
    at += fedcl::kTlsRecordHeader + body;
  }
  return found;
}

TEST(TlsRecords, OpenSslTakesTheKeyUpdatesFedclSends) {
  Connected c;
  TlsRecords records;
  ASSERT_EQ("", records.start(c.client.get()));
  records.set_key_update_interval(5);
  auto sent = pattern(300000, 6);
  TlsBytes cipher;
  ASSERT_TRUE(records.write(sent.data(), 5, &cipher));
  ASSERT_TRUE(records.write(sent.data() + 5, 40000, &cipher));
  ASSERT_TRUE(records.write(sent.data() + 40005, sent.size() - 40005, &cipher));
  EXPECT_EQ(5u, key_updates_in(cipher)) << "21 records at most 4 to a key";
  EXPECT_EQ(sent, c.server_reads(cipher, sent.size()));
}

TEST(TlsRecords, FedclTakesOpenSslsKeyUpdatesAndAnswersARequestedOne) {
  Connected c;
  TlsRecords records;
  ASSERT_EQ("", records.start(c.client.get()));
  auto sent = pattern(120000, 7);
  ASSERT_EQ(1000, SSL_write(c.server.get(), sent.data(), 1000));
  ASSERT_EQ(1, SSL_key_update(c.server.get(), SSL_KEY_UPDATE_NOT_REQUESTED));
  ASSERT_EQ(1000, SSL_write(c.server.get(), sent.data() + 1000, 1000));
  ASSERT_EQ(1, SSL_key_update(c.server.get(), SSL_KEY_UPDATE_REQUESTED));
  ASSERT_EQ(int(sent.size()) - 2000, SSL_write(c.server.get(), sent.data() + 2000, int(sent.size()) - 2000));
  auto cipher = c.to_client();
  EXPECT_EQ(2u, key_updates_in(cipher));
  std::string error;
  EXPECT_EQ(sent, read_all(records, cipher, sent.size(), 3, &error));
  EXPECT_EQ("", error);

  // Asked for one, fedcl updates its own key before its next record; OpenSSL reads on with it.
  auto reply = pattern(50000, 8);
  TlsBytes answer;
  ASSERT_TRUE(records.write(reply.data(), reply.size(), &answer));
  EXPECT_EQ(1u, key_updates_in(answer));
  EXPECT_EQ(reply, c.server_reads(answer, reply.size()));
}

TEST(TlsRecords, KeyUpdatesEndParallelRunsAndEveryByteArrives) {
  with_helpers();
  Connected c;
  TlsRecords sender, receiver;
  ASSERT_EQ("", sender.start(c.client.get()));
  ASSERT_EQ("", receiver.start(c.server.get()));
  sender.set_key_update_interval(16);
  auto sent = pattern(3000000, 9);
  TlsBytes cipher;
  for (size_t done = 0; done < sent.size(); done += 600000)
    ASSERT_TRUE(sender.write(sent.data() + done, 600000, &cipher));
  EXPECT_GE(key_updates_in(cipher), 12u);
  std::string error;
  EXPECT_EQ(sent, read_all(receiver, std::vector<uint8_t>(cipher.begin(), cipher.end()), sent.size(), 11, &error, 1500000));
  EXPECT_EQ("", error);
}

// FEDCL_TLS_KEY_UPDATE_RECORDS may only shorten a key's life: a larger value (one that wrapped the
// record arithmetic made write() loop for ever) or one that does not parse leaves RFC 8446's limit.
TEST(TlsRecords, TheKeyUpdateIntervalNeverPassesTheLimit) {
  fedcl::TlsRecordState state;  // any secrets will do: the interval is read as the records start
  for (const char *value : {"18446744073709551615", "99999999999999999999999", "16x", "-5", ""}) {
    setenv("FEDCL_TLS_KEY_UPDATE_RECORDS", value, 1);
    TlsRecords records;
    ASSERT_EQ("", records.restore(state));
    EXPECT_EQ(fedcl::kTlsKeyUpdateRecords, records.key_update_interval()) << "'" << value << "'";
  }
  setenv("FEDCL_TLS_KEY_UPDATE_RECORDS", "64", 1);
  TlsRecords records;
  ASSERT_EQ("", records.restore(state));
  EXPECT_EQ(64u, records.key_update_interval());
  records.set_key_update_interval(UINT64_MAX);
  EXPECT_EQ(fedcl::kTlsKeyUpdateRecords, records.key_update_interval());
  unsetenv("FEDCL_TLS_KEY_UPDATE_RECORDS");
}

TEST(TlsRecords, ARecordThatIsNotDataIsRefused) {
  Connected c;
  TlsRecords records;
  ASSERT_EQ("", records.start(c.client.get()));
  std::vector<uint8_t> junk{0x16, 0x03, 0x03, 0x00, 0x20};  // a handshake record's header
  junk.resize(5 + 0x20);
  std::string error;
  read_all(records, junk, 10, 1, &error);
  EXPECT_NE(std::string::npos, error.find("not application data")) << error;
}

}  // namespace
