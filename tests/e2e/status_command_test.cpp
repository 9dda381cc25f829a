// `fedcl status` against real daemons: live ones (with a session of this process holding memory),
// a dead one (nothing listening) and a frozen one (SIGSTOP: the kernel still accepts its
// connections, nothing answers). It must answer within its per-daemon timeout whatever they do.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>

#include "cl_harness.h"
#include "fedcl.capnp.h"
#include "recording_proxy.h"

using namespace fedcl_test;

namespace {

struct StatusRun {
  int status = -1;
  std::string out;
  double seconds = 0;
};

// Runs `fedcl status ARGS` with FEDCL_HOSTS set to hosts.
StatusRun fedcl_status(const std::string &hosts, const std::string &args) {
  std::string command = "FEDCL_HOSTS='" + hosts + "' " FEDCL_COMMAND_PATH " status " + args + " 2>&1";
  auto start = std::chrono::steady_clock::now();
  StatusRun run;
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe) return run;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.out.append(buffer, n);
  int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(StatusCommand, LiveDaemonsAnswerWithDevicesAndSessions) {
  Cluster cluster(2, {"--max-memory", "1G"});
  cl_int err = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &cluster.devices[0], nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, cluster.devices[0]);
  cl_mem buffer = create_buffer(context, CL_MEM_READ_WRITE, 3 << 20);
  const cl_uint pattern = 7;
  ASSERT_CL_OK(clEnqueueFillBuffer(queue, buffer, &pattern, sizeof pattern, 0, 3 << 20, 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(queue));

  std::string hosts = hosts_list({cluster.daemons[0].get(), cluster.daemons[1].get()});
  StatusRun text = fedcl_status(hosts, "");
  EXPECT_EQ(0, text.status) << text.out;
  EXPECT_TRUE(has(text.out, cluster.daemons[0]->endpoint() + ": reachable")) << text.out;
  EXPECT_TRUE(has(text.out, "fedcl protocol " + std::to_string(fedcl::wire::PROTOCOL_VERSION))) << text.out;
  EXPECT_TRUE(has(text.out, "device 0: ")) << text.out;
  EXPECT_TRUE(has(text.out, "3.0 MiB of device memory in use, at most 1.0 GiB each")) << text.out;
  // Each session runs in a process of its own; the table names it, and what the session did.
  EXPECT_TRUE(has(text.out, "CLIENT                 USER       ADDRESS               TRANSPORT      PID")) << text.out;
  EXPECT_TRUE(has(text.out, "since start: 1 sessions, 0 handshakes refused, 0 requests failed, 0 workers lost")) << text.out;
  EXPECT_TRUE(has(text.out, "2 daemons from FEDCL_HOSTS: 2 reachable, 0 unreachable")) << text.out;

  StatusRun json = fedcl_status(hosts, "--json");
  EXPECT_EQ(0, json.status) << json.out;
  EXPECT_TRUE(has(json.out, "\"memory_in_use\": 3145728")) << json.out;
  EXPECT_TRUE(has(json.out, "\"reachable\": true")) << json.out;
  EXPECT_FALSE(has(json.out, "\"reachable\": false")) << json.out;
  EXPECT_TRUE(has(json.out, "\"max_session_memory\": 1073741824")) << json.out;
  EXPECT_TRUE(has(json.out, "\"pid\": ")) << json.out;
  EXPECT_TRUE(has(json.out, "{\"schema\": 1, ")) << json.out;
  // Over TCP (FEDCL_LOCAL=off) or the daemon's local socket, as the address says.
  EXPECT_TRUE(std::regex_search(json.out, std::regex("\"address\": \"(127\\.0\\.0\\.1:[0-9]+\", \"transport\": \"tcp|"
                                                     "local uid [0-9]+ pid [0-9]+\", \"transport\": \"local\\+shm)\"")))
      << json.out;
  EXPECT_TRUE(has(json.out, "\"commands_in_flight\": 0")) << json.out;
  EXPECT_TRUE(has(json.out, "\"links\": []")) << json.out;
  EXPECT_TRUE(std::regex_search(json.out, std::regex("\"requests\": [1-9][0-9]*, \"requests_failed\": 0"))) << json.out;

  clReleaseMemObject(buffer);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
}

TEST(StatusCommand, DeadAndFrozenDaemonsAreReportedWithinTheTimeout) {
  DaemonProcess live({"--name", "live"}), frozen({"--name", "frozen"});
  std::string dead = "127.0.0.1:" + std::to_string(closed_port());
  ASSERT_EQ(0, kill(frozen.pid(), SIGSTOP));
  StatusRun run = fedcl_status(live.endpoint() + "," + dead + "," + frozen.endpoint(), "--json --timeout 700");
  kill(frozen.pid(), SIGCONT);
  EXPECT_EQ(1, run.status) << run.out;
  EXPECT_LT(run.seconds, 5.0) << "every daemon is asked at once, each for at most 0.7 s";
  EXPECT_TRUE(has(run.out, "\"node\": \"live\"")) << run.out;
  EXPECT_TRUE(has(run.out, "{\"endpoint\": \"" + dead + "\", \"reachable\": false, \"error\": \"connect to " + dead +
                               ": Connection refused\"}")) << run.out;
  EXPECT_TRUE(has(run.out, "{\"endpoint\": \"" + frozen.endpoint() +
                               "\", \"reachable\": false, \"error\": \"no answer within 700 ms")) << run.out;
}

TEST(StatusCommand, ADaemonMayKeepItsSessionsToItself) {
  DaemonProcess daemon({"--status-sessions", "no"});
  StatusRun run = fedcl_status(daemon.endpoint(), "--json");
  EXPECT_EQ(0, run.status) << run.out;
  EXPECT_TRUE(has(run.out, "\"sessions\": null, \"memory_in_use\": null")) << run.out;
  StatusRun text = fedcl_status(daemon.endpoint(), "");
  EXPECT_TRUE(has(text.out, "sessions: not shown by this daemon")) << text.out;
}

TEST(StatusCommand, AKeyedDaemonAnswersOnlyAProofOfItsKey) {
  std::string key_file = "/tmp/fedcl-status-key-" + std::to_string(getpid());
  std::ofstream(key_file) << "right-key-4f1c-0123\n";
  DaemonProcess daemon({"--key-file", key_file});
  std::remove(key_file.c_str());
  RecordingProxy proxy(daemon.port());
  setenv("FEDCL_KEY", "wrong-key-0123456789", 1);
  StatusRun wrong = fedcl_status(proxy.endpoint(), "");
  EXPECT_EQ(1, wrong.status) << wrong.out;
  EXPECT_TRUE(has(wrong.out, "fedcld refused the session: wrong key")) << wrong.out;
  setenv("FEDCL_KEY", "right-key-4f1c-0123", 1);
  StatusRun right = fedcl_status(proxy.endpoint(), "");
  EXPECT_EQ(0, right.status) << right.out;
  EXPECT_TRUE(has(right.out, proxy.endpoint() + ": reachable")) << right.out;
  std::vector<uint8_t> sent = proxy.client_bytes();
  std::string key = "right-key-4f1c-0123";
  EXPECT_TRUE(std::search(sent.begin(), sent.end(), key.begin(), key.end()) == sent.end()) << "the key crossed the wire";
  // A status with a key trusts only daemons that prove it, as the driver does.
  DaemonProcess open;
  StatusRun unproved = fedcl_status(open.endpoint(), "");
  EXPECT_EQ(1, unproved.status) << unproved.out;
  EXPECT_TRUE(has(unproved.out, "the daemon runs without a key")) << unproved.out;
  unsetenv("FEDCL_KEY");
}

TEST(StatusCommand, AUserProvesTheirKeyFromTheKeyList) {
  std::string dir = ::testing::TempDir();
  std::ofstream(dir + "fedcl-status-users") << "alice alices-key-0123456\n";
  std::ofstream(dir + "fedcl-status-alice") << "alices-key-0123456\n";
  DaemonProcess daemon({"--key-list", dir + "fedcl-status-users"});
  setenv("FEDCL_USER", "alice", 1);
  setenv("FEDCL_KEY_FILE", (dir + "fedcl-status-alice").c_str(), 1);
  StatusRun alice = fedcl_status(daemon.endpoint(), "");
  EXPECT_EQ(0, alice.status) << alice.out;
  setenv("FEDCL_USER", "bob", 1);
  StatusRun bob = fedcl_status(daemon.endpoint(), "");
  EXPECT_EQ(1, bob.status) << bob.out;
  EXPECT_TRUE(has(bob.out, "wrong key for user 'bob' (or no key here for it)")) << bob.out;
  unsetenv("FEDCL_USER");
  unsetenv("FEDCL_KEY_FILE");
}

TEST(StatusCommand, ConfigurationProblemsAndUsageErrorsExitWithTwo) {
  DaemonProcess daemon;
  StatusRun bad_entry = fedcl_status(daemon.endpoint() + ",node:99999", "");
  EXPECT_EQ(2, bad_entry.status) << bad_entry.out;
  EXPECT_TRUE(has(bad_entry.out, "problem: FEDCL_HOSTS: 'node:99999' is not HOST or HOST:PORT")) << bad_entry.out;
  EXPECT_TRUE(has(bad_entry.out, daemon.endpoint() + ": reachable")) << bad_entry.out;
  StatusRun none = fedcl_status("", "");
  EXPECT_EQ(2, none.status) << none.out;
  EXPECT_TRUE(has(none.out, "no daemons configured")) << none.out;
  EXPECT_EQ(2, fedcl_status(daemon.endpoint(), "--timeout soon").status);
  EXPECT_EQ(2, fedcl_status(daemon.endpoint(), "--bogus").status);
}

TEST(StatusCommand, ASessionShowsItsTrafficAndItsPeerLinks) {
  Cluster cluster(2);
  const size_t bytes = 2 << 20;
  MigratedBuffer moved(cluster, bytes);
  // The workers publish their traffic every second.
  std::string hosts = cluster.daemons[0]->endpoint();
  StatusRun json;
  std::smatch link;
  std::regex sent("\"links\": \\[\\{\"peer\": \"127.0.0.1:[0-9]+\", \"up\": true, \"bytes_sent\": ([0-9]+)");
  for (int attempt = 0; attempt < 30; attempt++) {
    json = fedcl_status(hosts, "--json");
    if (std::regex_search(json.out, link, sent) && std::stoull(link[1]) >= bytes) break;
    usleep(100000);
  }
  ASSERT_TRUE(std::regex_search(json.out, link, sent)) << json.out;
  EXPECT_GE(std::stoull(link[1]), bytes) << json.out;
  EXPECT_TRUE(std::regex_search(json.out, std::regex("\"bytes_received\": ([2-9][0-9]{6}|[0-9]{8,}), \"bytes_sent\""))) << json.out;
  StatusRun text = fedcl_status(hosts, "");
  EXPECT_TRUE(std::regex_search(text.out, std::regex("peer link 127.0.0.1:[0-9]+ \\(up, [a-z+]+\\): 2.[0-9] MiB sent"))) << text.out;
}

// The key list's users see their own sessions; --status-admin and the cluster key see every one.
TEST(StatusCommand, UsersSeeTheirOwnSessionsAndTheAdministratorSeesAll) {
  std::string dir = ::testing::TempDir() + "fedcl-status-users-" + std::to_string(getpid()) + "/";
  ASSERT_EQ(0, mkdir(dir.c_str(), 0700));
  std::ofstream(dir + "users") << "alice alices-key-0123456\nbob bobs-key-0123456789\nops ops-key-0123456789ab\n";
  std::ofstream(dir + "alice") << "alices-key-0123456\n";
  std::ofstream(dir + "bob") << "bobs-key-0123456789\n";
  std::ofstream(dir + "ops") << "ops-key-0123456789ab\n";
  std::ofstream(dir + "cluster") << "cluster-key-77-0123456\n";
  // alice's session: this process, with alice's key.
  setenv("FEDCL_USER", "alice", 1);
  setenv("FEDCL_KEY_FILE", (dir + "alice").c_str(), 1);
  Cluster cluster(1, {"--key-list", dir + "users", "--key-file", dir + "cluster", "--status-admin", "ops"});
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &cluster.devices[0], nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  std::string endpoint = cluster.daemons[0]->endpoint();
  auto status_as = [&](const std::string &user) {
    if (user.empty()) unsetenv("FEDCL_USER");
    else setenv("FEDCL_USER", user.c_str(), 1);
    setenv("FEDCL_KEY_FILE", (dir + (user.empty() ? "cluster" : user)).c_str(), 1);
    return fedcl_status(endpoint, "--json");
  };
  StatusRun alice = status_as("alice"), bob = status_as("bob"), ops = status_as("ops"), cluster_key = status_as("");
  EXPECT_EQ(0, alice.status) << alice.out;
  EXPECT_TRUE(has(alice.out, "\"admin\": false, \"sessions_hidden\": 0")) << alice.out;
  EXPECT_TRUE(has(alice.out, "\"user\": \"alice\"")) << alice.out;
  EXPECT_EQ(0, bob.status) << bob.out;
  EXPECT_TRUE(has(bob.out, "\"admin\": false, \"sessions_hidden\": 1")) << bob.out;
  EXPECT_TRUE(has(bob.out, "\"sessions\": []")) << bob.out;
  EXPECT_FALSE(has(bob.out, "alice")) << bob.out;
  for (const StatusRun &all : {ops, cluster_key}) {
    EXPECT_EQ(0, all.status) << all.out;
    EXPECT_TRUE(has(all.out, "\"admin\": true, \"sessions_hidden\": 0")) << all.out;
    EXPECT_TRUE(has(all.out, "\"user\": \"alice\"")) << all.out;
  }
  unsetenv("FEDCL_USER");
  unsetenv("FEDCL_KEY_FILE");
  clReleaseContext(context);
  for (std::string file : {"users", "alice", "bob", "ops", "cluster"}) std::remove((dir + file).c_str());
  rmdir(dir.c_str());
}

TEST(StatusCommand, WatchAsksAgainUntilInterrupted) {
  DaemonProcess daemon;
  StatusRun run = fedcl_status(daemon.endpoint(), "--watch 0.2 & sleep 1.5; kill $!");
  size_t rounds = 0;
  for (size_t at = 0; (at = run.out.find("fedcl status, every 0.2 s: ", at)) != std::string::npos; at++) rounds++;
  EXPECT_GE(rounds, 3u) << run.out;
  EXPECT_TRUE(has(run.out, daemon.endpoint() + ": reachable")) << run.out;
  StatusRun wrong = fedcl_status(daemon.endpoint(), "--watch never");
  EXPECT_EQ(2, wrong.status) << wrong.out;
  EXPECT_TRUE(has(wrong.out, "--watch wants seconds")) << wrong.out;
}
