// Which host a process runs on, as both ends of a connection tell it (Hello.host, HelloReply.host):
// a keyed hash of the machine's id (/etc/machine-id) and of this boot's id
// (/proc/sys/kernel/random/boot_id). Two processes with the same identity run on the same running
// kernel and may reach each other's local sockets and shared memory (docs/design-decisions.md,
// "Same node"). The hash keeps the machine id itself off the wire, as systemd asks of programs that
// show it.
#pragma once

#include <string>

namespace fedcl {

constexpr size_t kHostIdentityBytes = 16;

// This host's identity (computed once); "" when neither id can be read (then no process counts as
// being on the same host).
const std::string &host_identity();
// The identity of these ids' host, for tests.
std::string host_identity_of(const std::string &machine_id, const std::string &boot_id);

}  // namespace fedcl
