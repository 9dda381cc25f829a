// The syntax of fedcld.conf: `name = value` lines, '#' comments (at the start of a line or after
// blanks), blank lines ignored. Only the syntax: what a name means is daemon_options.h's business.
#pragma once

#include <string>
#include <vector>

namespace fedcld {

struct ConfigEntry {
  std::string name;
  std::string value;
  int line;
};

struct ConfigProblem {
  int line;
  std::string message;  // "SOURCE:LINE: why"
};

struct ConfigText {
  std::vector<ConfigEntry> entries;
  std::vector<ConfigProblem> problems;  // one per line that is not `name = value`
};

ConfigText config_parse(const std::string &text, const std::string &source);

}  // namespace fedcld
