// The process-wide client state: the daemons, their devices, the event mirror and the thread that
// runs application callbacks.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "handles.h"

namespace fedcl {

class Runtime final : public ConnectionListener {
 public:
  // At exit: every daemon closes this process's sessions at once (Connection::say_goodbye).
  void say_goodbye();
  static Runtime &get();

  _cl_platform_id *platform() { return &platform_; }
  // The devices of every reachable daemon; connects on the first call.
  const std::vector<cl_device_id> &devices();

  // Event mirror: a tracked event is completed by the daemon's notice (or its read reply).
  void track(_cl_event *event);
  // Stops tracking an event that nothing waits for any more (event_reports.h).
  void untrack(_cl_event *event);
  void complete(_cl_event *event, cl_int status, const uint64_t *profiling);
  // Completes a tracked event now (unless its report came first): with a failure found before the
  // daemon could report one, or with the outcome its queue's clFinish gave it.
  void complete_tracked(_cl_event *event, cl_int status) { complete_by_id(event->id, status, nullptr); }

  // Whether daemons may link to each other at all (FEDCL_PEER_LINKS=0 says no).
  bool peer_links_allowed() const;

  // Daemons of a new context find each other: every pair gets a peer link now if it can (a round
  // trip the first time a pair meets). Pairs that cannot stay on the path through this process.
  void link_peers(const std::vector<Connection *> &connections);
  // Whether daemons a and b move data and signal events to each other directly.
  bool peer_linked(Connection *a, Connection *b);
  void unlink_peers(Connection *a, Connection *b);

  // Runs function on the callback thread: never on a runtime thread that a callback could block.
  void defer(std::function<void()> function);

  void add_context(_cl_context *context);
  void remove_context(_cl_context *context);
  // Calls the context's notify callback (if any) on the callback thread.
  void notify(_cl_context *context, const std::string &message);
  // The application released the context: no notify call starts from now on, and one under way
  // ends before this returns (unless this is that call's thread).
  void close_notify(_cl_context *context);
  bool on_callback_thread();

  // ConnectionListener
  void on_notice(Connection &connection, wire::Notice::Reader notice) override;
  void on_read_done(Connection &connection, wire::Completion::Reader completion) override;
  void on_lost(Connection &connection, const std::string &reason) override;
  void on_transfer_chunk(Connection &connection, uint64_t transfer, uint64_t offset, std::unique_ptr<uint8_t[]> bytes,
                         uint64_t size) override;
  uint8_t *landing_for(uint64_t transfer, uint64_t offset, uint64_t size) override;

  // Where the chunks of a transfer to this process go (a file, file_transfer.h); called on the
  // receiver thread, so it must not block.
  using TransferSink = std::function<void(uint64_t offset, std::unique_ptr<uint8_t[]> bytes, uint64_t size)>;
  void add_sink(uint64_t transfer, TransferSink sink);
  void remove_sink(uint64_t transfer);
  // The other kind of destination: application memory that a transfer's chunks land in straight from
  // the socket (a streamed read, host_stream.h).
  void add_landing(uint64_t transfer, uint8_t *base, uint64_t size);
  void remove_landing(uint64_t transfer);

 private:
  Runtime() = default;
  void connect_all();
  // Opens connections in parallel; returns each one's error ("" if it opened).
  std::vector<std::string> open_all(std::vector<std::unique_ptr<Connection>> &connections, const Credentials &credentials);
  void complete_by_id(uint64_t id, cl_int status, const uint64_t *profiling);
  // Sets the stand-in (or receive) event event_id on connection's daemon.
  void set_remote_status(Connection *connection, uint64_t event_id, cl_int status);
  void callback_main();

  _cl_platform_id platform_;
  std::once_flag connected_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<cl_device_id> devices_;

  std::mutex events_mutex_;
  std::unordered_map<uint64_t, _cl_event *> events_;

  std::mutex sinks_mutex_;
  std::unordered_map<uint64_t, TransferSink> sinks_;
  std::unordered_map<uint64_t, std::pair<uint8_t *, uint64_t>> landings_;  // base, size; under sinks_mutex_

  std::mutex links_mutex_;
  std::map<std::pair<size_t, size_t>, bool> links_;  // by connection indices, lower first

  std::mutex contexts_mutex_;
  std::unordered_map<uint64_t, _cl_context *> contexts_;

  std::mutex callback_mutex_;
  std::condition_variable callback_cv_;
  std::vector<std::function<void()>> callback_queue_;
  std::thread callback_thread_;
};

// Blocks until event has completed or failed, and returns its status; runs the wait hook meanwhile.
cl_int wait_complete(_cl_event *event);

}  // namespace fedcl
