// What a session worker shows the main process in a page of memory they share (a memfd the main
// process makes and the worker inherits): that its loop turns, what its session holds, and, when
// it dies of a signal, in which backend call. The worker writes it; the main process reads it, also
// after the worker is gone.
#pragma once

#include <signal.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace fedcld {

// Request kinds are wire::Request's union members, counted by which() (below the table's size).
constexpr size_t kBoardRequestKinds = 128;
// A request's time, from its arrival to its reply or, for a command, to the backend's completion:
// the upper bounds of the histogram's buckets, in nanoseconds; a last bucket takes the slower ones.
constexpr uint64_t kBoardLatencyBoundsNs[] = {10'000,      50'000,      100'000,       500'000,
                                              1'000'000,   5'000'000,   10'000'000,    50'000'000,
                                              100'000'000, 500'000'000, 1'000'000'000, 10'000'000'000};
constexpr size_t kBoardLatencyBuckets = sizeof kBoardLatencyBoundsNs / sizeof kBoardLatencyBoundsNs[0] + 1;
constexpr size_t kBoardLinks = 64;  // peer links shown per session

// How a connection travels (`fedcl status`: DaemonStatus's transport), as the worker sees it.
enum class BoardTransport : uint32_t { unknown = 0, tcp, tls, local, local_shared_memory };
const char *board_transport_name(BoardTransport transport);

struct BoardRequestKind {
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> failed{0};
  std::atomic<uint64_t> nanos{0};
  std::atomic<uint64_t> buckets[kBoardLatencyBuckets]{};  // not cumulative
};

// A peer link of the session. The worker writes peer once, then sets state (release): the main
// process reads peer only once state is not empty.
struct BoardLink {
  enum State : uint32_t { empty = 0, up = 1, closed = 2 };
  std::atomic<uint32_t> state{empty};
  char peer[64] = {};
  std::atomic<BoardTransport> transport{BoardTransport::unknown};
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> bytes_received{0};
};

struct WorkerBoard {
  std::atomic<uint64_t> loop_turned_ns{0};  // uv_hrtime() when its loop last turned (every second)
  std::atomic<uint64_t> memory_bytes{0};    // buffers and images its session holds
  std::atomic<uint64_t> objects{0};
  std::atomic<int32_t> crash_signal{0};     // the signal it died of, once its handler ran
  char crash_call[128] = {};                // the backend call its crashing thread was in ("" none)
  char last_call[128] = {};                 // the backend call started last, by any thread
  // What `fedcl status` and --metrics show of the session (every second, and as requests end).
  std::atomic<uint64_t> commands_in_flight{0};
  std::atomic<uint64_t> client_bytes_received{0};
  std::atomic<uint64_t> client_bytes_sent{0};
  std::atomic<BoardTransport> client_transport{BoardTransport::unknown};
  BoardRequestKind requests[kBoardRequestKinds];
  BoardLink links[kBoardLinks];
};

// Counts one request of kind which that took nanos and failed or not (the worker's loop).
void board_count_request(WorkerBoard *board, unsigned which, bool failed, uint64_t nanos);
// The bucket nanos falls in.
size_t board_latency_bucket(uint64_t nanos);

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
// The signal the main process sends a worker's loop thread once the loop stood still for a while: its
// handler writes where that thread stands (the backend call, a backtrace) to stderr and returns.
// Installed with the crash report.
constexpr int kStallReportSignal = SIGUSR2;
// The same, with the board given before (nothing where none was: the fuzz target's workers).
void crash_report_renew();

}  // namespace fedcld
