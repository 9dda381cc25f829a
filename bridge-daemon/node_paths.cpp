#include "node_paths.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "log.h"

namespace fedcld {

namespace {

// Why opening path failed with errno err, for the client and the log.
std::string open_failure(const std::string &path, int err) {
  switch (err) {
    case ELOOP: return log_quote(path) + " leads through a symbolic link, and node files never follow links";
    case EXDEV: return log_quote(path) + " leads outside the folder";
    default: return log_quote(path) + ": " + std::strerror(err);
  }
}

}  // namespace

bool node_path_check(const std::string &path, std::string *error) {
  if (path.empty()) return *error = "an empty path", false;
  if (path.find('\0') != std::string::npos) return *error = log_quote(path) + " holds a NUL byte", false;
  if (path.front() == '/')
    return *error = log_quote(path) + " is absolute; a node file's path is relative to the session's folder", false;
  if (path.back() == '/') return *error = log_quote(path) + " names a directory", false;
  for (size_t start = 0; start <= path.size();) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end - start == 2 && path.compare(start, 2, "..") == 0) return *error = log_quote(path) + " has a '..' component", false;
    start = end + 1;
  }
  return true;
}

int node_open_walk(int dir_fd, const std::string &path, int flags, mode_t mode) {
  if (path.empty() || path.front() == '/') return -EXDEV;  // openat would leave dir_fd behind
  int at = dir_fd, owned = -1;
  for (size_t start = 0;;) {
    size_t slash = path.find('/', start);
    bool last = slash == std::string::npos;
    std::string name = path.substr(start, last ? std::string::npos : slash - start);
    start = slash + 1;
    if (!last && (name.empty() || name == ".")) continue;
    if (name == "..") {  // refused, as openat2 refuses a way out
      if (owned >= 0) close(owned);
      return -EXDEV;
    }
    int fd, err;
    if (last) {
      fd = openat(at, name.empty() ? "." : name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
      err = errno;
    } else {
      // A directory's own descriptor: O_NOFOLLOW opens a link as the link, which fstat then tells
      // apart, about the very object opened.
      fd = openat(at, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
      err = errno;
      struct stat st {};
      if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode))) {
        err = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
        close(fd);
        fd = -1;
      }
    }
    if (owned >= 0) close(owned);
    if (fd < 0) return -err;
    if (last) return fd;
    at = owned = fd;
  }
}

int node_open_beneath(int dir_fd, const std::string &path, int flags, mode_t mode) {
  struct open_how how {};
  how.flags = uint64_t(flags | O_CLOEXEC);
  how.mode = (flags & O_CREAT) ? mode : 0;  // openat2 refuses a mode without O_CREAT
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  for (int tries = 1;; tries++) {
    long fd = syscall(SYS_openat2, dir_fd, path.c_str(), &how, sizeof how);
    if (fd >= 0) return int(fd);
    if (errno == ENOSYS) return node_open_walk(dir_fd, path, flags, mode);
    // A rename elsewhere on the machine during a scoped lookup: the kernel asks for another try.
    if (errno != EAGAIN || tries == 8) return -errno;
  }
}

int node_file_open(int folder_fd, const std::string &path, bool for_writing, struct stat *st, std::string *error) {
  if (!node_path_check(path, error)) return -1;
  int fd = -1;
  bool created = false;
  if (!for_writing) {
    fd = node_open_beneath(folder_fd, path, O_RDONLY | O_NONBLOCK, 0);
  } else {
    // The file as it is, else a new one; a file that another made or removed between the two opens
    // sends us round again.
    for (int tries = 0; tries < 8; tries++) {
      fd = node_open_beneath(folder_fd, path, O_WRONLY | O_NONBLOCK, 0);
      if (fd != -ENOENT) break;
      fd = node_open_beneath(folder_fd, path, O_WRONLY | O_NONBLOCK | O_CREAT | O_EXCL, 0600);
      created = fd >= 0;
      if (fd != -EEXIST) break;
    }
  }
  if (fd < 0) return *error = open_failure(path, -fd), -1;
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    close(fd);
    return *error = log_quote(path) + " is not a regular file", -1;
  }
  // The umask may only have taken bits away; 0600 it is, whatever it was.
  if (created && (st->st_mode & 07777) != 0600 && fchmod(fd, 0600) != 0) {
    int err = errno;
    close(fd);
    return *error = "cannot make " + log_quote(path) + " 0600: " + std::strerror(err), -1;
  }
  return fd;
}

std::string node_user_folder_name(const std::string &user, std::string *error) {
  if (user.empty()) return kAnonymousFolder;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  bool safe = user.size() <= NAME_MAX && alnum(user.front());
  for (char c : user) safe = safe && (alnum(c) || c == '.' || c == '_' || c == '-' || c == '@' || c == '+');
  if (!safe)
    return *error = "the user name " + log_quote(user) + " cannot name a folder for node files (letters, digits and "
                    ". _ - @ + only, starting with a letter or digit)", "";
  return user;
}

int node_user_folder_open(int root_fd, const std::string &name, NodeOwner owner, std::string *error) {
  int fd = node_open_beneath(root_fd, name, O_RDONLY | O_DIRECTORY, 0);
  bool created = false;
  if (fd == -ENOENT) {
    created = mkdirat(root_fd, name.c_str(), 0700) == 0;
    if (!created && errno != EEXIST) return *error = "cannot create the folder " + log_quote(name) + ": " + std::strerror(errno), -1;
    fd = node_open_beneath(root_fd, name, O_RDONLY | O_DIRECTORY, 0);
  }
  if (fd < 0) return *error = "the folder " + open_failure(name, -fd), -1;
  struct stat st {};
  if (created && fstat(fd, &st) == 0 && (st.st_mode & 07777) != 0700 && fchmod(fd, 0700) != 0) {
    int err = errno;
    close(fd);
    return *error = "cannot make the folder " + log_quote(name) + " 0700: " + std::strerror(err), -1;
  }
  if (created && owner.uid && fchown(fd, owner.uid, owner.gid) != 0) {
    int err = errno;
    close(fd);
    return *error = "cannot give the folder " + log_quote(name) + " to its user's account: " + std::strerror(err), -1;
  }
  return fd;
}

}  // namespace fedcld
