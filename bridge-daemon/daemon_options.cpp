#include "daemon_options.h"

#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <utility>

#include "fedcl.capnp.h"
#include "keys.h"
#include "transfer_chunks.h"

namespace fedcld {

namespace {

// HOST:PORT ("[v6]:PORT" too); an empty host means every interface.
bool parse_address(const std::string &text, std::string *host, int *port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 >= text.size()) return false;
  std::string name = text.substr(0, colon);
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') name = name.substr(1, name.size() - 2);
  char *end = nullptr;
  long number = std::strtol(text.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || number < 0 || number > 65535) return false;
  *host = name.empty() ? "0.0.0.0" : name;
  *port = static_cast<int>(number);
  return true;
}

bool parse_count(const std::string &text, unsigned long long *count) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  *count = std::strtoull(text.c_str(), nullptr, 10);
  return errno == 0;
}

std::string listen(const std::string &text, DaemonSettings &s) {
  if (!parse_address(text, &s.server.host, &s.server.port)) return "wants HOST:PORT (port 0-65535), not '" + text + "'";
  return {};
}

std::string port_file(const std::string &text, DaemonSettings &s) {
  s.port_file = text;
  return {};
}

std::string platform(const std::string &text, DaemonSettings &s) {
  s.selection.platform = text;
  return {};
}

std::string devices(const std::string &text, DaemonSettings &s) {
  std::vector<unsigned> indices;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    unsigned long long index = 0;
    if (!parse_count(item, &index) || index > UINT_MAX) return "wants device indices like 0,2, not '" + text + "'";
    indices.push_back(static_cast<unsigned>(index));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  s.selection.devices = indices;
  return {};
}

std::string name(const std::string &text, DaemonSettings &s) {
  s.server.node = text;
  return {};
}

std::string aliases(const std::string &text, DaemonSettings &s) {
  s.server.aliases.clear();
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string alias = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (alias.empty() || alias.find_first_of(" \t/") != std::string::npos)
      return "wants host names or addresses separated by commas, not '" + text + "'";
    s.server.aliases.push_back(alias);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return {};
}

// A key from the first line of path into *key; a warning about the file goes with the settings'.
std::string read_key(const std::string &path, fedcl::Secret *key, DaemonSettings &s) {
  std::string why, warning;
  *key = fedcl::secret_read_file(path, &why, &warning);
  if (key->empty()) return "wants a file with a key on its first line; " + why;
  if (!warning.empty()) s.warnings.push_back(warning);
  return {};
}

std::string key_file(const std::string &path, DaemonSettings &s) { return read_key(path, &s.server.key, s); }
std::string peer_key_file(const std::string &path, DaemonSettings &s) { return read_key(path, &s.server.peer_key, s); }

// The list is loaded again when it changes (KeyStore); here it is checked once, so that a list with a
// bad line stops the start instead of locking its users out later without a word.
std::string key_list(const std::string &path, DaemonSettings &s) {
  KeyList list = key_list_load(path);
  if (!list.unreadable.empty()) return "wants a readable key list; " + list.unreadable;
  std::string problems;
  for (const std::string &problem : list.problems) problems += (problems.empty() ? "" : "; ") + problem;
  if (!problems.empty()) return "has bad lines: " + problems;
  s.server.key_list = path;
  return {};
}

std::string peer_address(const std::string &text, DaemonSettings &s) {
  std::string host;
  int port = 0;
  if (!parse_address(text, &host, &port) || port == 0) return "wants HOST:PORT with a port of 1-65535, not '" + text + "'";
  s.server.peer_address = text;
  return {};
}

std::string local_socket(const std::string &text, DaemonSettings &s) {
  if (text == "no" || text == "auto") {
    s.server.local_socket = text == "no" ? "" : "auto";
    return {};
  }
  if (text.empty() || text.front() != '/') return "wants auto, no or an absolute path, not '" + text + "'";
  // sockaddr_un's path holds 107 bytes and the terminating zero.
  if (text.size() > 107) return "wants a path of at most 107 bytes (a Unix socket's limit), not " + std::to_string(text.size());
  s.server.local_socket = text;
  return {};
}

