// The #include lines of an OpenCL C text, as both ends read them: the client to find the headers it
// sends with a program (runtime/build_includes.h), the daemon to point the absolute ones at where it
// wrote them (bridge-daemon/program_headers.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fedcl {

struct IncludeLine {
  std::string name;  // as written between the quotes or the angle brackets
  bool quoted;       // "name" (else <name>)
  size_t at;         // where name starts in the text
};

// Each `#include "name"` and `#include <name>` of text, in order (a line that builds its name by
// macro is not one).
std::vector<IncludeLine> include_lines(const std::string &text);

// path with "." and "a/.." folded, a leading "/" kept ("/a/./b/../c.h" is "/a/c.h"); "" when it
// climbs out of its folder (or of the root) or names no file.
std::string include_path_folded(const std::string &path);

}  // namespace fedcl
