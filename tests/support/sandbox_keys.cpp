#include "sandbox_keys.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace fedcl_test {

const char kAliceKey[] = "alices-key-for-the-sandbox-test";
const char kDaemonsKey[] = "the-daemons-key-of-the-sandbox-test";

SandboxKeys::SandboxKeys() {
  std::string dir = ::testing::TempDir() + "fedcl-sandbox-" + std::to_string(getpid());
  list = dir + "-users";
  daemons = dir + "-daemons";
  std::ofstream(list) << "alice " << kAliceKey << "\n";
  std::ofstream(daemons) << kDaemonsKey << "\n";
  chmod(list.c_str(), 0600);
  chmod(daemons.c_str(), 0600);
  setenv("FEDCL_USER", "alice", 1);
  setenv("FEDCL_KEY", kAliceKey, 1);
}

SandboxKeys::~SandboxKeys() {
  unlink(list.c_str());
  unlink(daemons.c_str());
}

std::vector<std::string> SandboxKeys::daemon_args() const {
  return {"--key-list", list, "--peer-key-file", daemons, "--log-level", "info"};
}

}  // namespace fedcl_test