std::string peer_timeout(const std::string &text, DaemonSettings &s) {
  char *end = nullptr;
  double seconds = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(seconds > 0) || seconds > 86400)
    return "wants a number of seconds above 0 (at most a day), not '" + text + "'";
  s.server.peer_timeout_ms = static_cast<uint64_t>(seconds * 1000);
  return {};
}

std::string file_root(const std::string &text, DaemonSettings &s) {
  char resolved[PATH_MAX];
  struct stat st {};
  if (!realpath(text.c_str(), resolved)) return "wants an existing directory; " + text + ": " + std::strerror(errno);
  if (stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode)) return "wants a directory; " + text + " is not one";
  s.server.file_root = resolved;
  return {};
}

std::string resume_window(const std::string &text, DaemonSettings &s) {
  char *end = nullptr;
  double seconds = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(seconds >= 0) || seconds > 3600)
    return "wants a number of seconds from 0 (no resumption) to 3600, not '" + text + "'";
  s.server.resume_window_ms = static_cast<uint32_t>(seconds * 1000);
  return {};
}

std::string max_sessions(const std::string &text, DaemonSettings &s) {
  unsigned long long count = 0;
  if (!parse_count(text, &count) || count == 0 || count > 1000000) return "wants a number of 1 to 1000000, not '" + text + "'";
  s.server.max_sessions = count;
  return {};
}

std::string max_handshakes(const std::string &text, DaemonSettings &s) {
  unsigned long long count = 0;
  if (!parse_count(text, &count) || count == 0 || count > 1000000) return "wants a number of 1 to 1000000, not '" + text + "'";
  s.server.max_handshakes = count;
  return {};
}

std::string max_handshakes_per_address(const std::string &text, DaemonSettings &s) {
  unsigned long long count = 0;
  if (!parse_count(text, &count) || count == 0 || count > 1000000) return "wants a number of 1 to 1000000, not '" + text + "'";
  s.server.max_handshakes_per_address = count;
  return {};
}

std::string spare_workers(const std::string &text, DaemonSettings &s) {
  unsigned long long count = 0;
  if (!parse_count(text, &count) || count > 64) return "wants a number of 0 to 64, not '" + text + "'";
  s.server.spare_workers = count;
  return {};
}

std::string worker_hang_timeout(const std::string &text, DaemonSettings &s) {
  char *end = nullptr;
  double seconds = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(seconds >= 1) || seconds > 86400)
    return "wants a number of seconds from 1 to 86400, not '" + text + "'";
  s.server.worker_hang_ms = static_cast<uint64_t>(seconds * 1000);
  return {};
}

std::string session_open_files(const std::string &text, DaemonSettings &s) {
  unsigned long long count = 0;
  if (!parse_count(text, &count) || count < 64 || count > (1u << 20))
    return "wants a number of 64 to 1048576, not '" + text + "'";
  s.server.session_open_files = count;
  return {};
}

// A size like 512M or 4G (K, M, G, T: powers of 1024) into *bytes; returns "" or why it is refused.
std::string parse_bytes(const std::string &text, uint64_t *bytes) {
  size_t digits = text.find_first_not_of("0123456789");
  std::string number = text.substr(0, digits), unit = digits == std::string::npos ? "" : text.substr(digits);
  static const std::string kUnits = "KMGT";
  size_t power = unit.empty() ? 0 : unit.size() == 1 ? kUnits.find(std::toupper(unit[0])) + 1 : 0;
  unsigned long long value = 0;
  if (!parse_count(number, &value) || (!unit.empty() && power == 0) || value == 0)
    return "wants a size like 512M or 4G (K, M, G, T: powers of 1024), not '" + text + "'";
  if (value > (UINT64_MAX >> (10 * power))) return "'" + text + "' is too large";
  *bytes = uint64_t(value) << (10 * power);
  return {};
}

std::string max_memory(const std::string &text, DaemonSettings &s) {
  return parse_bytes(text, &s.server.max_session_memory);
}

