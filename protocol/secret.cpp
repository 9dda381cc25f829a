#include "secret.h"

#include <fcntl.h>
#include <sys/stat.h>
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

std::string key_too_short(std::string_view key) {
  if (key.size() >= kMinKeyBytes) return {};
  return "a key of " + std::to_string(key.size()) + " bytes is too short: keys have at least " + std::to_string(kMinKeyBytes) +
         " (make one with: head -c 24 /dev/urandom | base64)";
}

KeyFileCheck key_file_check(const std::string &path, uid_t owner, mode_t mode, uid_t reader_uid) {
  KeyFileCheck check;
  if (mode & (S_IWGRP | S_IWOTH))
    check.refused = path + " may be written by users other than its owner, who could put their own key in it (chmod go-w)";
  else if (owner != 0 && owner != reader_uid)
    check.refused = path + " belongs to user " + std::to_string(owner) + ", who could put their own key in it (its owner must be root or this user)";
  else if (mode & S_IROTH)
    check.warning = path + " may be read by every user of this machine (chmod o-r)";
  return check;
}

Secret secret_read_file(const std::string &path, std::string *why, std::string *warning) {
  why->clear();
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = path + ": " + std::strerror(errno);
    return {};
  }
  struct stat status {};
  if (fstat(fd, &status) != 0) {
    *why = path + ": " + std::strerror(errno);
    close(fd);
    return {};
  }
  KeyFileCheck check = key_file_check(path, status.st_uid, status.st_mode, geteuid());
  if (!check.refused.empty()) {
    *why = check.refused;
    close(fd);
    return {};
  }
  if (warning) *warning = check.warning;
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
  else if (std::string short_key = key_too_short(key.view()); !short_key.empty()) *why = path + ": " + short_key;
  if (!why->empty()) return {};
  return key;
}

}  // namespace fedcl
