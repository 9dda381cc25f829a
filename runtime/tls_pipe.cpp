#include "tls_pipe.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace fedcl {

namespace {

// Ciphertext taken off the socket per recv: many records per system call.
constexpr size_t kReceiveBytes = 256 * 1024;
// Buffers the reading thread fills ahead of the receiver.
constexpr size_t kReadAheadBuffers = 4;

// Writes every byte of bytes to fd and empties it; "" or why not.
std::string send_all(int fd, TlsBytes &bytes) {
  size_t done = 0;
  std::string why;
  while (done < bytes.size() && why.empty()) {
    ssize_t sent = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (sent >= 0) done += sent;
    else if (errno != EINTR) why = std::string("send: ") + std::strerror(errno);
  }
  bytes.clear();
  return why;
}

}  // namespace

SocketWriter::SocketWriter(int fd) : fd_(fd) {
  for (auto &buffer : buffers_) free_.push_back(&buffer);
}

SocketWriter::~SocketWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_one();
  if (thread_.joinable()) thread_.join();
}

TlsBytes &SocketWriter::pending() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!pending_) {
    done_.wait(lock, [&] { return !free_.empty(); });
    pending_ = free_.back();
    free_.pop_back();
  }
  return *pending_;
}

std::string SocketWriter::post(bool hand_off) {
  std::unique_lock<std::mutex> lock(mutex_);
  TlsBytes *bytes = std::exchange(pending_, nullptr);
  if (!bytes) return failure_;
  if (!failure_.empty() || bytes->empty()) {
    bytes->clear();
    free_.push_back(bytes);
  } else if (!hand_off) {
    // Nothing is queued: a send that hands off waits for its last piece.
    failure_ = send_all(fd_, *bytes);
    free_.push_back(bytes);
  } else {
    if (!thread_.joinable()) thread_ = std::thread(&SocketWriter::main, this);
    queue_.push_back(bytes);
    work_.notify_one();
  }
  return failure_;
}

std::string SocketWriter::finish() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (pending_) {
    pending_->clear();
    free_.push_back(std::exchange(pending_, nullptr));
  }
  done_.wait(lock, [&] { return queue_.empty() && !sending_; });
  return std::exchange(failure_, std::string());
}

void SocketWriter::main() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;
    TlsBytes *bytes = queue_.front();
    queue_.pop_front();
    sending_ = true;
    lock.unlock();
    std::string why = send_all(fd_, *bytes);
    lock.lock();
    sending_ = false;
    free_.push_back(bytes);
    if (!why.empty() && failure_.empty()) failure_ = why;
    if (!failure_.empty()) {
      // The stream is broken: the rest stays unsent.
      for (TlsBytes *rest : queue_) {
        rest->clear();
        free_.push_back(rest);
      }
      queue_.clear();
    }
    done_.notify_one();
  }
}

SocketReader::SocketReader(int fd) : fd_(fd), direct_(new uint8_t[kReceiveBytes]) {}

SocketReader::~SocketReader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    // A read left waiting (the receiver gave up mid-message) ends now; the socket is closing.
    if (reading_) ::shutdown(fd_, SHUT_RD);
  }
  work_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void SocketReader::read_ahead(uint64_t until) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (until <= until_ || until <= taken_) return;
  until_ = until;
  if (!thread_.joinable()) {
    for (size_t i = 0; i < kReadAheadBuffers; i++) {
      buffers_.emplace_back(new uint8_t[kReceiveBytes]);
      free_.push_back(buffers_.back().get());
    }
    thread_ = std::thread(&SocketReader::main, this);
  }
  work_.notify_one();
}

ssize_t SocketReader::next(const uint8_t **bytes, bool wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (held_) {
    free_.push_back(std::exchange(held_, nullptr));
    work_.notify_one();
  }
  if (queue_.empty() && !reading_ && taken_ >= until_) {
    // Nothing read ahead, nor to be: the socket is this thread's.
    lock.unlock();
    ssize_t got = recv(fd_, direct_.get(), kReceiveBytes, wait ? 0 : MSG_DONTWAIT);
    if (got > 0) {
      lock.lock();
      taken_ += got;
      given_ += got;
    }
    *bytes = direct_.get();
    return got;
  }
  if (queue_.empty() && !wait) {
    errno = EAGAIN;
    return -1;
  }
  ready_.wait(lock, [&] { return !queue_.empty(); });
  Read read = queue_.front();
  queue_.pop_front();
  held_ = read.bytes;
  if (read.size > 0) given_ += read.size;
  *bytes = read.bytes;
  errno = read.error;
  return read.size;
}

void SocketReader::main() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stopping_ || (taken_ < until_ && !free_.empty()); });
    if (stopping_) return;
    uint8_t *buffer = free_.back();
    free_.pop_back();
    size_t size = size_t(std::min<uint64_t>(kReceiveBytes, until_ - taken_));
    reading_ = true;
    lock.unlock();
    // Whole buffers (these bytes are sure to come): the receiver then opens many records per hand-off.
    // The socket's silence limit (SO_RCVTIMEO) and shutdown end this recv as the receiver's own.
    ssize_t got;
    do got = recv(fd_, buffer, size, MSG_WAITALL);
    while (got < 0 && errno == EINTR);
    int error = errno;
    lock.lock();
    reading_ = false;
    if (got > 0) taken_ += got;
    else until_ = taken_;  // the receiver hears of it, then reads on by itself
    queue_.push_back({buffer, got, error});
    ready_.notify_one();
  }
}

}  // namespace fedcl
