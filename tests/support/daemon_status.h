// What the daemons of FEDCL_HOSTS publish about this process's sessions (`fedcl status --json`,
// which the session workers bring up to date every second): for tests that count what a daemon
// holds or sent.
#pragma once

#include <cstdint>
#include <string>

namespace fedcl_test {

// `fedcl status --json`, as printed.
std::string status_json();

// This process's sessions on all the daemons: the objects they hold and the bytes sent to it.
struct OwnSessions {
  uint64_t objects = 0, bytes_sent = 0;
  int found = 0;
};
OwnSessions own_sessions();
// own_sessions() once what happened until now is published.
OwnSessions own_sessions_settled();

}  // namespace fedcl_test
