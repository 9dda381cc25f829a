#include "hosts.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace fedcl {

namespace {

std::string trim(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return {};
  size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

// "host", "host:port", "[v6]:port" -> "host:port"; "" if invalid.
std::string normalize(const std::string &entry) {
  if (entry.empty() || entry.find_first_of(" \t") != std::string::npos) return {};
  size_t colon = entry.rfind(':');
  bool bracketed = entry.front() == '[';
  if (colon == std::string::npos || (bracketed && entry.back() == ']'))
    return entry + ":" + std::to_string(kDefaultPort);
  std::string port = entry.substr(colon + 1);
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos) return {};
  long number = std::strtol(port.c_str(), nullptr, 10);
  if (number <= 0 || number > 65535 || colon == 0) return {};
  return entry;
}

void add_entry(HostList &list, const std::string &entry, const std::string &where) {
  std::string endpoint = normalize(entry);
  if (endpoint.empty())
    list.problems.push_back(where + ": '" + entry + "' is not HOST or HOST:PORT");
  else
    list.endpoints.push_back(endpoint);
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
    if (line.compare(0, 4, "key ") == 0 || line.compare(0, 4, "key\t") == 0) {
      list.key = trim(line.substr(4));
      continue;
    }
    if (line.compare(0, 5, "user ") == 0 || line.compare(0, 5, "user\t") == 0) {
      list.user = trim(line.substr(5));
      continue;
    }
    add_entry(list, line, where);
  }
  return list;
}

HostList hosts_parse_list(const std::string &text) {
  HostList list;
  list.source = "FEDCL_HOSTS";
  std::istringstream entries(text);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
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
    std::string path = file ? file : "/etc/fedcl/hosts.conf";
    std::ifstream in(path);
    if (!in) {
      list.source = path;
      if (file) list.problems.push_back("cannot read " + path);
      return list;
    }
    std::stringstream text;
    text << in.rdbuf();
    list = hosts_parse(text.str(), path);
  }
  if (const char *key = std::getenv("FEDCL_KEY")) {
    list.key = key;
  } else if (const char *path = std::getenv("FEDCL_KEY_FILE")) {
    // A key of one's own, in a file only its user reads (the hosts file is everyone's).
    std::ifstream in(path);
    if (!in || !std::getline(in, list.key) || list.key.empty()) list.problems.push_back("cannot read a key from " + std::string(path));
  }
  if (const char *user = std::getenv("FEDCL_USER")) list.user = user;
  return list;
}

}  // namespace fedcl
