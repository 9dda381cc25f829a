// Interoperability of fedcl's TLS record layer (protocol/tls_records.h) with TLS 1.3 implementations
// fedcl did not write, each as its own process at the other end of a real TCP connection on loopback:
// OpenSSL's `openssl s_server` and `openssl s_client`, and GnuTLS's `gnutls-serv` and `gnutls-cli`.
// fedcl's end (record_endpoint.h) does OpenSSL's handshake on the pre-shared key as fedcl sets it up
// (protocol/tls.cpp: identity "fedcl:USER", key HMAC-SHA256(user's key, "fedcl TLS 1.3 external PSK
// v1"), TLS_AES_128_GCM_SHA256 only, no tickets), then seals and opens every record itself. The tools
// get the same key from the command line, derived here from that documented formula: a handshake
// that fails means the code and the documentation disagree.
//
// Every test moves data both ways, checked byte for byte at both ends against one deterministic
// stream (pattern.h: a lost, repeated, reordered or changed byte fails it), and counts the records
// on the wire (record_tally.h):
// - More than 2^16 records each way, and more than 2^16 under one key each way: fedcl changes its key
//   every 2^16 + 16 records here (set_key_update_interval, as FEDCL_TLS_KEY_UPDATE_RECORDS does), so
//   its sequence numbers pass 16 bits before its first KeyUpdate; the tools never change theirs
//   unasked, and send 65,600 records before they are told to. The tools' stdin is written in pieces
//   of PIPE_BUF or less, each one read of theirs: openssl sends it in records of 512 bytes
//   (-max_send_frag), gnutls-cli in one record of 4095 (it reads 4095 at a time).
// - KeyUpdates each way: fedcl's own (twice in 140,000 writes), which the tool must take; the tool's
//   own, not asking for one of fedcl's (openssl's interactive `k`, gnutls-cli's `^rekey1^`), and one
//   asking (`K`, `^rekey^`), which fedcl must take, and after the second fedcl must answer with its own
//   KeyUpdate before its next record (checked on the wire), which the tool must take.
// - A command is written to a tool's stdin only once everything before it has arrived at fedcl's end
//   (so the tool read it alone), and what follows only once its KeyUpdate was seen.
//
// gnutls-serv has no command that updates its key (its echo mode answers lines, and fedcl's record
// layer never asks for an update), so with it fedcl's KeyUpdates are taken by GnuTLS but GnuTLS's
// own are seen only from gnutls-cli; its echo sends back every line as a record of its own, more
// than 2^16 of them. GnuTLS 3.7 takes the external pre-shared key in TLS 1.3 as OpenSSL does (the
// binder's "ext binder" label, SHA-256 for a key of no stated hash, psk_dhe_ke), so nothing is
// skipped; its password file names the user in hex ("#..."), since the identity has a colon in it.
//
// The tools must be installed (scripts/setup.sh: openssl, gnutls-bin): a missing one fails its test.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <stdexcept>
#include <thread>

#include "loopback_address.h"
#include "peer_process.h"
#include "record_endpoint.h"

