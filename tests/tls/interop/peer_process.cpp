#include "peer_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace fedcl_test {

namespace {

constexpr size_t kKeptErrors = 16 * 1024;
// A write to the tool's stdin that makes no progress for this long fails (the tool stopped reading).
constexpr int kWriteTimeoutMs = 20000;

// Keeps the end of text: at most kKeptErrors bytes.
void keep_end(std::string &text) {
  if (text.size() > 2 * kKeptErrors) text.erase(0, text.size() - kKeptErrors);
}

}  // namespace

std::string find_program(const std::string &name) {
  const char *path = std::getenv("PATH");
  std::istringstream directories(path ? path : "/usr/bin:/bin");
  for (std::string directory; std::getline(directories, directory, ':');) {
    std::string candidate = directory + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

PeerProcess::PeerProcess(const std::vector<std::string> &argv) {
  std::string program = find_program(argv.at(0));
  if (program.empty()) throw std::runtime_error(argv[0] + " is not installed (scripts/setup.sh installs it)");
  // The test writes the tool's stdin after it may have ended: that must fail, not kill the test.
  signal(SIGPIPE, SIG_IGN);
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::vector<char *> args;
  for (const std::string &arg : argv) args.push_back(const_cast<char *>(arg.c_str()));
  args[0] = program.data();
  args.push_back(nullptr);
  pid_t parent = getpid();
  pid_ = fork();
  if (pid_ == 0) {
    // A test that dies (or that ctest's timeout kills) must not leave the tool behind.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execv(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  stdin_ = in[1];
  fcntl(stdin_, F_SETFL, O_NONBLOCK);
  stdout_ = out[0];
  stderr_ = err[0];
  if (pid_ < 0) {
    close_stdin();
    close(stdout_);
    close(stderr_);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  reader_ = std::thread([this] { read_output(); });
}

PeerProcess::~PeerProcess() {
  finish(std::chrono::milliseconds(0));
  reader_.join();
  close(stdout_);
  close(stderr_);
}

void PeerProcess::read_output() {
  std::vector<uint8_t> buffer(256 * 1024);
  pollfd fds[2] = {{stdout_, POLLIN, 0}, {stderr_, POLLIN, 0}};
  int open = 2;
  while (open > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (pollfd &fd : fds) {
      if (fd.fd < 0 || !(fd.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fd.fd, buffer.data(), buffer.size());
      if (got <= 0) {
        if (got < 0 && errno == EINTR) continue;
        fd.fd = -1;  // the end of that stream (poll ignores a negative descriptor)
        open--;
        continue;
      }
      if (fd.fd == stdout_) output_.take(buffer.data(), size_t(got));
      std::lock_guard<std::mutex> lock(mutex_);
      if (fd.fd == stdout_) {
        // The data's newlines are ASCII too: a run of them is kept as one.
        for (ssize_t i = 0; i < got; i++)
          if (buffer[i] < 0x80 && !(buffer[i] == '\n' && !messages_.empty() && messages_.back() == '\n'))
            messages_.push_back(char(buffer[i]));
        keep_end(messages_);
      } else {
        errors_.append(reinterpret_cast<const char *>(buffer.data()), size_t(got));
        keep_end(errors_);
      }
    }
  }
}

bool PeerProcess::write(const void *bytes, size_t size) {
  const char *at = static_cast<const char *>(bytes);
  while (size > 0) {
    ssize_t done = ::write(stdin_, at, size);
    if (done < 0 && errno == EAGAIN) {
      pollfd room{stdin_, POLLOUT, 0};
      if (poll(&room, 1, kWriteTimeoutMs) == 0) return false;
      continue;
    }
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) return false;
    at += done;
    size -= size_t(done);
  }
  return true;
}

bool PeerProcess::write_pattern(uint64_t offset, uint64_t size, size_t piece) {
  std::vector<uint8_t> bytes(piece);
  for (uint64_t done = 0; done < size; done += piece) {
    size_t now = size_t(std::min<uint64_t>(piece, size - done));
    pattern_fill(offset + done, bytes.data(), now);
    if (!write(bytes.data(), now)) return false;
  }
  return true;
}

void PeerProcess::close_stdin() {
  if (stdin_ >= 0) close(stdin_);
  stdin_ = -1;
}

std::string PeerProcess::messages() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return messages_;
}

std::string PeerProcess::errors() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return errors_.size() > kKeptErrors ? errors_.substr(errors_.size() - kKeptErrors) : errors_;
}

void PeerProcess::reap(int options) {
  int status = 0;
  pid_t done;
  while ((done = waitpid(pid_, &status, options)) < 0 && errno == EINTR) {
  }
  if (done == pid_ || (done < 0 && errno == ECHILD)) pid_ = -1;
}

bool PeerProcess::running() {
  if (pid_ > 0) reap(WNOHANG);
  return pid_ > 0;
}

bool PeerProcess::finish(std::chrono::milliseconds timeout) {
  close_stdin();
  auto until = std::chrono::steady_clock::now() + timeout;
  while (running() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (!running()) return true;
  kill(pid_, SIGKILL);
  reap(0);
  return false;
}

}  // namespace fedcl_test
