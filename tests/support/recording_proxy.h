// A loopback TCP proxy that records what passes through it, for tests that look at the bytes on the
// wire (what an eavesdropper on one session would see). It forwards one connection at a time, both
// ways, until either side closes, or until it cuts the connection where a test asked it to (a
// daemon lost in the middle of a reply, at a byte of the test's choosing). It can also flip a bit of
// a TLS record on its way, as a bit error that TCP's checksum missed or an attacker on the path would.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "loopback_proxy.h"

namespace fedcl_test {

class RecordingProxy : public LoopbackProxy {
 public:
  // Listens on a free loopback port and forwards every connection to 127.0.0.1:target_port.
  explicit RecordingProxy(int target_port);
  ~RecordingProxy();

  // Everything the clients sent, and everything the daemon answered, so far, in order.
  std::vector<uint8_t> client_bytes();
  std::vector<uint8_t> daemon_bytes();
  // Forwards `bytes` more of the daemon's bytes, then closes both sides of the connection.
  void cut_daemon_stream_after(int64_t bytes) { cut_after_ = bytes; }
  // Flips one bit in the middle of a TLS record (RFC 8446 5.1's framing) that goes to the daemon (or
  // to the client): the next one with a body of at least min_body bytes after skipping `skip` such
  // records. flips() counts those done.
  void flip_bit_in_record(bool to_daemon, size_t min_body, int skip = 0);
  int flips() const { return flips_; }

 private:
  void serve();
  void forward(int client, int daemon);
  // Where one direction's stream is in its TLS records.
  struct RecordCursor {
    uint8_t header[5] = {};
    size_t header_have = 0, body_size = 0, body_at = 0;
    bool flip = false;  // this record's middle bit gets flipped
  };
  // Walks size bytes of one direction's stream, flipping where asked.
  void tamper(RecordCursor &cursor, bool to_daemon, uint8_t *bytes, size_t size);

  int target_port_;
  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
  std::mutex mutex_;
  std::vector<uint8_t> from_client_, from_daemon_;
  std::atomic<int64_t> cut_after_{-1};  // daemon bytes still to forward before the cut; -1: no cut
  size_t flip_min_body_[2] = {0, 0};      // [to_daemon]; 0: no flip asked for (under mutex_)
  int flip_skip_[2] = {0, 0};
  std::atomic<int> flips_{0};
};

}  // namespace fedcl_test
