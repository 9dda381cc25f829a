// The Unix socket between fedcld's main process and one of its session workers (a libuv IPC pipe):
// WorkerMessages (protocol/fedcl.capnp) in frames of kind worker, and beside the messages that hand
// a connection over (takeSession, resumeSession, takeLink) that connection's socket.
#pragma once

#include <uv.h>

#include <capnp/message.h>

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "fedcl.capnp.h"
#include "frame.h"

namespace fedcld {

struct SessionLink;

// Whether a message of this kind has a connection's socket beside it.
bool carries_connection(fedcl::wire::WorkerMessage::Which which);

class ControlChannel {
 public:
  // message: one WorkerMessage; link: the socket beside it (the receiver's to keep), or null.
  using OnMessage = std::function<void(fedcl::wire::WorkerMessage::Reader message, SessionLink *link)>;
  // The other process closed its end (why is kClosed: it is ending) or sent something malformed.
  using OnClosed = std::function<void(const std::string &why)>;
  static constexpr const char *kClosed = "the other process closed its end";

  // The channel lives until close() (its handle closes asynchronously, then it frees itself).
  ControlChannel(uv_loop_t *loop, OnMessage on_message, OnClosed on_closed);
  // For uv_spawn's stdio (the main process): the pipe, not yet open.
  uv_pipe_t *pipe() { return &pipe_; }
  // Opens fd (a worker: the end it inherited); libuv's error or 0.
  int open(int fd);
  // Starts reading; libuv's error or 0.
  int start();
  // Sends message; with handle, that connection's socket goes beside it. sent(status) runs once
  // the message and the socket have left (status 0), or not.
  void send(capnp::MessageBuilder &message, uv_stream_t *handle = nullptr, std::function<void(int status)> sent = nullptr);
  // Closes the pipe and frees the channel; no callback runs after this.
  void close();

 private:
  ~ControlChannel();
  static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf);
  static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);
  // Accepts the sockets that arrived with the last read.
  void accept_handles();
  // Delivers every whole frame read; "" or why the channel must close.
  std::string deliver();
  void fail(const std::string &why);

  uv_pipe_t pipe_;
  uv_loop_t *loop_;
  OnMessage on_message_;
  OnClosed on_closed_;
  bool closing_ = false;
  std::vector<uint8_t> in_;        // bytes read, not yet a whole frame
  std::vector<uint8_t> read_buffer_;
  std::deque<SessionLink *> links_;  // sockets received, in order, not yet given to a message
};

}  // namespace fedcld