namespace fedcl_test {
namespace {

constexpr char kUser[] = "alice";
constexpr char kKey[] = "the interoperability tests' key";
constexpr char kSuite[] = "TLS_AES_128_GCM_SHA256";
// GnuTLS's names for the same: TLS 1.3 only, AES-128-GCM, the key with (EC)DHE as OpenSSL insists.
constexpr char kGnuTlsPriority[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:-KX-ALL:+ECDHE-PSK:+DHE-PSK";
constexpr uint64_t kFedclKeyRecords = (uint64_t(1) << 16) + 16;
constexpr uint64_t kToolFirstKeyRecords = 65600;
constexpr size_t kFedclFirstWrites = 140000, kFedclLaterWrites = 2000;
constexpr auto kStepTimeout = std::chrono::seconds(40);

std::string hex(const unsigned char *bytes, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (size_t i = 0; i < size; i++) text += {digits[bytes[i] >> 4], digits[bytes[i] & 15]};
  return text;
}

// The TLS 1.3 pre-shared key of a fedcl key, in hex, from the formula docs/design-decisions.md gives.
std::string psk_hex(const std::string &key) {
  static const char kLabel[] = "fedcl TLS 1.3 external PSK v1";
  unsigned char psk[32];
  size_t size = 0;
  EXPECT_TRUE(EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(),
                        reinterpret_cast<const unsigned char *>(kLabel), sizeof kLabel - 1, psk, sizeof psk, &size));
  std::string text = hex(psk, size);
  OPENSSL_cleanse(psk, sizeof psk);
  return text;
}

std::string identity() { return std::string("fedcl:") + kUser; }

// The sizes of fedcl's writes number first to first + count: one record each, of 8 (never as small
// as a KeyUpdate) to 8 + spread - 1 bytes, and every 16384th a write of 100,000 (six full records
// and one more, sealed in parts where there are crypto helpers).
std::vector<size_t> fedcl_writes(size_t first, size_t count, size_t spread) {
  std::vector<size_t> sizes;
  for (size_t k = first; k < first + count; k++) sizes.push_back(k % 16384 == 16383 ? 100000 : 8 + (k * 7919) % spread);
  return sizes;
}

// What a tool said, for a failure's message.
std::string said(const PeerProcess &tool) {
  std::string messages = tool.messages();
  if (messages.size() > 2000) messages = "..." + messages.substr(messages.size() - 2000);
  std::string errors = tool.errors();
  if (errors.size() > 2000) errors = "..." + errors.substr(errors.size() - 2000);
  return "\n--- the tool's stdout (less the data):\n" + messages + "\n--- its stderr:\n" + errors;
}

// Waits until done() or failed() holds, or kStepTimeout passes; "" when done, else why not.
std::string wait_for(const std::string &what, const std::function<bool()> &done, const std::function<std::string()> &failed) {
  auto until = std::chrono::steady_clock::now() + kStepTimeout;
  while (!done()) {
    std::string why = failed();
    if (!why.empty()) return "while waiting for " + what + ": " + why;
    if (std::chrono::steady_clock::now() > until) return what + " did not happen within " + std::to_string(kStepTimeout.count()) + " s";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return {};
}

// What went wrong at either end so far, "" if nothing.
std::string trouble(const RecordEndpoint &fedcl, PeerProcess &tool) {
  if (!fedcl.received().failure().empty()) return "fedcl received wrong data: " + fedcl.received().failure();
  if (!tool.output().failure().empty()) return "the tool received wrong data: " + tool.output().failure();
  if (!fedcl.receive_failure().empty()) return "fedcl's receiving ended: " + fedcl.receive_failure();
  if (!tool.running()) return "the tool ended";
  return {};
}

// A tool that takes data and commands on its stdin.
struct Interactive {
  size_t piece;                          // its stdin is written in pieces of this size (a read of its each)
  size_t record;                         // which it sends in records of this size
  std::string update, update_requested;  // the commands for a KeyUpdate without and with asking for one
  size_t spread;                         // fedcl's writes are of 8 to 8 + spread - 1 bytes
};

// The exchange with a tool that takes commands (see the header): fedcl's first part alongside the
// tool's, the tool's two key updates, fedcl's answer and its second part, then every byte at both
// ends.
void exchange(RecordEndpoint &fedcl, PeerProcess &tool, const Interactive &commands) {
  fedcl.set_key_update_interval(kFedclKeyRecords);
  fedcl.start_receiving();
  std::string sending;
  std::thread first([&] { sending = fedcl.send(fedcl_writes(0, kFedclFirstWrites, commands.spread)); });
  auto failed = [&] { return trouble(fedcl, tool); };
  uint64_t fed = 0;  // bytes written to the tool's stdin
  // Writes size more bytes to the tool's stdin and waits until fedcl has them all.
  auto feed = [&](uint64_t size) {
    if (!tool.write_pattern(fed, size, commands.piece)) return "cannot write to the tool's stdin: " + failed();
    fed += size;
    return wait_for("fedcl to receive the tool's " + std::to_string(fed) + " bytes",
                    [&] { return fedcl.received().checked() == fed; }, failed);
  };
  // Tells the tool to update its key and waits for the KeyUpdate.
  auto update = [&](const std::string &command, size_t count) {
    if (!tool.write(command)) return "cannot write to the tool's stdin: " + failed();
    return wait_for("the tool's KeyUpdate " + std::to_string(count),
                    [&] { return fedcl.received_records().key_updates() == count; }, failed);
  };

  std::string why = feed(kToolFirstKeyRecords * commands.record);
  if (why.empty()) why = update(commands.update, 1);
  if (why.empty()) why = feed(256 * commands.piece);
  if (!why.empty()) fedcl.stop();  // a send stuck on a full socket returns
  first.join();
  ASSERT_EQ("", sending) << said(tool);
  ASSERT_EQ("", why) << said(tool);
  size_t own_updates = fedcl.sent_records().key_updates();
  ASSERT_EQ("", update(commands.update_requested, 2)) << said(tool);
  // Asked for one, fedcl's next write starts with its KeyUpdate: that write alone is under the new key.
  ASSERT_EQ("", fedcl.send(fedcl_writes(kFedclFirstWrites, 1, commands.spread)));
  RecordTally after_answer = fedcl.sent_records();
  EXPECT_EQ(own_updates + 1, after_answer.key_updates()) << "fedcl did not answer the tool's request for a KeyUpdate";
  EXPECT_EQ(1u, after_answer.per_key().back()) << "fedcl's answer did not come before its next record";
  ASSERT_EQ("", fedcl.send(fedcl_writes(kFedclFirstWrites + 1, kFedclLaterWrites, commands.spread)));
  ASSERT_EQ("", feed(256 * commands.piece)) << said(tool);
  uint64_t data = pattern_data_bytes(fedcl.sent());
  ASSERT_EQ("", wait_for("the tool to receive fedcl's " + std::to_string(data) + " data bytes",
                         [&] { return tool.output().checked() == data; }, failed))
      << said(tool);

  RecordTally sent = fedcl.sent_records(), received = fedcl.received_records();
  EXPECT_EQ(kFedclKeyRecords, sent.per_key()[0]) << "fedcl's first key sealed 2^16 + 16 records (2^16 is passed)";
  EXPECT_EQ(3u, sent.key_updates()) << "two of fedcl's own (every 2^16 + 16 records) and its answer";
  EXPECT_EQ(kToolFirstKeyRecords + 1, received.per_key()[0]) << "the tool's first key sealed 65,600 records and its KeyUpdate";
  EXPECT_EQ(2u, received.key_updates());
  EXPECT_GT(sent.records(), 2 * kFedclKeyRecords);
  EXPECT_GT(received.records(), kToolFirstKeyRecords);
}

// A listening socket on a free loopback port, and the port.
int listen_loopback(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = loopback_address(0);
  socklen_t size = sizeof address;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) != 0 || listen(fd, 1) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr *>(&address), &size) != 0)
    throw std::runtime_error("cannot listen on loopback");
  *port = ntohs(address.sin_port);
  return fd;
}

