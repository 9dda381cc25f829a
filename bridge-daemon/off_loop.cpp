#include "off_loop.h"

#include <uv.h>

#include "session.h"
#include "server.h"
#include "worker_board.h"

namespace fedcld {

namespace {

struct OffLoopJob {
  uv_work_t request;
  std::shared_ptr<Session> session;
  uint64_t seq, object;
  const char *backend_call;
  bool alone;
  RequestTiming timing;
  std::unique_ptr<OffLoopWork> work;
  std::optional<RequestError> failed;  // run() failed on the pool: reported on the loop
};

// An exception must not leave libuv's pool thread (it would end the daemon): a failure is reported
// on the loop instead (found by the fuzzer, describing a build's result).
void on_pool(uv_work_t *request) {
  auto &job = *static_cast<OffLoopJob *>(request->data);
  BackendCall backend_call(job.backend_call);
  try {
    job.work->run();
  } catch (const RequestError &error) {
    job.failed = error;
  }
}

void on_loop(uv_work_t *request, int) {
  std::unique_ptr<OffLoopJob> job(static_cast<OffLoopJob *>(request->data));
  crash_report_renew();  // a compiler may have put its own handlers on the crashing signals
  Session &session = *job->session;
  if (session.closed()) return;
  bool succeeded = false;
  try {
    if (job->failed) throw *job->failed;
    succeeded = job->work->finish(session, job->seq);
  } catch (const RequestError &error) {
    if (job->seq != 0) session.send_status(job->seq, error.status, error.message);
    else session.notify_error(job->object, 0, error.status, error.message);
  }
  count_deferred_request(session, job->timing, !succeeded);
  session.background_work_ended(job->alone);
}

}  // namespace

Object &keep_made_object(Session &session, uint64_t seq, uint64_t id, ObjectKind kind, void *handle,
                         cl_context context) {
  session.objects().add(id, kind, handle, context);
  if (seq != 0) session.send_status(seq, CL_SUCCESS, "");
  return session.objects().get(id, kind);
}

void run_off_loop(Call &call, const char *backend_call, std::unique_ptr<OffLoopWork> work, bool alone) {
  auto job = std::make_unique<OffLoopJob>();
  job->session = call.session.shared_from_this();
  job->seq = call.seq;
  job->object = call.object;
  job->backend_call = backend_call;
  job->alone = alone;
  job->work = std::move(work);
  job->request.data = job.get();
  job->timing = defer_request_count();
  if (uv_queue_work(call.session.server().loop(), &job->request, on_pool, on_loop) != 0)
    fail(CL_OUT_OF_HOST_MEMORY, std::string("cannot queue ") + backend_call + " off the loop");
  job.release();
  call.replied = true;
  call.session.background_work_started(alone);
}

}  // namespace fedcld
