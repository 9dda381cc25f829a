#include "node_paths.h"

#include <climits>
#include <cstdlib>

namespace fedcld {

namespace {

std::string canonical(const std::string &path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) ? std::string(resolved) : std::string();
}

bool inside(const std::string &root, const std::string &path) {
  return path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/';
}

}  // namespace

std::string node_file_path(const std::string &root, const std::string &path, bool for_writing, std::string *error) {
  if (root.empty()) return *error = "fedcld serves no files: it was started without --file-root", "";
  if (path.empty()) return *error = "an empty path", "";
  for (size_t start = 0; start <= path.size();) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (path.compare(start, end - start, "..") == 0 && end - start == 2)
      return *error = "'" + path + "' has a '..' component", "";
    start = end + 1;
  }
  std::string joined = path.front() == '/' ? path : root + "/" + path;
  if (!inside(root, joined)) return *error = "'" + path + "' is outside the file root " + root, "";
  // Symbolic links may lead out: what the path really names must still be inside the root.
  std::string directory = joined.substr(0, joined.rfind('/'));
  std::string real_directory = directory == root ? root : canonical(directory);
  if (real_directory.empty()) return *error = "no directory '" + directory + "'", "";
  if (real_directory != root && !inside(root, real_directory))
    return *error = "'" + path + "' leads outside the file root " + root + " (through a symbolic link)", "";
  std::string name = joined.substr(joined.rfind('/') + 1);
  if (name.empty()) return *error = "'" + path + "' names a directory", "";
  std::string real = real_directory + "/" + name;
  if (!for_writing) {
    std::string target = canonical(real);
    if (target.empty()) return *error = "no file '" + path + "' under " + root, "";
    if (!inside(root, target)) return *error = "'" + path + "' leads outside the file root " + root + " (through a symbolic link)", "";
  }
  return real;
}

}  // namespace fedcld
