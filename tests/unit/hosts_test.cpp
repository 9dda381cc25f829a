// hosts.conf and FEDCL_HOSTS parsing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "hosts.h"

using fedcl::hosts_parse;
using fedcl::hosts_parse_list;
using fedcl::HostList;
using fedcl::TlsMode;

TEST(HostsParse, ReadsEntriesCommentsKeyAndUser) {
  auto list = hosts_parse(
      "# the cluster\n"
      "node1:7171\n"
      "\n"
      "  node2   # default port\n"
      "key s3cret-0123456789\n"
      "user\talice\n"
      "10.0.0.5:80\r\n"
      "[fe80::1]:9000\n"
      "[::1]\n",
      "hosts.conf");
  std::vector<std::string> expected = {"node1:7171", "node2:7070", "10.0.0.5:80", "[fe80::1]:9000", "[::1]:7070"};
  EXPECT_EQ(expected, list.endpoints);
  EXPECT_EQ("s3cret-0123456789", list.key.view());
  EXPECT_EQ("alice", list.user);
  EXPECT_EQ("hosts.conf", list.source);
  EXPECT_TRUE(list.problems.empty());
}

TEST(HostsParse, DefaultPortIs7070) {
  EXPECT_EQ(7070, fedcl::kDefaultPort);
  EXPECT_EQ(std::vector<std::string>{"gpu-box:7070"}, hosts_parse("gpu-box\n", "f").endpoints);
}

TEST(HostsParse, ReportsBadLinesWithTheirLineNumber) {
  auto list = hosts_parse("good:1\nbad:port\nbad:0\nbad:70000\n:123\ntwo words\nalso-good\n", "conf");
  EXPECT_EQ((std::vector<std::string>{"good:1", "also-good:7070"}), list.endpoints);
  ASSERT_EQ(5u, list.problems.size());
  EXPECT_NE(std::string::npos, list.problems[0].find("conf:2")) << list.problems[0];
  EXPECT_NE(std::string::npos, list.problems[0].find("'bad:port'")) << list.problems[0];
  EXPECT_NE(std::string::npos, list.problems[1].find("conf:3")) << list.problems[1];
  EXPECT_NE(std::string::npos, list.problems[2].find("conf:4")) << list.problems[2];
  EXPECT_NE(std::string::npos, list.problems[3].find("conf:5")) << list.problems[3];
  EXPECT_NE(std::string::npos, list.problems[4].find("conf:6")) << list.problems[4];
}

TEST(HostsParse, EveryKindOfBadEntrySaysWhy) {
  const struct {
    const char *line;
    const char *why;
  } cases[] = {
      {"node:port", "the port 'port' is not a number"},
      {"node:", "the port '' is not a number"},
      {"node:0", "the port 0 is not in 1-65535"},
      {"node:65536", "the port 65536 is not in 1-65535"},
      {"node:99999999999", "is not in 1-65535"},
      {":7070", "no host before ':'"},
      {"two words", "blanks inside an entry"},
      {"[fd00::1", "an IPv6 address goes in brackets"},
      {"gpu[01-", "not a host list: a '[' without its ']'"},
      {"gpu[3-1]:7070", "not a host list: the range '3-1' runs backwards"},
      {"key", "a 'key' line without a key"},
      {"user  ", "a 'user' line without a name"},
  };
  for (const auto &c : cases) {
    auto list = hosts_parse(std::string("# first\n") + c.line + "\n", "/etc/fedcl/hosts.conf");
    ASSERT_EQ(1u, list.problems.size()) << c.line;
    EXPECT_EQ(0u, list.problems[0].find("/etc/fedcl/hosts.conf:2: ")) << list.problems[0];
    EXPECT_NE(std::string::npos, list.problems[0].find(c.why)) << list.problems[0];
    EXPECT_TRUE(list.endpoints.empty()) << c.line;
  }
}

TEST(HostsParse, EmptyTextGivesNoEndpoints) {
  auto list = hosts_parse("# nothing here\n\n   \n", "empty");
  EXPECT_TRUE(list.endpoints.empty());
  EXPECT_TRUE(list.problems.empty());
  EXPECT_TRUE(list.key.empty());
}

TEST(HostsParseList, SplitsOnCommasAndTrims) {
  auto list = hosts_parse_list(" 127.0.0.1:4000 ,node-b,, [::1]:5 ");
  EXPECT_EQ((std::vector<std::string>{"127.0.0.1:4000", "node-b:7070", "[::1]:5"}), list.endpoints);
  EXPECT_EQ("FEDCL_HOSTS", list.source);
  EXPECT_TRUE(list.problems.empty());
}

