#include "host_identity.h"

#include <sodium.h>

#include <fstream>

#include "secret.h"

namespace fedcl {

namespace {

std::string first_line(const char *path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::string host_identity_of(const std::string &machine_id, const std::string &boot_id) {
  if (machine_id.empty() && boot_id.empty()) return {};
  ensure_sodium();
  static const unsigned char kKey[crypto_generichash_KEYBYTES] = "fedcl host identity v1";
  std::string both = machine_id + "\n" + boot_id;
  unsigned char hash[kHostIdentityBytes];
  crypto_generichash(hash, sizeof hash, reinterpret_cast<const unsigned char *>(both.data()), both.size(), kKey,
                     sizeof kKey);
  return std::string(reinterpret_cast<const char *>(hash), sizeof hash);
}

const std::string &host_identity() {
  static const std::string identity = [] {
    std::string machine = first_line("/etc/machine-id");
    if (machine.empty()) machine = first_line("/var/lib/dbus/machine-id");
    return host_identity_of(machine, first_line("/proc/sys/kernel/random/boot_id"));
  }();
  return identity;
}

}  // namespace fedcl
