#include "build_includes.h"

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "include_lines.h"

namespace fedcl {

namespace {

struct Option {
  std::string text;    // as written (an -I with its folder)
  std::string folder;  // an -I's folder, its quotes taken away; "" for any other option
};

// options split at blanks (a double-quoted part keeps its blanks), each as written; -I's folder
// found in "-I dir" and "-Idir".
std::vector<Option> split_options(const std::string &options) {
  struct Word {
    std::string text, unquoted;
  };
  std::vector<Word> words;
  Word word;
  bool quoted = false, any = false;
  for (char c : options) {
    if (!quoted && (c == ' ' || c == '\t' || c == '\n')) {
      if (any) words.push_back(word);
      word = {};
      any = false;
      continue;
    }
    word.text += c;
    any = true;
    if (c == '"') quoted = !quoted;
    else word.unquoted += c;
  }
  if (any) words.push_back(word);
  std::vector<Option> split;
  for (size_t i = 0; i < words.size(); i++) {
    if (words[i].unquoted == "-I" && i + 1 < words.size()) {
      split.push_back({words[i].text + " " + words[i + 1].text, words[i + 1].unquoted});
      i++;
    } else if (words[i].unquoted.rfind("-I", 0) == 0 && words[i].unquoted.size() > 2) {
      split.push_back({words[i].text, words[i].unquoted.substr(2)});
    } else {
      split.push_back({words[i].text, ""});
    }
  }
  return split;
}

bool is_folder(const std::string &path) {
  struct stat status {};
  return stat(path.c_str(), &status) == 0 && S_ISDIR(status.st_mode);
}

// A relative path folded (include_path_folded); "" when it is absolute or climbs out of its folder.
std::string normal(const std::string &path) { return path.empty() || path.front() == '/' ? "" : include_path_folded(path); }

bool is_file(const std::string &path, size_t *size) {
  struct stat status {};
  if (stat(path.c_str(), &status) != 0 || !S_ISREG(status.st_mode)) return false;
  *size = size_t(status.st_size);
  return true;
}

std::string read_text(const std::string &path, bool *ok) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  *ok = bool(in) || in.eof();
  return text.str();
}

}  // namespace

BuildIncludes build_includes(const std::string &options, const std::string &source) {
  BuildIncludes result;
  std::vector<std::string> folders;
  for (const Option &option : split_options(options)) {
    if (!option.folder.empty() && is_folder(option.folder)) {
      folders.push_back(option.folder);
      continue;
    }
    result.options += (result.options.empty() ? "" : " ") + option.text;
  }
  if (folders.empty()) return {options, {}};
  result.folders.resize(folders.size());
  // What is still to be found: (name, the folder index and path of the file that includes it; -1: the source).
  struct Wanted {
    std::string name;
    bool quoted;
    int from_folder;
    std::string from_path;
  };
  std::vector<Wanted> wanted;
  for (const IncludeLine &line : include_lines(source)) wanted.push_back({line.name, line.quoted, -1, ""});
  std::set<std::pair<size_t, std::string>> taken;
  size_t bytes = 0;
  while (!wanted.empty()) {
    Wanted want = wanted.back();
    wanted.pop_back();
    std::vector<std::pair<size_t, std::string>> candidates;
    if (want.quoted && want.from_folder >= 0) {
      std::string beside = want.from_path.substr(0, want.from_path.rfind('/') + 1) + want.name;
      if (want.from_path.find('/') == std::string::npos) beside = want.name;
      candidates.emplace_back(size_t(want.from_folder), normal(beside));
    }
    for (size_t k = 0; k < folders.size(); k++) candidates.emplace_back(k, normal(want.name));
    for (auto &[k, path] : candidates) {
      if (path.empty()) continue;
      std::string file = folders[k] + "/" + path;
      size_t size = 0;
      if (!is_file(file, &size)) continue;
      if (taken.insert({k, path}).second && bytes + size <= kMaxIncludeBytes) {
        bool ok = false;
        std::string text = read_text(file, &ok);
        if (ok) {
          bytes += text.size();
          for (const IncludeLine &line : include_lines(text)) wanted.push_back({line.name, line.quoted, int(k), path});
          result.folders[k].push_back({path, std::move(text)});
        }
      }
      break;  // the first found is the one the compiler takes
    }
  }
  return result;
}

std::vector<IncludeFile> absolute_includes(const std::string &source) {
  std::vector<IncludeFile> found;
  std::vector<std::string> wanted;
  for (const IncludeLine &line : include_lines(source))
    if (line.quoted && line.name.front() == '/') wanted.push_back(line.name);
  std::set<std::string> taken;
  size_t bytes = 0;
  while (!wanted.empty()) {
    std::string path = include_path_folded(wanted.back());
    wanted.pop_back();
    size_t size = 0;
    if (path.empty() || !is_file(path, &size) || !taken.insert(path).second || bytes + size > kMaxIncludeBytes) continue;
    bool ok = false;
    std::string text = read_text(path, &ok);
    if (!ok) continue;
    bytes += text.size();
    // What it includes by a quoted name is found beside it first: sent, where it is.
    for (const IncludeLine &line : include_lines(text))
      if (line.quoted) wanted.push_back(line.name.front() == '/' ? line.name : path.substr(0, path.rfind('/') + 1) + line.name);
    found.push_back({path, std::move(text)});
  }
  return found;
}

}  // namespace fedcl
