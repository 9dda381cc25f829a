// TLS on fedcl's links (fedcld --tls yes, FEDCL_TLS): what an eavesdropper records of a session holds
// none of its plaintext, with either trust root; peer links come up over TLS; and every way the two
// ends can disagree (a client without TLS, an untrusted or misnamed certificate, a wrong key, a daemon
// without TLS) ends the client's setup as an unreachable daemon does, with a message naming the cause.
//
// The certificates and the key are made at test time (make_certificates.sh, the tls_certificates
// fixture) in FEDCL_TLS_DIR. Each TEST runs in its own process, so the environment is set freely.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <fstream>
#include <string>
#include <vector>

#include "cl_harness.h"
#include "tls_files.h"
#include "recording_proxy.h"
#include "tls_relay.h"

using namespace fedcl_test;

namespace {

std::string cluster_key() {
  std::string key = read_file(tls_file("key"));
  key.erase(std::remove(key.begin(), key.end(), '\n'), key.end());
  return key;
}

// A daemon's options for TLS with the key as the pre-shared key (cert_daemon: tls_files.h).
std::vector<std::string> psk_daemon() { return {"--tls", "yes", "--key-file", tls_file("key")}; }

void cert_client(const char *ca = "ca.pem") {
  setenv("FEDCL_TLS", "cert", 1);
  setenv("FEDCL_TLS_CA", tls_file(ca).c_str(), 1);
}
void psk_client(const std::string &key) {
  setenv("FEDCL_TLS", "psk", 1);
  setenv("FEDCL_KEY", key.c_str(), 1);
}

bool contains(const std::vector<uint8_t> &bytes, const std::string &text) {
  return std::search(bytes.begin(), bytes.end(), text.begin(), text.end()) != bytes.end();
}

// A kernel whose source text and a buffer whose contents an eavesdropper must not see.
const char kSecretSource[] =
    "__kernel void tls_secret_kernel_7c1e(__global int *x) { x[get_global_id(0)] += 0x5ec7e7; }\n";
const char kSecretText[] = "tls_secret_kernel_7c1e";
const std::string kSecretData = "fedcl-plaintext-marker-d41d8cd9-";

// Runs the secret kernel and a 1 MiB write and read of the marker text through the daemon behind
// proxy, then checks that neither direction of the recording holds any of it, nor the key.
void expect_session_hidden(RecordingProxy &proxy, const std::string &key) {
  set_hosts(proxy.endpoint());
  cl_int err = CL_SUCCESS;
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform(), &err);
  ASSERT_CL_OK(err);
  cl_context context = clCreateContext(nullptr, 1, &devices[0], nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, devices[0]);
  std::string pattern;
  while (pattern.size() < (1 << 20)) pattern += kSecretData;
  cl_mem buffer = create_buffer(context, CL_MEM_READ_WRITE, pattern.size());
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, pattern.size(), pattern.data(), 0, nullptr, nullptr));
  std::string back(pattern.size(), '\0');
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, back.size(), back.data(), 0, nullptr, nullptr));
  EXPECT_TRUE(back == pattern);
  cl_kernel kernel = create_kernel(build_program(context, kSecretSource), "tls_secret_kernel_7c1e");
  ASSERT_CL_OK(clSetKernelArg(kernel, 0, sizeof buffer, &buffer));
  size_t items = 16;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &items, nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(queue));
  std::vector<uint8_t> sent = proxy.client_bytes(), answered = proxy.daemon_bytes();
  ASSERT_GT(sent.size(), pattern.size()) << "the session did not pass through the proxy";
  ASSERT_GT(answered.size(), pattern.size());
  for (const std::string &secret : {std::string(kSecretText), kSecretData, key}) {
    if (secret.empty()) continue;
    EXPECT_FALSE(contains(sent, secret)) << "the client sent '" << secret << "' in the clear";
    EXPECT_FALSE(contains(answered, secret)) << "the daemon sent '" << secret << "' in the clear";
  }
  // And the check can fail: the records start as TLS records do.
  EXPECT_EQ(0x16, sent.at(0));
  clReleaseKernel(kernel);
  clReleaseMemObject(buffer);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
}

