// Who may use fedcld: the cluster key (--key-file), which clients and peer daemons may prove, and
// per-user keys (--key-list), so that an administrator grants and revokes access one user at a time.
// KeyStore holds both for the main process's handshakes: the list is parsed once and again when its
// file changes, never on a handshake.
#pragma once

#include <uv.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "secret.h"

namespace fedcld {

struct KeyList {
  std::map<std::string, fedcl::Secret> keys;  // user -> key
  std::vector<std::string> problems;          // lines that were ignored, and why
  std::vector<std::string> warnings;          // what the administrator should fix (a key file everyone reads)
  std::string unreadable;                     // why the list itself could not be used; "" when it was
};

// Parses a key list: one "USER KEY" per line, where KEY is the key itself or, starting with '/', a
// file whose first line is the key; '#' starts a comment. Keys shorter than fedcl::kMinKeyBytes and
// key files that others may write are problems. source names the list in problems. The keys are
// copied straight from text into Secrets; the caller wipes text.
KeyList key_list_parse(const std::string &text, const std::string &source);

// Reads and parses the key list at path (its text wiped afterwards); unreadable when it cannot be
// read or fedcl::key_file_check refuses it (a list others may write grants them any user).
KeyList key_list_load(const std::string &path);

class KeyStore {
 public:
  // The cluster key ("" none) and the key list's path ("" none); the list is loaded now.
  KeyStore(fedcl::Secret cluster_key, std::string list_path);
  KeyStore(const KeyStore &) = delete;
  KeyStore &operator=(const KeyStore &) = delete;

  // Watches the list's file (its status polled on libuv's threads every second) and loads it again,
  // off the loop, when it changed: removing a line revokes that user's next sessions.
  void watch(uv_loop_t *loop);
  void close();

  bool requires_key() const { return !cluster_key_.empty() || !list_path_.empty(); }
  const fedcl::Secret &cluster_key() const { return cluster_key_; }
  // The key user must prove: theirs from the list, else the cluster key. A user with neither gets a
  // decoy that nobody holds (random, of this run), so that the proof fails as a wrong key's does,
  // after the same work: the answer tells no one which users exist.
  fedcl::Secret key_for(const std::string &user) const;
  // How many times the list was loaded (the first load included): tests wait for a reload.
  uint64_t loads() const;

 private:
  struct Reload;
  void start_load();
  void take(KeyList list);

  fedcl::Secret cluster_key_;
  fedcl::Secret decoy_;
  std::string list_path_;
  mutable std::mutex mutex_;  // the list is swapped on the loop, read by TLS's key callback too
  std::shared_ptr<const KeyList> list_;
  uint64_t loads_ = 0;
  uv_fs_poll_t *poll_ = nullptr;
  bool loading_ = false, changed_again_ = false;
};

}  // namespace fedcld
