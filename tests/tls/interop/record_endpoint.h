// fedcl's end of an interoperability test's TCP connection: OpenSSL's TLS 1.3 handshake on the
// pre-shared key, set up as fedcl's client and fedcld set it up (protocol/tls.h: the identity, the
// key derived from the user's key, the one suite, no tickets), then fedcl's own record layer
// (protocol/tls_records.h) for the data both ways, as the transports use it: one thread seals while
// another opens. What it sends is the pattern (pattern.h); what it receives is checked against it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pattern.h"
#include "record_tally.h"
#include "tls.h"
#include "tls_records.h"

namespace fedcl_test {

class RecordEndpoint {
 public:
  // As fedcl's client: dials 127.0.0.1:port and proves key as user. Null with why in *error.
  static std::unique_ptr<RecordEndpoint> dial(int port, const std::string &user, const std::string &key,
                                              std::string *error);
  // As fedcld: takes the next connection on listener (a listening socket, waited for up to 10 s) and
  // knows user's key. Null with why in *error.
  static std::unique_ptr<RecordEndpoint> accept(int listener, const std::string &user, const std::string &key,
                                                std::string *error);
  ~RecordEndpoint();
  RecordEndpoint(const RecordEndpoint &) = delete;
  RecordEndpoint &operator=(const RecordEndpoint &) = delete;

  // Records per sending key (fedcl's own key updates), before the first send.
  void set_key_update_interval(uint64_t records) { records_.set_key_update_interval(records); }
  // Starts the thread that opens the peer's records and checks their plaintext against the pattern.
  void start_receiving();
  // Sends the pattern's next bytes as one write of the record layer per size in writes (a write of
  // up to 16 KiB is one record); "" or why not. One thread at a time.
  std::string send(const std::vector<size_t> &writes);
  // Pattern bytes sent so far.
  uint64_t sent() const { return sent_.load(std::memory_order_acquire); }
  // The records sent and received so far.
  RecordTally sent_records() const;
  RecordTally received_records() const;
  // The plaintext received, checked; why receiving stopped early ("" while it goes on).
  const StreamCheck &received() const { return received_; }
  std::string receive_failure() const;
  // Ends the connection (both ways) and the receiving thread.
  void stop();

 private:
  RecordEndpoint(int fd, fedcl::TlsContext ctx, fedcl::TlsSession ssl) : fd_(fd), ctx_(std::move(ctx)), ssl_(std::move(ssl)) {}
  // The handshake on the socket (connecting or accepting), then the record layer's keys; "" or why not.
  std::string handshake(bool client);
  void receive();

  int fd_;
  fedcl::TlsContext ctx_;
  fedcl::TlsSession ssl_;
  fedcl::TlsRecords records_;
  std::atomic<uint64_t> sent_{0};
  StreamCheck received_{false};
  mutable std::mutex mutex_;
  RecordTally sent_tally_, received_tally_;
  std::string receive_failure_;
  std::atomic<bool> stopping_{false};
  std::thread receiver_;
};

}  // namespace fedcl_test
