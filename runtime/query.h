// Queries fedcl answers by asking a daemon: values it does not mirror (program binaries, kernel
// work-group limits, ...).
#pragma once

#include "handles.h"

namespace fedcl {

// input: the input value of queries that take one (sub-group info).
cl_int remote_info(Connection *connection, uint64_t object, wire::InfoKind kind, cl_uint param, uint64_t device,
                   cl_uint arg_index, std::vector<uint8_t> *bytes, const void *input = nullptr, size_t input_size = 0);

}  // namespace fedcl
