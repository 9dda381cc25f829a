// fedcld's log: one line per event on stderr (journald adds the time stamps under systemd).
#pragma once

#include <cstdarg>
#include <string>

namespace fedcld {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

void log_set_level(LogLevel level);
// Put before every line's message: a session worker names its process and session ("worker 4711,
// session 12"), so that its lines read apart from the main process's in one log.
void log_set_prefix(const std::string &prefix);
bool log_parse_level(const char *name, LogLevel *level);
bool log_enabled(LogLevel level);
void log_write(LogLevel level, const char *format, ...) __attribute__((format(printf, 2, 3)));
// Text another party chose (a user name, a client's description), fit for one log line: printable
// ASCII kept, every other byte as \xNN, at most 80 bytes of it, in quotes. A line break or an
// escape sequence in a name then cannot forge a log line or a terminal's state.
std::string log_quote(const std::string &text);

}  // namespace fedcld

#define FEDCLD_LOG(level, ...)                                                           \
  do {                                                                                   \
    if (::fedcld::log_enabled(::fedcld::LogLevel::level))                                \
      ::fedcld::log_write(::fedcld::LogLevel::level, __VA_ARGS__);                       \
  } while (0)
