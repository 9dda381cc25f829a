// Headers a program's source includes from the application's -I folders, which the daemon's node
// may not have (another machine) or may not let the session read (its worker is confined to its
// own folder: docs/design-decisions.md, "Workers are a boundary"). The client reads them, as a local
// compiler would, and sends them with the build; the daemon writes them into its worker's folder and
// names that folder with -I instead.
#pragma once

#include <string>
#include <vector>

namespace fedcl {

struct IncludeFile {
  std::string path;      // relative to its folder, as an #include names it ("a/b.h"); or absolute
  std::string contents;
};

struct BuildIncludes {
  std::string options;                             // options without the -I of the folders below
  std::vector<std::vector<IncludeFile>> folders;   // each -I folder found here, in the options' order
};

// Most bytes of headers sent with one build; headers past it are left for the node to find.
constexpr size_t kMaxIncludeBytes = size_t(16) << 20;

// The -I folders of options that exist here, each with the files that source includes from it
// (#include "x" and <x>, and what those include in turn, in the order a compiler searches: a quoted
// name beside the file that includes it first, then the -I folders); a -I that names no folder here
// stays in options for the node. Without -I, options unchanged and no folders.
BuildIncludes build_includes(const std::string &options, const std::string &source);

// The headers source includes by an absolute name (#include "/a/b.h") that exist here, and what
// those include by a quoted name in turn (beside them, or absolute), each with its absolute path;
// at most kMaxIncludeBytes. They go with the source, and the daemon points those lines at its copies.
std::vector<IncludeFile> absolute_includes(const std::string &source);

}  // namespace fedcl
