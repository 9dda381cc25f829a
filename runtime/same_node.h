// Whether the driver reaches daemons of its own host over their local socket and shared memory
// (docs/design-decisions.md, "Same node"): FEDCL_LOCAL=auto (the default) where a daemon offers it,
// off never (TCP, as to any other host), on always (a daemon of this host that cannot be reached
// so is not used, so that a test run proves every session took the local path).
#pragma once

namespace fedcl {

enum class LocalMode { off, automatic, on };

LocalMode local_mode();

}  // namespace fedcl