std::string transfer_window(const std::string &text, DaemonSettings &s) {
  if (text == "auto" || text == "no") {
    s.transfer_window = text == "auto" ? -1 : 0;
    return {};
  }
  uint64_t bytes = 0;
  if (!parse_bytes(text, &bytes).empty() || bytes < fedcl::kMaxTransferChunkBytes || bytes > (uint64_t(1) << 40))
    return "wants auto, no or a size of 4M to 1T like 64M, not '" + text + "'";
  s.transfer_window = int64_t(bytes);
  return {};
}

std::string peer_ahead(const std::string &text, DaemonSettings &s) {
  uint64_t bytes = 0;
  if (!parse_bytes(text, &bytes).empty() || bytes < fedcl::wire::PEER_INITIAL_ALLOWANCE || bytes > (uint64_t(1) << 40))
    return "wants a size of 16M to 1T like 256M, not '" + text + "'";
  s.server.peer_ahead_bytes = bytes;
  return {};
}

// An option that takes one of a few words: sets *value to the word's, or says which words it wants.
template <typename Value>
std::string one_of(const std::string &text, std::initializer_list<std::pair<const char *, Value>> words, Value *value) {
  std::string wanted;
  size_t k = 0;
  for (const auto &[word, meaning] : words) {
    if (text == word) {
      *value = meaning;
      return {};
    }
    if (k > 0) wanted += k + 1 == words.size() ? " or " : ", ";
    wanted += word;
    k++;
  }
  return "wants " + wanted + ", not '" + text + "'";
}

std::string completion(const std::string &text, DaemonSettings &s) {
  return one_of(text, {{"callback", CompletionMode::callback}, {"wait", CompletionMode::wait}, {"auto", CompletionMode::automatic}},
                &s.server.completion);
}

std::string busy_poll(const std::string &text, DaemonSettings &s) {
  if (text == "auto") {
    s.server.busy_poll_us = -1;
    return {};
  }
  unsigned long long us = 0;
  if (!parse_count(text, &us) || us > 1000000) return "wants auto or a number of microseconds (0 to 1000000), not '" + text + "'";
  s.server.busy_poll_us = long(us);
  return {};
}

std::string page_locked_reads(const std::string &text, DaemonSettings &s) {
  return one_of(text, {{"auto", PageLockedReads::gpus}, {"yes", PageLockedReads::all}, {"no", PageLockedReads::none}},
                &s.server.page_locked_reads);
}

std::string kernel_name_guard(const std::string &text, DaemonSettings &s) {
  if (text == "auto") {
    s.kernel_name_guard = -1;
    return {};
  }
  unsigned long long length = 0;
  if (!parse_count(text, &length) || length > 1000000) return "wants auto or a number of characters (0: off), not '" + text + "'";
  s.kernel_name_guard = long(length);
  return {};
}

std::string stage_buffer_ranges(const std::string &text, DaemonSettings &s) {
  return one_of(text, {{"auto", -1}, {"yes", 1}, {"no", 0}}, &s.stage_buffer_ranges);
}

std::string write_buffer_contents(const std::string &text, DaemonSettings &s) {
  return one_of(text, {{"auto", -1}, {"yes", 1}, {"no", 0}}, &s.write_buffer_contents);
}

std::string trace_file(const std::string &text, DaemonSettings &s) {
  if (text.empty()) return "wants a file name";
  s.trace_file = text;
  return {};
}

std::string log_level(const std::string &text, DaemonSettings &s) {
  if (!log_parse_level(text.c_str(), &s.log_level)) return "wants error, warn, info or debug, not '" + text + "'";
  return {};
}

std::string status_sessions(const std::string &text, DaemonSettings &s) {
  if (text == "yes") s.server.status_sessions = true;
  else if (text == "no") s.server.status_sessions = false;
  else return "wants yes or no, not '" + text + "'";
  return {};
}

std::string status_admin(const std::string &text, DaemonSettings &s) {
  if (text.empty() || text.find_first_of(" \t") != std::string::npos) return "wants a user name of the key list, not '" + text + "'";
  s.server.status_admin = text;
  return {};
}

std::string metrics(const std::string &text, DaemonSettings &s) {
  if (!parse_address(text, &s.metrics_host, &s.metrics_port)) return "wants HOST:PORT (port 0-65535), not '" + text + "'";
  return {};
}

