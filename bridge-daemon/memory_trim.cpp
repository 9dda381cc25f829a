#include "memory_trim.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>

#include "log.h"

namespace fedcld {

void configure_malloc() {
  // Transfer staging buffers come and go by the megabyte: keep them in the heap for reuse instead of
  // mapping fresh pages (and taking a page fault per 4 KiB) for every chunk. MemoryTrim gives the
  // memory back when sessions close.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // glibc gives every thread that allocates an arena of its own, up to 8 per core, and never frees
  // one: each keeps its fragments after a trim. Two per core keep the backend's per-core workers
  // apart; on 2 cores (a cap of 4) the RSS after rounds with killed clients was 84 MiB against 90-93.
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  mallopt(M_ARENA_MAX, int(std::max(4L, 2 * cores)));
}

MemoryTrim::MemoryTrim(uv_loop_t *loop) : state_(std::make_shared<State>()) { state_->loop = loop; }

MemoryTrim::~MemoryTrim() { state_->gone = true; }

void MemoryTrim::session_closed() {
  if (state_->running) {
    state_->again = true;
    return;
  }
  start(state_);
}

void MemoryTrim::start(std::shared_ptr<State> state) {
  struct Request {
    uv_work_t work;
    std::shared_ptr<State> state;
  };
  auto *request = new Request{{}, state};
  request->work.data = request;
  state->running = true;
  state->again = false;
  int err = uv_queue_work(
      state->loop, &request->work, [](uv_work_t *) { malloc_trim(0); },
      [](uv_work_t *work, int) {
        std::unique_ptr<Request> done(static_cast<Request *>(work->data));
        done->state->running = false;
        if (done->state->again && !done->state->gone) start(done->state);
      });
  if (err != 0) {
    delete request;
    state->running = false;
    FEDCLD_LOG(warn, "cannot trim the heap: %s", uv_strerror(err));
  }
}

}  // namespace fedcld
