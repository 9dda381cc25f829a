// Where fedcld's settings come from: the configuration file first, then the command line on top.
#include <sys/stat.h>

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
  return problems;
}

}  // namespace fedcld