std::string tls(const std::string &text, DaemonSettings &s) {
  return one_of(text, {{"yes", true}, {"no", false}}, &s.server.tls);
}

std::string sandbox(const std::string &text, DaemonSettings &s) {
  return one_of(text, {{"yes", true}, {"no", false}}, &s.server.sandbox);
}

std::string session_accounts(const std::string &text, DaemonSettings &s) {
  return one_of(text, {{"yes", true}, {"no", false}}, &s.server.session_accounts);
}

std::string allow_unauthenticated(const std::string &text, DaemonSettings &s) {
  return one_of(text, {{"yes", true}, {"no", false}}, &s.server.allow_unauthenticated);
}

// A file --tls reads at start: checked here, so that a wrong path names the option that gave it.
std::string readable_file(const std::string &path, std::string *into) {
  if (!std::ifstream(path)) return "wants a readable file; " + path + ": " + std::strerror(errno);
  *into = path;
  return {};
}

std::string tls_cert(const std::string &path, DaemonSettings &s) { return readable_file(path, &s.server.tls_cert); }
std::string tls_key(const std::string &path, DaemonSettings &s) { return readable_file(path, &s.server.tls_key); }
std::string tls_ca(const std::string &path, DaemonSettings &s) { return readable_file(path, &s.server.tls_ca); }

std::string list(const std::string &, DaemonSettings &s) {
  s.list_only = true;
  return {};
}

std::string help(const std::string &, DaemonSettings &s) {
  s.help = true;
  return {};
}

// --config is read before everything else (load_daemon_settings); here for the help alone.
std::string config(const std::string &, DaemonSettings &) { return {}; }

}  // namespace

const char kDefaultDaemonConfig[] = FEDCL_CONFIG_DIR "/fedcld.conf";

