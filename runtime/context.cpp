#include "context.h"

#include "event_reports.h"

namespace fedcl {

cl_int context_create(cl_context context) {
  std::vector<std::shared_ptr<PendingReply>> verdicts;
  for (const ContextPart &part : context->parts) {
    RequestMessage request;
    auto create = request.root.initCreateContext();
    create.setId(context->id);
    auto ids = create.initDevices(part.device_ids.size());
    for (size_t i = 0; i < part.device_ids.size(); i++) ids.set(i, part.device_ids[i]);
    verdicts.push_back(part.connection->send_call(request));
  }
  cl_int err = CL_SUCCESS;
  for (size_t i = 0; i < verdicts.size(); i++) {
    cl_int status = context->parts[i].connection->wait(*verdicts[i]);
    if (err == CL_SUCCESS) err = status;
  }
  return err;
}

cl_int queue_create(Connection *connection, uint64_t id, cl_context context, uint64_t device,
                    cl_command_queue_properties properties) {
  RequestMessage request;
  auto create = request.root.initCreateQueue();
  create.setId(id);
  create.setContext(context->id);
  create.setDevice(device);
  create.setProperties(properties);
  return connection->post(request);
}

cl_int queue_flush(cl_command_queue queue) {
  RequestMessage request;
  request.root.setFlush(queue->id);
  cl_int err = queue->connection->post(request);
  queue->connection->flush();
  return err;
}

cl_int queue_finish(cl_command_queue queue) {
  std::vector<_cl_event *> unreported = take_unreported(queue);  // before the request: what it covers
  RequestMessage request;
  request.root.setFinish(queue->id);
  auto reply = queue->connection->call(request);
  complete_unreported(queue, unreported, *reply);
  return reply->status;
}

}  // namespace fedcl
