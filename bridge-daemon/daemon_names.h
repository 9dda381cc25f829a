// The names a client may have dialled this daemon by. A client's proof covers the host it dialled
// (Hello.daemon, protocol/auth.h): a machine that passes a client's handshake on to this daemon was
// dialled by its own name, not one of these, and is refused. This daemon's names: every address of
// its interfaces and all of 127.0.0.0/8 and ::1, its host name and that name's first label,
// "localhost", its node name (--name), the names in its certificate, and --aliases (a DNS alias, a
// NAT's address). A name outside them counts when it resolves, here, to an address of this host.
#pragma once

#include <uv.h>

#include <functional>
#include <string>
#include <vector>

namespace fedcld {

class DaemonNames {
 public:
  // The host's own names and addresses are found at each check; these are the others.
  void add(const std::string &name);
  const std::vector<std::string> &added() const { return names_; }

  // Whether dialled (as the client wrote it: a name, an address, "[v6]") is this daemon, without
  // asking DNS: true, false, or unknown (a name to resolve).
  enum class Match { yes, no, unknown };
  Match match(const std::string &dialled) const;
  // The same, resolving an unknown name on libuv's threads; done(yes) runs on loop's thread, at
  // once when no resolution is needed.
  void check(uv_loop_t *loop, const std::string &dialled, std::function<void(bool)> done) const;

 private:
  std::vector<std::string> names_;
};

// Whether the address (an in_addr or in6_addr's bytes, 4 or 16) is this host's: an interface's or
// loopback.
bool address_is_local(const unsigned char *bytes, size_t size);

}  // namespace fedcld
