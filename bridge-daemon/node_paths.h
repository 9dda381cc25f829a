// Which file of the node a client's path names, if fedcld may serve it (node_files.h).
#pragma once

#include <string>

namespace fedcld {

// The file path names under root: relative to root, or absolute inside it. Refuses ".." components,
// and a path whose directories (and, for reading, the file itself) lead outside root through a
// symbolic link. "" with *error set when refused. root is a canonical directory path, or "" (none).
std::string node_file_path(const std::string &root, const std::string &path, bool for_writing, std::string *error);

}  // namespace fedcld
