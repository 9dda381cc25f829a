#include "status_print.h"

#include <string>

namespace fedcl {

namespace {

std::string bytes_text(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    unit++;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit ? "%.1f %s" : "%.0f %s", value, units[unit]);
  return text;
}

std::string duration_text(uint64_t seconds) {
  char text[48];
  if (seconds >= 86400) std::snprintf(text, sizeof text, "%llud%02lluh", (unsigned long long)(seconds / 86400), (unsigned long long)(seconds % 86400 / 3600));
  else if (seconds >= 3600) std::snprintf(text, sizeof text, "%lluh%02llum", (unsigned long long)(seconds / 3600), (unsigned long long)(seconds % 3600 / 60));
  else if (seconds >= 60) std::snprintf(text, sizeof text, "%llum%02llus", (unsigned long long)(seconds / 60), (unsigned long long)(seconds % 60));
  else std::snprintf(text, sizeof text, "%llus", (unsigned long long)seconds);
  return text;
}

void print_daemon(std::FILE *out, const DaemonReport &r) {
  if (!r.answered) {
    std::fprintf(out, "%s: unreachable: %s\n\n", r.endpoint.c_str(), r.error.c_str());
    return;
  }
  std::fprintf(out, "%s: reachable, node %s, fedcl protocol %u, fedcld %s, running for %s (answered in %.1f ms)\n",
               r.endpoint.c_str(), r.node.c_str(), r.protocol, r.version.empty() ? "?" : r.version.c_str(),
               duration_text(r.uptime_seconds).c_str(), r.answer_ms);
  for (size_t p = 0; p < r.platforms.size(); p++) {
    std::fprintf(out, "  platform %zu: %s\n", p, r.platforms[p].name.c_str());
    for (size_t d = 0; d < r.platforms[p].devices.size(); d++) {
      const auto &device = r.platforms[p].devices[d];
      std::fprintf(out, "    device %zu: %s (%s)\n", d, device.name.c_str(), bytes_text(device.global_memory).c_str());
    }
  }
  std::fprintf(out, "  since start: %llu sessions, %llu handshakes refused, %llu requests failed, %llu workers lost\n",
               (unsigned long long)r.sessions_started, (unsigned long long)r.handshakes_refused,
               (unsigned long long)r.requests_failed, (unsigned long long)r.worker_failures);
  if (!r.sessions_shown) {
    std::fprintf(out, "  sessions: not shown by this daemon (status-sessions = no); %llu open\n\n", (unsigned long long)r.sessions_hidden);
    return;
  }
  std::string limit = r.max_session_memory ? ", at most " + bytes_text(r.max_session_memory) + " each" : "";
  std::string hidden = r.sessions_hidden ? ", " + std::to_string(r.sessions_hidden) + " of other users not listed" : "";
  std::fprintf(out, "  sessions: %zu of at most %llu%s, %s of device memory in use%s\n",
               r.sessions.size() + size_t(r.sessions_hidden), (unsigned long long)r.max_sessions, hidden.c_str(),
               bytes_text(r.memory_in_use()).c_str(), limit.c_str());
  if (r.sessions.empty()) return (void)std::fputc('\n', out);
  std::fprintf(out, "    %-22s %-10s %-21s %-9s %8s %7s %10s %6s %9s %14s %10s %10s\n", "CLIENT", "USER", "ADDRESS",
               "TRANSPORT", "PID", "AGE", "MEMORY", "OBJS", "IN FLIGHT", "REQS (FAILED)", "RECEIVED", "SENT");
  for (const auto &s : r.sessions) {
    std::string requests = std::to_string(s.requests) + " (" + std::to_string(s.requests_failed) + ")";
    std::fprintf(out, "    %-22s %-10s %-21s %-9s %8u %7s %10s %6llu %9llu %14s %10s %10s\n", s.client.c_str(),
                 s.user.empty() ? "-" : s.user.c_str(), s.address.empty() ? "-" : s.address.c_str(),
                 s.transport.empty() ? "-" : s.transport.c_str(), s.pid,
                 duration_text(s.seconds).c_str(), bytes_text(s.memory).c_str(), (unsigned long long)s.objects,
                 (unsigned long long)s.commands_in_flight, requests.c_str(), bytes_text(s.bytes_received).c_str(),
                 bytes_text(s.bytes_sent).c_str());
    for (const auto &link : s.links)
      std::fprintf(out, "      peer link %s (%s, %s): %s sent, %s received\n", link.peer.c_str(), link.up ? "up" : "closed",
                   link.transport.empty() ? "-" : link.transport.c_str(), bytes_text(link.bytes_sent).c_str(),
                   bytes_text(link.bytes_received).c_str());
  }
  std::fputc('\n', out);
}

// JSON text: escapes what a JSON string may not hold as is.
std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", c);
      out += escape;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

std::string string_array(const std::vector<std::string> &items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); i++) out += (i ? ", " : "") + quoted(items[i]);
  return out + "]";
}