// The client's setup finds no device, as with an unreachable daemon, and its warning says why.
void expect_refused(DaemonProcess &daemon, StderrCapture &capture, const std::string &client_says,
                    const std::string &daemon_logs = "") {
  set_hosts(daemon.endpoint());
  cl_int err = CL_SUCCESS;
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform(), &err);
  EXPECT_CL(CL_DEVICE_NOT_FOUND, err);
  EXPECT_TRUE(devices.empty());
  daemon.stop();
  std::string text = capture.text();
  EXPECT_NE(std::string::npos, text.find("fedcl: warning: skipping daemon " + daemon.endpoint() + ": " + client_says))
      << text;
  if (!daemon_logs.empty()) {
    EXPECT_NE(std::string::npos, text.find(daemon_logs)) << "not in the daemon's log:\n" << text;
  }
}

// Two daemons with TLS link to each other (over TLS: each takes nothing else) and move a buffer.
void expect_peer_link_over_tls(const std::vector<std::string> &daemon_args) {
  StderrCapture capture;  // the daemons' log: the link must come up, not fall back to the client
  std::vector<std::string> args = daemon_args;
  args.insert(args.end(), {"--log-level", "info"});
  Cluster cluster(2, args);
  expect_buffer_crosses_peer_link(cluster, capture, 1 << 20);
  EXPECT_EQ(std::string::npos, capture.so_far().find("TLS handshake failed"));
}

// Bytes that differ from place to place, so that a lost, doubled or reordered piece shows.
std::vector<uint8_t> numbered_bytes(size_t size, uint32_t seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; i++) {
    seed = seed * 1664525u + 1013904223u;
    bytes[i] = uint8_t(seed >> 24);
  }
  return bytes;
}

// Where two equal-sized byte ranges first differ (size when they do not).
size_t first_difference(const uint8_t *a, const uint8_t *b, size_t size) {
  return std::mismatch(a, a + size, b).first - a;
}

struct Queue {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  ~Queue() {
    if (queue) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }
};

// A context and queue on the first device of the daemons in FEDCL_HOSTS.
void open_queue(Queue *q) {
  cl_int err = CL_SUCCESS;
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform(), &err);
  ASSERT_CL_OK(err);
  q->context = clCreateContext(nullptr, 1, &devices[0], nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  q->queue = create_queue(q->context, devices[0]);
}

// A write of size bytes at offset and a read of the whole buffer back, checked byte by byte.
void expect_round_trip(cl_command_queue queue, cl_mem buffer, size_t buffer_size, size_t offset, size_t size,
                       uint32_t seed, std::vector<uint8_t> *expected) {
  std::vector<uint8_t> data = numbered_bytes(size, seed);
  std::copy(data.begin(), data.end(), expected->begin() + offset);
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, buffer, CL_FALSE, offset, size, data.data(), 0, nullptr, nullptr));
  std::vector<uint8_t> back(buffer_size);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, buffer_size, back.data(), 0, nullptr, nullptr));
  EXPECT_EQ(buffer_size, first_difference(back.data(), expected->data(), buffer_size));
}

}  // namespace

TEST(Tls, ARecordedCertificateSessionShowsNoPlaintext) {
  cert_client();
  DaemonProcess daemon(cert_daemon());
  RecordingProxy proxy(daemon.port());
  expect_session_hidden(proxy, "");
}

TEST(Tls, ARecordedPreSharedKeySessionShowsNoPlaintextNorTheKey) {
  psk_client(cluster_key());
  DaemonProcess daemon(psk_daemon());
  RecordingProxy proxy(daemon.port());
  expect_session_hidden(proxy, cluster_key());
}