// Waits for the tool to print (on stdout or stderr) a line that pattern matches, and returns its
// first group; "" when the tool ends or prints failure first.
std::string wait_for_message(PeerProcess &tool, const std::regex &pattern, const std::string &failure = "") {
  std::smatch found;
  std::string printed;
  std::string why = wait_for("the tool to start",
                             [&] { return std::regex_search(printed = tool.messages() + tool.errors(), found, pattern); },
                             [&] {
                               if (!tool.running()) return std::string("it ended");
                               bool said_it = !failure.empty() && tool.errors().find(failure) != std::string::npos;
                               return said_it ? failure : std::string();
                             });
  return why.empty() ? found[1].str() : std::string();
}

const Interactive kOpenSsl{4096, 512, "k\n", "K\n", 256};
// gnutls-cli reads 4095 bytes at a time; its commands stand on lines of their own, as the pieces end
// with one (4095 is 65 lines). It writes what it receives a byte at a time (fputc on an unbuffered
// stdout, a system call each): fedcl's records to it are small.
const Interactive kGnuTlsCli{4095, 4095, "^rekey1^\n", "^rekey^\n", 16};

std::vector<std::string> openssl_common() {
  return {"-tls1_3", "-ciphersuites", kSuite, "-psk", psk_hex(kKey), "-psk_identity", identity(), "-max_send_frag", "512"};
}

TEST(TlsInterop, FedclClientWithOpenSslServer) {
  std::vector<std::string> argv = {"openssl", "s_server", "-accept", "127.0.0.1:0", "-naccept", "1", "-nocert", "-num_tickets", "0"};
  for (const std::string &arg : openssl_common()) argv.push_back(arg);
  PeerProcess tool(argv);
  std::string port = wait_for_message(tool, std::regex("ACCEPT 127\\.0\\.0\\.1:([0-9]+)"));
  ASSERT_NE("", port) << said(tool);
  std::string error;
  auto fedcl = RecordEndpoint::dial(std::stoi(port), kUser, kKey, &error);
  ASSERT_TRUE(fedcl) << error << said(tool);
  exchange(*fedcl, tool, kOpenSsl);
  fedcl->stop();
  tool.finish(std::chrono::seconds(5));
}

