// Events: answered from the mirror that the daemons' completion notices keep current.
#include "api.h"
#include "command.h"
#include "event_reports.h"
#include "info.h"
#include "runtime.h"

using namespace fedcl;

cl_int fedcl::api::clWaitForEvents(cl_uint num_events, const cl_event *events) {
  if (num_events == 0 || !events) return CL_INVALID_VALUE;
  for (cl_uint i = 0; i < num_events; i++)
    if (!as<_cl_event>(events[i])) return CL_INVALID_EVENT;
  for (cl_uint i = 1; i < num_events; i++)
    if (events[i]->context != events[0]->context) return CL_INVALID_CONTEXT;
  // Waiting implies a flush of the queues involved.
  for (cl_uint i = 0; i < num_events; i++)
    if (events[i]->connection) events[i]->connection->flush();
  bool failed = false;
  for (cl_uint i = 0; i < num_events; i++) {
    if (wait_complete(events[i]) < 0) failed = true;
  }
  return failed ? CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST : CL_SUCCESS;
}

cl_int fedcl::api::clGetEventInfo(cl_event event, cl_event_info param, size_t size, void *value, size_t *size_ret) {
  if (!as<_cl_event>(event)) return CL_INVALID_EVENT;
  switch (param) {
    case CL_EVENT_COMMAND_QUEUE: return info_value(size, value, size_ret, event->queue);
    case CL_EVENT_CONTEXT: return info_value(size, value, size_ret, event->context);
    case CL_EVENT_COMMAND_TYPE: return info_value(size, value, size_ret, event->command_type);
    case CL_EVENT_REFERENCE_COUNT: return info_value(size, value, size_ret, event->refcount.load());
    case CL_EVENT_COMMAND_EXECUTION_STATUS: {
      cl_int status;
      {
        std::lock_guard<std::mutex> lock(event->mutex);
        status = event->status;
      }
      // A program that polls must see progress: make sure the command has left this process, and
      // that its daemon reports it (at the first question, the daemon's answer is waited for).
      if (status > CL_COMPLETE && event->connection) {
        if (event->unreported.load(std::memory_order_acquire)) {
          ask_status(event);
          status = event->status.load(std::memory_order_acquire);
        } else {
          event->connection->flush();
        }
      }
      return info_value(size, value, size_ret, status);
    }
    default: return CL_INVALID_VALUE;
  }
}

cl_int fedcl::api::clGetEventProfilingInfo(cl_event event, cl_profiling_info param, size_t size, void *value,
                                           size_t *size_ret) {
  if (!as<_cl_event>(event)) return CL_INVALID_EVENT;
  if (!event->queue || !(event->queue->properties & CL_QUEUE_PROFILING_ENABLE)) return CL_PROFILING_INFO_NOT_AVAILABLE;
  std::lock_guard<std::mutex> lock(event->mutex);
  if (event->status != CL_COMPLETE || !event->has_profiling) return CL_PROFILING_INFO_NOT_AVAILABLE;
  switch (param) {
    case CL_PROFILING_COMMAND_QUEUED: return info_value(size, value, size_ret, event->profiling[0]);
    case CL_PROFILING_COMMAND_SUBMIT: return info_value(size, value, size_ret, event->profiling[1]);
    case CL_PROFILING_COMMAND_START: return info_value(size, value, size_ret, event->profiling[2]);
    case CL_PROFILING_COMMAND_END:
    case CL_PROFILING_COMMAND_COMPLETE: return info_value(size, value, size_ret, event->profiling[3]);
    default: return CL_INVALID_VALUE;
  }
}

cl_int fedcl::api::clSetEventCallback(cl_event event, cl_int type, void(CL_CALLBACK *function)(cl_event, cl_int, void *),
                                      void *user_data) {
  if (!as<_cl_event>(event)) return CL_INVALID_EVENT;
  if (!function || (type != CL_COMPLETE && type != CL_RUNNING && type != CL_SUBMITTED)) return CL_INVALID_VALUE;
  cl_int status;
  {
    std::lock_guard<std::mutex> lock(event->mutex);
    status = event->status;
    // fedcl learns only of completion: callbacks for earlier states run when the command completes,
    // which is past the state they asked for, as the specification allows.
    if (status > CL_COMPLETE && status > type) event->callbacks.push_back({type, function, user_data});
  }
  if (status > CL_COMPLETE && status > type) {
    ask_completion(event);
    return CL_SUCCESS;
  }
  hold(event);
  Runtime::get().defer([event, function, user_data, status, type] {
    function(event, status < 0 ? status : type, user_data);
    unhold(event);
  });
  return CL_SUCCESS;
}

cl_event fedcl::api::clCreateUserEvent(cl_context context, cl_int *errcode_ret) {
  if (!as<_cl_context>(context)) return set_error(errcode_ret, CL_INVALID_CONTEXT), nullptr;
  set_error(errcode_ret, CL_SUCCESS);
  return event_create(context, nullptr, CL_COMMAND_USER, CL_SUBMITTED);
}

cl_int fedcl::api::clSetUserEventStatus(cl_event event, cl_int status) {
  if (!as<_cl_event>(event) || event->command_type != CL_COMMAND_USER) return CL_INVALID_EVENT;
  if (status != CL_COMPLETE && status >= 0) return CL_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(event->mutex);
    if (event->status != CL_SUBMITTED) return CL_INVALID_OPERATION;
  }
  Runtime::get().complete(event, status, nullptr);
  return CL_SUCCESS;
}
