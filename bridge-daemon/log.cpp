#include "log.h"

#include <cstdio>
#include <cstring>

namespace fedcld {

namespace {
LogLevel g_level = LogLevel::info;
const char *const kNames[] = {"error", "warn", "info", "debug"};
}  // namespace

void log_set_level(LogLevel level) { g_level = level; }

bool log_parse_level(const char *name, LogLevel *level) {
  for (int i = 0; i < 4; i++) {
    if (std::strcmp(name, kNames[i]) == 0) {
      *level = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

bool log_enabled(LogLevel level) { return level <= g_level; }

void log_write(LogLevel level, const char *format, ...) {
  char line[2048];
  va_list args;
  va_start(args, format);
  vsnprintf(line, sizeof line, format, args);
  va_end(args);
  std::fprintf(stderr, "fedcld %s: %s\n", kNames[static_cast<int>(level)], line);
}

}  // namespace fedcld
