// fedcld's log: one line per event on stderr, or, when stderr is the journal's (systemd starts
// fedcld with JOURNAL_STREAM naming it), one journal entry per event with its priority and fields:
// FEDCLD_SESSION, FEDCLD_USER, FEDCLD_PEER (the connection's other end) where the event has them, so
// that `journalctl -u fedcld -p warning` shows exactly the warnings and errors and
// `journalctl FEDCLD_USER=alice` one user's sessions.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <string>

namespace fedcld {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

void log_set_level(LogLevel level);
bool log_parse_level(const char *name, LogLevel *level);
// Whether lines go to the journal (decided once, from JOURNAL_STREAM and stderr).
bool log_to_journal();

// The session, user and peer of what this thread logs while the object lives (the main process:
// the connection whose handshake runs). A session worker sets them once for its whole life.
struct LogContext {
  uint64_t session = 0;
  std::string user, peer;
};
class LogScope {
 public:
  explicit LogScope(LogContext context);
  ~LogScope();
  LogScope(const LogScope &) = delete;

 private:
  LogContext outer_;
};
void log_set_context(LogContext context);
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