TEST(Tls, WithoutTlsTheSameRecordingShowsThePlaintext) {
  // The recording test's own check: without TLS, the proxy does see the secrets.
  DaemonProcess daemon;
  RecordingProxy proxy(daemon.port());
  set_hosts(proxy.endpoint());
  cl_int err = CL_SUCCESS;
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform(), &err);
  ASSERT_CL_OK(err);
  cl_context context = clCreateContext(nullptr, 1, &devices[0], nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_program program = build_program(context, kSecretSource);
  EXPECT_TRUE(contains(proxy.client_bytes(), kSecretText));
  clReleaseProgram(program);
  clReleaseContext(context);
}

TEST(Tls, PeerLinksUseTlsWithCertificates) {
  cert_client();
  expect_peer_link_over_tls(cert_daemon());
}

TEST(Tls, PeerLinksUseTlsWithThePreSharedKey) {
  psk_client(cluster_key());
  expect_peer_link_over_tls(psk_daemon());
}

TEST(Tls, APlainClientIsRefusedWithAMessageOnBothSides) {
  unsetenv("FEDCL_TLS");
  StderrCapture capture;  // before the daemon starts: its log lands here too
  DaemonProcess daemon(cert_daemon());
  expect_refused(daemon, capture, "fedcld refused the session: this fedcld takes TLS connections only",
                 "refused: this fedcld takes TLS connections only");
}

TEST(Tls, ACertificateOfAnotherCaIsRefused) {
  cert_client("other-ca.pem");
  StderrCapture capture;
  DaemonProcess daemon(cert_daemon());
  expect_refused(daemon, capture, "TLS handshake with " + daemon.endpoint() +
                                      " failed: the daemon's certificate is not trusted: unable to get local issuer "
                                      "certificate", "TLS handshake failed");
}

TEST(Tls, ACertificateForAnotherNameIsRefused) {
  cert_client();
  StderrCapture capture;
  DaemonProcess daemon({"--tls", "yes", "--tls-cert", tls_file("elsewhere.pem"), "--tls-key", tls_file("elsewhere.key")});
  expect_refused(daemon, capture, "TLS handshake with " + daemon.endpoint() +
                                      " failed: the daemon's certificate is not trusted: IP address mismatch");
}

TEST(Tls, AWrongPreSharedKeyIsRefused) {
  psk_client("not-the-cluster-key");
  StderrCapture capture;
  DaemonProcess daemon(psk_daemon());
  expect_refused(daemon, capture, "TLS handshake with " + daemon.endpoint() +
                                      " failed: the daemon does not accept this client's pre-shared key",
                 "TLS handshake failed");
}

TEST(Tls, APreSharedKeyClientDoesNotTakeACertificateInstead) {
  psk_client(cluster_key());
  StderrCapture capture;
  DaemonProcess daemon(cert_daemon());  // no key: it cannot take the client's
  expect_refused(daemon, capture, "TLS handshake with " + daemon.endpoint() +
                                      " failed: the daemon showed a certificate instead of taking this client's "
                                      "pre-shared key");
}

TEST(Tls, ATlsClientOfADaemonWithoutTlsIsToldSo) {
  cert_client();
  StderrCapture capture;
  DaemonProcess daemon;
  expect_refused(daemon, capture, "TLS handshake with " + daemon.endpoint() +
                                      " failed: the daemon closed the connection (a fedcld that does not use TLS?)");
}

// Fail closed: a TLS or key setting that cannot be used dials no daemon at all (the daemon here has
// no TLS and no key, so any fallback to plain TCP or to no key would reach its device), and says why.
void expect_nothing_dialled(DaemonProcess &daemon, const std::string &error) {
  StderrCapture capture;
  cl_int err = CL_SUCCESS;
  std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform(), &err);
  EXPECT_CL(CL_DEVICE_NOT_FOUND, err);
  EXPECT_TRUE(devices.empty());
  std::string text = capture.text();
  EXPECT_NE(std::string::npos, text.find("fedcl: error: " + error)) << text;
  EXPECT_NE(std::string::npos, text.find("fedcl: error: no daemon dialled (1 listed)")) << text;
  std::string output;
  EXPECT_EQ(2, run_command(std::string(FEDCL_COMMAND_PATH) + " status --timeout 5000", &output)) << output;
  EXPECT_NE(std::string::npos, output.find("not asked: a key or TLS setting cannot be used")) << output;
  EXPECT_EQ(std::string::npos, output.find(daemon.endpoint() + ": reachable")) << output;
}

