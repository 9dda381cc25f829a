// Where the daemons are: FEDCL_HOSTS, else the file FEDCL_HOSTS_FILE names, else
// FEDCL_CONFIG_DIR/hosts.conf (/etc/fedcl/hosts.conf).
#pragma once

#include <string>
#include <vector>

#include "client_auth.h"

namespace fedcl {

struct HostList {
  std::vector<std::string> endpoints;  // "host:port"
  Secret key;                          // pre-shared key: FEDCL_KEY, else FEDCL_KEY_FILE's first line,
                                       // else a "key" line
  std::string user;                    // whose key it is (a daemon's --key-list): FEDCL_USER or a "user" line
  TlsMode tls = TlsMode::off;          // FEDCL_TLS, else a "tls" line
  std::string tls_ca;                  // FEDCL_TLS_CA, else a "tls-ca" line
  std::vector<std::string> problems;   // lines that were ignored: "SOURCE:LINE: why"
  // A key or TLS setting among the problems (one that does not parse, a key file that cannot be
  // read): then no daemon is dialled at all. fedcl fails closed: it never goes on over plain TCP, or
  // without a key, or with another key, because the one asked for was unusable.
  bool credentials_broken = false;
  std::vector<std::string> warnings;   // settings that work but put the user at risk (a key file others read)
  std::vector<std::string> notes;      // what a person may want to know (slurm-job outside a job)
  std::string source;                  // where the list came from, for messages

  Credentials credentials() const { return {user, key, tls, tls_ca}; }
};

constexpr int kDefaultPort = 7070;
// The entry that stands for the nodes of the Slurm job the program runs in (SLURM_JOB_NODELIST).
constexpr const char kSlurmJobEntry[] = "slurm-job";

extern const char kDefaultHostsFile[];

HostList hosts_from_environment();
// Parses hosts.conf text (one entry per line, '#' comments, "key SECRET", "user NAME", "tls off|cert|psk"
// and "tls-ca FILE" lines). An
// entry is HOST[:PORT], a Slurm host list with an optional port (gpu[01-04,07]:7071),
// slurm-job[:PORT], or unix:PATH (a daemon of this host by its local socket).
HostList hosts_parse(const std::string &text, const std::string &source);
// Parses a FEDCL_HOSTS value: the same entries separated by commas.
HostList hosts_parse_list(const std::string &text);

}  // namespace fedcl
