// Who may use fedcld: the cluster key (--key-file), which clients and peer daemons may prove, and
// per-user keys (--key-list), so that an administrator grants and revokes access one user at a time.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace fedcld {

struct KeyList {
  std::map<std::string, std::string> keys;  // user -> key
  std::vector<std::string> problems;        // lines that were ignored, and why
};

// The first line of path, or "" with why set when it cannot be read or is empty.
std::string key_read_file(const std::string &path, std::string *why);

// Reads the key list at path into *text; "" or why not.
std::string key_list_read(const std::string &path, std::string *text);

// Parses a key list: one "USER KEY" per line, where KEY is the key itself or, starting with '/', a
// file whose first line is the key; '#' starts a comment. source names the list in problems.
KeyList key_list_parse(const std::string &text, const std::string &source);

// The key user must prove: theirs from the list at key_list_path (read again each time, so that
// removing a line revokes the user's next sessions), else the cluster key. "" with why set when the
// user has none here.
std::string key_for_user(const std::string &cluster_key, const std::string &key_list_path, const std::string &user,
                         std::string *why);

}  // namespace fedcld
