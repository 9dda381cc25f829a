// Reaching a daemon: a TCP connection to HOST:PORT within a deadline, set up for fedcl's traffic
// (no Nagle, keepalive probes so that a vanished node ends as a lost daemon).
#pragma once

#include <string>

namespace fedcl {

// Connects with a deadline; returns the blocking socket, or -1 with why in *error.
int connect_with_timeout(const std::string &endpoint, int timeout_ms, std::string *error);
// The same to a daemon's local socket (a Unix socket of this host) at path.
int connect_local(const std::string &path, int timeout_ms, std::string *error);

}  // namespace fedcl
