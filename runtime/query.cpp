#include "query.h"

namespace fedcl {

cl_int remote_info(Connection *connection, uint64_t object, wire::InfoKind kind, cl_uint param, uint64_t device,
                   cl_uint arg_index, std::vector<uint8_t> *bytes, const void *input, size_t input_size) {
  RequestMessage request;
  auto get = request.root.initGetInfo();
  get.setObject(object);
  get.setKind(kind);
  get.setParam(param);
  get.setDevice(device);
  get.setArgIndex(arg_index);
  if (input_size) get.setInput(kj::arrayPtr(static_cast<const uint8_t *>(input), input_size));
  auto pending = connection->call(request);
  if (pending->status != CL_SUCCESS) return pending->status;
  auto data = pending->reply().getInfo();
  bytes->assign(data.begin(), data.end());
  return CL_SUCCESS;
}

}  // namespace fedcl
