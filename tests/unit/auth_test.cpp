// The challenge-response's pure parts: proofs (protocol/auth.h) and the daemon's key list (keys.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "auth.h"
#include "keys.h"

using fedcl::AuthRole;

namespace {
const fedcl::Nonce kDaemonNonce = fedcl::fresh_nonce(), kClientNonce = fedcl::fresh_nonce();

fedcl::Proof proof(const std::string &key, AuthRole role, const fedcl::Nonce &challenge = kDaemonNonce,
                   const std::string &identity = "alice") {
  return fedcl::auth_proof(key, role, fedcl::as_data(challenge), fedcl::as_data(kClientNonce), identity);
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
  std::ofstream(path) << "from-a-file\nsecond line ignored\n";
  auto list = fedcld::key_list_parse(std::string("# users\nalice  key with spaces \nbob ") + path +
                                         "\ncarol\ndave /nonexistent/key\nalice again\n",
                                     "keys.list");
  unlink(path);
  EXPECT_EQ("key with spaces", list.keys.at("alice"));
  EXPECT_EQ("from-a-file", list.keys.at("bob"));
  EXPECT_EQ(2u, list.keys.size());
  ASSERT_EQ(3u, list.problems.size());
  EXPECT_NE(std::string::npos, list.problems[0].find("keys.list:4: user 'carol' has no key")) << list.problems[0];
  EXPECT_NE(std::string::npos, list.problems[1].find("/nonexistent/key")) << list.problems[1];
  EXPECT_NE(std::string::npos, list.problems[2].find("listed twice")) << list.problems[2];
}

TEST(KeyList, AUserOutsideTheListFallsBackToTheClusterKeyOrNone) {
  std::string why;
  EXPECT_EQ("cluster", fedcld::key_for_user("cluster", "", "anyone", &why));
  EXPECT_EQ("", fedcld::key_for_user("", "/nonexistent/list", "erin", &why));
  EXPECT_NE(std::string::npos, why.find("cannot read the key list")) << why;
  EXPECT_EQ("", fedcld::key_for_user("", "", "", &why));
  EXPECT_NE(std::string::npos, why.find("no user")) << why;
}
