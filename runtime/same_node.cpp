#include "same_node.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fedcl {

LocalMode local_mode() {
  static const LocalMode mode = [] {
    const char *text = std::getenv("FEDCL_LOCAL");
    if (!text || !*text || std::strcmp(text, "auto") == 0) return LocalMode::automatic;
    if (std::strcmp(text, "off") == 0) return LocalMode::off;
    if (std::strcmp(text, "on") == 0) return LocalMode::on;
    std::fprintf(stderr, "fedcl: warning: FEDCL_LOCAL wants auto, off or on, not '%s': auto\n", text);
    return LocalMode::automatic;
  }();
  return mode;
}

}  // namespace fedcl
