#include "log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifdef FEDCLD_JOURNAL
#include <systemd/sd-journal.h>
#endif

namespace fedcld {

namespace {
LogLevel g_level = LogLevel::info;
std::string g_prefix;
const char *const kNames[] = {"error", "warn", "info", "debug"};
const int kPriorities[] = {3, 4, 6, 7};  // syslog's LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG
thread_local LogContext t_context;
LogContext g_context;  // a worker's, for every thread

const LogContext &context() { return t_context.session || !t_context.peer.empty() ? t_context : g_context; }

// systemd documents JOURNAL_STREAM as "device:inode" of the stream it connected stdout and stderr
// to: stderr is the journal's while they match (not once stderr was redirected elsewhere).
bool stderr_is_journal() {
  const char *stream = std::getenv("JOURNAL_STREAM");
  struct stat st {};
  if (!stream || fstat(STDERR_FILENO, &st) != 0) return false;
  unsigned long long device = 0, inode = 0;
  return std::sscanf(stream, "%llu:%llu", &device, &inode) == 2 && device == (unsigned long long)st.st_dev &&
         inode == (unsigned long long)st.st_ino;
}

#ifdef FEDCLD_JOURNAL
bool journal_write(LogLevel level, const std::string &message) {
  const LogContext &c = context();
  std::string session = c.session ? "FEDCLD_SESSION=" + std::to_string(c.session) : "";
  std::string user = c.user.empty() ? "" : "FEDCLD_USER=" + c.user;
  std::string peer = c.peer.empty() ? "" : "FEDCLD_PEER=" + c.peer;
  std::string text = "MESSAGE=" + message, priority = "PRIORITY=" + std::to_string(kPriorities[int(level)]);
  std::string level_field = std::string("FEDCLD_LEVEL=") + kNames[int(level)];
  struct iovec fields[7];
  int n = 0;
  for (const std::string *field : {&text, &priority, &level_field, &session, &user, &peer})
    if (!field->empty()) fields[n++] = {const_cast<char *>(field->data()), field->size()};
  static const char identifier[] = "SYSLOG_IDENTIFIER=fedcld";
  fields[n++] = {const_cast<char *>(identifier), sizeof identifier - 1};
  return sd_journal_sendv(fields, n) >= 0;
}
#endif
}  // namespace

bool log_to_journal() {
#ifdef FEDCLD_JOURNAL
  static const bool journal = stderr_is_journal();
  return journal;
#else
  return false;
#endif
}

LogScope::LogScope(LogContext context) : outer_(std::move(t_context)) { t_context = std::move(context); }
LogScope::~LogScope() { t_context = std::move(outer_); }

void log_set_context(LogContext context) {
  g_prefix = "[session " + std::to_string(context.session) + "] ";
  g_context = std::move(context);
}

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
  // Measured first: a message may quote a kernel name or a build log of any length.
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  int length = vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string line(length > 0 ? length + 1 : 1, '\0');
  vsnprintf(line.data(), line.size(), format, again);
  va_end(again);
  line.resize(std::strlen(line.c_str()));
#ifdef FEDCLD_JOURNAL
  if (log_to_journal() && journal_write(level, g_prefix + line)) return;
#endif
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
