#include "include_lines.h"

#include <sstream>

namespace fedcl {

std::vector<IncludeLine> include_lines(const std::string &text) {
  std::vector<IncludeLine> found;
  for (size_t line = 0; line < text.size();) {
    size_t end = text.find('\n', line);
    if (end == std::string::npos) end = text.size();
    size_t at = text.find_first_not_of(" \t", line);
    if (at < end && text[at] == '#') {
      at = text.find_first_not_of(" \t", at + 1);
      if (at < end && text.compare(at, 7, "include") == 0) {
        at = text.find_first_not_of(" \t", at + 7);
        if (at < end && (text[at] == '"' || text[at] == '<')) {
          size_t close = text.find(text[at] == '"' ? '"' : '>', at + 1);
          if (close < end && close > at + 1) found.push_back({text.substr(at + 1, close - at - 1), text[at] == '"', at + 1});
        }
      }
    }
    line = end + 1;
  }
  return found;
}

std::string include_path_folded(const std::string &path) {
  std::vector<std::string> parts;
  std::istringstream pieces(path);
  for (std::string part; std::getline(pieces, part, '/');) {
    if (part.empty() || part == ".") continue;
    if (part != "..") parts.push_back(part);
    else if (parts.empty()) return {};
    else parts.pop_back();
  }
  if (parts.empty()) return {};
  std::string folded = !path.empty() && path.front() == '/' ? "/" : "";
  for (size_t i = 0; i < parts.size(); i++) folded += (i ? "/" : "") + parts[i];
  return folded;
}

}  // namespace fedcl
