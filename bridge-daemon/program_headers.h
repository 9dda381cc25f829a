// The application's headers a program builds with, written where the worker may read them: a
// folder of its own under TMPDIR (the worker's own folder when confined: docs/design-decisions.md,
// "Workers are a boundary"), removed with the last holder. The -I folders of a build
// (BuildProgram.includes) each become one; the headers a source includes by absolute name
// (CreateProgramWithSource.headers) one for the program, its lines pointed at the copies.
#pragma once

#include <memory>
#include <string>

#include "fedcl.capnp.h"

namespace fedcld {

class HeaderFolder {
 public:
  // A new, empty folder; fails (fail(): CL_OUT_OF_RESOURCES) when none can be made.
  static std::shared_ptr<HeaderFolder> make();
  HeaderFolder(const HeaderFolder &) = delete;
  ~HeaderFolder();
  const std::string &path() const { return path_; }
  // Writes contents at name under the folder, its folders made on the way; name is relative and
  // stays inside (no "." or ".." part), else fail() with CL_INVALID_BUILD_OPTIONS.
  void write(const std::string &name, capnp::Data::Reader contents);

 private:
  explicit HeaderFolder(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// A program's source with the headers it includes by absolute name written into a folder, and
// every `#include "/a/b.h"` of a written header (in the source and in the headers) naming its copy.
struct SourceWithHeaders {
  std::string source;
  std::shared_ptr<HeaderFolder> folder;  // null when there were none
};
SourceWithHeaders source_with_headers(const std::string &source,
                                      capnp::List<fedcl::wire::IncludeFile>::Reader headers);

}  // namespace fedcld
