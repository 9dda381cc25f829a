// Where the daemons are: FEDCL_HOSTS, else the file FEDCL_HOSTS_FILE names, else /etc/fedcl/hosts.conf.
#pragma once

#include <string>
#include <vector>

namespace fedcl {

struct HostList {
  std::vector<std::string> endpoints;  // "host:port"
  std::string key;                     // pre-shared key: FEDCL_KEY, else FEDCL_KEY_FILE's first line,
                                       // else a "key" line
  std::string user;                    // whose key it is (a daemon's --key-list): FEDCL_USER or a "user" line
  std::vector<std::string> problems;   // lines that were ignored, and why
  std::string source;                  // where the list came from, for messages
};

constexpr int kDefaultPort = 7070;

HostList hosts_from_environment();
// Parses hosts.conf text (one HOST[:PORT] per line, '#' comments, "key SECRET" and "user NAME" lines).
HostList hosts_parse(const std::string &text, const std::string &source);
// Parses a FEDCL_HOSTS value: HOST[:PORT] entries separated by commas.
HostList hosts_parse_list(const std::string &text);

}  // namespace fedcl
