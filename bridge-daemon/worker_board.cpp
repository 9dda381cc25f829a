#include "worker_board.h"

#include <execinfo.h>
#include <initializer_list>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

namespace fedcld {

namespace {

thread_local const char *t_call = nullptr;
WorkerBoard *g_board = nullptr;
// The backend's own SIGFPE handler, where it has one: PoCL's CPU devices recover from an integer
// division by zero in a kernel (OpenCL leaves the result undefined, not the program's end) by
// stepping over the faulting instruction. Ours replaced it and ended the session instead.
struct sigaction g_backend_fpe {};

// Only async-signal-safe work from here on: no allocation, no stdio, no locks.
void copy_name(char *to, size_t size, const char *from) {
  size_t i = 0;
  for (; from && from[i] && i + 1 < size; i++) to[i] = from[i];
  to[i] = '\0';
}

void write_text(const char *text) {
  ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

bool is_handler(const struct sigaction &action) {
  return (action.sa_flags & SA_SIGINFO) ? action.sa_sigaction != nullptr
                                        : action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN;
}

void on_crash(int signum, siginfo_t *info, void *context) {
  bool integer_fault = info && (info->si_code == FPE_INTDIV || info->si_code == FPE_INTOVF);
  if (signum == SIGFPE && integer_fault && is_handler(g_backend_fpe)) {
    if (g_backend_fpe.sa_flags & SA_SIGINFO)
      g_backend_fpe.sa_sigaction(signum, info, context);
    else
      g_backend_fpe.sa_handler(signum);
    return;  // the backend stepped over it (else it ended the process itself)
  }
  if (g_board) {
    copy_name(g_board->crash_call, sizeof g_board->crash_call, t_call);
    g_board->crash_signal.store(signum);
  }
  write_text("fedcld worker: crashed (SIG");
  write_text(sigabbrev_np(signum) ? sigabbrev_np(signum) : "?");
  write_text(") in ");
  write_text(t_call ? t_call : "no backend call");
  write_text("; backtrace:\n");
  void *frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  signal(signum, SIG_DFL);
  raise(signum);  // as the signal would have done
}

void on_stall_report(int) {
  int saved = errno;  // the loop thread goes on where it stood
  write_text("fedcld worker: its loop stands still in ");
  write_text(t_call ? t_call : "no backend call");
  write_text("; backtrace:\n");
  void *frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  errno = saved;
}

}  // namespace

WorkerBoard *board_map(int fd) {
  void *page = mmap(nullptr, sizeof(WorkerBoard), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return page == MAP_FAILED ? nullptr : static_cast<WorkerBoard *>(page);
}

int board_create() {
  int fd = memfd_create("fedcld-worker-board", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (ftruncate(fd, sizeof(WorkerBoard)) != 0) {
    close(fd);
    return -1;
  }
  return fd;  // a fresh memfd reads as zeros: an empty board
}

size_t board_latency_bucket(uint64_t nanos) {
  size_t bucket = 0;
  while (bucket + 1 < kBoardLatencyBuckets && nanos > kBoardLatencyBoundsNs[bucket]) bucket++;
  return bucket;
}

const char *board_transport_name(BoardTransport transport) {
  switch (transport) {
    case BoardTransport::unknown: return "";
    case BoardTransport::tcp: return "tcp";
    case BoardTransport::tls: return "tls";
    case BoardTransport::local: return "local";
    case BoardTransport::local_shared_memory: return "local+shm";
  }
  return "";
}

void board_count_request(WorkerBoard *board, unsigned which, bool failed, uint64_t nanos) {
  if (!board || which >= kBoardRequestKinds) return;
  BoardRequestKind &kind = board->requests[which];
  kind.count.fetch_add(1, std::memory_order_relaxed);
  if (failed) kind.failed.fetch_add(1, std::memory_order_relaxed);
  kind.nanos.fetch_add(nanos, std::memory_order_relaxed);
  kind.buckets[board_latency_bucket(nanos)].fetch_add(1, std::memory_order_relaxed);
}

BackendCall::BackendCall(const char *name) : outer_(t_call) {
  t_call = name;
  // For the main process, should the worker hang or crash on a backend's own thread later: the call
  // started last (a crash of the backend's threads happens in no call of ours). The loop and the
  // thread pool (builds, contexts: off_loop.h) start calls at once: one writes the name at a time,
  // and one that finds it being written leaves it (either is a call started last).
  static std::atomic_flag writing = ATOMIC_FLAG_INIT;
  if (g_board && !writing.test_and_set(std::memory_order_acquire)) {
    copy_name(g_board->last_call, sizeof g_board->last_call, name);
    writing.clear(std::memory_order_release);
  }
}

BackendCall::~BackendCall() { t_call = outer_; }

void crash_report_renew() {
  if (g_board) crash_report_install(g_board);
}

void crash_report_install(WorkerBoard *board) {
  g_board = board;
  // Installed again after the backend loaded: its LLVM puts handlers of its own on these signals,
  // and on SIGABRT glibc's abort() goes to the default action once the first handler returned.
  // backtrace() loads libgcc on its first call, which allocates: done now, not in the handler.
  void *frame;
  backtrace(&frame, 1);
  struct sigaction action {};
  action.sa_sigaction = on_crash;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  struct sigaction before {};
  sigaction(SIGFPE, nullptr, &before);
  // The first backend handler is the one to keep: later, a compiler's (LLVM's) stands over it.
  bool ours = (before.sa_flags & SA_SIGINFO) && before.sa_sigaction == on_crash;
  if (!ours && !is_handler(g_backend_fpe)) g_backend_fpe = before;
  for (int signum : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) sigaction(signum, &action, nullptr);
  struct sigaction report {};
  report.sa_handler = on_stall_report;
  sigemptyset(&report.sa_mask);
  report.sa_flags = SA_RESTART;
  sigaction(kStallReportSignal, &report, nullptr);
}

}  // namespace fedcld
