// What a session worker needs of fedcld's options, as the main process sends it (WorkerSetup in
// protocol/fedcl.capnp): everything that decides how a session runs, never a key or TLS's private
// key, which stay in the main process.
#pragma once

#include "daemon_options.h"
#include "fedcl.capnp.h"

namespace fedcld {

void worker_setup_fill(fedcl::wire::WorkerSetup::Builder out, const DaemonSettings &settings, const std::string &node,
                       uint64_t instance);
// The worker's settings from setup (the rest stay at their defaults).
DaemonSettings worker_setup_read(fedcl::wire::WorkerSetup::Reader setup);

}  // namespace fedcld
