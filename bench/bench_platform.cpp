#include "bench_platform.h"

#include <stdexcept>
#include <vector>

namespace bench {

std::string platform_text(cl_platform_id platform, cl_platform_info param) {
  size_t size = 0;
  if (clGetPlatformInfo(platform, param, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string text(size, '\0');
  clGetPlatformInfo(platform, param, size, text.data(), nullptr);
  text.resize(size - 1);
  return text;
}

cl_platform_id find_platform(const std::string &name_part, bool is_fedcl, const std::string &hint) {
  cl_uint count = 0;
  if (clGetPlatformIDs(0, nullptr, &count) != CL_SUCCESS) count = 0;
  std::vector<cl_platform_id> platforms(count);
  if (count && clGetPlatformIDs(count, platforms.data(), nullptr) != CL_SUCCESS) platforms.clear();
  std::string seen;
  for (cl_platform_id platform : platforms) {
    std::string name = platform_text(platform, CL_PLATFORM_NAME);
    seen += " '" + name + "'";
    if (name.find(name_part) != std::string::npos && (name == "fedcl") == is_fedcl) return platform;
  }
  throw std::runtime_error("no platform named like '" + name_part + "' among" + (seen.empty() ? " none" : seen) +
                           " (" + hint + ")");
}

}  // namespace bench
