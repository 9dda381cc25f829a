// fedcl: the administrator's and user's command. `fedcl status` reads the daemons the driver would
// use (FEDCL_HOSTS, FEDCL_HOSTS_FILE or hosts.conf, and the key and user the driver would prove) and
// asks each, all at once, what it serves and who uses it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <ctime>
#include <unistd.h>
#include <string>
#include <thread>
#include <vector>

#include "hosts.h"
#include "status_print.h"
#include "status_query.h"

namespace {

const char kUsage[] =
    "usage: fedcl status [--json] [--watch [SECONDS]] [--timeout MS]\n"
    "Asks every fedcld daemon the fedcl driver would use (FEDCL_HOSTS, else FEDCL_HOSTS_FILE, else\n"
    FEDCL_CONFIG_DIR "/hosts.conf) whether it answers, which protocol, node and devices it has, and,\n"
    "where the daemon allows it, its sessions: who, from where, device memory, commands in flight,\n"
    "traffic and peer links. A daemon with a key\n"
    "answers only those who prove they hold it, as the driver does (FEDCL_KEY or FEDCL_KEY_FILE,\n"
    "FEDCL_USER, or the configuration's key and user lines).\n"
    "\n"
    "  --json         one JSON document on stdout, for scripts (its schema: docs/status.md)\n"
    "  --watch [S]    ask again every S seconds (default 2) until interrupted, like watch(1)\n"
    "  --timeout MS   how long each daemon has to answer (default FEDCL_CONNECT_TIMEOUT_MS, else 2000)\n"
    "\n"
    "Exit status: 0 when every daemon answered, 1 when one did not, 2 when the hosts configuration\n"
    "has a bad line, names no daemon, or the command line is wrong.\n";

int usage_error(const std::string &why) {
  std::fprintf(stderr, "fedcl: %s\n%s", why.c_str(), kUsage);
  return 2;
}

bool parse_timeout(const char *text, int *ms) {
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value <= 0 || value > 3600000) return false;
  *ms = int(value);
  return true;
}

bool parse_seconds(const char *text, double *seconds) {
  char *end = nullptr;
  double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(value >= 0.1) || value > 86400) return false;
  *seconds = value;
  return true;
}

// Asks every daemon once and prints what they said; the exit status of one round.
int status_round(const fedcl::HostList &hosts, bool json, int timeout_ms) {
  std::vector<fedcl::DaemonReport> reports(hosts.endpoints.size());
  std::vector<std::thread> askers;
  for (size_t i = 0; i < hosts.endpoints.size(); i++) {
    if (hosts.credentials_broken) reports[i].error = "not asked: a key or TLS setting cannot be used (see the problems)";
    else askers.emplace_back([&, i] { reports[i] = fedcl::query_daemon_status(hosts.endpoints[i], hosts.credentials(), timeout_ms); });
  }
  for (std::thread &asker : askers) asker.join();
  if (json) fedcl::print_status_json(stdout, hosts, reports);
  else fedcl::print_status_text(stdout, hosts, reports);
  std::fflush(stdout);
  if (hosts.endpoints.empty()) {
    std::fprintf(stderr, "fedcl: no daemons configured in %s\n", hosts.source.c_str());
    return 2;
  }
  if (!hosts.problems.empty()) return 2;
  for (const auto &report : reports)
    if (!report.answered) return 1;
  return 0;
}

int status(int argc, char **argv) {
  bool json = false, watch = false;
  double every_s = 2;
  int timeout_ms = 2000;
  if (const char *text = std::getenv("FEDCL_CONNECT_TIMEOUT_MS"); text && !parse_timeout(text, &timeout_ms))
    return usage_error(std::string("FEDCL_CONNECT_TIMEOUT_MS '") + text + "' is not a number of milliseconds");
  for (int i = 0; i < argc; i++) {
    std::string arg = argv[i];
    if (arg == "--json") json = true;
    else if (arg == "--timeout" && i + 1 < argc && parse_timeout(argv[i + 1], &timeout_ms)) i++;
    else if (arg == "--watch") {
      watch = true;
      if (i + 1 < argc && argv[i + 1][0] != '-') {
        if (!parse_seconds(argv[i + 1], &every_s)) return usage_error(std::string("--watch wants seconds (0.1 to 86400), not '") + argv[i + 1] + "'");
        i++;
      }
    } else if (arg == "--help" || arg == "-h") return std::fputs(kUsage, stdout), 0;
    else return usage_error("status does not take '" + arg + "'" + (arg == "--timeout" ? " without a number of milliseconds" : ""));
  }
  fedcl::HostList hosts = fedcl::hosts_from_environment();
  if (!watch) return status_round(hosts, json, timeout_ms);
  bool terminal = isatty(STDOUT_FILENO) && !json;
  for (;;) {
    if (terminal) std::fputs("\033[H\033[2J", stdout);  // from the top of a cleared screen, as watch(1)
    std::time_t now = std::time(nullptr);
    char stamp[64];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
    if (!json) std::printf("fedcl status, every %g s: %s\n\n", every_s, stamp);
    int result = status_round(hosts, json, timeout_ms);
    if (result == 2) return result;  // a configuration problem does not go away by asking again
    std::this_thread::sleep_for(std::chrono::milliseconds(long(every_s * 1000)));
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (argc >= 2 && std::strcmp(argv[1], "status") == 0) return status(argc - 2, argv + 2);
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  return usage_error(argc < 2 ? "which command? (only 'status' so far)" : std::string("unknown command '") + argv[1] + "'");
}
