// The challenge-response's pure parts: proofs (protocol/auth.h), the daemon's key list and store
// (keys.h), the throttle of failing addresses (auth_throttle.h), the daemon's own names
// (daemon_names.h), and Secret (protocol/secret.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "auth.h"
#include "auth_throttle.h"
#include "daemon_names.h"
#include "keys.h"
#include "secret.h"

using fedcl::AuthRole;

namespace {
const fedcl::Nonce kDaemonNonce = fedcl::fresh_nonce(), kClientNonce = fedcl::fresh_nonce();

const fedcl::AuthBinding kBinding{"exporter-value", "gpu01", ""};

fedcl::Proof proof(const std::string &key, AuthRole role, const fedcl::Nonce &challenge = kDaemonNonce,
                   const std::string &identity = "alice", const fedcl::AuthBinding &binding = kBinding) {
  return fedcl::auth_proof(key, role, fedcl::as_data(challenge), fedcl::as_data(kClientNonce), identity, binding);
}
}  // namespace

TEST(AuthProof, MatchesOnlyTheSameKeyRoleNoncesAndIdentity) {
  fedcl::Proof right = proof("k", AuthRole::client);
  EXPECT_TRUE(fedcl::auth_proof_matches(right, fedcl::as_data(proof("k", AuthRole::client))));
  EXPECT_FALSE(fedcl::auth_proof_matches(right, fedcl::as_data(proof("k2", AuthRole::client))));
  EXPECT_FALSE(fedcl::auth_proof_matches(right, fedcl::as_data(proof("k", AuthRole::daemon))));
  EXPECT_FALSE(fedcl::auth_proof_matches(right, fedcl::as_data(proof("k", AuthRole::dialling_peer))));
  EXPECT_FALSE(fedcl::auth_proof_matches(right, fedcl::as_data(proof("k", AuthRole::client, fedcl::fresh_nonce()))));
  EXPECT_FALSE(fedcl::auth_proof_matches(right, fedcl::as_data(proof("k", AuthRole::client, kDaemonNonce, "bob"))));
  // Bound to the channel, the daemon dialled and the session resumed: a proof made for another
  // connection (a relay's) does not match.
  for (const fedcl::AuthBinding &other : {fedcl::AuthBinding{"another-exporter", "gpu01", ""},
                                          fedcl::AuthBinding{"", "gpu01", ""},
                                          fedcl::AuthBinding{"exporter-value", "relay", ""},
                                          fedcl::AuthBinding{"exporter-value", "gpu01", "token"}})
    EXPECT_FALSE(fedcl::auth_proof_matches(right, fedcl::as_data(proof("k", AuthRole::client, kDaemonNonce, "alice", other))));
  // Fields are length-prefixed: moving a byte from one field to the next changes the proof.
  EXPECT_FALSE(fedcl::auth_proof_matches(proof("k", AuthRole::client, kDaemonNonce, "alice", {"ab", "c", ""}),
                                         fedcl::as_data(proof("k", AuthRole::client, kDaemonNonce, "alice", {"a", "bc", ""}))));
  // A truncated or empty proof never matches.
  EXPECT_FALSE(fedcl::auth_proof_matches(right, capnp::Data::Reader(right.data(), right.size() - 1)));
  EXPECT_FALSE(fedcl::auth_proof_matches(right, capnp::Data::Reader()));
}

TEST(AuthProof, NoncesAreFresh) { EXPECT_NE(fedcl::fresh_nonce(), fedcl::fresh_nonce()); }

TEST(KeyList, ReadsKeysAndKeyFilesAndReportsBadLines) {
  char path[] = "/tmp/fedcl-key-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "from-a-file-of-bob\nsecond line ignored\n";
  auto list = fedcld::key_list_parse(std::string("# users\nalice  a key with spaces in it \nbob ") + path +
                                         "\ncarol\ndave /nonexistent/key\nalice again-and-long-enough\nerin short\n",
                                     "keys.list");
  unlink(path);
  EXPECT_EQ("a key with spaces in it", list.keys.at("alice").view());
  EXPECT_EQ("from-a-file-of-bob", list.keys.at("bob").view());
  EXPECT_EQ(2u, list.keys.size());
  ASSERT_EQ(4u, list.problems.size());
  EXPECT_NE(std::string::npos, list.problems[0].find("keys.list:4: user 'carol' has no key")) << list.problems[0];
  EXPECT_NE(std::string::npos, list.problems[1].find("/nonexistent/key")) << list.problems[1];
  EXPECT_NE(std::string::npos, list.problems[2].find("listed twice")) << list.problems[2];
  EXPECT_NE(std::string::npos, list.problems[3].find("keys.list:7: user 'erin': a key of 5 bytes is too short")) << list.problems[3];
}

