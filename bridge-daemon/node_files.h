// Files of the daemon's node as sources and sinks of buffers (Request.nodeFile): the data that
// already lives on a node's storage never crosses to the client. fedcld serves only files under the
// directory its --file-root names, and none without it; each session only those of its user's
// folder there (node_folders.h), opened without following any link (node_paths.h). A save writes
// its range into the file as it is (no truncation), or into a new file, 0600.
#pragma once

#include <string>

#include "exec.h"

namespace fedcld {

void exec_node_file(Call &call, wire::Request::NodeFile::Reader request);

}  // namespace fedcld
