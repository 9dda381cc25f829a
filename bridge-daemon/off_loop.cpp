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

class MemFromHostWork final : public OffLoopWork {
 public:
  MemFromHostWork(uint64_t id, cl_context context, uint64_t charged, std::shared_ptr<uint8_t[]> contents,
                  const char *backend_call, std::function<cl_mem(void *, cl_int *)> make)
      : id_(id), context_(context), charged_(charged), contents_(std::move(contents)), backend_call_(backend_call),
        make_(std::move(make)) {}
  ~MemFromHostWork() override {
    if (mem_) clReleaseMemObject(mem_);
  }
  void run() override {
    cl_int err = CL_SUCCESS;
    mem_ = make_(contents_.get(), &err);
    check(err, backend_call_);
    contents_.reset();  // copied
  }
  bool finish(Session &session, uint64_t seq) override {
    cl_mem mem = mem_;
    mem_ = nullptr;  // the session's now (add releases it if it refuses the id)
    keep_made_object(session, seq, id_, ObjectKind::mem, mem, context_);
    if (charged_) session.objects().attach_bytes(id_, charged_);
    return true;
  }

 private:
  uint64_t id_;
  cl_context context_;
  uint64_t charged_;
  std::shared_ptr<uint8_t[]> contents_;
  const char *backend_call_;
  std::function<cl_mem(void *, cl_int *)> make_;
  cl_mem mem_ = nullptr;
};

}  // namespace

void make_mem_object(Call &call, uint64_t id, cl_context context, uint64_t contents_bytes, uint64_t charged,
                     std::shared_ptr<uint8_t[]> contents, const char *backend_call,
                     std::function<cl_mem(void *host, cl_int *err)> make) {
  if (contents_bytes >= kOffLoopContentsBytes)
    return run_off_loop(call, backend_call,
                        std::make_unique<MemFromHostWork>(id, context, charged, std::move(contents), backend_call,
                                                          std::move(make)),
                        true);
  cl_int err = CL_SUCCESS;
  cl_mem mem = make(contents.get(), &err);
  check(err, backend_call);
  ObjectTable &objects = call.session.objects();
  objects.add(id, ObjectKind::mem, mem, context);
  if (charged) objects.attach_bytes(id, charged);
}

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