TEST(KeyFiles, OnlyTheirOwnerMayWriteThemAndEveryonesReadIsWarnedAbout) {
  uid_t me = geteuid();
  EXPECT_TRUE(fedcl::key_file_check("k", me, 0100600, me).refused.empty());
  EXPECT_TRUE(fedcl::key_file_check("k", me, 0100600, me).warning.empty());
  EXPECT_TRUE(fedcl::key_file_check("k", 0, 0100440, me).refused.empty()) << "root's, read by its group";
  EXPECT_NE("", fedcl::key_file_check("k", me, 0100666, me).refused);
  EXPECT_NE("", fedcl::key_file_check("k", me, 0100620, me).refused);
  EXPECT_NE("", fedcl::key_file_check("k", 4242, 0100600, 4343).refused) << "another user's file";
  fedcl::KeyFileCheck everyones = fedcl::key_file_check("k", me, 0100644, me);
  EXPECT_EQ("", everyones.refused);
  EXPECT_NE(std::string::npos, everyones.warning.find("every user")) << everyones.warning;
}

TEST(KeyFiles, AKeyFileOthersMayWriteOrAShortKeyIsRefused) {
  char path[] = "/tmp/fedcl-key-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(2, write(fd, "k\n", 2));
  close(fd);
  std::string why, warning;
  EXPECT_TRUE(fedcl::secret_read_file(path, &why, &warning).empty());
  EXPECT_NE(std::string::npos, why.find("a key of 1 bytes is too short")) << why;
  std::ofstream(path) << "sixteen-bytes-ok\n";
  ASSERT_EQ(0, chmod(path, 0666));
  EXPECT_TRUE(fedcl::secret_read_file(path, &why, &warning).empty());
  EXPECT_NE(std::string::npos, why.find("may be written by users other than its owner")) << why;
  ASSERT_EQ(0, chmod(path, 0644));
  EXPECT_EQ("sixteen-bytes-ok", fedcl::secret_read_file(path, &why, &warning).view());
  EXPECT_NE("", warning);
  ASSERT_EQ(0, chmod(path, 0600));
  EXPECT_EQ("sixteen-bytes-ok", fedcl::secret_read_file(path, &why, &warning).view());
  EXPECT_EQ("", warning);
  unlink(path);
}

std::string temporary_list(const std::string &text) {
  char path[] = "/tmp/fedcl-keylist-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(KeyStore, AUserOutsideTheListFallsBackToTheClusterKey) {
  std::string path = temporary_list("alice alices-key-0123456\n");
  fedcld::KeyStore store(fedcl::Secret("the-cluster-key-00"), path);
  unlink(path.c_str());
  EXPECT_TRUE(store.requires_key());
  EXPECT_EQ("alices-key-0123456", store.key_for("alice").view());
  EXPECT_EQ("the-cluster-key-00", store.key_for("anyone").view());
  EXPECT_EQ("the-cluster-key-00", store.key_for("").view());
}

TEST(KeyStore, AnUnknownUserGetsADecoyThatIsTheSameEachTimeAndNobodysKey) {
  std::string path = temporary_list("alice alices-key-0123456\n");
  fedcld::KeyStore store(fedcl::Secret(), path);
  unlink(path.c_str());
  fedcl::Secret decoy = store.key_for("mallory");
  EXPECT_FALSE(decoy.empty());
  EXPECT_EQ(32u, decoy.view().size());
  EXPECT_EQ(decoy, store.key_for("erin"));
  EXPECT_EQ(decoy, store.key_for(""));  // no cluster key: the user-less client is refused alike
  EXPECT_NE("alices-key-0123456", decoy.view());
  fedcld::KeyStore other(fedcl::Secret(), "/nonexistent/list");
  EXPECT_NE(decoy, other.key_for("mallory")) << "a decoy is random per run";
}

TEST(KeyStore, AListThatCannotBeReadRefusesItsUsersRatherThanFallingBack) {
  fedcld::KeyStore store(fedcl::Secret("the-cluster-key-00"), "/nonexistent/list");
  EXPECT_NE("the-cluster-key-00", store.key_for("alice").view());
  EXPECT_EQ("the-cluster-key-00", store.key_for("").view());  // the cluster key's own clients name no user
}

