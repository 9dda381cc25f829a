// Kernel printf output, caught where the backend writes it: the process's stdout.
//
// Neither PoCL nor NVIDIA offers a printf callback; both write a kernel's printf output to fd 1
// (PoCL with write(2) from its worker threads, NVIDIA through stdio from a driver thread). At start
// fedcld points fd 1 into a pipe that a reader thread drains continuously, so that a kernel printing
// more than the pipe holds never blocks. While capturing, the bytes are kept for collect(); otherwise
// they go on to the original stdout (a dup kept at start), as if nothing had been redirected.
//
// Who captures, and whose output it is, is PrintGate's business (print_gate.h): it captures only
// while printing commands of one session run.
#pragma once

#include <mutex>
#include <string>

namespace fedcld {

class PrintfCapture {
 public:
  PrintfCapture() = default;
  PrintfCapture(const PrintfCapture &) = delete;

  // Redirects fd 1 into the pipe and starts the reader thread. Returns "" or why it could not;
  // then nothing is redirected. Called once, before any backend command runs.
  std::string start();
  bool started() const { return read_fd_ >= 0; }

  // Starts keeping what reaches stdout. What was written before is passed through first.
  void begin();
  // Flushes stdio's stdout, drains the pipe and returns everything kept since begin() or the last
  // collect(). With stop, what comes later is passed through again.
  std::string collect(bool stop);
  // Writes bytes to the original stdout (output that belongs to no live session).
  void pass_through(const std::string &bytes);

 private:
  void reader_main();
  // Reads what the pipe holds now, without blocking, onto out. Under mutex_.
  void drain_locked(std::string &out);

  int read_fd_ = -1;      // the pipe's read end, non-blocking
  int original_fd_ = -1;  // the stdout fedcld was started with
  std::mutex mutex_;      // every read of the pipe happens under it, so collect() misses nothing
  bool capturing_ = false;
  std::string captured_;
};

}  // namespace fedcld
