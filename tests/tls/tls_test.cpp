// TLS on fedcl's links (fedcld --tls yes, FEDCL_TLS): what an eavesdropper records of a session holds
// none of its plaintext, with either trust root; peer links come up over TLS; and every way the two
// ends can disagree (a client without TLS, an untrusted or misnamed certificate, a wrong key, a daemon
// without TLS) ends the client's setup as an unreachable daemon does, with a message naming the cause.
//
// The certificates and the key are made at test time (make_certificates.sh, the tls_certificates
// fixture) in FEDCL_TLS_DIR. Each TEST runs in its own process, so the environment is set freely.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "cl_harness.h"
#include "recording_proxy.h"

using namespace fedcl_test;

#ifndef FEDCL_TLS_DIR
#error "FEDCL_TLS_DIR must name the directory of the test certificates"
#endif

namespace {

std::string tls_file(const char *name) { return std::string(FEDCL_TLS_DIR) + "/" + name; }

std::string cluster_key() {
  std::string key = read_file(tls_file("key"));
  key.erase(std::remove(key.begin(), key.end(), '\n'), key.end());
  return key;
}

// A daemon's options for TLS with a certificate, or with the key as the pre-shared key.
std::vector<std::string> cert_daemon() {
  return {"--tls", "yes", "--tls-cert", tls_file("daemon.pem"), "--tls-key", tls_file("daemon.key"), "--tls-ca",
          tls_file("ca.pem")};
}
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
                 "a plain-TCP connection refused");
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