std::string daemon_json(const DaemonReport &r) {
  std::string out = "{\"endpoint\": " + quoted(r.endpoint) + ", \"reachable\": " + (r.answered ? "true" : "false");
  if (!r.answered) return out + ", \"error\": " + quoted(r.error) + "}";
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3f", r.answer_ms);
  out += ", \"answer_ms\": " + std::string(ms) + ", \"protocol\": " + std::to_string(r.protocol) +
         ", \"node\": " + quoted(r.node) + ", \"uptime_seconds\": " + std::to_string(r.uptime_seconds) +
         ", \"max_sessions\": " + std::to_string(r.max_sessions) +
         ", \"max_session_memory\": " + std::to_string(r.max_session_memory) + ", \"version\": " + quoted(r.version) +
         ", \"sessions_started\": " + std::to_string(r.sessions_started) + ", \"handshakes_refused\": " +
         std::to_string(r.handshakes_refused) + ", \"requests_failed\": " + std::to_string(r.requests_failed) +
         ", \"worker_failures\": " + std::to_string(r.worker_failures) + ", \"admin\": " + (r.admin ? "true" : "false") +
         ", \"sessions_hidden\": " + std::to_string(r.sessions_hidden) + ", \"platforms\": [";
  for (size_t p = 0; p < r.platforms.size(); p++) {
    out += std::string(p ? ", " : "") + "{\"name\": " + quoted(r.platforms[p].name) + ", \"devices\": [";
    for (size_t d = 0; d < r.platforms[p].devices.size(); d++) {
      const auto &device = r.platforms[p].devices[d];
      out += std::string(d ? ", " : "") + "{\"name\": " + quoted(device.name) +
             ", \"global_memory\": " + std::to_string(device.global_memory) + "}";
    }
    out += "]}";
  }
  out += "]";
  if (!r.sessions_shown) return out + ", \"sessions\": null, \"memory_in_use\": null}";
  out += ", \"sessions\": [";
  for (size_t i = 0; i < r.sessions.size(); i++) {
    const auto &s = r.sessions[i];
    out += std::string(i ? ", " : "") + "{\"client\": " + quoted(s.client) + ", \"platform\": " +
           std::to_string(s.platform) + ", \"memory\": " + std::to_string(s.memory) + ", \"objects\": " +
           std::to_string(s.objects) + ", \"seconds\": " + std::to_string(s.seconds) + ", \"pid\": " +
           std::to_string(s.pid) + ", \"user\": " + quoted(s.user) + ", \"address\": " + quoted(s.address) +
           ", \"transport\": " + quoted(s.transport) +
           ", \"commands_in_flight\": " + std::to_string(s.commands_in_flight) + ", \"requests\": " +
           std::to_string(s.requests) + ", \"requests_failed\": " + std::to_string(s.requests_failed) +
           ", \"bytes_received\": " + std::to_string(s.bytes_received) + ", \"bytes_sent\": " +
           std::to_string(s.bytes_sent) + ", \"links\": [";
    for (size_t l = 0; l < s.links.size(); l++) {
      const auto &link = s.links[l];
      out += std::string(l ? ", " : "") + "{\"peer\": " + quoted(link.peer) + ", \"up\": " + (link.up ? "true" : "false") +
             ", \"bytes_sent\": " + std::to_string(link.bytes_sent) + ", \"bytes_received\": " +
             std::to_string(link.bytes_received) + ", \"transport\": " + quoted(link.transport) + "}";
    }
    out += "]}";
  }
  return out + "], \"memory_in_use\": " + std::to_string(r.memory_in_use()) + "}";
}

}  // namespace

void print_status_text(std::FILE *out, const HostList &hosts, const std::vector<DaemonReport> &reports) {
  for (const std::string &problem : hosts.problems) std::fprintf(out, "problem: %s\n", problem.c_str());
  for (const std::string &warning : hosts.warnings) std::fprintf(out, "warning: %s\n", warning.c_str());
  for (const std::string &note : hosts.notes) std::fprintf(out, "note: %s\n", note.c_str());
  size_t answered = 0;
  for (const DaemonReport &report : reports) {
    print_daemon(out, report);
    answered += report.answered;
  }
  std::fprintf(out, "%zu daemon%s from %s: %zu reachable, %zu unreachable\n", reports.size(),
               reports.size() == 1 ? "" : "s", hosts.source.c_str(), answered, reports.size() - answered);
}

void print_status_json(std::FILE *out, const HostList &hosts, const std::vector<DaemonReport> &reports) {
  std::string text = "{\"schema\": " + std::to_string(kStatusJsonSchema) + ", \"source\": " + quoted(hosts.source) + ", \"problems\": " + string_array(hosts.problems) +
                     ", \"warnings\": " + string_array(hosts.warnings) + ", \"notes\": " + string_array(hosts.notes) + ", \"daemons\": [";
  for (size_t i = 0; i < reports.size(); i++) text += (i ? ",\n  " : "\n  ") + daemon_json(reports[i]);
  text += reports.empty() ? "]}\n" : "\n]}\n";
  std::fputs(text.c_str(), out);
}

}  // namespace fedcl
