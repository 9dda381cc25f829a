#include "tls_relay.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace fedcl_test {

namespace {

SSL_CTX *context(const SSL_METHOD *method) {
  SSL_CTX *ctx = SSL_CTX_new(method);
  if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256") != 1)
    throw std::runtime_error("TlsRelay: cannot set up OpenSSL");
  return ctx;
}

int dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

TlsRelay::TlsRelay(int daemon_port, const std::string &cert_file, const std::string &key_file, const std::string &ca_file)
    : daemon_port_(daemon_port) {
  // A machine in the middle between hosts: the client keeps to TCP (loopback_proxy.h says why).
  setenv("FEDCL_LOCAL", "off", 1);
  accept_ = context(TLS_server_method());
  // fedcl's record layer takes no session tickets after the handshake (nor do fedcl's daemons send any).
  SSL_CTX_set_num_tickets(accept_, 0);
  if (SSL_CTX_use_certificate_chain_file(accept_, cert_file.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(accept_, key_file.c_str(), SSL_FILETYPE_PEM) != 1)
    throw std::runtime_error("TlsRelay: cannot load " + cert_file);
  dial_ = context(TLS_client_method());
  SSL_CTX_set_verify(dial_, SSL_VERIFY_PEER, nullptr);
  if (SSL_CTX_load_verify_locations(dial_, ca_file.c_str(), nullptr) != 1)
    throw std::runtime_error("TlsRelay: cannot load " + ca_file);
  listener_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof addr;
  if (bind(listener_, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 || listen(listener_, 4) != 0 ||
      getsockname(listener_, reinterpret_cast<sockaddr *>(&addr), &size) != 0)
    throw std::runtime_error("TlsRelay: cannot listen");
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { serve(); });
}

TlsRelay::~TlsRelay() {
  stopping_ = true;
  shutdown(listener_, SHUT_RDWR);
  thread_.join();
  close(listener_);
  SSL_CTX_free(accept_);
  SSL_CTX_free(dial_);
}

void TlsRelay::serve() {
  while (!stopping_) {
    pollfd wait{listener_, POLLIN, 0};
    if (poll(&wait, 1, 100) <= 0) continue;
    int client_fd = accept(listener_, nullptr, nullptr);
    if (client_fd < 0) continue;
    int daemon_fd = dial(daemon_port_);
    SSL *client = SSL_new(accept_), *daemon = SSL_new(dial_);
    SSL_set_fd(client, client_fd);
    SSL_set_fd(daemon, daemon_fd);
    SSL_set1_host(daemon, "127.0.0.1");
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(daemon), "127.0.0.1");
    if (daemon_fd >= 0 && SSL_accept(client) == 1 && SSL_connect(daemon) == 1) relay(client, daemon);
    SSL_free(client);
    SSL_free(daemon);
    close(client_fd);
    if (daemon_fd >= 0) close(daemon_fd);
  }
}

void TlsRelay::relay(SSL *client, SSL *daemon) {
  char buffer[16384];
  while (!stopping_) {
    pollfd ends[2] = {{SSL_get_fd(client), POLLIN, 0}, {SSL_get_fd(daemon), POLLIN, 0}};
    if (SSL_pending(client) == 0 && SSL_pending(daemon) == 0 && poll(ends, 2, 100) <= 0) continue;
    for (int side = 0; side < 2; side++) {
      SSL *from = side == 0 ? client : daemon, *to = side == 0 ? daemon : client;
      if (SSL_pending(from) == 0 && !(ends[side].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int got = SSL_read(from, buffer, sizeof buffer);
      if (got <= 0 || SSL_write(to, buffer, got) != got) return;
      (side == 0 ? from_client_ : from_daemon_) += uint64_t(got);
    }
  }
}

}  // namespace fedcl_test