TEST(KeyStore, AListOthersMayWriteGrantsNoOne) {
  std::string path = temporary_list("alice alices-key-0123456\n");
  ASSERT_EQ(0, chmod(path.c_str(), 0622));
  fedcld::KeyList list = fedcld::key_list_load(path);
  EXPECT_NE(std::string::npos, list.unreadable.find("may be written by users other than its owner")) << list.unreadable;
  fedcld::KeyStore store(fedcl::Secret(), path);
  EXPECT_NE("alices-key-0123456", store.key_for("alice").view());
  ASSERT_EQ(0, chmod(path.c_str(), 0604));
  list = fedcld::key_list_load(path);
  EXPECT_EQ("", list.unreadable);
  ASSERT_EQ(1u, list.warnings.size());
  EXPECT_NE(std::string::npos, list.warnings[0].find("every user")) << list.warnings[0];
  unlink(path.c_str());
}

TEST(KeyStore, AChangedListIsLoadedAgainOffTheLoop) {
  std::string path = temporary_list("alice first-key-0123456\n");
  uv_loop_t loop;
  uv_loop_init(&loop);
  fedcld::KeyStore store(fedcl::Secret(), path);
  store.watch(&loop);
  EXPECT_EQ("first-key-0123456", store.key_for("alice").view());
  uv_timer_t timeout;
  uv_timer_init(&loop, &timeout);
  uv_timer_start(&timeout, [](uv_timer_t *) {}, 20000, 0);
  // The watch reads the list once more as it starts (a change before the poll's first look would
  // otherwise be missed); then a change is what makes it read again.
  while (store.loads() < 2 && uv_loop_alive(&loop)) uv_run(&loop, UV_RUN_ONCE);
  ASSERT_EQ(2u, store.loads());
  // uv_fs_poll compares whole-second times too: let the change show in the size as well.
  std::ofstream(path) << "alice second-key-longer-012345\nbob bobs-key-0123456789\n";
  uint64_t loads = store.loads();
  while (store.loads() == loads && uv_loop_alive(&loop)) uv_run(&loop, UV_RUN_ONCE);
  EXPECT_EQ(loads + 1, store.loads());
  EXPECT_EQ("second-key-longer-012345", store.key_for("alice").view());
  EXPECT_EQ("bobs-key-0123456789", store.key_for("bob").view());
  store.close();
  uv_close(reinterpret_cast<uv_handle_t *>(&timeout), nullptr);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  unlink(path.c_str());
}

TEST(PeerAddressTag, NamesOneAddressOfOneDaemonUnderOneKey) {
  fedcl::Proof tag = fedcl::peer_address_tag("daemons-key", 0x1234, "10.1.0.5:7071");
  EXPECT_TRUE(fedcl::auth_proof_matches(tag, fedcl::as_data(fedcl::peer_address_tag("daemons-key", 0x1234, "10.1.0.5:7071"))));
  for (const fedcl::Proof &other : {fedcl::peer_address_tag("other-key", 0x1234, "10.1.0.5:7071"),
                                    fedcl::peer_address_tag("daemons-key", 0x1235, "10.1.0.5:7071"),
                                    fedcl::peer_address_tag("daemons-key", 0x1234, "10.1.0.5:22")})
    EXPECT_FALSE(fedcl::auth_proof_matches(tag, fedcl::as_data(other)));
  // Nor is it any proof of the handshake made with the same key.
  EXPECT_FALSE(fedcl::auth_proof_matches(tag, fedcl::as_data(proof("daemons-key", AuthRole::daemon))));
}

TEST(AuthThrottle, AnAddressThatKeepsFailingWaitsLongerForEachVerdict) {
  fedcld::AuthThrottle throttle;
  uint64_t now = 1000000;
  // The first failures are answered at once (a mistyped key).
  EXPECT_EQ(now, throttle.verdict_at("10.0.0.1", now));
  EXPECT_EQ(1u, throttle.failed("10.0.0.1", now));
  EXPECT_EQ(now, throttle.verdict_at("10.0.0.1", now));
  EXPECT_EQ(2u, throttle.failed("10.0.0.1", now));
  // Then the verdicts wait, doubling, and queue one behind the other.
  EXPECT_EQ(now + 100, throttle.verdict_at("10.0.0.1", now));
  EXPECT_EQ(now + 200, throttle.verdict_at("10.0.0.1", now));
  EXPECT_EQ(3u, throttle.failed("10.0.0.1", now));
  EXPECT_EQ(now + 400, throttle.verdict_at("10.0.0.1", now));
  // Another address is not slowed.
  EXPECT_EQ(now, throttle.verdict_at("10.0.0.2", now));
  // A queue past the handshake's time is refused unchecked.
  for (int i = 0; i < 5; i++) throttle.failed("10.0.0.1", now);
  uint64_t at = 0;
  int turns = 0;
  while ((at = throttle.verdict_at("10.0.0.1", now)) != fedcld::AuthThrottle::kBusy) {
    EXPECT_LE(at - now, fedcld::AuthThrottle::kMaxWaitMs);
    ASSERT_LT(++turns, 100);
  }
  // A proof that holds ends the burst; so do ten quiet minutes.
  EXPECT_EQ(8u, throttle.passed("10.0.0.1"));
  EXPECT_EQ(now, throttle.verdict_at("10.0.0.1", now));
  for (int i = 0; i < 3; i++) throttle.failed("10.0.0.3", now);
  EXPECT_GT(throttle.verdict_at("10.0.0.3", now), now);
  uint64_t later = now + fedcld::AuthThrottle::kQuietMs + 1;
  EXPECT_EQ(later, throttle.verdict_at("10.0.0.3", later));
}

