#include "hosts.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "slurm_nodelist.h"
#include "transport.h"

namespace fedcl {

const char kDefaultHostsFile[] = FEDCL_CONFIG_DIR "/hosts.conf";

namespace {

std::string trim(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return {};
  size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

// Splits "hosts:port" where hosts is a name, a [v6] address or a Slurm host list; "" or why not.
std::string split_port(const std::string &entry, std::string *hosts, std::string *port) {
  size_t close = entry.rfind(']');
  size_t colon = entry.rfind(':');
  bool v6 = entry.front() == '[';
  if (colon == std::string::npos || (close != std::string::npos && colon < close) || (v6 && close == std::string::npos)) {
    *hosts = entry;
    *port = std::to_string(kDefaultPort);
    return v6 && close != entry.size() - 1 ? "an IPv6 address goes in brackets: [ADDRESS]:PORT" : "";
  }
  *hosts = entry.substr(0, colon);
  *port = entry.substr(colon + 1);
  if (hosts->empty()) return "no host before ':'";
  if (port->empty() || port->find_first_not_of("0123456789") != std::string::npos) return "the port '" + *port + "' is not a number";
  long number = port->size() > 5 ? 0 : std::strtol(port->c_str(), nullptr, 10);
  if (number <= 0 || number > 65535) return "the port " + *port + " is not in 1-65535";
  return {};
}

// The daemons one entry names, as host:port.
std::string expand_entry(const std::string &entry, std::vector<std::string> *endpoints, std::vector<std::string> *notes) {
  if (entry.find_first_of(" \t") != std::string::npos) return "blanks inside an entry (one entry per line)";
  if (local_endpoint(entry)) {
    if (entry.size() <= sizeof kLocalEndpointPrefix || entry[sizeof kLocalEndpointPrefix - 1] != '/')
      return "unix: wants the absolute path of a daemon's local socket";
    endpoints->push_back(entry);
    return {};
  }
  std::string hosts, port;
  std::string why = split_port(entry, &hosts, &port);
  if (!why.empty()) return why;
  std::vector<std::string> names;
  if (hosts == kSlurmJobEntry) {
    const char *nodelist = std::getenv("SLURM_JOB_NODELIST");
    if (!nodelist || !*nodelist) {
      notes->push_back(std::string(kSlurmJobEntry) + ": not inside a Slurm job (no SLURM_JOB_NODELIST): no daemons from it");
      return {};
    }
    why = slurm_expand_nodelist(nodelist, &names);
    if (!why.empty()) return std::string("SLURM_JOB_NODELIST '") + nodelist + "' is not a host list: " + why;
  } else if (hosts.front() != '[' && hosts.find('[') != std::string::npos) {
    why = slurm_expand_nodelist(hosts, &names);
    if (!why.empty()) return "not a host list: " + why;
  } else {
    names.push_back(hosts);
  }
  for (const std::string &name : names) endpoints->push_back(name + ":" + port);
  return {};
}

// A key or TLS setting that cannot be used (HostList::credentials_broken).
void setting_problem(HostList &list, const std::string &why) {
  list.problems.push_back(why);
  list.credentials_broken = true;
}

void add_entry(HostList &list, const std::string &entry, const std::string &where) {
  std::string why = expand_entry(entry, &list.endpoints, &list.notes);
  if (!why.empty()) list.problems.push_back(where + ": '" + entry + "' is not HOST or HOST:PORT: " + why);
}

// Whether line is the setting "NAME VALUE" (key, user, tls, tls-ca), with its value ("" when it has none).
bool is_setting(const std::string &line, const std::string &name, std::string *value) {
  if (line.compare(0, name.size(), name) != 0) return false;
  if (line.size() > name.size() && line[name.size()] != ' ' && line[name.size()] != '\t') return false;
  *value = trim(line.substr(name.size()));
  return true;
}

// Commas outside brackets separate FEDCL_HOSTS entries (gpu[01-02,05] is one entry).
std::vector<std::string> split_list(const std::string &text) {
  std::vector<std::string> entries(1);
  int depth = 0;
  for (char c : text) {
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (c == ',' && depth == 0) entries.emplace_back();
    else entries.back() += c;
  }
  return entries;
}

}  // namespace

HostList hosts_parse(const std::string &text, const std::string &source) {
  HostList list;
  list.source = source;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); number++) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    std::string where = source + ":" + std::to_string(number);
    std::string value;
    if (is_setting(line, "key", &value)) {
      if (value.empty()) setting_problem(list, where + ": a 'key' line without a key");
      else if (std::string why = key_too_short(value); !why.empty()) setting_problem(list, where + ": " + why);
      else list.key = Secret(value);
      continue;
    }
    if (is_setting(line, "user", &value)) {
      if (value.empty()) setting_problem(list, where + ": a 'user' line without a name");
      else list.user = value;
      continue;
    }
    if (is_setting(line, "tls", &value)) {
      if (!tls_mode_parse(value, &list.tls)) setting_problem(list, where + ": 'tls' wants off, cert or psk, not '" + value + "'");
      continue;
    }
    if (is_setting(line, "tls-ca", &value)) {
      if (value.empty()) setting_problem(list, where + ": a 'tls-ca' line without a file");
      else list.tls_ca = value;
      continue;
    }
    add_entry(list, line, where);
  }
  return list;
}

