#include "keys.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fedcld {

namespace {
std::string trim(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t\r") + 1 - begin);
}
}  // namespace

std::string key_read_file(const std::string &path, std::string *why) {
  std::ifstream file(path);
  std::string key;
  if (!file) *why = path + ": " + std::strerror(errno);
  else if (!std::getline(file, key) || key.empty()) *why = path + ": its first line is empty";
  return key;
}

std::string key_list_read(const std::string &path, std::string *text) {
  std::ifstream file(path);
  if (!file) return path + ": " + std::strerror(errno);
  std::stringstream contents;
  contents << file.rdbuf();
  *text = contents.str();
  return {};
}

KeyList key_list_parse(const std::string &text, const std::string &source) {
  KeyList list;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); number++) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    std::string where = source + ":" + std::to_string(number);
    size_t space = line.find_first_of(" \t");
    std::string user = line.substr(0, space);
    std::string key = space == std::string::npos ? std::string() : trim(line.substr(space));
    if (key.empty()) {
      list.problems.push_back(where + ": user '" + user + "' has no key");
      continue;
    }
    if (key.front() == '/') {
      std::string path = key, why;
      key = key_read_file(path, &why);
      if (key.empty()) {
        list.problems.push_back(where + ": cannot read a key for user '" + user + "': " + why);
        continue;
      }
    }
    if (!list.keys.emplace(user, key).second) list.problems.push_back(where + ": user '" + user + "' listed twice");
  }
  return list;
}

std::string key_for_user(const std::string &cluster_key, const std::string &key_list_path, const std::string &user,
                         std::string *why) {
  if (!key_list_path.empty() && !user.empty()) {
    std::string text, unreadable = key_list_read(key_list_path, &text);
    if (!unreadable.empty()) {
      *why = "cannot read the key list " + unreadable;
      return {};
    }
    KeyList list = key_list_parse(text, key_list_path);
    auto found = list.keys.find(user);
    if (found != list.keys.end()) return found->second;
  }
  if (!cluster_key.empty()) return cluster_key;
  *why = user.empty() ? "the client named no user, and this fedcld has no cluster key (--key-file)"
                      : "user '" + user + "' is not in the key list";
  return {};
}

}  // namespace fedcld