TEST(TlsInterop, OpenSslClientWithFedclServer) {
  int port = 0;
  int listener = listen_loopback(&port);
  std::vector<std::string> argv = {"openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(port)};
  for (const std::string &arg : openssl_common()) argv.push_back(arg);
  PeerProcess tool(argv);
  std::string error;
  auto fedcl = RecordEndpoint::accept(listener, kUser, kKey, &error);
  close(listener);
  ASSERT_TRUE(fedcl) << error << said(tool);
  exchange(*fedcl, tool, kOpenSsl);
  fedcl->stop();
  tool.finish(std::chrono::seconds(5));
}

TEST(TlsInterop, GnuTlsClientWithFedclServer) {
  int port = 0;
  int listener = listen_loopback(&port);
  PeerProcess tool({"gnutls-cli", "--pskusername", identity(), "--pskkey", psk_hex(kKey), "--priority", kGnuTlsPriority,
                    "--inline-commands", "--logfile", "/dev/stderr", "-p", std::to_string(port), "127.0.0.1"});
  std::string error;
  auto fedcl = RecordEndpoint::accept(listener, kUser, kKey, &error);
  close(listener);
  ASSERT_TRUE(fedcl) << error << said(tool);
  exchange(*fedcl, tool, kGnuTlsCli);
  fedcl->stop();
  tool.finish(std::chrono::seconds(5));
}

// A port nothing listens on, at the moment (gnutls-serv takes no port 0, and listens on every address).
int free_port() {
  int port = 0;
  close(listen_loopback(&port));
  return port;
}

TEST(TlsInterop, FedclClientWithGnuTlsServer) {
  char directory[] = "/tmp/fedcl-interop-XXXXXX";
  ASSERT_TRUE(mkdtemp(directory));
  std::string passwords = std::string(directory) + "/psk";
  const std::string name = identity();
  std::ofstream(passwords) << "#" << hex(reinterpret_cast<const unsigned char *>(name.data()), name.size()) << ":"
                           << psk_hex(kKey) << "\n";
  // Another program may take the port between its test and gnutls-serv's bind: then again.
  std::unique_ptr<PeerProcess> tool;
  int port = 0;
  for (int attempt = 0; attempt < 5 && !tool; attempt++) {
    port = free_port();
    tool = std::make_unique<PeerProcess>(std::vector<std::string>{"gnutls-serv", "--echo", "--noticket", "-p", std::to_string(port),
                                                                  "--pskpasswd", passwords, "--priority", kGnuTlsPriority});
    if (wait_for_message(*tool, std::regex("listening on IPv4 [^ ]+ port [0-9]+\\.\\.\\.(done)"), "bind() failed").empty())
      tool.reset();
  }
  std::string error;
  auto fedcl = tool ? RecordEndpoint::dial(port, kUser, kKey, &error) : nullptr;
  // gnutls-serv reads its password file at each handshake.
  unlink(passwords.c_str());
  rmdir(directory);
  ASSERT_TRUE(tool) << "gnutls-serv could not listen";
  ASSERT_TRUE(fedcl) << error << said(*tool);
  fedcl->set_key_update_interval(kFedclKeyRecords);
  fedcl->start_receiving();
  ASSERT_EQ("", fedcl->send(fedcl_writes(0, kFedclFirstWrites, 256))) << said(*tool);
  uint64_t sent = fedcl->sent();
  ASSERT_EQ("", wait_for("the echo of fedcl's " + std::to_string(sent) + " bytes",
                         [&] { return fedcl->received().checked() == sent; }, [&] { return trouble(*fedcl, *tool); }))
      << said(*tool);
  RecordTally to_tool = fedcl->sent_records(), from_tool = fedcl->received_records();
  EXPECT_EQ(kFedclKeyRecords, to_tool.per_key()[0]);
  EXPECT_EQ(2u, to_tool.key_updates());
  EXPECT_GT(from_tool.records(), uint64_t(1) << 16) << "gnutls-serv answers each line it reads as a record";
  fedcl->stop();
  tool->finish(std::chrono::seconds(0));
}

}  // namespace
}  // namespace fedcl_test