HostList hosts_parse_list(const std::string &text) {
  HostList list;
  list.source = "FEDCL_HOSTS";
  for (std::string entry : split_list(text)) {
    entry = trim(entry);
    if (!entry.empty()) add_entry(list, entry, "FEDCL_HOSTS");
  }
  return list;
}

HostList hosts_from_environment() {
  HostList list;
  if (const char *hosts = std::getenv("FEDCL_HOSTS")) {
    list = hosts_parse_list(hosts);
  } else {
    const char *file = std::getenv("FEDCL_HOSTS_FILE");
    std::string path = file ? file : kDefaultHostsFile;
    std::ifstream in(path);
    struct stat status {};
    if (!in || stat(path.c_str(), &status) != 0) {
      list.source = path;
      if (file) list.problems.push_back("cannot read " + path);
      return list;
    }
    std::stringstream text;
    text << in.rdbuf();
    std::string contents = text.str();
    list = hosts_parse(contents, path);
    secret_wipe(contents);  // it may hold a 'key' line
    // A key there is trusted only if no one but its owner could have put it there. (Everyone may
    // read the file: it is the cluster's list, and a shared key is known to its users by design.)
    if (!list.key.empty() && !std::getenv("FEDCL_KEY") && !std::getenv("FEDCL_KEY_FILE")) {
      KeyFileCheck check = key_file_check(path, status.st_uid, status.st_mode, geteuid());
      if (!check.refused.empty()) setting_problem(list, "the key line of " + check.refused);
    }
  }
  // Set but empty is a mistake (FEDCL_KEY=$UNSET_VARIABLE), not a wish for no key.
  auto variable = [&list](const char *name) -> const char * {
    const char *value = std::getenv(name);
    if (value && !*value) setting_problem(list, std::string(name) + " is set but empty");
    return value && *value ? value : nullptr;
  };
  if (const char *key = variable("FEDCL_KEY")) {
    if (std::string why = key_too_short(key); !why.empty()) setting_problem(list, "FEDCL_KEY: " + why);
    else list.key = Secret(key);
  } else if (const char *path = variable("FEDCL_KEY_FILE")) {
    // A key of one's own, in a file only its user reads (the hosts file is everyone's).
    std::string why, warning;
    list.key = secret_read_file(path, &why, &warning);
    if (list.key.empty()) setting_problem(list, "FEDCL_KEY_FILE: cannot read a key from " + why);
    else if (!warning.empty()) list.warnings.push_back("FEDCL_KEY_FILE: " + warning + ": others who read it can use fedcl as you");
  }
  if (const char *user = variable("FEDCL_USER")) list.user = user;
  if (const char *tls = variable("FEDCL_TLS")) {
    if (!tls_mode_parse(tls, &list.tls)) setting_problem(list, "FEDCL_TLS: wants off, cert or psk, not '" + std::string(tls) + "'");
  }
  if (const char *ca = variable("FEDCL_TLS_CA")) list.tls_ca = ca;
  return list;
}

}  // namespace fedcl
