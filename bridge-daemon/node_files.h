// Files of the daemon's node as sources and sinks of buffers (Request.nodeFile): the data that
// already lives on a node's storage never crosses to the client. fedcld serves only files under the
// directory its --file-root names, and none without it.
#pragma once

#include <string>

#include "exec.h"
#include "node_paths.h"

namespace fedcld {

void exec_node_file(Call &call, wire::Request::NodeFile::Reader request);

}  // namespace fedcld
