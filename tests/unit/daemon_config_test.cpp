// fedcld.conf: every kind of bad value is refused with the file, the line and why; good files and
// the command line fill the same settings, the command line winning.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "config_file.h"
#include "daemon_options.h"

using fedcld::apply_daemon_config;
using fedcld::DaemonSettings;

namespace {

// The one problem text gives, which must name source:line.
std::string only_problem(const std::string &text, int line) {
  DaemonSettings settings;
  std::vector<std::string> problems = apply_daemon_config(text, "/etc/fedcl/fedcld.conf", settings);
  EXPECT_EQ(1u, problems.size()) << text;
  if (problems.empty()) return {};
  std::string where = "/etc/fedcl/fedcld.conf:" + std::to_string(line) + ": ";
  EXPECT_EQ(0u, problems[0].find(where)) << problems[0];
  return problems[0];
}

bool mentions(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

std::vector<std::string> load(std::vector<std::string> args, DaemonSettings &settings) {
  args.insert(args.begin(), "fedcld");
  std::vector<char *> argv;
  for (auto &arg : args) argv.push_back(arg.data());
  return fedcld::load_daemon_settings(int(argv.size()), argv.data(), settings);
}

std::string temporary_file(const std::string &text) {
  char path[] = "/tmp/fedcld-conf-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ssize_t(text.size()), write(fd, text.data(), text.size()));
  close(fd);
  return path;
}

}  // namespace

TEST(ConfigSyntax, ReadsNameValueLinesCommentsAndBlanks) {
  auto parsed = fedcld::config_parse("# head\n\n  listen =  0.0.0.0:1  # trailing\nfile-root=/srv/a#b\r\n", "f");
  ASSERT_EQ(2u, parsed.entries.size());
  EXPECT_EQ("listen", parsed.entries[0].name);
  EXPECT_EQ("0.0.0.0:1", parsed.entries[0].value);
  EXPECT_EQ(3, parsed.entries[0].line);
  EXPECT_EQ("/srv/a#b", parsed.entries[1].value);  // '#' inside a value is not a comment
  EXPECT_TRUE(parsed.problems.empty());
}

TEST(DaemonConfig, GoodFileFillsTheSettings) {
  std::string key = temporary_file("s3cret-0123456789\n");
  std::string key_list = temporary_file("alice alices-key-0123456\n");
  DaemonSettings s;
  auto problems = apply_daemon_config(
      "listen = 0.0.0.0:7171\nname = gpu01\nplatform = NVIDIA\ndevices = 0,2\nkey-file = " + key +
          "\nkey-list = " + key_list +
          "\npeer-address = 10.0.0.1:7072\npeer-timeout = 2.5\nfile-root = /tmp\nmax-sessions = 8\n"
          "max-memory = 4G\ncompletion = wait\nlog-level = debug\nstatus-sessions = no\n",
      "f", s);
  unlink(key.c_str());
  unlink(key_list.c_str());
  EXPECT_TRUE(problems.empty()) << problems[0];
  EXPECT_EQ("0.0.0.0", s.server.host);
  EXPECT_EQ(7171, s.server.port);
  EXPECT_EQ("gpu01", s.server.node);
  EXPECT_EQ("NVIDIA", s.selection.platform);
  EXPECT_EQ((std::vector<unsigned>{0, 2}), s.selection.devices);
  EXPECT_EQ("s3cret-0123456789", s.server.key.view());
  EXPECT_EQ(key_list, s.server.key_list);  // read again at each handshake
  EXPECT_EQ("10.0.0.1:7072", s.server.peer_address);
  EXPECT_EQ(2500u, s.server.peer_timeout_ms);
  EXPECT_EQ("/tmp", s.server.file_root);
  EXPECT_EQ(8u, s.server.max_sessions);
  EXPECT_EQ(uint64_t(4) << 30, s.server.max_session_memory);
  EXPECT_EQ(fedcld::CompletionMode::wait, s.server.completion);
  EXPECT_EQ(fedcld::LogLevel::debug, s.log_level);
  EXPECT_FALSE(s.server.status_sessions);
}

TEST(DaemonConfig, SyntaxErrorsNameFileLineAndWhy) {
  EXPECT_TRUE(mentions(only_problem("# ok\nlisten 0.0.0.0:1\n", 2), "is not a 'name = value' line"));
  EXPECT_TRUE(mentions(only_problem("\n\nlisten =\n", 3), "listen has no value"));
  EXPECT_TRUE(mentions(only_problem("--listen = 1.2.3.4:5\n", 1), "without the dashes"));
  EXPECT_TRUE(mentions(only_problem("Listen = 1.2.3.4:5\n", 1), "is not an option name"));
  EXPECT_TRUE(mentions(only_problem("= 5\n", 1), "is not an option name"));
}

TEST(DaemonConfig, NamesThatAreNotFileOptionsAreRefused) {
  EXPECT_TRUE(mentions(only_problem("colour = blue\n", 1), "unknown option 'colour'"));
  EXPECT_TRUE(mentions(only_problem("list = yes\n", 1), "belongs on the command line"));
  EXPECT_TRUE(mentions(only_problem("config = /x\n", 1), "belongs on the command line"));
  EXPECT_TRUE(mentions(only_problem("port-file = /x\n", 1), "belongs on the command line"));
  std::string twice = only_problem("name = a\nname = b\n", 2);
  EXPECT_TRUE(mentions(twice, "set again (first on line 1)")) << twice;
}

TEST(DaemonConfig, EveryKindOfBadValueIsRefused) {
  const struct {
    const char *line;
    const char *why;
  } cases[] = {
      {"listen = nowhere", "wants HOST:PORT"},
      {"listen = host:70000", "wants HOST:PORT"},
      {"listen = host:12x", "wants HOST:PORT"},
      {"peer-address = host:0", "port of 1-65535"},
      {"peer-address = host", "wants HOST:PORT"},
      {"peer-timeout = 0", "above 0"},
      {"peer-timeout = -3", "above 0"},
      {"peer-timeout = soon", "above 0"},
      {"devices = 0,,2", "device indices"},
      {"devices = one", "device indices"},
      {"devices = -1", "device indices"},
      {"max-sessions = 0", "1 to 1000000"},
      {"max-sessions = 12abc", "1 to 1000000"},
      {"max-sessions = 99999999999999999999999", "1 to 1000000"},
      {"max-memory = 0", "size like 512M"},
      {"max-memory = 4GB", "size like 512M"},
      {"max-memory = G", "size like 512M"},
      {"max-memory = 99999999999T", "too large"},
      {"completion = sometimes", "callback, wait or auto"},
      {"log-level = loud", "error, warn, info or debug"},
      {"status-sessions = maybe", "yes or no"},
      {"file-root = /nonexistent/fedcl", "No such file or directory"},
      {"file-root = /etc/hostname", "wants a directory"},
      {"key-file = /nonexistent/key", "No such file or directory"},
      {"key-file = /dev/null", "may be written by users other than its owner"},
      {"peer-key-file = /nonexistent/key", "No such file or directory"},
      {"allow-unauthenticated = maybe", "yes or no"},
      {"key-list = /nonexistent/keys", "No such file or directory"},
  };
  for (const auto &c : cases) {
    std::string problem = only_problem(std::string("# line 1\n") + c.line + "\n", 2);
    std::string name = std::string(c.line).substr(0, std::string(c.line).find(' '));
    EXPECT_TRUE(mentions(problem, ": " + name + " ")) << problem;
    EXPECT_TRUE(mentions(problem, c.why)) << problem;
  }
}

TEST(DaemonConfig, AKeyListWithABadLineIsRefusedAtStart) {
  std::string key_list = temporary_file("alice alices-key-0123456\nbob\n");
  std::string problem = only_problem("\nkey-list = " + key_list + "\n", 2);
  unlink(key_list.c_str());
  EXPECT_TRUE(mentions(problem, key_list + ":2: user 'bob' has no key")) << problem;
}

TEST(DaemonConfig, KeysThatAreShortOrInFilesOthersMayWriteAreRefused) {
  std::string key = temporary_file("k\n");
  EXPECT_TRUE(mentions(only_problem("key-file = " + key + "\n", 1), "a key of 1 bytes is too short")) << key;
  std::ofstream(key) << "long-enough-0123456789\n";
  ASSERT_EQ(0, chmod(key.c_str(), 0666));
  EXPECT_TRUE(mentions(only_problem("key-file = " + key + "\n", 1), "may be written by users other than its owner"));
  EXPECT_TRUE(mentions(only_problem("peer-key-file = " + key + "\n", 1), "may be written by users other than its owner"));
  std::string key_list = temporary_file("alice " + key + "\n");
  EXPECT_TRUE(mentions(only_problem("key-list = " + key_list + "\n", 1), "may be written by users other than its owner"));
  ASSERT_EQ(0, chmod(key_list.c_str(), 0646));
  EXPECT_TRUE(mentions(only_problem("key-list = " + key_list + "\n", 1), "may be written by users other than its owner"));
  // Everyone may read it: taken, with a warning.
  ASSERT_EQ(0, chmod(key.c_str(), 0644));
  DaemonSettings s;
  EXPECT_TRUE(apply_daemon_config("key-file = " + key + "\n", "f", s).empty());
  ASSERT_EQ(1u, s.warnings.size());
  EXPECT_TRUE(mentions(s.warnings[0], "may be read by every user")) << s.warnings[0];
  unlink(key.c_str());
  unlink(key_list.c_str());
}

TEST(DaemonConfig, ADaemonOtherMachinesReachNeedsAKeyUnlessToldOtherwise) {
  std::string key = temporary_file("a-key-for-clients-0123\n");
  // The warnings but the one a root's fedcld gives at every start (the tests may run as root).
  auto problems_of = [](std::vector<std::string> args, DaemonSettings &s) {
    args.insert(args.begin(), {"--config", "/dev/null"});
    auto problems = load(args, s);
    s.warnings.erase(std::remove_if(s.warnings.begin(), s.warnings.end(),
                                    [](const std::string &w) { return mentions(w, "fedcld runs as root"); }),
                     s.warnings.end());
    return problems;
  };
  DaemonSettings open;
  auto problems = problems_of({"--listen", "0.0.0.0:7070"}, open);
  ASSERT_EQ(1u, problems.size());
  EXPECT_TRUE(mentions(problems[0], "listen = 0.0.0.0:7070 serves other machines")) << problems[0];
  EXPECT_TRUE(mentions(problems[0], "allow-unauthenticated = yes")) << problems[0];
  DaemonSettings peer_open;
  problems = problems_of({"--peer-address", "10.0.0.1:7071"}, peer_open);
  ASSERT_EQ(1u, problems.size());
  EXPECT_TRUE(mentions(problems[0], "peer-address = 10.0.0.1:7071 serves other machines")) << problems[0];
  for (const char *loopback : {"127.0.0.1:0", "127.3.2.1:0", "[::1]:0", "localhost:0"}) {
    DaemonSettings local;
    EXPECT_TRUE(problems_of({"--listen", loopback}, local).empty()) << loopback;
    EXPECT_TRUE(local.warnings.empty()) << loopback;
  }
  DaemonSettings told;
  EXPECT_TRUE(problems_of({"--listen", "0.0.0.0:7070", "--allow-unauthenticated", "yes"}, told).empty());
  ASSERT_EQ(1u, told.warnings.size());
  EXPECT_TRUE(mentions(told.warnings[0], "serving without keys on 0.0.0.0:7070")) << told.warnings[0];
  DaemonSettings keyed;
  EXPECT_TRUE(problems_of({"--listen", "0.0.0.0:7070", "--key-file", key}, keyed).empty());
  // The one key is also the daemons' key then, which is warned about.
  EXPECT_EQ("a-key-for-clients-0123", keyed.server.peer_key.view());
  ASSERT_EQ(1u, keyed.warnings.size());
  EXPECT_TRUE(mentions(keyed.warnings[0], "peer-key-file")) << keyed.warnings[0];
  std::string peer_key = temporary_file("the-daemons-own-key-01\n");
  DaemonSettings apart;
  EXPECT_TRUE(problems_of({"--listen", "0.0.0.0:7070", "--key-file", key, "--peer-key-file", peer_key}, apart).empty());
  EXPECT_EQ("the-daemons-own-key-01", apart.server.peer_key.view());
  EXPECT_TRUE(apart.warnings.empty());
  unlink(key.c_str());
  unlink(peer_key.c_str());
}

TEST(DaemonConfig, AllProblemsAreReportedInLineOrder) {
  DaemonSettings s;
  auto problems = apply_daemon_config("log-level = loud\nbroken\nname = ok\ncolour = red\n", "c", s);
  ASSERT_EQ(3u, problems.size());
  EXPECT_EQ(0u, problems[0].find("c:1: ")) << problems[0];
  EXPECT_EQ(0u, problems[1].find("c:2: ")) << problems[1];
  EXPECT_EQ(0u, problems[2].find("c:4: ")) << problems[2];
}

TEST(DaemonCommandLine, OverridesTheFileAndTakesNameEqualsValue) {
  std::string config = temporary_file("listen = 0.0.0.0:7171\nname = from-file\nmax-sessions = 4\n");
  DaemonSettings s;
  auto problems = load({"--config", config, "--listen", "127.0.0.1:0", "--max-sessions=9"}, s);
  unlink(config.c_str());
  EXPECT_TRUE(problems.empty()) << problems[0];
  EXPECT_EQ("127.0.0.1", s.server.host);
  EXPECT_EQ(0, s.server.port);
  EXPECT_EQ("from-file", s.server.node);
  EXPECT_EQ(9u, s.server.max_sessions);
}

TEST(DaemonCommandLine, AMissingNamedFileIsAnErrorAndProblemsNameTheirOption) {
  DaemonSettings s;
  auto problems = load({"--config", "/nonexistent/fedcld.conf", "--log-level", "loud", "--list=yes", "--nope", "--name"}, s);
  ASSERT_EQ(5u, problems.size());
  EXPECT_TRUE(mentions(problems[0], "takes no value")) << problems[0];
  EXPECT_TRUE(mentions(problems[1], "unknown option '--nope'")) << problems[1];
  EXPECT_TRUE(mentions(problems[2], "--name needs a value")) << problems[2];
  EXPECT_TRUE(mentions(problems[3], "configuration file /nonexistent/fedcld.conf")) << problems[3];
  EXPECT_TRUE(mentions(problems[4], "--log-level wants")) << problems[4];
}

TEST(DaemonCommandLine, TheDefaultFileIsOptional) {
  EXPECT_STREQ(FEDCL_CONFIG_DIR "/fedcld.conf", fedcld::kDefaultDaemonConfig);
  DaemonSettings s;
  if (access(fedcld::kDefaultDaemonConfig, F_OK) == 0) GTEST_SKIP() << "this machine has " << fedcld::kDefaultDaemonConfig;
  EXPECT_TRUE(load({"--listen", "127.0.0.1:1"}, s).empty());
}

TEST(DaemonOptions, EveryOptionIsInTheHelpAndTheExampleFile) {
  std::string usage = fedcld::daemon_usage();
  std::ifstream example(FEDCL_SOURCE_DIR "/fedcld.conf.example");
  std::stringstream text;
  text << example.rdbuf();
  for (const auto &option : fedcld::daemon_options()) {
    EXPECT_TRUE(mentions(usage, std::string("--") + option.name)) << option.name;
    if (option.in_file) {
      EXPECT_TRUE(mentions(text.str(), std::string(option.name) + " = ")) << option.name;
    }
  }
}