TEST(HostsParseList, ReportsBadEntries) {
  auto list = hosts_parse_list("ok:1,nope:x,ok2");
  EXPECT_EQ((std::vector<std::string>{"ok:1", "ok2:7070"}), list.endpoints);
  ASSERT_EQ(1u, list.problems.size());
  EXPECT_NE(std::string::npos, list.problems[0].find("'nope:x'")) << list.problems[0];
}

// Each TEST runs in its own process (gtest_discover_tests), so the environment can be set freely.
TEST(HostsFromEnvironment, HostsVariableWinsAndKeyVariableOverrides) {
  setenv("FEDCL_HOSTS", "a:1,b", 1);
  setenv("FEDCL_HOSTS_FILE", "/nonexistent/hosts.conf", 1);
  setenv("FEDCL_KEY", "from-env-0123456789", 1);
  auto list = fedcl::hosts_from_environment();
  EXPECT_EQ((std::vector<std::string>{"a:1", "b:7070"}), list.endpoints);
  EXPECT_EQ("from-env-0123456789", list.key.view());
  EXPECT_TRUE(list.problems.empty());
}

TEST(HostsFromEnvironment, AKeyFileAndUserComeFromTheEnvironment) {
  setenv("FEDCL_HOSTS", "a:1", 1);
  unsetenv("FEDCL_KEY");
  setenv("FEDCL_USER", "alice", 1);
  setenv("FEDCL_KEY_FILE", "/nonexistent/key", 1);
  auto list = fedcl::hosts_from_environment();
  EXPECT_EQ("alice", list.user);
  ASSERT_EQ(1u, list.problems.size());
  EXPECT_EQ("FEDCL_KEY_FILE: cannot read a key from /nonexistent/key: No such file or directory", list.problems[0]);
  EXPECT_TRUE(list.credentials_broken);
}

TEST(HostsFromEnvironment, SettingsSetButEmptyAreBrokenCredentials) {
  setenv("FEDCL_HOSTS", "a:1", 1);
  for (const char *name : {"FEDCL_KEY", "FEDCL_KEY_FILE", "FEDCL_USER", "FEDCL_TLS", "FEDCL_TLS_CA"}) {
    for (const char *other : {"FEDCL_KEY", "FEDCL_KEY_FILE", "FEDCL_USER", "FEDCL_TLS", "FEDCL_TLS_CA"}) unsetenv(other);
    setenv(name, "", 1);
    auto list = fedcl::hosts_from_environment();
    EXPECT_TRUE(list.credentials_broken) << name;
    ASSERT_EQ(1u, list.problems.size()) << name;
    EXPECT_EQ(std::string(name) + " is set but empty", list.problems[0]);
  }
  unsetenv("FEDCL_TLS_CA");
  EXPECT_FALSE(fedcl::hosts_from_environment().credentials_broken);
}

TEST(HostsFromEnvironment, ReadsTheFileNamedByHostsFile) {
  char path[] = "/tmp/fedcl-hosts-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const char text[] = "# test\nnode-x:9\nkey k1-0123456789abcdef\n";
  ASSERT_EQ(ssize_t(sizeof text - 1), write(fd, text, sizeof text - 1));
  close(fd);
  unsetenv("FEDCL_HOSTS");
  unsetenv("FEDCL_KEY");
  setenv("FEDCL_HOSTS_FILE", path, 1);
  auto list = fedcl::hosts_from_environment();
  unlink(path);
  EXPECT_EQ(std::vector<std::string>{"node-x:9"}, list.endpoints);
  EXPECT_EQ("k1-0123456789abcdef", list.key.view());
  EXPECT_EQ(path, list.source);
}

TEST(HostsFromEnvironment, UnreadableHostsFileIsReported) {
  unsetenv("FEDCL_HOSTS");
  setenv("FEDCL_HOSTS_FILE", "/nonexistent/fedcl/hosts.conf", 1);
  auto list = fedcl::hosts_from_environment();
  EXPECT_TRUE(list.endpoints.empty());
  ASSERT_EQ(1u, list.problems.size());
  EXPECT_NE(std::string::npos, list.problems[0].find("/nonexistent/fedcl/hosts.conf")) << list.problems[0];
}

