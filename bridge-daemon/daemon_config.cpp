// Where fedcld's settings come from: the configuration file first, then the command line on top.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "config_file.h"
#include "daemon_options.h"

namespace fedcld {

namespace {

struct CommandLineOption {
  const DaemonOption *option;
  std::string value;
};

// Splits argv into options and values; --name=value is accepted as well as --name value.
std::vector<CommandLineOption> scan_command_line(int argc, char **argv, std::vector<std::string> &problems) {
  std::vector<CommandLineOption> found;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i], value;
    bool inline_value = false;
    if (arg == "-h") arg = "--help";
    if (arg.compare(0, 2, "--") != 0) {
      problems.push_back("'" + arg + "' is not an option (options start with --)");
      continue;
    }
    size_t equals = arg.find('=');
    if (equals != std::string::npos) {
      value = arg.substr(equals + 1);
      arg = arg.substr(0, equals);
      inline_value = true;
    }
    const DaemonOption *option = find_daemon_option(arg.substr(2));
    if (!option) {
      problems.push_back("unknown option '" + arg + "'");
      continue;
    }
    if (option->value && !inline_value) {
      if (i + 1 >= argc) {
        problems.push_back(arg + " needs a value (" + option->value + ")");
        continue;
      }
      value = argv[++i];
    } else if (!option->value && inline_value) {
      problems.push_back(arg + " takes no value");
      continue;
    }
    found.push_back({option, value});
  }
  return found;
}

bool exists(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// Returns "" with the file's text, or why it cannot be read.
std::string read_file(const std::string &path, std::string *text) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  std::ifstream file(path);
  if (!file) return std::strerror(errno);
  std::stringstream contents;
  contents << file.rdbuf();
  *text = contents.str();
  return {};
}

}  // namespace

std::vector<std::string> apply_daemon_config(const std::string &text, const std::string &source,
                                             DaemonSettings &settings) {
  ConfigText parsed = config_parse(text, source);
  std::vector<ConfigProblem> problems = parsed.problems;
  std::map<std::string, int> first_line;
  for (const ConfigEntry &entry : parsed.entries) {
    std::string where = source + ":" + std::to_string(entry.line) + ": ";
    const DaemonOption *option = find_daemon_option(entry.name);
    std::string why;
    if (!option)
      why = "unknown option '" + entry.name + "'";
    else if (!option->in_file)
      why = "'" + entry.name + "' belongs on the command line (--" + entry.name + "), not in the file";
    else if (first_line.count(entry.name))
      why = entry.name + " is set again (first on line " + std::to_string(first_line[entry.name]) + ")";
    else if (std::string refused = option->apply(entry.value, settings); !refused.empty())
      why = entry.name + " " + refused;
    if (!why.empty()) problems.push_back({entry.line, where + why});
    first_line.emplace(entry.name, entry.line);
  }
  // In the order of the file's lines, however each was found.
  std::stable_sort(problems.begin(), problems.end(),
                   [](const ConfigProblem &a, const ConfigProblem &b) { return a.line < b.line; });
  std::vector<std::string> messages;
  for (ConfigProblem &problem : problems) messages.push_back(std::move(problem.message));
  return messages;
}

std::vector<std::string> load_daemon_settings(int argc, char **argv, DaemonSettings &settings) {
  std::vector<std::string> problems;
  std::vector<CommandLineOption> command_line = scan_command_line(argc, argv, problems);
  std::string config = kDefaultDaemonConfig;
  bool named = false;
  for (const CommandLineOption &given : command_line) {
    std::string name = given.option->name;
    if (name == "help") settings.help = true;
    if (name == "config") {
      config = given.value;
      named = true;
    }
  }
  if (settings.help) return {};
  // A missing default file is normal (nothing configured); a file someone named must be there.
  if (named || exists(config)) {
    std::string text, why = read_file(config, &text);
    if (!why.empty()) {
      problems.push_back("cannot read the configuration file " + config + ": " + why);
    } else {
      std::vector<std::string> found = apply_daemon_config(text, config, settings);
      problems.insert(problems.end(), found.begin(), found.end());
    }
  }
  for (const CommandLineOption &given : command_line) {
    std::string refused = given.option->apply(given.value, settings);
    if (!refused.empty()) problems.push_back(std::string("--") + given.option->name + " " + refused);
  }
  daemon_settings_check(settings, problems);
  return problems;
}

bool loopback_host(const std::string &host) {
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    // ::ffff:127.x.y.z
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return host == "localhost";
}

void daemon_settings_check(DaemonSettings &settings, std::vector<std::string> &problems) {
  ServerOptions &options = settings.server;
  if (!options.requires_key()) {
    std::string open_address;
    if (!loopback_host(options.host)) open_address = "listen = " + options.host + ":" + std::to_string(options.port);
    else if (!options.peer_address.empty() && !loopback_host(options.peer_address.substr(0, options.peer_address.rfind(':'))))
      open_address = "peer-address = " + options.peer_address;
    if (!open_address.empty() && !options.allow_unauthenticated)
      problems.push_back(open_address + " serves other machines, but neither key-list nor key-file is set: anyone who "
                         "reaches the port could run code on this node. Set key-list (per-user keys) or key-file, or "
                         "allow-unauthenticated = yes to serve without keys all the same");
    else if (!open_address.empty())
      settings.warnings.push_back("serving without keys on " + open_address.substr(open_address.find("= ") + 2) +
                                  " (allow-unauthenticated = yes): anyone who reaches the port can run code on this node");
  }
  if (options.session_accounts && geteuid() != 0)
    problems.push_back("session-accounts = yes needs fedcld started as root: only root starts a worker as another account");
  else if (options.session_accounts && options.key_list.empty())
    problems.push_back("session-accounts = yes needs key-list: its users name the accounts sessions run as");
  else if (!options.session_accounts && geteuid() == 0)
    settings.warnings.push_back("fedcld runs as root, and so do its session workers: run it as an unprivileged user (the "
                                "unit does), or set session-accounts = yes to run each session as its user's account");
  if (options.peer_key.empty() && !options.key.empty()) {
    options.peer_key = options.key;
    settings.warnings.push_back("key-file's key is also the daemons' key on peer links: a user who holds it can pose as "
                                "a daemon to other daemons. Give the daemons a key of their own with peer-key-file");
  }
}

}  // namespace fedcld
