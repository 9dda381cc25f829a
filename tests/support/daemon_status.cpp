#include "daemon_status.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <thread>

#ifndef FEDCL_COMMAND_PATH
#error "FEDCL_COMMAND_PATH must name the fedcl command"
#endif

namespace fedcl_test {

std::string status_json() {
  FILE *pipe = popen(FEDCL_COMMAND_PATH " status --json 2>&1", "r");
  if (!pipe) return "";
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  pclose(pipe);
  return out;
}

OwnSessions own_sessions() {
  std::string out = status_json();
  OwnSessions own;
  // A session's client is named host:pid.
  std::regex session("\"client\": \"[^\"]*:([0-9]+)\",[^}]*?\"objects\": ([0-9]+),[^}]*?\"bytes_sent\": ([0-9]+)");
  for (std::sregex_iterator it(out.begin(), out.end(), session), end; it != end; ++it) {
    if (std::stol((*it)[1]) != long(getpid())) continue;
    own.objects += std::stoull((*it)[2]);
    own.bytes_sent += std::stoull((*it)[3]);
    own.found++;
  }
  return own;
}

OwnSessions own_sessions_settled() {
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  return own_sessions();
}

}  // namespace fedcl_test
