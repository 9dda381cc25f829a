#include "daemon_names.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace fedcld {

namespace {

// dialled as a name to compare: no brackets, no IPv6 zone, no trailing dot.
std::string bare(std::string name) {
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') name = name.substr(1, name.size() - 2);
  name = name.substr(0, name.find('%'));
  if (!name.empty() && name.back() == '.') name.pop_back();
  return name;
}

bool same_name(const std::string &a, const std::string &b) { return !a.empty() && strcasecmp(a.c_str(), b.c_str()) == 0; }

// The address in text, as 4 or 16 bytes; 0 when it is no address.
size_t parse_address(const std::string &text, unsigned char bytes[16]) {
  if (inet_pton(AF_INET, text.c_str(), bytes) == 1) return 4;
  if (inet_pton(AF_INET6, text.c_str(), bytes) == 1) return 16;
  return 0;
}

bool is_loopback(const unsigned char *bytes, size_t size) {
  if (size == 4) return bytes[0] == 127;
  static const unsigned char v6_loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  if (std::memcmp(bytes, v6_loopback, 16) == 0) return true;
  // ::ffff:127.x.y.z
  static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(bytes, mapped, 12) == 0 && bytes[12] == 127;
}

struct Lookup {
  uv_getaddrinfo_t request;
  std::function<void(bool)> done;
};

}  // namespace

bool address_is_local(const unsigned char *bytes, size_t size) {
  if (is_loopback(bytes, size)) return true;
  ifaddrs *list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs *entry = list; entry && !found; entry = entry->ifa_next) {
    if (!entry->ifa_addr) continue;
    if (entry->ifa_addr->sa_family == AF_INET && size == 4) {
      found = std::memcmp(&reinterpret_cast<sockaddr_in *>(entry->ifa_addr)->sin_addr, bytes, 4) == 0;
    } else if (entry->ifa_addr->sa_family == AF_INET6 && size == 16) {
      found = std::memcmp(&reinterpret_cast<sockaddr_in6 *>(entry->ifa_addr)->sin6_addr, bytes, 16) == 0;
    }
  }
  freeifaddrs(list);
  return found;
}

void DaemonNames::add(const std::string &name) {
  std::string clean = bare(name);
  if (!clean.empty() && std::none_of(names_.begin(), names_.end(), [&](const std::string &n) { return same_name(n, clean); }))
    names_.push_back(clean);
}

DaemonNames::Match DaemonNames::match(const std::string &dialled) const {
  std::string name = bare(dialled);
  if (name.empty()) return Match::no;
  unsigned char bytes[16];
  if (size_t size = parse_address(name, bytes)) {
    if (address_is_local(bytes, size)) return Match::yes;
    for (const std::string &own : names_) {
      unsigned char other[16];
      if (parse_address(own, other) == size && std::memcmp(bytes, other, size) == 0) return Match::yes;
    }
    return Match::no;  // an address is not resolved
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string full = host, label = full.substr(0, full.find('.'));
  if (same_name(name, full) || same_name(name, label) || same_name(name, "localhost")) return Match::yes;
  for (const std::string &own : names_)
    if (same_name(name, own)) return Match::yes;
  return Match::unknown;
}

void DaemonNames::check(uv_loop_t *loop, const std::string &dialled, std::function<void(bool)> done) const {
  Match known = match(dialled);
  if (known != Match::unknown) return done(known == Match::yes);
  auto *lookup = new Lookup{{}, std::move(done)};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int err = uv_getaddrinfo(loop, &lookup->request, [](uv_getaddrinfo_t *request, int status, addrinfo *result) {
    std::unique_ptr<Lookup> lookup(reinterpret_cast<Lookup *>(request));
    bool local = false;
    for (addrinfo *entry = status == 0 ? result : nullptr; entry && !local; entry = entry->ai_next) {
      if (entry->ai_family == AF_INET)
        local = address_is_local(reinterpret_cast<unsigned char *>(&reinterpret_cast<sockaddr_in *>(entry->ai_addr)->sin_addr), 4);
      else if (entry->ai_family == AF_INET6)
        local = address_is_local(reinterpret_cast<unsigned char *>(&reinterpret_cast<sockaddr_in6 *>(entry->ai_addr)->sin6_addr), 16);
    }
    uv_freeaddrinfo(result);
    lookup->done(local);
  }, bare(dialled).c_str(), nullptr, &hints);
  if (err != 0) {
    std::unique_ptr<Lookup> failed(lookup);
    failed->done(false);
  }
}

}  // namespace fedcld
