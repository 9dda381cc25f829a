#include "secret.h"

#include <fcntl.h>
#include <sodium.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

namespace fedcl {

void ensure_sodium() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (sodium_init() < 0) std::abort();  // no random source: nothing safe can be done
  });
}

Secret::Secret(std::string_view bytes) {
  if (bytes.empty()) return;
  ensure_sodium();
  // sodium_malloc locks the pages when it can (RLIMIT_MEMLOCK) and goes on when it cannot.
  bytes_ = static_cast<char *>(sodium_malloc(bytes.size()));
  if (!bytes_) throw std::bad_alloc();
  std::memcpy(bytes_, bytes.data(), bytes.size());
  size_ = bytes.size();
}

Secret::Secret(Secret &&other) noexcept : bytes_(other.bytes_), size_(other.size_) {
  other.bytes_ = nullptr;
  other.size_ = 0;
}

Secret &Secret::operator=(const Secret &other) {
  if (this != &other) *this = Secret(other.view());
  return *this;
}

Secret &Secret::operator=(Secret &&other) noexcept {
  if (this != &other) {
    release();
    bytes_ = other.bytes_;
    size_ = other.size_;
    other.bytes_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

Secret::~Secret() { release(); }

void Secret::release() {
  if (bytes_) sodium_free(bytes_);  // wipes first
  bytes_ = nullptr;
  size_ = 0;
}

void secret_wipe(std::string &text) {
  text.resize(text.capacity());
  if (!text.empty()) sodium_memzero(text.data(), text.size());
  text.clear();
}

Secret secret_read_file(const std::string &path, std::string *why) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = path + ": " + std::strerror(errno);
    return {};
  }
  // A key is a line: what past 4 KiB a file holds is not read.
  char buffer[4096];
  size_t size = 0;
  ssize_t got = 0;
  while (size < sizeof buffer && (got = read(fd, buffer + size, sizeof buffer - size)) != 0) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    size += size_t(got);
  }
  int read_errno = errno;
  close(fd);
  std::string_view text(buffer, size);
  std::string_view line = text.substr(0, text.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  Secret key(got < 0 ? std::string_view() : line);
  sodium_memzero(buffer, sizeof buffer);
  if (got < 0) *why = path + ": " + std::strerror(read_errno);
  else if (key.empty()) *why = path + ": its first line is empty";
  return key;
}

}  // namespace fedcl
