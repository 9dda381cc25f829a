#include "program_headers.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>

#include "exec.h"
#include "include_lines.h"
#include "log.h"

namespace fedcld {

std::shared_ptr<HeaderFolder> HeaderFolder::make() {
  const char *tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/fedcld-headers-XXXXXX";
  if (!mkdtemp(path.data())) fail(CL_OUT_OF_RESOURCES, "cannot make a folder for the program's headers: " + std::string(strerror(errno)));
  return std::shared_ptr<HeaderFolder>(new HeaderFolder(path));
}

HeaderFolder::~HeaderFolder() {
  nftw(path_.c_str(), [](const char *name, const struct stat *, int type, FTW *) {
    return type == FTW_DP ? rmdir(name) : unlink(name);
  }, 16, FTW_DEPTH | FTW_PHYS);
}

void HeaderFolder::write(const std::string &name, capnp::Data::Reader contents) {
  bool bad = name.empty() || name.front() == '/' || name.back() == '/' || name.find('\0') != std::string::npos;
  for (size_t at = 0; !bad && at <= name.size();) {
    size_t end = std::min(name.find('/', at), name.size());
    std::string part = name.substr(at, end - at);
    bad = part.empty() || part == "." || part == "..";
    if (!bad && end < name.size()) mkdir((path_ + "/" + name.substr(0, end)).c_str(), 0700);
    at = end + 1;
  }
  if (bad) fail(CL_INVALID_BUILD_OPTIONS, "a header's path " + log_quote(name) + " is not a path inside its folder");
  std::ofstream out(path_ + "/" + name, std::ios::binary);
  out.write(reinterpret_cast<const char *>(contents.begin()), std::streamsize(contents.size()));
  if (!out) fail(CL_OUT_OF_RESOURCES, "cannot write the program's header " + log_quote(name));
}

namespace {

// text with each `#include "P"` whose P, folded ("/a/./b.h" is "/a/b.h"), is in written naming
// folder + P instead.
std::string point_at_copies(const std::string &text, const std::set<std::string> &written, const std::string &folder) {
  std::string pointed;
  size_t from = 0;
  for (const fedcl::IncludeLine &line : fedcl::include_lines(text)) {
    if (!line.quoted || line.name.front() != '/' || !written.count(fedcl::include_path_folded(line.name))) continue;
    pointed.append(text, from, line.at - from);
    pointed += folder + fedcl::include_path_folded(line.name);
    from = line.at + line.name.size();
  }
  return pointed.append(text, from, std::string::npos);
}

}  // namespace

SourceWithHeaders source_with_headers(const std::string &source,
                                      capnp::List<fedcl::wire::IncludeFile>::Reader headers) {
  if (headers.size() == 0) return {source, nullptr};
  SourceWithHeaders result{{}, HeaderFolder::make()};
  std::set<std::string> written;
  for (auto header : headers) {
    std::string path = header.getPath();
    if (path.empty() || path.front() != '/' || fedcl::include_path_folded(path) != path)
      fail(CL_INVALID_VALUE, "an included header's path " + log_quote(path) + " is not absolute and folded");
    written.insert(path);
  }
  for (auto header : headers) {
    std::string text(reinterpret_cast<const char *>(header.getContents().begin()), header.getContents().size());
    std::string pointed = point_at_copies(text, written, result.folder->path());
    result.folder->write(std::string(header.getPath()).substr(1),
                         capnp::Data::Reader(reinterpret_cast<const uint8_t *>(pointed.data()), pointed.size()));
  }
  result.source = point_at_copies(source, written, result.folder->path());
  return result;
}

}  // namespace fedcld
