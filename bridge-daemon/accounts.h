// Local accounts that sessions run as (--session-accounts): a key-list user's sessions run as the
// account of the same name, as sshd runs a user's session as that user. The main process looks the
// account up when the session starts; the worker takes its identity before it loads the backend.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "fedcl.capnp.h"

namespace fedcld {

struct LocalAccount {
  uid_t uid = 0;  // 0: none (a worker stays as fedcld's own user; no session runs as root)
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary, as initgroups would set them
  std::string name;
};

// The account named user, with its groups; "" or why no session of user may run as it (no such
// account, or root's).
std::string local_account(const std::string &user, LocalAccount *account);

void account_fill(fedcl::wire::Account::Builder out, const LocalAccount &account);
LocalAccount account_read(fedcl::wire::Account::Reader in);

// This process becomes account (groups, gid, uid, in that order; no way back); "" or why not.
std::string account_become(const LocalAccount &account);

}  // namespace fedcld
