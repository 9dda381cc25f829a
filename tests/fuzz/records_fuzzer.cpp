// libFuzzer target: the receiving half of fedcl's TLS record layer (protocol/tls_records.h), which
// opens whatever arrives on a connection once its handshake is done: what the peer sealed, or
// anything a machine in between put there. Each input drives one of two cases (its first byte):
// - Sealed: fedcl's own sending half seals writes of sizes the input gives, changing its key every
//   few records (as often as the input says), and the input may then alter the ciphertext: flip a
//   byte, delete or insert one, swap two records, or cut it short. A receiving half opens it from
//   pieces split where the input says into destinations of the sizes it says, and is handed over
//   once in the middle (save, then restore into another, as fedcld's main process hands a
//   connection to its session worker).
// - Raw: the input's own bytes are the ciphertext, in pieces of sizes its first bytes give.
// Checked beyond not crashing: what read() hands out is the plaintext sealed, in order: all of it,
// with no error, when nothing was altered; when something was, nothing of the record the first
// altered byte lies in nor of any after it (an altered record is never taken, and nothing of one
// that failed to open is handed out), and a flipped byte of a record's body or tag, or two records
// swapped, is refused. The input's own bytes never open: no key, no record.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tls_records.h"

namespace {

using fedcl::TlsRecords;
using fedcl::TlsRecordState;

[[noreturn]] void fail(const std::string &what) {
  std::fprintf(stderr, "records_fuzzer: %s\n", what.c_str());
  std::abort();
}

// The input, taken a few bytes at a time; zeros once it is used up.
struct Script {
  const uint8_t *data;
  size_t size;
  bool used_up() const { return size == 0; }
  size_t take(size_t bytes) {
    size_t value = 0;
    for (size_t i = 0; i < bytes; i++) value = value << 8 | (size ? (size--, *data++) : 0);
    return value;
  }
};

// A record layer's state at the start, its secrets fixed (the target tests the records, not the
// handshake): the sending half's of the sealed case, the receiving half's that opens what it sealed,
// and the receiving half's of the raw case, whose key seals nothing (libFuzzer learns the sealed
// case's ciphertext from its comparisons and offers it as raw input: under the same key, it opens).
enum class End { sender, receiver, raw_receiver };
TlsRecordState state_of(End end) {
  TlsRecordState state;
  for (size_t i = 0; i < sizeof state.send_secret; i++) {
    state.send_secret[i] = uint8_t(end == End::sender ? i + 1 : i + 101);
    state.receive_secret[i] = uint8_t(end == End::receiver ? i + 1 : end == End::raw_receiver ? i + 201 : i + 101);
  }
  return state;
}

std::unique_ptr<TlsRecords> records_from(const TlsRecordState &state) {
  auto records = std::make_unique<TlsRecords>();
  std::string why = records->restore(state);
  if (!why.empty()) fail("cannot restore a record layer: " + why);
  return records;
}

// A record of the sealed stream: where its ciphertext starts and how much plaintext comes before it.
struct Record {
  size_t at, plain_before;
};

std::vector<Record> records_in(const fedcl::TlsBytes &cipher) {
  std::vector<Record> found;
  size_t plain = 0;
  for (size_t at = 0; at + fedcl::kTlsRecordHeader <= cipher.size();) {
    size_t body = size_t(cipher[at + 3]) << 8 | cipher[at + 4];
    found.push_back({at, plain});
    bool key_update = body == 5 + 1 + 16;  // the target's writes are never of 5 bytes
    if (!key_update) plain += body + fedcl::kTlsRecordHeader - fedcl::kTlsRecordOverhead;
    at += fedcl::kTlsRecordHeader + body;
  }
  return found;
}

// What the receiving half handed out of cipher, and whether it refused something.
struct Outcome {
  std::vector<uint8_t> plain;
  std::string error;
};

// Opens cipher in pieces and into destinations of the script's sizes (once it is used up: the rest
// at once, into 64 KiB), handed over to a second record layer after the read the script names.
Outcome open_all(const std::vector<uint8_t> &cipher, Script &script, End end) {
  auto receiver = records_from(state_of(end));
  Outcome outcome;
  size_t hand_over = script.take(1), reads = 0, fed = 0;
  fedcl::TlsSpan span;
  constexpr size_t kMostDst = 70000;
  std::vector<uint8_t> dst(kMostDst);
  for (;;) {
    if (span.in_size == 0) {
      if (fed == cipher.size()) break;
      size_t piece = script.used_up() ? cipher.size() : 1 + script.take(2) % kMostDst;
      piece = std::min(piece, cipher.size() - fed);
      span.in = cipher.data() + fed;
      span.in_size = piece;
      fed += piece;
    }
    size_t room = script.used_up() ? 65536 : 1 + script.take(2) % kMostDst;
    ptrdiff_t got = receiver->read(span, dst.data(), room, &outcome.error);
    if (got < 0) break;
    if (got == 0 && !outcome.error.empty()) fail("read() returned 0 and an error: " + outcome.error);
    outcome.plain.insert(outcome.plain.end(), dst.begin(), dst.begin() + got);
    if (++reads == hand_over) {
      TlsRecordState state;
      receiver->save(&state);
      receiver = records_from(state);
    }
  }
  // What the last read left: plaintext held from a record larger than the destination was.
  while (outcome.error.empty() && receiver->holding()) {
    uint8_t byte[4096];
    fedcl::TlsSpan none;
    ptrdiff_t got = receiver->read(none, byte, sizeof byte, &outcome.error);
    if (got <= 0) break;
    outcome.plain.insert(outcome.plain.end(), byte, byte + got);
  }
  return outcome;
}

// The record of records (by where they start) that holds byte at.
size_t record_of(const std::vector<Record> &records, size_t at) {
  size_t found = 0;
  for (size_t r = 0; r < records.size(); r++)
    if (records[r].at <= at) found = r;
  return found;
}

constexpr size_t kWrites = 16, kLargestWrite = 20000;

// The plaintext the sealed case's writes take their bytes from, in order.
const std::vector<uint8_t> &plaintext() {
  static const std::vector<uint8_t> bytes = [] {
    std::vector<uint8_t> made(kWrites * kLargestWrite);
    for (size_t i = 0; i < made.size(); i++) made[i] = uint8_t(i * 7 + i / 251);
    return made;
  }();
  return bytes;
}

void sealed(Script &script) {
  auto sender = records_from(state_of(End::sender));
  sender->set_key_update_interval(2 + script.take(1) % 15);
  fedcl::TlsBytes cipher;
  // Room for the most a script can seal (a KeyUpdate after every second record at most): growing
  // TlsBytes copies it byte by byte, a slow loop in a build with coverage.
  cipher.reserve(kWrites * (kLargestWrite + 4 * (fedcl::kTlsRecordOverhead + 27)));
  size_t writes = 1 + script.take(1) % kWrites, sealed_bytes = 0;
  for (size_t i = 0; i < writes; i++) {
    size_t size = script.take(2);
    size = size & 0x8000 ? size % (kLargestWrite + 1) : size % 300;  // large ones: several records
    if (size == 5) size = 6;  // a record of 5 bytes would look like a KeyUpdate to records_in
    if (!sender->write(plaintext().data() + sealed_bytes, size, &cipher)) fail("the sending half could not seal");
    sealed_bytes += size;
  }
  if (cipher.empty()) return;
  std::vector<uint8_t> plain(plaintext().data(), plaintext().data() + sealed_bytes);
  std::vector<Record> records = records_in(cipher);
  std::vector<uint8_t> altered(cipher.data(), cipher.data() + cipher.size());
  // At most one alteration; the plaintext that may then be handed out is that of the records wholly
  // before the first byte it changes (or before the cut); some must be refused.
  size_t kind = script.take(1) % 6, at = script.take(3) % cipher.size();
  size_t allowed = plain.size();
  bool must_refuse = false;
  size_t r = record_of(records, at);
  if (kind == 1) {  // flip bits of a byte: refused, unless it is the length's (the framing moves)
    altered[at] ^= uint8_t(script.take(1) | 1);
    size_t offset = at - records[r].at;
    must_refuse = offset != 3 && offset != 4;
    allowed = records[r].plain_before;
  } else if (kind == 2 || kind == 3) {  // delete a byte, insert one: the stream shifts (or waits)
    if (kind == 2) altered.erase(altered.begin() + at);
    else altered.insert(altered.begin() + at, uint8_t(script.take(1)));
    allowed = records[r].plain_before;
  } else if (kind == 4 && r + 1 < records.size()) {  // a record and the next in each other's place
    size_t a = records[r].at, b = records[r + 1].at, end = r + 2 < records.size() ? records[r + 2].at : cipher.size();
    std::vector<uint8_t> swapped(cipher.begin() + b, cipher.begin() + end);
    swapped.insert(swapped.end(), cipher.begin() + a, cipher.begin() + b);
    std::copy(swapped.begin(), swapped.end(), altered.begin() + a);
    must_refuse = true;
    allowed = records[r].plain_before;
  } else if (kind == 5) {  // cut short: what follows never comes
    altered.resize(at);
    allowed = records[r].plain_before;
  }
  Outcome outcome = open_all(altered, script, End::receiver);
  if (outcome.plain.size() > plain.size() || !std::equal(outcome.plain.begin(), outcome.plain.end(), plain.begin()))
    fail("read() handed out bytes that were not sealed, or not in their order");
  if (outcome.plain.size() > allowed)
    fail("read() handed out " + std::to_string(outcome.plain.size()) + " bytes where only " + std::to_string(allowed) +
         " came before an altered or missing record");
  bool untouched = altered.size() == cipher.size() && std::memcmp(altered.data(), cipher.data(), cipher.size()) == 0;
  if (untouched && (!outcome.error.empty() || outcome.plain.size() != plain.size()))
    fail("an unaltered stream was not read whole: " + outcome.error);
  if (must_refuse && outcome.error.empty()) fail("an altered record was not refused");
}

void raw(Script &script) {
  std::vector<uint8_t> cipher(script.data, script.data + script.size);
  Script sizes{cipher.data(), std::min<size_t>(cipher.size(), 8)};
  Outcome outcome = open_all(cipher, sizes, End::raw_receiver);
  if (!outcome.plain.empty()) fail("bytes that no one sealed were opened");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Two crypto helpers, as on a machine with cores to spare: runs of records open on several threads.
  setenv("FEDCL_TLS_CRYPTO_THREADS", "2", 0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Script script{data, size};
  if (script.take(1) & 1) raw(script);
  else sealed(script);
  return 0;
}
