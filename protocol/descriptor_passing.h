// A descriptor passed beside bytes on a Unix socket (SCM_RIGHTS): a local session's shared memory
// (the client, and the tests that speak for one), a node file the main process opened for a worker
// (bridge-daemon/node_file_broker.h).
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

namespace fedcl {

// sendmsg of the count pieces of iov with descriptor beside their first byte (none when descriptor
// is negative), again after EINTR: what sendmsg returned (the bytes that left, or -1 with errno).
ssize_t send_with_descriptor(int socket, const iovec *iov, int count, int descriptor);

}  // namespace fedcl
