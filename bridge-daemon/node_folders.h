// The folders under --file-root that sessions keep their node files in, one per fedcl user
// (node_paths.h names them): a session of user U sees <root>/<U>/ and nothing else of the root.
//
// The folders, and the files in them, are opened and made with this process's credentials: a
// session worker that runs as a local account mapped from the user makes them as that account,
// and the operating system's permissions then guard them as well, with no change here.
#pragma once

#include <map>

#include "node_paths.h"
#include <string>

namespace fedcld {

class NodeFolders {
 public:
  struct Folder {
    int fd;            // the folder's directory, open while this lives
    std::string path;  // where it is, for messages
  };

  explicit NodeFolders(std::string root);  // root: canonical, or "" (no files served)
  ~NodeFolders();
  NodeFolders(const NodeFolders &) = delete;
  NodeFolders &operator=(const NodeFolders &) = delete;

  // The folder of user's files (user "": a session without a user name), opened at its first use,
  // and made then if it is not there; the root's directory is opened once too. Null with *error.
  // A folder it makes is owner's (NodeOwner in node_paths.h).
  const Folder *folder(const std::string &user, NodeOwner owner, std::string *error);

 private:
  std::string root_;
  int root_fd_ = -1;
  std::map<std::string, Folder> folders_;  // by user
};

}  // namespace fedcld