std::string hosts_file(const std::string &text) {
  // One file per test process: ctest runs these tests side by side.
  std::string path = testing::TempDir() + "fedcl-fail-closed-hosts-" + std::to_string(getpid()) + ".conf";
  std::ofstream(path) << text;
  unsetenv("FEDCL_HOSTS");
  setenv("FEDCL_HOSTS_FILE", path.c_str(), 1);
  return path;
}

TEST(Tls, AMistypedTlsVariableDialsNothing) {
  DaemonProcess daemon;
  set_hosts(daemon.endpoint());
  setenv("FEDCL_TLS", "on", 1);
  expect_nothing_dialled(daemon, "FEDCL_TLS: wants off, cert or psk, not 'on'");
}

TEST(Tls, AnUnreadableKeyFileDialsNothingNotEvenWithTheHostsFilesKey) {
  DaemonProcess daemon({"--key-file", tls_file("key")});
  hosts_file(daemon.endpoint() + "\nkey " + cluster_key() + "\n");
  setenv("FEDCL_KEY_FILE", "/nonexistent/fedcl/key", 1);
  expect_nothing_dialled(daemon, "FEDCL_KEY_FILE: cannot read a key from /nonexistent/fedcl/key: No such file");
}

TEST(Tls, AnEmptyKeyVariableDialsNothing) {
  DaemonProcess daemon;
  set_hosts(daemon.endpoint());
  setenv("FEDCL_KEY", "", 1);
  expect_nothing_dialled(daemon, "FEDCL_KEY is set but empty");
}

TEST(Tls, AHostsFileTlsLineThatDoesNotParseDialsNothing) {
  DaemonProcess daemon;
  std::string path = hosts_file(daemon.endpoint() + "\ntls yes\n");
  expect_nothing_dialled(daemon, path + ":2: 'tls' wants off, cert or psk, not 'yes'");
}

TEST(Tls, TheSameDaemonIsReachedWhenTheSettingsAreRight) {
  // The fail-closed tests' own check: their daemon is reachable with usable settings.
  DaemonProcess daemon;
  hosts_file(daemon.endpoint() + "\ntls off\n");
  cl_int err = CL_SUCCESS;
  EXPECT_EQ(1u, fedcl_devices(fedcl_platform(), &err).size());
  EXPECT_CL(CL_SUCCESS, err);
}

// A machine in the middle with its own TLS session towards each side and a certificate the client
// trusts, but not the key: the client's proof is bound to the client's TLS session (its exporter
// value), which differs from the relay's session with the daemon, so the daemon refuses it. (The same
// client settings reach the daemon directly: FedclStatusSpeaksTlsWithEitherTrustRoot.)
TEST(Tls, ARelayWithATrustedCertificateButNotTheKeyGetsNoSession) {
  cert_client();
  setenv("FEDCL_KEY", cluster_key().c_str(), 1);
  StderrCapture capture;
  std::vector<std::string> args = cert_daemon();
  args.insert(args.end(), {"--key-file", tls_file("key")});
  DaemonProcess daemon(args);
  TlsRelay relay(daemon.port(), tls_file("daemon.pem"), tls_file("daemon.key"), tls_file("ca.pem"));
  set_hosts(relay.endpoint());
  cl_int err = CL_SUCCESS;
  EXPECT_TRUE(fedcl_devices(fedcl_platform(), &err).empty());
  EXPECT_CL(CL_DEVICE_NOT_FOUND, err);
  daemon.stop();
  std::string text = capture.text();
  EXPECT_NE(std::string::npos, text.find("fedcl: warning: skipping daemon " + relay.endpoint() +
                                         ": fedcld refused the session: wrong key for the cluster key")) << text;
  EXPECT_NE(std::string::npos, text.find("refused: wrong key for the cluster key")) << "not in the daemon's log:\n" << text;
  // The relay did pass the handshake on, both ways: the refusal came through it.
  EXPECT_GT(relay.client_bytes(), 0u);
  EXPECT_GT(relay.daemon_bytes(), 0u);
}

