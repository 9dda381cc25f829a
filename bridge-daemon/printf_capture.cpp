#include "printf_capture.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

namespace fedcld {

namespace {

constexpr size_t kChunkBytes = 64 * 1024;

void write_all(int fd, const char *bytes, size_t size) {
  while (size > 0) {
    ssize_t written = write(fd, bytes, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;  // the original stdout is gone: the bytes have nowhere to go
    bytes += written;
    size -= written;
  }
}

// The largest pipe an unprivileged process may ask for (1 MiB unless the administrator changed it).
int pipe_max_size() {
  FILE *file = std::fopen("/proc/sys/fs/pipe-max-size", "r");
  long size = 0;
  if (file) {
    if (std::fscanf(file, "%ld", &size) != 1) size = 0;
    std::fclose(file);
  }
  return size > 0 && size < (1l << 30) ? int(size) : 1 << 20;
}

}  // namespace

std::string PrintfCapture::start() {
  if (started()) return {};
  if (fcntl(STDOUT_FILENO, F_GETFD) < 0) {
    // Started without a stdout: make fd 1 /dev/null first, so that the pipe cannot land on it, and
    // drop what nobody captures.
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0 && null != STDOUT_FILENO) {
      dup2(null, STDOUT_FILENO);
      close(null);
    }
  }
  int original = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (original < 0) return std::string("dup of stdout: ") + std::strerror(errno);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    close(original);
    return std::string("pipe: ") + std::strerror(errno);
  }
  std::fflush(stdout);
  if (fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK) != 0 || dup2(fds[1], STDOUT_FILENO) < 0) {
    std::string why = std::string("redirecting stdout: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    close(original);
    return why;
  }
  close(fds[1]);  // fd 1 is the write end now
  // PoCL writes a kernel's output with one write() per worker thread, hundreds of KiB at once. A
  // write to a pipe is split where the pipe is full, and concurrent writers then interleave mid-line,
  // which they never do on a file or terminal: a large pipe keeps such writes whole.
  fcntl(fds[0], F_SETPIPE_SZ, pipe_max_size());  // best effort: a smaller pipe works, less well
  read_fd_ = fds[0];
  original_fd_ = original;
  // Lives as long as the process: fd 1 stays a pipe until exit, so someone must drain it.
  std::thread([this] { reader_main(); }).detach();
  return {};
}

void PrintfCapture::drain_locked(std::string &out) {
  char chunk[kChunkBytes];
  for (;;) {
    ssize_t got = read(read_fd_, chunk, sizeof chunk);
    if (got > 0) {
      out.append(chunk, got);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    return;  // EAGAIN: empty for now (0, end of file, cannot happen while fd 1 is open)
  }
}

void PrintfCapture::reader_main() {
  std::string passing;
  for (;;) {
    pollfd p{read_fd_, POLLIN, 0};
    if (poll(&p, 1, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (capturing_) {
        drain_locked(captured_);
        continue;
      }
      // Passed through one chunk at a time, written outside the lock: a slow original stdout must
      // never hold up collect() on the loop.
      char chunk[kChunkBytes];
      ssize_t got = read(read_fd_, chunk, sizeof chunk);
      if (got == 0) return;
      if (got > 0) passing.assign(chunk, got);
    }
    write_all(original_fd_, passing.data(), passing.size());
    passing.clear();
  }
}

void PrintfCapture::begin() {
  std::fflush(stdout);
  std::string before;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    drain_locked(before);
    capturing_ = true;
  }
  pass_through(before);
}

std::string PrintfCapture::collect(bool stop) {
  // stdio's buffer first (NVIDIA writes through it), then the pipe, both before the lock is taken
  // and under it: a byte the reader thread took is in captured_ already.
  std::fflush(stdout);
  std::lock_guard<std::mutex> lock(mutex_);
  drain_locked(captured_);
  std::string out;
  out.swap(captured_);
  if (stop) capturing_ = false;
  return out;
}

void PrintfCapture::pass_through(const std::string &bytes) {
  if (!bytes.empty()) write_all(original_fd_, bytes.data(), bytes.size());
}

}  // namespace fedcld
