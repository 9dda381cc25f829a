// Which file of the node a client's path names (node_files.h), opened so that no link is ever
// followed: the open itself checks, beneath a directory descriptor, so a path that is swapped for a
// symbolic link between a check and the open cannot lead outside (no check-then-open by name).
#pragma once

#include <sys/stat.h>

#include <string>

namespace fedcld {

// Whether path may name a node file: relative, not empty, no ".." component, not ending in '/',
// no NUL byte. false with *error (naming the path) otherwise.
bool node_path_check(const std::string &path, std::string *error);

// Opens path (node_path_check'd) beneath the directory dir_fd without following any symbolic link,
// in any component: openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, or
// node_open_walk where the kernel has no openat2 (ENOSYS). O_CLOEXEC is added; mode as openat's
// (umask applies). The descriptor, or -errno: ELOOP when a component is a symbolic link.
int node_open_beneath(int dir_fd, const std::string &path, int flags, mode_t mode);
// The fallback: each directory opened from the one before with O_PATH | O_NOFOLLOW (and refused
// unless fstat finds a directory), the last component with O_NOFOLLOW. Public for the tests, which run it on kernels with openat2.
int node_open_walk(int dir_fd, const std::string &path, int flags, mode_t mode);

// A regular file at path beneath folder_fd, for reading or writing. A write opens the file as it is
// (no truncation: the command writes its range, the rest stays) or creates it 0600 whatever the
// umask. Non-blocking, so that a FIFO cannot stall the loop; anything but a regular file is
// refused. The descriptor and *st (its fstat), or -1 with *error (naming the path; the caller says
// which folder).
int node_file_open(int folder_fd, const std::string &path, bool for_writing, struct stat *st, std::string *error);

// The folder under the file root that a session of user keeps its files in: the name itself, when
// it is a safe folder name (letters, digits and . _ - @ +, starting with a letter or digit, at most
// NAME_MAX bytes), kAnonymousFolder for a session without a user name. "" with *error for any other
// name: refused rather than encoded, so that an administrator finds a user's folder by its name.
constexpr const char kAnonymousFolder[] = "_anonymous";
std::string node_user_folder_name(const std::string &user, std::string *error);

// Who a folder made for a user belongs to: the session's local account (--session-accounts), or
// (uid 0) whoever makes it.
struct NodeOwner {
  uid_t uid = 0;
  gid_t gid = 0;
};

// The folder name beneath root_fd, opened (a directory, no link followed), created 0700 whatever
// the umask, and given to owner, if it is not there; a folder that is there is used as it is (an
// administrator may prepare one). The descriptor, or -1 with *error.
int node_user_folder_open(int root_fd, const std::string &name, NodeOwner owner, std::string *error);

}  // namespace fedcld
