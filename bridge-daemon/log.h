// fedcld's log: one line per event on stderr (journald adds the time stamps under systemd).
#pragma once

#include <cstdarg>

namespace fedcld {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

void log_set_level(LogLevel level);
bool log_parse_level(const char *name, LogLevel *level);
bool log_enabled(LogLevel level);
void log_write(LogLevel level, const char *format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace fedcld

#define FEDCLD_LOG(level, ...)                                                           \
  do {                                                                                   \
    if (::fedcld::log_enabled(::fedcld::LogLevel::level))                                \
      ::fedcld::log_write(::fedcld::LogLevel::level, __VA_ARGS__);                       \
  } while (0)
