#include "bench_platform.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
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

double first_device_us(const std::string &name_part, bool is_fedcl) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    auto start = std::chrono::steady_clock::now();
    double us = -1;
    try {
      cl_platform_id platform = find_platform(name_part, is_fedcl, "see bench/README.md");
      cl_device_id device;
      if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) == CL_SUCCESS)
        us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    } catch (const std::exception &e) {
      std::fprintf(stderr, "first device: %s\n", e.what());
    }
    ssize_t ignored = write(fds[1], &us, sizeof us);
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  double us = -1;
  if (read(fds[0], &us, sizeof us) != ssize_t(sizeof us)) us = -1;
  close(fds[0]);
  waitpid(child, nullptr, 0);
  return us;
}

}  // namespace bench