TEST(HostsParse, TlsLinesChooseTheTrustRootAndTheCa) {
  HostList list = hosts_parse("gpu1\ntls psk\ntls-ca /etc/fedcl/tls/ca.pem\n", "hosts.conf");
  EXPECT_TRUE(list.problems.empty());
  EXPECT_EQ(TlsMode::psk, list.tls);
  EXPECT_EQ("/etc/fedcl/tls/ca.pem", list.tls_ca);
  EXPECT_EQ(TlsMode::psk, list.credentials().tls);
  EXPECT_EQ(TlsMode::off, hosts_parse("gpu1\n", "hosts.conf").tls);

  HostList bad = hosts_parse("gpu1\ntls yes\ntls-ca\n", "hosts.conf");
  ASSERT_EQ(2u, bad.problems.size());
  EXPECT_EQ("hosts.conf:2: 'tls' wants off, cert or psk, not 'yes'", bad.problems[0]);
  EXPECT_EQ("hosts.conf:3: a 'tls-ca' line without a file", bad.problems[1]);
  EXPECT_EQ(TlsMode::off, bad.tls);
  EXPECT_TRUE(bad.credentials_broken);
  EXPECT_FALSE(list.credentials_broken);
  // A bad host entry is skipped alone: the other daemons are still dialled.
  EXPECT_FALSE(hosts_parse("gpu1\nnope:x\n", "hosts.conf").credentials_broken);
}

TEST(HostsFromEnvironment, ShortKeysAndKeyFilesOthersMayWriteAreBrokenCredentials) {
  setenv("FEDCL_HOSTS", "a:1", 1);
  unsetenv("FEDCL_KEY_FILE");
  setenv("FEDCL_KEY", "short", 1);
  auto list = fedcl::hosts_from_environment();
  EXPECT_TRUE(list.credentials_broken);
  ASSERT_EQ(1u, list.problems.size());
  EXPECT_NE(std::string::npos, list.problems[0].find("FEDCL_KEY: a key of 5 bytes is too short")) << list.problems[0];
  EXPECT_TRUE(list.key.empty());
  unsetenv("FEDCL_KEY");
  char path[] = "/tmp/fedcl-key-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(23, write(fd, "a-long-enough-user-key\n", 23));
  close(fd);
  setenv("FEDCL_KEY_FILE", path, 1);
  ASSERT_EQ(0, chmod(path, 0666));
  list = fedcl::hosts_from_environment();
  EXPECT_TRUE(list.credentials_broken);
  ASSERT_EQ(1u, list.problems.size());
  EXPECT_NE(std::string::npos, list.problems[0].find("may be written by users other than its owner")) << list.problems[0];
  // Everyone may read it: used, with a warning that does not stop the driver.
  ASSERT_EQ(0, chmod(path, 0644));
  list = fedcl::hosts_from_environment();
  EXPECT_FALSE(list.credentials_broken);
  EXPECT_EQ("a-long-enough-user-key", list.key.view());
  EXPECT_TRUE(list.problems.empty());
  ASSERT_EQ(1u, list.warnings.size());
  EXPECT_NE(std::string::npos, list.warnings[0].find("may be read by every user")) << list.warnings[0];
  unlink(path);
  unsetenv("FEDCL_KEY_FILE");
  // A hosts file's key line counts only if no one but the file's owner may write it.
  char hosts[] = "/tmp/fedcl-hosts-XXXXXX";
  fd = mkstemp(hosts);
  ASSERT_GE(fd, 0);
  const char text[] = "node-x:9\nkey k1-0123456789abcdef\n";
  ASSERT_EQ(ssize_t(sizeof text - 1), write(fd, text, sizeof text - 1));
  close(fd);
  unsetenv("FEDCL_HOSTS");
  setenv("FEDCL_HOSTS_FILE", hosts, 1);
  ASSERT_EQ(0, chmod(hosts, 0664));
  list = fedcl::hosts_from_environment();
  EXPECT_TRUE(list.credentials_broken);
  ASSERT_EQ(1u, list.problems.size());
  EXPECT_NE(std::string::npos, list.problems[0].find("the key line of")) << list.problems[0];
  ASSERT_EQ(0, chmod(hosts, 0644));
  EXPECT_FALSE(fedcl::hosts_from_environment().credentials_broken);
  unlink(hosts);
}

// A daemon of this host named by its local socket (docs/design-decisions.md, "Same node").
TEST(HostsParse, AUnixEntryNamesALocalSocketByItsAbsolutePath) {
  auto list = hosts_parse("unix:/run/fedcld/fedcld-7070.sock\nunix:relative.sock\nunix:\n", "hosts.conf");
  EXPECT_EQ(std::vector<std::string>{"unix:/run/fedcld/fedcld-7070.sock"}, list.endpoints);
  ASSERT_EQ(2u, list.problems.size());
  EXPECT_EQ("hosts.conf:2: 'unix:relative.sock' is not HOST or HOST:PORT: unix: wants the absolute path of a daemon's local socket",
            list.problems[0]);
  EXPECT_FALSE(list.credentials_broken);
}
