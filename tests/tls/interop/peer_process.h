// Another TLS implementation's command-line tool (openssl s_server, gnutls-cli, ...) as a child
// process, for the other end of an interoperability test. Its stdin is a pipe the test writes: data,
// and the tool's interactive commands. Its stdout is read by a thread: the bytes of 0x80 and above
// are the data it received over TLS, checked against the pattern as they come (pattern.h); the rest
// are its own messages, kept to find a port in and to show. Its stderr is kept (the last 16 KiB)
// to show when a test fails.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pattern.h"

namespace fedcl_test {

// The program's path found through PATH; "" when it is not installed.
std::string find_program(const std::string &name);

class PeerProcess {
 public:
  // Starts argv (argv[0] found through PATH). Throws std::runtime_error when it cannot.
  explicit PeerProcess(const std::vector<std::string> &argv);
  // Kills it if it is still running.
  ~PeerProcess();
  PeerProcess(const PeerProcess &) = delete;
  PeerProcess &operator=(const PeerProcess &) = delete;

  // Writes all of bytes to its stdin; false when it can no longer read them (or has not read for 20 s).
  bool write(const void *bytes, size_t size);
  bool write(const std::string &text) { return write(text.data(), text.size()); }
  // Writes the pattern's bytes [offset, offset + size) to its stdin in pieces of piece bytes (each
  // at most PIPE_BUF, so that the tool's reads never split one).
  bool write_pattern(uint64_t offset, uint64_t size, size_t piece);
  void close_stdin();

  // Its stdout's data bytes, checked against the pattern.
  const StreamCheck &output() const { return output_; }
  // Its stdout but the data, and the end of its stderr, so far.
  std::string messages() const;
  std::string errors() const;
  // Whether it is still running.
  bool running();
  // Waits up to timeout for it to end by itself, then kills it. True when it ended by itself.
  bool finish(std::chrono::milliseconds timeout);

 private:
  void read_output();
  void reap(int options);

  pid_t pid_ = -1;
  int stdin_ = -1, stdout_ = -1, stderr_ = -1;
  StreamCheck output_{true};
  mutable std::mutex mutex_;
  std::string messages_, errors_;
  std::thread reader_;
};

}  // namespace fedcl_test
