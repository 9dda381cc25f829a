#include "node_folders.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "node_paths.h"

namespace fedcld {

NodeFolders::NodeFolders(std::string root) : root_(std::move(root)) {}

NodeFolders::~NodeFolders() {
  for (auto &entry : folders_) close(entry.second.fd);
  if (root_fd_ >= 0) close(root_fd_);
}

const NodeFolders::Folder *NodeFolders::folder(const std::string &user, NodeOwner owner, std::string *error) {
  auto known = folders_.find(user);
  if (known != folders_.end()) return &known->second;
  if (root_.empty()) return *error = "fedcld serves no files: it was started without --file-root", nullptr;
  std::string name = node_user_folder_name(user, error);
  if (name.empty()) return nullptr;
  if (root_fd_ < 0) {
    // The administrator's own path (canonical since the options were read); everything below it is
    // opened from this descriptor, never by name.
    root_fd_ = open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd_ < 0) return *error = "cannot open the file root " + root_ + ": " + std::strerror(errno), nullptr;
  }
  int fd = node_user_folder_open(root_fd_, name, owner, error);
  if (fd < 0) return *error += " (under the file root " + root_ + ")", nullptr;
  return &folders_.emplace(user, Folder{fd, root_ + "/" + name}).first->second;
}

}  // namespace fedcld
