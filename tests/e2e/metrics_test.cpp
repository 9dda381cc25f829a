// fedcld --metrics against a real daemon and its session workers: what Prometheus scrapes counts
// this process's requests, failures, traffic and peer links, keeps counting after a session ended,
// and passes `promtool check metrics` (Debian's prometheus package, which scripts/setup.sh installs).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "cl_harness.h"
#include "daemon_status.h"

using namespace fedcl_test;

namespace {

const char kStoreSource[] = "__kernel void store(__global int *x, int v) { x[get_global_id(0)] = v; }";

// promtool's verdict on text: "" when it finds no problem.
std::string promtool_problems(const std::string &text) {
  std::string file = ::testing::TempDir() + "fedcld-metrics-" + std::to_string(getpid());
  std::ofstream(file) << text;
  FILE *pipe = popen(("promtool check metrics < " + file + " 2>&1").c_str(), "r");
  std::string out;
  char buffer[4096];
  for (size_t n; pipe && (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  int status = pipe ? pclose(pipe) : -1;
  std::remove(file.c_str());
  if (status == -1 || (WIFEXITED(status) && WEXITSTATUS(status) == 127)) return "promtool did not run (scripts/setup.sh installs prometheus): " + out;
  return status == 0 ? "" : out;
}

}  // namespace

TEST(Metrics, CountRequestsFailuresTrafficAndPeerLinks) {
  Cluster cluster(2, {"--metrics", "127.0.0.1:0"});
  const DaemonProcess &first = *cluster.daemons[0], &second = *cluster.daemons[1];
  ASSERT_GT(first.metrics_port(), 0);
  const size_t bytes = 4 << 20;
  MigratedBuffer moved(cluster, bytes);  // written through the first daemon, then to the second
  // A failure the first daemon sees: a program that does not build.
  cl_int err;
  cl_program broken = clCreateProgramWithSource(moved.context, 1, std::vector<const char *>{"kernel void k( {"}.data(), nullptr, &err);
  ASSERT_CL_OK(err);
  EXPECT_CL(CL_BUILD_PROGRAM_FAILURE, clBuildProgram(broken, 1, &cluster.devices[0], "", nullptr, nullptr));

  // Traffic reaches the board every second; a request as it ends, which may be just after its reply
  // (a build's count follows the reply sent from its off-loop work).
  std::string text;
  for (int attempt = 0; attempt < 40; attempt++) {
    text = scrape_metrics(first);
    if (metric_sample(text, "fedcld_client_bytes_total{direction=\"received\"}") >= double(bytes) &&
        metric_sample(text, "fedcld_request_errors_total{kind=\"build_program\"}") >= 1)
      break;
    usleep(100000);
  }
  EXPECT_EQ(1, metric_sample(text, "fedcld_sessions")) << text;
  EXPECT_EQ(1, metric_sample(text, "fedcld_sessions_started_total")) << text;
  EXPECT_GE(metric_sample(text, "fedcld_client_bytes_total{direction=\"received\"}"), double(bytes)) << text;
  EXPECT_GE(metric_sample(text, "fedcld_session_memory_bytes"), double(bytes)) << text;
  EXPECT_EQ(1, metric_sample(text, "fedcld_request_errors_total{kind=\"build_program\"}")) << text;
  EXPECT_GE(metric_sample(text, "fedcld_requests_total{kind=\"write_buffer\"}"), 1) << text;
  // The write's time ends with the backend's completion: it lies in a bucket, and in +Inf.
  EXPECT_GE(metric_sample(text, "fedcld_request_duration_seconds_bucket{kind=\"write_buffer\",le=\"+Inf\"}"), 1) << text;
  EXPECT_EQ(metric_sample(text, "fedcld_request_duration_seconds_count{kind=\"write_buffer\"}"),
            metric_sample(text, "fedcld_request_duration_seconds_bucket{kind=\"write_buffer\",le=\"+Inf\"}")) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex("fedcld_info\\{version=\"[0-9.]+\",node=\"node0\",protocol=\"[0-9]+\"\\} 1"))) << text;
  EXPECT_EQ("", promtool_problems(text));
  // Every metric docs/status.md lists is served, and no other.
  std::ifstream doc(FEDCL_SOURCE_DIR "/docs/status.md");
  std::string line;
  std::set<std::string> documented, served;
  std::regex row("^\\| `(fedcld_[a-z_]+)` \\|");
  for (std::smatch match; std::getline(doc, line);)
    if (std::regex_search(line, match, row)) documented.insert(match[1]);
  std::istringstream lines(text);
  while (std::getline(lines, line))
    if (line.rfind("# TYPE ", 0) == 0) served.insert(line.substr(7, line.find(' ', 7) - 7));
  EXPECT_FALSE(documented.empty());
  EXPECT_EQ(documented, served);

  // The migration left the first daemon and reached the second over their sessions' peer link. The
  // boards show traffic within a second (the workers publish it every second).
  std::regex sent_line("fedcld_peer_link_bytes_total\\{peer=\"[^\"]+\",direction=\"sent\"\\} ([0-9]+)");
  std::regex received_line("fedcld_peer_link_bytes_total\\{peer=\"[^\"]+\",direction=\"received\"\\} ([0-9]+)");
  double sent = 0, received = 0;
  std::string first_text, second_text;
  for (int attempt = 0; attempt < 40 && (sent < bytes || received < bytes); attempt++) {
    usleep(100000);
    first_text = scrape_metrics(first);
    second_text = scrape_metrics(second);
    std::smatch match;
    if (std::regex_search(first_text, match, sent_line)) sent = std::stod(match[1]);
    if (std::regex_search(second_text, match, received_line)) received = std::stod(match[1]);
  }
  EXPECT_GE(sent, double(bytes)) << first_text;
  EXPECT_GE(received, double(bytes)) << second_text;
  EXPECT_EQ(1, metric_sample(first_text, "fedcld_peer_links")) << first_text;
  EXPECT_EQ(1, metric_sample(second_text, "fedcld_peer_links")) << second_text;

