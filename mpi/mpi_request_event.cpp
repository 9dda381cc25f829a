// clCreateEventFromMPIRequest: a user event of the context that the loop completes when the MPI
// request does, so that commands wait for a host's non-blocking MPI call as for any event.
#include <cstdio>

#include "mpi_operations.h"

namespace fedcl_mpi {

namespace {

class RequestEvent final : public Operation {
 public:
  RequestEvent(MPI_Request request, cl_event event) : request_(request), event_(event) {}

  bool step(Progress &) override {
    int done = 0;
    int err = MPI_Test(&request_, &done, MPI_STATUS_IGNORE);  // returns the request's error, if any
    if (err == MPI_SUCCESS && !done) return false;
    if (err != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING] = "";
      int length = 0;
      MPI_Error_string(err, text, &length);
      std::fprintf(stderr, "fedcl: the MPI request of an event from clCreateEventFromMPIRequest failed: %s\n", text);
    }
    clSetUserEventStatus(event_, err == MPI_SUCCESS ? CL_COMPLETE : CL_OUT_OF_RESOURCES);
    clReleaseEvent(event_);
    return true;
  }

 private:
  MPI_Request request_;
  cl_event event_;
};

}  // namespace

cl_event start_request_event(cl_context context, MPI_Request request, cl_int *err) {
  cl_event event = clCreateUserEvent(context, err);
  if (*err != CL_SUCCESS) return nullptr;
  clRetainEvent(event);  // the operation's, until it sets the status
  Progress::get().add(std::make_shared<RequestEvent>(request, event));
  return event;
}

}  // namespace fedcl_mpi
