// Files of the daemon's node as sources and sinks of buffers (Request.nodeFile): the data that
// already lives on a node's storage never crosses to the client. fedcld serves only files under the
// directory its --file-root names, and none without it.
#pragma once

#include <string>

#include "exec.h"

namespace fedcld {

// The file path names under root: relative to root, or absolute inside it. Refuses ".." components,
// and a path whose directories (and, for reading, the file itself) lead outside root through a
// symbolic link. "" with *error set when refused. root is a canonical directory path, or "" (none).
std::string node_file_path(const std::string &root, const std::string &path, bool for_writing, std::string *error);

void exec_node_file(Call &call, wire::Request::NodeFile::Reader request);

}  // namespace fedcld