TEST(Tls, FedcldWithTlsButNoTrustRootDoesNotStart) {
  std::string output;
  int status = run_command("env -u OCL_ICD_VENDORS " + std::string(FEDCLD_PATH) + " --config /dev/null --listen 127.0.0.1:0 --tls yes", &output);
  EXPECT_NE(0, status);
  EXPECT_NE(std::string::npos, output.find("--tls yes needs a trust root")) << output;
}

TEST(Tls, FedclStatusSpeaksTlsWithEitherTrustRoot) {
  std::string key = tls_file("key");
  DaemonProcess daemon({"--tls", "yes", "--tls-cert", tls_file("daemon.pem"), "--tls-key", tls_file("daemon.key"),
                        "--key-file", key});
  std::string base = "env FEDCL_HOSTS=" + daemon.endpoint() + " FEDCL_KEY_FILE=" + key + " FEDCL_TLS_CA=" +
                     tls_file("ca.pem") + " ";
  for (const char *mode : {"cert", "psk"}) {
    std::string output;
    EXPECT_EQ(0, run_command(base + "FEDCL_TLS=" + mode + " " + FEDCL_COMMAND_PATH + " status --timeout 10000", &output))
        << mode << ":\n" << output;
    EXPECT_NE(std::string::npos, output.find(daemon.endpoint() + ": reachable")) << mode << ":\n" << output;
  }
  std::string output;
  EXPECT_NE(0, run_command(base + "FEDCL_TLS=off " + FEDCL_COMMAND_PATH + " status --timeout 10000", &output));
  EXPECT_NE(std::string::npos, output.find("this fedcld takes TLS connections only")) << output;
}

