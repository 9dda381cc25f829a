// Node files are opened by the main process (docs/design-decisions.md, "Node files"): a confined
// session worker may open nothing under --file-root itself, so that a session's kernel, which may be
// native code in the worker, reaches no other user's folder. Each worker asks over a socket of its
// own (SOCK_SEQPACKET, NodeFileOpen), and is sent the descriptor of the file beneath the folder of
// its session's user, opened without following links (node_paths.h), or why not (NodeFileOpened).
#pragma once

#include <sys/stat.h>
#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "node_folders.h"

namespace fedcld {

// The main process's side.
class NodeFileBroker {
 public:
  // user_of(worker id): whose files the worker's session may open, and the local account they are
  // opened as (--session-accounts; uid 0: none); false while it has no session.
  using UserOf = std::function<bool(uint64_t worker, std::string *user, NodeOwner *account)>;
  NodeFileBroker(uv_loop_t *loop, std::string root, UserOf user_of);
  ~NodeFileBroker();
  NodeFileBroker(const NodeFileBroker &) = delete;
  NodeFileBroker &operator=(const NodeFileBroker &) = delete;

  // A socket for worker's requests: the end the worker inherits (the caller closes it once the
  // worker started), or -1 with errno.
  int attach(uint64_t worker);
  // The worker ended: its socket closes.
  void detach(uint64_t worker);

 private:
  struct Line;
  void serve(Line &line);

  uv_loop_t *loop_;
  NodeFolders folders_;
  UserOf user_of_;
  std::map<uint64_t, Line *> lines_;
};

// The worker's side: the descriptor it inherited its socket on.
constexpr int kNodeFilesFd = 5;

// Asks the main process for path (relative to the session's user's folder), waiting for the answer
// (the open is short; up to a few seconds when the main process is busy). The descriptor and *st,
// or -1 with *error (naming the path and the user's folder).
int node_file_request(const std::string &path, bool for_writing, struct stat *st, std::string *error);

}  // namespace fedcld
