#include "build_options.h"

#include <cstdlib>
#include <sstream>
#include <string>

namespace fedcl {

bool build_needs_uniform_work_groups(const char *options) {
  std::istringstream words(options ? options : "");
  std::string word;
  bool before_2_0 = true, asked = false;
  while (words >> word) {
    if (word == "-cl-uniform-work-group-size") asked = true;
    if (word.compare(0, 11, "-cl-std=CLC") == 0) before_2_0 = false;
    else if (word.compare(0, 10, "-cl-std=CL") == 0) before_2_0 = std::atoi(word.c_str() + 10) < 2;
  }
  return before_2_0 || asked;
}

}  // namespace fedcl