// The tenants' finding: one address's guesses at one user's key slowed every user behind it, and
// one user's good proof reset the count of guesses at another's.
TEST(AuthThrottle, GuessesAtOneUsersKeySlowNoOtherUserAndAnotherUsersProofDoesNotClearThem) {
  fedcld::AuthThrottle throttle;
  uint64_t now = 1000000;
  std::string alice = fedcld::auth_throttle_key("10.0.0.1", "alice"), bob = fedcld::auth_throttle_key("10.0.0.1", "bob");
  EXPECT_NE(alice, bob);
  EXPECT_EQ("10.0.0.1", fedcld::auth_throttle_key("10.0.0.1", ""));  // the cluster key's
  for (int i = 0; i < 12; i++) {
    throttle.verdict_at(alice, now);
    throttle.failed(alice, now);
  }
  EXPECT_GT(throttle.verdict_at(alice, now), now);
  EXPECT_EQ(now, throttle.verdict_at(bob, now));
  EXPECT_EQ(0u, throttle.passed(bob));
  EXPECT_GT(throttle.verdict_at(alice, now), now) << "bob's proof cleared the guesses at alice's key";
  // A user's name is the log's: escaped, and cut, so that a flood of long names costs little.
  std::string odd = fedcld::auth_throttle_key("10.0.0.1", std::string(4000, 'x') + "\n");
  EXPECT_LT(odd.size(), 200u);
  EXPECT_EQ(std::string::npos, odd.find('\n'));
}

TEST(DaemonNames, AnswersToItsAddressesAndNamesNotToOthers) {
  using Match = fedcld::DaemonNames::Match;
  fedcld::DaemonNames names;
  names.add("gpu-alias.example");
  names.add("203.0.113.7");
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_EQ(Match::yes, names.match("127.0.0.1"));
  EXPECT_EQ(Match::yes, names.match("127.3.4.5"));
  EXPECT_EQ(Match::yes, names.match("[::1]"));
  EXPECT_EQ(Match::yes, names.match("localhost"));
  EXPECT_EQ(Match::yes, names.match(host));
  EXPECT_EQ(Match::yes, names.match("GPU-ALIAS.example."));
  EXPECT_EQ(Match::yes, names.match("203.0.113.7"));
  EXPECT_EQ(Match::no, names.match("203.0.113.8"));  // an address is never resolved
  EXPECT_EQ(Match::no, names.match(""));
  EXPECT_EQ(Match::unknown, names.match("relay.example"));
}

TEST(DaemonNames, ANameOutsideTheListCountsWhenItResolvesToAnAddressHere) {
  // "127.1" is no address to inet_pton but resolves to 127.0.0.1 (inet_aton's short form), so the
  // resolving path runs without a DNS server; "192.0.513" resolves to 192.0.2.1, not here.
  fedcld::DaemonNames names;
  EXPECT_EQ(fedcld::DaemonNames::Match::unknown, names.match("127.1"));
  uv_loop_t loop;
  uv_loop_init(&loop);
  int local = -1, remote = -1;
  names.check(&loop, "127.1", [&](bool here) { local = here; });
  names.check(&loop, "192.0.513", [&](bool here) { remote = here; });
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  EXPECT_EQ(1, local);
  EXPECT_EQ(0, remote);
}

TEST(Secret, HoldsItsBytesAndCopiesThem) {
  fedcl::Secret a("key bytes"), b = a, c;
  EXPECT_EQ("key bytes", b.view());
  EXPECT_NE(a.view().data(), b.view().data());
  c = std::move(a);
  EXPECT_EQ("key bytes", c.view());
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
  std::string text = "a line with a key";
  fedcl::secret_wipe(text);
  EXPECT_TRUE(text.empty());
  EXPECT_GE(text.capacity(), 17u);
  EXPECT_EQ(std::string(text.capacity(), '\0'), std::string(text.data(), text.capacity()));
}
