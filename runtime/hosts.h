// Where the daemons are: FEDCL_HOSTS, else the file FEDCL_HOSTS_FILE names, else /etc/fedcl/hosts.conf.
#pragma once

#include <string>
#include <vector>

namespace fedcl {

struct HostList {
  std::vector<std::string> endpoints;  // "host:port"
  std::string key;                     // pre-shared key, from FEDCL_KEY or a "key" line
  std::vector<std::string> problems;   // lines that were ignored, and why
  std::string source;                  // where the list came from, for messages
};

constexpr int kDefaultPort = 7070;

HostList hosts_from_environment();
// Parses hosts.conf text (one HOST[:PORT] per line, '#' comments, "key SECRET" lines).
HostList hosts_parse(const std::string &text, const std::string &source);
// Parses a FEDCL_HOSTS value: HOST[:PORT] entries separated by commas.
HostList hosts_parse_list(const std::string &text);

}  // namespace fedcl