// fedcld seals large writes and decrypts large payloads on a worker thread while its loop moves
// other bytes: large transfers with small calls queued behind and between them keep every byte in
// its place, in both directions.
TEST(Tls, LargeTransfersWithSmallCallsBetweenKeepEveryByte) {
  psk_client(cluster_key());
  DaemonProcess daemon(psk_daemon());
  set_hosts(daemon.endpoint());
  Queue q;
  ASSERT_NO_FATAL_FAILURE(open_queue(&q));
  const size_t n = 64u << 20, small = 4096;
  std::vector<uint8_t> data = numbered_bytes(n, 1);
  cl_mem big = create_buffer(q.context, CL_MEM_READ_WRITE, n);
  cl_mem little = create_buffer(q.context, CL_MEM_READ_WRITE, small);

  // Small writes and blocking reads behind a large write that is still arriving.
  ASSERT_CL_OK(clEnqueueWriteBuffer(q.queue, big, CL_FALSE, 0, n, data.data(), 0, nullptr, nullptr));
  for (uint32_t i = 0; i < 8; i++) {
    std::vector<uint8_t> bytes = numbered_bytes(small, 100 + i), back(small);
    ASSERT_CL_OK(clEnqueueWriteBuffer(q.queue, little, CL_FALSE, 0, small, bytes.data(), 0, nullptr, nullptr));
    ASSERT_CL_OK(clEnqueueReadBuffer(q.queue, little, CL_TRUE, 0, small, back.data(), 0, nullptr, nullptr));
    EXPECT_EQ(small, first_difference(back.data(), bytes.data(), small)) << "small round trip " << i;
  }

  // Large reads with small reads between them: the small replies queue behind the large ones.
  std::vector<uint8_t> back(n), tail(64), head(64);
  ASSERT_CL_OK(clEnqueueReadBuffer(q.queue, big, CL_FALSE, 0, n / 2, back.data(), 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueReadBuffer(q.queue, big, CL_TRUE, n - tail.size(), tail.size(), tail.data(), 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueReadBuffer(q.queue, big, CL_FALSE, n / 2, n / 2, back.data() + n / 2, 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueReadBuffer(q.queue, big, CL_TRUE, 0, head.size(), head.data(), 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(q.queue));
  EXPECT_EQ(n, first_difference(back.data(), data.data(), n)) << "the 64 MiB read differs there";
  EXPECT_EQ(tail.size(), first_difference(tail.data(), data.data() + n - tail.size(), tail.size()));
  EXPECT_EQ(head.size(), first_difference(head.data(), data.data(), head.size()));

  // Sizes that fall between the pieces' and the records' boundaries, at odd offsets.
  for (size_t size : {size_t(1u << 20) + 1, size_t(3u << 20) + 5, size_t(256u << 10) + 3, size_t(2u << 20) - 7})
    ASSERT_NO_FATAL_FAILURE(expect_round_trip(q.queue, big, n, 7 + size % 4099, size, uint32_t(size), &data));
  clReleaseMemObject(little);
  clReleaseMemObject(big);
}

// A client killed while fedcld writes it a large reply over TLS (its worker sealing the pieces)
// costs only that session: the daemon goes on serving another client's large transfers.
TEST(Tls, AClientKilledInALargeReadLeavesOtherSessionsServed) {
  psk_client(cluster_key());
  DaemonProcess daemon(psk_daemon());
  set_hosts(daemon.endpoint());
  const size_t n = 64u << 20;
  int ready[2];
  ASSERT_EQ(0, pipe(ready));
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Reads the buffer again and again, telling the parent once the first read is in.
    close(ready[0]);
    Queue q;
    open_queue(&q);
    cl_mem big = create_buffer(q.context, CL_MEM_READ_WRITE, n);
    std::vector<uint8_t> back(n);
    for (bool told = false;; told = true) {
      if (clEnqueueReadBuffer(q.queue, big, CL_TRUE, 0, n, back.data(), 0, nullptr, nullptr) != CL_SUCCESS) _exit(1);
      if (!told && write(ready[1], "r", 1) != 1) _exit(1);
    }
  }
  close(ready[1]);
  char said = 0;
  ASSERT_EQ(1, read(ready[0], &said, 1)) << "the reading client did not get going";
  close(ready[0]);
  usleep(30 * 1000);  // into a later read
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));

  Queue q;
  ASSERT_NO_FATAL_FAILURE(open_queue(&q));
  cl_mem big = create_buffer(q.context, CL_MEM_READ_WRITE, n);
  std::vector<uint8_t> expected(n);
  ASSERT_NO_FATAL_FAILURE(expect_round_trip(q.queue, big, n, 0, n, 9, &expected));
  EXPECT_EQ(0, waitpid(daemon.pid(), &status, WNOHANG)) << "fedcld ended";
  clReleaseMemObject(big);
}

namespace {

// Bytes in 1..63: one with a bit flipped (0x40) is none of them, nor 0 (wiped) nor 0xee (untouched).
std::vector<uint8_t> low_bytes(size_t size) {
  std::vector<uint8_t> bytes = numbered_bytes(size, 21);
  for (uint8_t &byte : bytes) byte = uint8_t(1 + byte % 63);
  return bytes;
}

// Where to flip a bit: in a small transfer's only record; in a large one's, a full record well
// inside the payload (the first also holds the frame's header, which the receiving end reads into
// memory of its own first).
void flip_bit_in(RecordingProxy &proxy, bool to_daemon, size_t transfer) {
  if (transfer < (1u << 20)) return proxy.flip_bit_in_record(to_daemon, transfer / 2);
  proxy.flip_bit_in_record(to_daemon, 16000, 10);
}

// A bit flipped on the wire in a record to the client: the client's record layer refuses it and the
// connection ends. Records are opened into their destination before their tag is checked, so a
// refused one is wiped there: with no session to resume (--resume-window 0) the read fails, and no
// byte of that record is left in the application's memory. With one, the client resumes and the
// daemon sends again from the last authentic byte: the read gets exactly what was written.
void expect_flip_to_client(size_t n, bool resumable) {
  psk_client(cluster_key());
  std::vector<std::string> args = psk_daemon();
  if (!resumable) args.insert(args.end(), {"--resume-window", "0"});
  DaemonProcess daemon(args);
  RecordingProxy proxy(daemon.port());
  set_hosts(proxy.endpoint());
  StderrCapture capture;
  Queue q;
  ASSERT_NO_FATAL_FAILURE(open_queue(&q));
  std::vector<uint8_t> data = low_bytes(n);
  cl_mem buffer = create_buffer(q.context, CL_MEM_READ_WRITE, n);
  ASSERT_CL_OK(clEnqueueWriteBuffer(q.queue, buffer, CL_TRUE, 0, n, data.data(), 0, nullptr, nullptr));
  const uint8_t untouched = 0xee;
  std::vector<uint8_t> back(n, untouched);
  flip_bit_in(proxy, false, n);
  cl_int read = clEnqueueReadBuffer(q.queue, buffer, CL_TRUE, 0, n, back.data(), 0, nullptr, nullptr);
  EXPECT_EQ(1, proxy.flips());
  if (resumable) {
    EXPECT_CL(CL_SUCCESS, read);
    EXPECT_EQ(n, first_difference(back.data(), data.data(), n));
  } else {
    EXPECT_NE(CL_SUCCESS, read);
    EXPECT_NE(std::string::npos, capture.so_far().find("not authentic")) << capture.so_far();
    for (size_t i = 0; i < n; i++)
      ASSERT_TRUE(back[i] == data[i] || back[i] == untouched || back[i] == 0)
          << "byte " << i << " of " << n << " is " << int(back[i]) << ", sent " << int(data[i]);
  }
  clReleaseMemObject(buffer);
}

// A bit flipped in a record to the daemon: the daemon refuses the record and drops the connection
// (logged), the client resumes its session and sends again what the daemon did not take, and the
// buffer holds exactly what was written. A flip costs a reconnect, never a wrong byte.
void expect_flip_to_daemon_costs_a_reconnect(size_t n) {
  psk_client(cluster_key());
  StderrCapture capture;
  DaemonProcess daemon(psk_daemon());
  RecordingProxy proxy(daemon.port());
  set_hosts(proxy.endpoint());
  Queue q;
  ASSERT_NO_FATAL_FAILURE(open_queue(&q));
  std::vector<uint8_t> data = low_bytes(n);
  cl_mem buffer = create_buffer(q.context, CL_MEM_READ_WRITE, n);
  flip_bit_in(proxy, true, n);
  ASSERT_CL_OK(clEnqueueWriteBuffer(q.queue, buffer, CL_TRUE, 0, n, data.data(), 0, nullptr, nullptr));
  std::vector<uint8_t> back(n);
  ASSERT_CL_OK(clEnqueueReadBuffer(q.queue, buffer, CL_TRUE, 0, n, back.data(), 0, nullptr, nullptr));
  EXPECT_EQ(1, proxy.flips());
  EXPECT_EQ(n, first_difference(back.data(), data.data(), n));
  clReleaseMemObject(buffer);
  daemon.stop();
  EXPECT_NE(std::string::npos, capture.text().find("not authentic")) << "not in the daemon's log:\n" << capture.text();
}

}  // namespace

TEST(Tls, ABitFlippedInASmallReadLeavesNoAlteredByte) { expect_flip_to_client(4096, false); }
TEST(Tls, ABitFlippedInALargeReadLeavesNoAlteredByte) { expect_flip_to_client(32u << 20, false); }
TEST(Tls, ABitFlippedInASmallReadCostsAReconnect) { expect_flip_to_client(4096, true); }
TEST(Tls, ABitFlippedInALargeReadCostsAReconnect) { expect_flip_to_client(32u << 20, true); }
TEST(Tls, ABitFlippedInASmallWriteCostsAReconnect) { expect_flip_to_daemon_costs_a_reconnect(4096); }
TEST(Tls, ABitFlippedInALargeWriteCostsAReconnect) { expect_flip_to_daemon_costs_a_reconnect(32u << 20); }
