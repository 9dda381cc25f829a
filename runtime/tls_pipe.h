// The socket side of a client's TLS transport (tls_transport.h): where its ciphertext goes and comes
// from. A large message moves through a second thread, so that encrypting (decrypting) one piece
// overlaps the socket's copy of another; a small one stays on the calling thread, as a hand-off
// costs a thread's wake-up (tens of microseconds) on every round trip.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tls.h"

namespace fedcl {

// Sends ciphertext buffers in order. One send at a time uses it (the connection serialises them).
class SocketWriter {
 public:
  explicit SocketWriter(int fd);
  ~SocketWriter();
  SocketWriter(const SocketWriter &) = delete;
  SocketWriter &operator=(const SocketWriter &) = delete;

  // The buffer to encrypt into: one of a few, once the socket is done with it.
  TlsBytes &pending();
  // Sends the pending buffer after those posted before: on this thread, or handed to the writing
  // thread (started at the first hand-off) while this one encrypts the next piece. "" or why the
  // first failed send failed.
  std::string post(bool hand_off);
  // Waits until every posted byte is on the socket: "" or why not (and forgets it).
  std::string finish();

 private:
  void main();

  int fd_;
  std::mutex mutex_;
  std::condition_variable work_;  // the thread: something queued, or stop
  std::condition_variable done_;  // the sender: a buffer came free
  // Enough that the socket always has a sealed piece waiting while the next ones are sealed: with
  // three, sealing waited for a free buffer a quarter of the time (H100 machine, 256 MiB writes).
  TlsBytes buffers_[6];
  std::vector<TlsBytes *> free_;
  TlsBytes *pending_ = nullptr;
  std::deque<TlsBytes *> queue_;
  bool sending_ = false;
  bool stopping_ = false;
  std::string failure_;
  std::thread thread_;
};

// Takes ciphertext off the socket for the receiving thread: straight from the socket, or, where it
// is allowed, read ahead by a thread of its own into a few buffers while the receiving thread
// decrypts the earlier ones. The thread reads only bytes that are sure to come: a read past the
// current message would wait for bytes the daemon may never send, and take them from the direct
// reads that follow.
class SocketReader {
 public:
  explicit SocketReader(int fd);
  ~SocketReader();
  SocketReader(const SocketReader &) = delete;
  SocketReader &operator=(const SocketReader &) = delete;

  // Lets the thread read until the stream's byte until (counted from the first that next() gave).
  void read_ahead(uint64_t until);
  // The next ciphertext, valid until the next call: how many bytes at *bytes, 0 once the daemon
  // closed the connection, or -1 with errno as recv sets it (EAGAIN at once when wait is false and
  // nothing is there).
  ssize_t next(const uint8_t **bytes, bool wait);
  // Bytes next() gave so far.
  uint64_t given() const { return given_; }

 private:
  struct Read {
    uint8_t *bytes;
    ssize_t size;
    int error;
  };
  void main();

  int fd_;
  std::unique_ptr<uint8_t[]> direct_;
  uint64_t given_ = 0;
  std::mutex mutex_;
  std::condition_variable work_;   // the thread: allowed further, a buffer came free, or stop
  std::condition_variable ready_;  // the receiver: a read is queued
  std::vector<std::unique_ptr<uint8_t[]>> buffers_;
  std::vector<uint8_t *> free_;
  uint8_t *held_ = nullptr;  // the buffer the receiver decrypts
  std::deque<Read> queue_;
  uint64_t taken_ = 0;  // bytes off the socket
  uint64_t until_ = 0;
  bool reading_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace fedcl
