#include "config_file.h"

#include <cctype>
#include <sstream>

namespace fedcld {

namespace {

const char kBlanks[] = " \t\r";

std::string trim(const std::string &text) {
  size_t begin = text.find_first_not_of(kBlanks);
  if (begin == std::string::npos) return {};
  return text.substr(begin, text.find_last_not_of(kBlanks) - begin + 1);
}

// A '#' starts a comment at the line's start or after a blank, so that values such as paths may
// still hold one ("/srv/run#2").
std::string strip_comment(const std::string &line) {
  for (size_t i = 0; i < line.size(); i++)
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) return line.substr(0, i);
  return line;
}

bool valid_name(const std::string &name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-'))
      return false;
  return true;
}

}  // namespace

ConfigText config_parse(const std::string &text, const std::string &source) {
  ConfigText parsed;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); number++) {
    std::string content = trim(strip_comment(line));
    if (content.empty()) continue;
    std::string where = source + ":" + std::to_string(number) + ": ";
    size_t equals = content.find('=');
    if (equals == std::string::npos) {
      parsed.problems.push_back({number, where + "'" + content + "' is not a 'name = value' line"});
      continue;
    }
    std::string name = trim(content.substr(0, equals)), value = trim(content.substr(equals + 1));
    if (name.size() > 2 && name.compare(0, 2, "--") == 0) {
      parsed.problems.push_back({number, where + "write '" + name.substr(2) + "', without the dashes of the command line"});
    } else if (!valid_name(name)) {
      parsed.problems.push_back({number, where + "'" + name + "' is not an option name (lower-case letters, digits and '-')"});
    } else if (value.empty()) {
      parsed.problems.push_back({number, where + name + " has no value"});
    } else {
      parsed.entries.push_back({name, value, number});
    }
  }
  return parsed;
}

}  // namespace fedcld