  clReleaseProgram(broken);
}

TEST(Metrics, CountersOutliveTheSessionsAndTheServerAnswersOnlyMetrics) {
  DaemonProcess daemon({"--metrics", "127.0.0.1:0"});
  ASSERT_GT(daemon.metrics_port(), 0);
  // A session in a process of its own (forked before this one makes any OpenCL call) that ends as a
  // program does: its worker goes, its counts stay.
  set_hosts(daemon.endpoint());
  pid_t client = fork();
  if (client == 0) {
    int status = 1;
    try {
      std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform());
      cl_int err;
      cl_context context = clCreateContext(nullptr, 1, devices.data(), nullptr, nullptr, &err);
      cl_command_queue queue = create_queue(context, devices[0]);
      cl_kernel store = create_kernel(build_program(context, kStoreSource), "store");
      cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, sizeof(cl_int));
      cl_int value = 7, out = 0;
      const size_t one = 1;
      clSetKernelArg(store, 0, sizeof mem, &mem);
      clSetKernelArg(store, 1, sizeof value, &value);
      clEnqueueNDRangeKernel(queue, store, 1, nullptr, &one, nullptr, 0, nullptr, nullptr);
      clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, sizeof out, &out, 0, nullptr, nullptr);
      status = out == 7 ? 0 : 2;
    } catch (const std::exception &) {
    }
    std::exit(status);
  }
  int status = -1;
  ASSERT_EQ(client, waitpid(client, &status, 0));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the client's kernel stored its value";
  std::string text;
  for (int attempt = 0; attempt < 50; attempt++) {
    text = scrape_metrics(daemon);
    if (metric_sample(text, "fedcld_sessions") == 0) break;
    usleep(100000);
  }
  EXPECT_EQ(0, metric_sample(text, "fedcld_sessions")) << text;
  EXPECT_EQ(1, metric_sample(text, "fedcld_sessions_started_total")) << text;
  EXPECT_GE(metric_sample(text, "fedcld_requests_total{kind=\"nd_range\"}"), 1) << text;
  EXPECT_GT(metric_sample(text, "fedcld_client_bytes_total{direction=\"sent\"}"), 0) << text;
  EXPECT_GT(metric_sample(text, "fedcld_resident_memory_bytes{process=\"main\"}"), 0) << text;
  EXPECT_EQ("", promtool_problems(text));

  EXPECT_EQ(0u, metrics_http(daemon.metrics_port(), "GET / HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0));
  EXPECT_EQ(0u, metrics_http(daemon.metrics_port(), "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0));
  EXPECT_EQ(0u, metrics_http(daemon.metrics_port(), "nonsense\r\n\r\n").rfind("HTTP/1.1 400", 0));
  std::string head = metrics_http(daemon.metrics_port(), "HEAD /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(head.size(), head.find("\r\n\r\n") + 4) << "HEAD: headers alone";
  // A client that sends headers past any scraper's is closed, and the daemon goes on.
  EXPECT_EQ("", metrics_http(daemon.metrics_port(), "GET /metrics HTTP/1.1\r\nX: " + std::string(20000, 'a')));
  EXPECT_EQ(0u, metrics_http(daemon.metrics_port(), "GET /metrics HTTP/1.0\r\n\r\n").rfind("HTTP/1.1 200 OK", 0));
}

// The tenants' finding: 32 idle connections to --metrics made every scrape fail until they timed
// out. Idle ones make room for a scrape now.
TEST(Metrics, IdleConnectionsDoNotKeepScrapesOut) {
  DaemonProcess daemon({"--metrics", "127.0.0.1:0"});
  ASSERT_GT(daemon.metrics_port(), 0);
  std::vector<int> idle;
  for (int i = 0; i < 100; i++) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(uint16_t(daemon.metrics_port()));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(0, connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address));
    idle.push_back(fd);
  }
  for (int i = 0; i < 3; i++) EXPECT_GT(metric_sample(scrape_metrics(daemon), "fedcld_resident_memory_bytes{process=\"main\"}"), 0);
  for (int fd : idle) close(fd);
}

TEST(Metrics, AnAddressThatCannotBeServedStopsTheDaemonWithAReason) {
  std::string out;
  // The daemon sees the node's platforms, not the fedcl-only view this test's loader has.
  FILE *pipe = popen("env -u OCL_ICD_VENDORS " FEDCLD_PATH " --config /dev/null --listen 127.0.0.1:0 --metrics 192.0.2.1:9 2>&1", "r");
  char buffer[4096];
  for (size_t n; pipe && (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  int status = pipe ? pclose(pipe) : -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << out;
  EXPECT_NE(std::string::npos, out.find("cannot serve metrics on 192.0.2.1:9")) << out;
  pipe = popen(FEDCLD_PATH " --config /dev/null --metrics nowhere 2>&1", "r");
  out.clear();
  for (size_t n; pipe && (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  status = pipe ? pclose(pipe) : -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << out;
  EXPECT_NE(std::string::npos, out.find("wants HOST:PORT")) << out;
}
