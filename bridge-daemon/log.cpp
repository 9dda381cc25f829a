#include "log.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace fedcld {

namespace {
LogLevel g_level = LogLevel::info;
std::string g_prefix;
const char *const kNames[] = {"error", "warn", "info", "debug"};
}  // namespace

void log_set_level(LogLevel level) { g_level = level; }

void log_set_prefix(const std::string &prefix) { g_prefix = prefix.empty() ? "" : "[" + prefix + "] "; }

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
  // Measured first: a message may quote a kernel name or a build log of any length.
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  int length = vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string line(length > 0 ? length + 1 : 1, '\0');
  vsnprintf(line.data(), line.size(), format, again);
  va_end(again);
  std::fprintf(stderr, "fedcld %s: %s%s\n", kNames[static_cast<int>(level)], g_prefix.c_str(), line.c_str());
}

std::string log_quote(const std::string &text) {
  constexpr size_t kShown = 80;
  std::string quoted = "'";
  for (size_t i = 0; i < text.size() && i < kShown; i++) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      quoted += char(c);
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      quoted += escaped;
    }
  }
  quoted += text.size() > kShown ? "'..." : "'";
  return quoted;
}

}  // namespace fedcld
