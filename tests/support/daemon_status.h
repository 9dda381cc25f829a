// What the daemons of FEDCL_HOSTS publish about this process's sessions (`fedcl status --json`,
// which the session workers bring up to date every second): for tests that count what a daemon
// holds or sent.
#pragma once

#include <cstdint>
#include <string>

namespace fedcl_test {

class DaemonProcess;

// The whole HTTP reply to request, sent to 127.0.0.1:port (a daemon's --metrics port).
std::string metrics_http(int port, const std::string &request);
// What daemon's --metrics endpoint serves now (a test failure, and "", if it does not answer 200).
std::string scrape_metrics(const DaemonProcess &daemon);
// The value of the sample whose name and labels are exactly series ("name{a=\"b\"}"); -1 if absent.
double metric_sample(const std::string &text, const std::string &series);

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