const std::vector<DaemonOption> &daemon_options() {
  static const std::vector<DaemonOption> table = {
      {"config", "FILE", "read options from FILE (default " FEDCL_CONFIG_DIR "/fedcld.conf, when it\n"
                         "exists); options given here win over the file's", false, config},
      {"listen", "HOST:PORT", "address to listen on (default 127.0.0.1:7070; port 0 picks a free one)", true, listen},
      {"port-file", "FILE", "write the port listened on to FILE once listening (with --metrics, its\n"
                          "port to FILE.metrics first)", false, port_file},
      {"platform", "P", "export only platform P: an index or a substring of its name", true, platform},
      {"devices", "LIST", "export only these device indices of each platform, e.g. 0,2", true, devices},
      {"name", "NAME", "node name shown in client device names (default: hostname:port)", true, name},
      {"key-file", "FILE", "a key every client may prove (the first line of FILE; challenge-response,\n"
                           "the key never crosses the wire); users not in --key-list prove it", true, key_file},
      {"key-list", "FILE", "per-user keys, one 'USER KEY' or 'USER /path/to/keyfile' per line, loaded\n"
                           "again within a second of a change: remove a line to revoke that user's\n"
                           "next sessions", true, key_list},
      {"peer-key-file", "FILE", "the daemons' key: other fedcld daemons prove it on peer links, and this one\n"
                                "proves it to them. Give it to no user (a user who holds it can pose as a\n"
                                "daemon). Default: --key-file's key, with a warning at every start", true, peer_key_file},
      {"allow-unauthenticated", "yes|no", "serve clients without a key on an address other machines reach (default\n"
                                          "no: fedcld refuses to start there without --key-file or --key-list);\n"
                                          "warned about at every start", true, allow_unauthenticated},
      {"aliases", "NAMES", "other host names or addresses clients dial this daemon by (a DNS alias\n"
                           "that does not resolve here, a NAT's address), comma-separated. A client's\n"
                           "proof names the host it dialled, and a daemon with a key answers only to\n"
                           "its own: its addresses, host name, --name, certificate names and these", true, aliases},
      {"tls", "yes|no", "encrypt every connection with TLS 1.3, client sessions and peer links alike\n"
                        "(default no); a client without TLS is refused. The trust roots are a\n"
                        "certificate (--tls-cert, --tls-key) and the key (--key-file, --key-list:\n"
                        "TLS with a pre-shared key derived from it); at least one is needed", true, tls},
      {"tls-cert", "FILE", "the certificate chain (PEM) this daemon shows, for clients with\n"
                           "FEDCL_TLS=cert; it must name the address clients and peers dial", true, tls_cert},
      {"tls-key", "FILE", "the private key (PEM) of --tls-cert", true, tls_key},
      {"tls-ca", "FILE", "the CA certificates (PEM) that check other daemons' certificates on the\n"
                         "peer links this one dials when it has no --peer-key-file (default: the\n"
                         "system's)", true, tls_ca},
      {"peer-address", "HOST:PORT", "where other fedcld daemons reach this one for daemon-to-daemon data and\n"
                                    "event signals (e.g. a faster data network); listened on as well as\n"
                                    "--listen. Default: the host each client dialled and the port it reached", true,
       peer_address},
      {"local-socket", "PATH|auto|no", "also listen on this Unix socket: programs and daemons of this host reach\n"
                                       "this daemon there instead of over TCP (their bulk bytes through shared\n"
                                       "memory); auto, the default: fedcld-PORT.sock in $RUNTIME_DIRECTORY\n"
                                       "(the unit's /run/fedcld), else in $TMPDIR or /tmp; no: TCP only", true,
       local_socket},
      {"peer-timeout", "SECONDS", "a peer link silent this long is dead; what waits on it fails (default 10)",
       true, peer_timeout},
      {"peer-ahead", "SIZE", "a transfer from another daemon may bring this many bytes more than the\n"
                             "device has taken so far; they wait in fedcld's memory (default 256M)",
       true, peer_ahead},
      {"resume-window", "SECONDS", "a client session whose connection dropped is kept this long for the\n"
                                   "client to reconnect and resume it with nothing lost; 0: closed at once\n"
                                   "(default 10)", true, resume_window},
      {"file-root", "DIR", "clients may load buffers from and save them to files of their user's\n"
                           "folder DIR/USER on this node (clEnqueueWriteBufferFromNodeFile...);\n"
                           "without it, no file is served", true, file_root},
      {"max-sessions", "N", "refuse sessions beyond N at once (default 256)", true, max_sessions},
      {"max-handshakes", "N", "connections whose other side has not proved itself yet, at once; a new one\n"
                              "past N closes the oldest of them (default: 16384, or 1024 with --tls, as\n"
                              "far as the open-file limit leaves room beside --max-sessions)", true, max_handshakes},
      {"max-handshakes-per-address", "N", "the same from one address (IPv6: one /64); a new one past N closes that\n"
                                          "address's oldest (default: --max-sessions, at least 64)", true,
       max_handshakes_per_address},
      {"spare-workers", "N", "session workers (each session runs in a process of its own) started ahead,\n"
                             "the backend loaded, so that a session starts at once (default 2)", true, spare_workers},
      {"worker-hang-timeout", "SECONDS", "a session worker whose loop stands still this long (stuck in a backend\n"
                                         "call; its client has given it up long before) is killed (default 30)",
       true, worker_hang_timeout},
      {"sandbox", "yes|no", "confine each session worker: no new privileges, not dumpable, Landlock\n"
                            "(its libraries, devices and own scratch folder; no TCP, no signal out)\n"
                            "and a seccomp filter (no ptrace, process_vm_*, signals to others, new\n"
                            "namespaces or mounts); its JIT caches its own (default yes)", true, sandbox},
      {"session-accounts", "yes|no", "run each session as the local account named like its key-list user\n"
                                     "(its uid, gid and groups, set before the backend loads; files it\n"
                                     "saves are that account's); users without one, or root, are refused.\n"
                                     "Needs fedcld started as root (default no)", true, session_accounts},
      {"session-open-files", "N", "file descriptors one session's worker may have open (its RLIMIT_NOFILE;\n"
                                    "default: the daemon's own, raised to its hard limit at start)", true, session_open_files},
      {"max-memory", "SIZE", "device memory one session may allocate, e.g. 4G or 512M (default: no limit)",
       true, max_memory},
      {"completion", "MODE", "how completion is learnt: callback, wait (a waiting thread per queue as\n"
                             "well) or auto (wait for backends with late callbacks, e.g. NVIDIA; default)",
       true, completion},
      {"busy-poll", "US|auto", "after any work, keep the loop and its completion threads polling for up to\n"
                               "US microseconds instead of sleeping: a sleeping thread's wake-up costs\n"
                               "as much as a network round trip (auto, the default: 1000 where the\n"
                               "process may run on 4 or more cores, e.g. not pinned to fewer, else 0)", true, busy_poll},
      {"page-locked-reads", "auto|yes|no", "reads answered in one reply land in page-locked memory the backend\n"
                                           "allocated, a few MiB per queue (auto, the default: on GPUs)", true,
       page_locked_reads},
      {"kernel-name-guard", "N|auto", "kernels whose names are longer than N characters are made by name from\n"
                                      "the program's text, never listed by the backend (NVIDIA's corrupts its\n"
                                      "heap listing them); auto, the default: 256 on NVIDIA, off elsewhere;\n"
                                      "0: off", true, kernel_name_guard},
      {"stage-buffer-ranges", "auto|yes|no", "transfers of part of a buffer between daemons copy it through fedcld's\n"
                                             "memory instead of mapping it (NVIDIA maps parts of a buffer with\n"
                                             "sub-buffers wrongly); auto, the default: yes on NVIDIA", true,
       stage_buffer_ranges},
      {"transfer-window", "auto|no|SIZE", "transfers between daemons larger than SIZE (e.g. 64M) copy it at a time\n"
                                          "through fedcld's memory, enqueueing device commands as they go (NVIDIA\n"
                                          "pins a host copy of a whole buffer it maps); only for backends that do\n"
                                          "not order commands behind other queues' (PoCL does); auto, the\n"
                                          "default: 64M on NVIDIA, no elsewhere", true, transfer_window},
      {"write-buffer-contents", "auto|yes|no", "a buffer made from 16 MiB or more of host memory is made empty and\n"
                                               "fedcld writes the contents, 64 MiB at a time, off the session's loop\n"
                                               "(NVIDIA uploads its pinned host copy inside the first command that\n"
                                               "uses the buffer); auto, the default: yes on NVIDIA", true,
       write_buffer_contents},
      {"trace", "FILE", "record the hand-off times of every request and write them to FILE at exit\n"
                        "(bench/trace_report.py reads them beside the client's FEDCL_TRACE file)", false, trace_file},
      {"log-level", "LEVEL", "error, warn, info (default) or debug", true, log_level},
      {"status-sessions", "yes|no", "whether `fedcl status` may list the client sessions and their memory\n"
                                    "(default yes)", true, status_sessions},
      {"status-admin", "USER", "the user of --key-list whose `fedcl status` lists every session; other\n"
                               "users see their own (default: none)", true, status_admin},
      {"metrics", "HOST:PORT", "serve Prometheus metrics (text format) at http://HOST:PORT/metrics from\n"
                               "the main process (default: off). Anyone who reaches the port can read\n"
                               "them: bind it to a management address", true, metrics},
      {"list", nullptr, "print the devices that would be exported and exit", false, list},
      {"help", nullptr, "show this help", false, help},
  };
  return table;
}

const DaemonOption *find_daemon_option(const std::string &name) {
  for (const DaemonOption &option : daemon_options())
    if (name == option.name) return &option;
  return nullptr;
}

std::string daemon_usage() {
  const size_t kHelpColumn = 24;
  std::string usage =
      "usage: fedcld [options]\n"
      "Serves this node's OpenCL devices to fedcl clients. Every option but --config, --port-file,\n"
      "--list and --help may also be set in the configuration file as `name = value`.\n\n";
  for (const DaemonOption &option : daemon_options()) {
    std::string head = std::string("  --") + option.name + (option.value ? std::string(" ") + option.value : "");
    usage += head;
    usage += head.size() + 2 <= kHelpColumn ? std::string(kHelpColumn - head.size(), ' ') : "\n" + std::string(kHelpColumn, ' ');
    for (const char *c = option.help; *c; c++) {
      usage += *c;
      if (*c == '\n') usage += std::string(kHelpColumn, ' ');
    }
    usage += '\n';
  }
  return usage;
}

}  // namespace fedcld
