// The keys of the confinement's tests: a key list with one user, alice, and the daemons' key, each in
// a file only its owner reads, with alice's key in this process's environment as her client's.
#pragma once

#include <string>
#include <vector>

namespace fedcl_test {

extern const char kAliceKey[];
extern const char kDaemonsKey[];

struct SandboxKeys {
  std::string list, daemons;
  SandboxKeys();
  ~SandboxKeys();
  // fedcld's options that load both.
  std::vector<std::string> daemon_args() const;
};

}  // namespace fedcl_test
