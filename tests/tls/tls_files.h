// The TLS tests' certificates and key, made at test time (make_certificates.sh) in FEDCL_TLS_DIR,
// which each test program's target defines.
#pragma once

#include <string>
#include <vector>

#ifndef FEDCL_TLS_DIR
#error "FEDCL_TLS_DIR must name the directory of the test certificates"
#endif

namespace fedcl_test {

inline std::string tls_file(const char *name) { return std::string(FEDCL_TLS_DIR) + "/" + name; }

// A daemon's options for TLS with the test CA's certificate.
inline std::vector<std::string> cert_daemon() {
  return {"--tls", "yes", "--tls-cert", tls_file("daemon.pem"), "--tls-key", tls_file("daemon.key"), "--tls-ca",
          tls_file("ca.pem")};
}

}  // namespace fedcl_test
