// What a session worker shows the main process in a page of memory they share (a memfd the main
// process makes and the worker inherits): that its loop turns, what its session holds, and, when
// it dies of a signal, in which backend call. The worker writes it; the main process reads it, also
// after the worker is gone.
#pragma once

#include <atomic>
#include <cstdint>

namespace fedcld {

struct WorkerBoard {
  std::atomic<uint64_t> loop_turned_ns{0};  // uv_hrtime() when its loop last turned (every second)
  std::atomic<uint64_t> memory_bytes{0};    // buffers and images its session holds
  std::atomic<uint64_t> objects{0};
  std::atomic<int32_t> crash_signal{0};     // the signal it died of, once its handler ran
  char crash_call[128] = {};                // the backend call its crashing thread was in ("" none)
  char last_call[128] = {};                 // the backend call started last, by any thread
};

// The board in fd (a memfd of sizeof(WorkerBoard)), mapped shared; null when it cannot be.
WorkerBoard *board_map(int fd);
// A new memfd holding a zeroed board; -1 when none can be made.
int board_create();

// The backend call this thread is in, for the crash report: set for the length of a scope. name
// is a string literal (the handler reads it while the heap may be corrupt).
class BackendCall {
 public:
  explicit BackendCall(const char *name);
  ~BackendCall();
  BackendCall(const BackendCall &) = delete;

 private:
  const char *outer_;
};

// The worker: on a crashing signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) its handler writes
// the signal and the calls into board and a line with a backtrace to stderr, then lets the signal
// end the process as it would have. Again after anything that may have put handlers of its own
// there (the backend's start, a build: PoCL's LLVM does).
void crash_report_install(WorkerBoard *board);
// The same, with the board given before (nothing where none was: the fuzz target's workers).
void crash_report_renew();

}  // namespace fedcld
