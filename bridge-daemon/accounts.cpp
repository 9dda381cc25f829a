#include "accounts.h"

#include <grp.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "log.h"

namespace fedcld {

std::string local_account(const std::string &user, LocalAccount *account) {
  if (user.empty()) return "sessions run as local accounts here, and a session without a user name has none";
  std::vector<char> buffer(16384);
  passwd entry{}, *found = nullptr;
  int err = getpwnam_r(user.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (!found) return "no local account " + log_quote(user) + " on this node" + (err ? std::string(" (") + std::strerror(err) + ")" : "");
  if (entry.pw_uid == 0) return "fedcld runs no session as root (user " + log_quote(user) + ")";
  account->uid = entry.pw_uid;
  account->gid = entry.pw_gid;
  account->name = user;
  int count = 64;
  account->groups.resize(size_t(count));
  while (getgrouplist(user.c_str(), entry.pw_gid, account->groups.data(), &count) < 0) account->groups.resize(size_t(count));
  account->groups.resize(size_t(count));
  return {};
}

void account_fill(fedcl::wire::Account::Builder out, const LocalAccount &account) {
  out.setUid(account.uid);
  out.setGid(account.gid);
  out.setName(account.name);
  auto groups = out.initGroups(unsigned(account.groups.size()));
  for (size_t i = 0; i < account.groups.size(); i++) groups.set(unsigned(i), account.groups[i]);
}

LocalAccount account_read(fedcl::wire::Account::Reader in) {
  LocalAccount account;
  account.uid = in.getUid();
  account.gid = in.getGid();
  account.name = in.getName();
  for (uint32_t group : in.getGroups()) account.groups.push_back(group);
  return account;
}

std::string account_become(const LocalAccount &account) {
  pid_t parent = getppid();
  if (setgroups(account.groups.size(), account.groups.data()) != 0) return std::string("setgroups: ") + std::strerror(errno);
  if (setresgid(account.gid, account.gid, account.gid) != 0) return std::string("setresgid: ") + std::strerror(errno);
  if (setresuid(account.uid, account.uid, account.uid) != 0) return std::string("setresuid: ") + std::strerror(errno);
  // No way back: a process that could become root again is not the account.
  if (setresuid(0, 0, 0) == 0) return "the worker could become root again";
  // A change of identity clears the parent-death signal: the worker would outlive the daemon.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return "the main process ended";
  return {};
}

}  // namespace fedcld
