// fedcld: the fedcl bridge daemon. Serves this node's OpenCL devices to fedcl clients.
#include <uv.h>

#include <malloc.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>

#include "backend.h"
#include "keys.h"
#include "log.h"
#include "printf_capture.h"
#include "server.h"

namespace {

const char kUsage[] =
    "usage: fedcld [options]\n"
    "Serves this node's OpenCL devices to fedcl clients.\n"
    "\n"
    "  --listen HOST:PORT    address to listen on (default 127.0.0.1:7070; port 0 picks a free one)\n"
    "  --port-file FILE      write the port listened on to FILE once listening\n"
    "  --platform P          export only platform P: an index or a substring of its name\n"
    "  --devices LIST        export only these device indices of each platform, e.g. 0,2\n"
    "  --name NAME           node name shown in client device names (default: hostname:port)\n"
    "  --key-file FILE       the cluster key (the first line of FILE): clients and peer daemons must\n"
    "                        prove they hold it (challenge-response; the key never crosses the wire)\n"
    "  --key-list FILE       per-user keys, one 'USER KEY' or 'USER /path/to/keyfile' per line, read\n"
    "                        at each handshake: remove a line to revoke that user's next sessions\n"
    "  --peer-address HOST:PORT\n"
    "                        where other fedcld daemons reach this one for daemon-to-daemon data and\n"
    "                        event signals (e.g. a faster data network); listened on as well as --listen.\n"
    "                        Default: the address each client reached it by\n"
    "  --peer-timeout SECONDS  a peer link silent this long is dead; what waits on it fails (default 10)\n"
    "  --file-root DIR       clients may load buffers from and save them to files under DIR on this\n"
    "                        node (clEnqueueWriteBufferFromNodeFile...); without it, no file is served\n"
    "  --max-sessions N      refuse sessions beyond N at once (default 256)\n"
    "  --max-memory SIZE     device memory one session may allocate, e.g. 4G or 512M (default: no limit)\n"
    "  --completion MODE     how completion is learnt: callback, wait (a waiting thread per queue as\n"
    "                        well) or auto (wait for backends with late callbacks, e.g. NVIDIA; default)\n"
    "  --log-level LEVEL     error, warn, info (default) or debug\n"
    "  --list                print the devices that would be exported and exit\n"
    "  --help                show this help\n";

bool parse_listen(const std::string &text, fedcld::ServerOptions *options) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 >= text.size()) return false;
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char *end = nullptr;
  long port = std::strtol(text.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 0 || port > 65535) return false;
  options->host = host.empty() ? "0.0.0.0" : host;
  options->port = static_cast<int>(port);
  return true;
}

bool parse_devices(const std::string &text, std::vector<unsigned> *devices) {
  size_t pos = 0;
  while (pos < text.size()) {
    char *end = nullptr;
    unsigned long index = std::strtoul(text.c_str() + pos, &end, 10);
    if (end == text.c_str() + pos) return false;
    devices->push_back(static_cast<unsigned>(index));
    pos = end - text.c_str();
    if (pos < text.size() && text[pos] != ',') return false;
    pos++;
  }
  return !devices->empty();
}

bool parse_size(const std::string &text, uint64_t *bytes) {
  char *end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return false;
  std::string unit = end;
  const char *units = "KMGT";
  uint64_t scale = 1;
  if (!unit.empty()) {
    const char *found = unit.size() == 1 ? std::strchr(units, std::toupper(unit[0])) : nullptr;
    if (!found) return false;
    scale = uint64_t(1) << (10 * (found - units + 1));
  }
  *bytes = value * scale;
  return *bytes > 0;
}

int die(const std::string &message) {
  std::fprintf(stderr, "fedcld: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  fedcld::ServerOptions options;
  fedcld::BackendSelection selection;
  bool list_only = false;
  std::string port_file;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "fedcld: %s needs a value\n%s", arg.c_str(), kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--listen") {
      std::string text = value();
      if (!parse_listen(text, &options)) return die("--listen wants HOST:PORT, not '" + text + "'");
    } else if (arg == "--port-file") {
      port_file = value();
    } else if (arg == "--platform") {
      selection.platform = value();
    } else if (arg == "--devices") {
      std::string text = value();
      if (!parse_devices(text, &selection.devices)) return die("--devices wants a list like 0,2, not '" + text + "'");
    } else if (arg == "--name") {
      options.node = value();
    } else if (arg == "--key-file") {
      std::string path = value();
      options.key = fedcld::key_read_file(path);
      if (options.key.empty()) return die("cannot read a key from " + path);
    } else if (arg == "--key-list") {
      options.key_list = value();
      std::ifstream file(options.key_list);
      if (!file) return die("cannot read the key list " + options.key_list);
      std::stringstream text;
      text << file.rdbuf();
      for (const std::string &problem : fedcld::key_list_parse(text.str(), options.key_list).problems)
        FEDCLD_LOG(warn, "%s", problem.c_str());
    } else if (arg == "--peer-address") {
      std::string text = value();
      fedcld::ServerOptions probe;
      if (!parse_listen(text, &probe) || probe.port == 0) return die("--peer-address wants HOST:PORT, not '" + text + "'");
      options.peer_address = text;
    } else if (arg == "--peer-timeout") {
      std::string text = value();
      char *end = nullptr;
      double seconds = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || *end != '\0' || seconds <= 0) return die("--peer-timeout wants seconds, not '" + text + "'");
      options.peer_timeout_ms = static_cast<uint64_t>(seconds * 1000);
    } else if (arg == "--file-root") {
      std::string text = value();
      char resolved[PATH_MAX];
      struct stat st {};
      if (!realpath(text.c_str(), resolved) || stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode))
        return die("--file-root wants an existing directory, not '" + text + "'");
      options.file_root = resolved;
    } else if (arg == "--max-sessions") {
      options.max_sessions = std::strtoul(value().c_str(), nullptr, 10);
      if (options.max_sessions == 0) return die("--max-sessions wants a positive number");
    } else if (arg == "--max-memory") {
      std::string text = value();
      if (!parse_size(text, &options.max_session_memory)) return die("--max-memory wants a size like 4G, not '" + text + "'");
    } else if (arg == "--completion") {
      std::string text = value();
      if (text == "auto") options.completion = fedcld::CompletionMode::automatic;
      else if (text == "callback") options.completion = fedcld::CompletionMode::callback;
      else if (text == "wait") options.completion = fedcld::CompletionMode::wait;
      else return die("--completion wants callback, wait or auto, not '" + text + "'");
    } else if (arg == "--log-level") {
      std::string text = value();
      fedcld::LogLevel level;
      if (!fedcld::log_parse_level(text.c_str(), &level)) return die("unknown log level '" + text + "'");
      fedcld::log_set_level(level);
    } else if (arg == "--list") {
      list_only = true;
    } else {
      std::fprintf(stderr, "fedcld: unknown option '%s'\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }

  std::vector<fedcld::BackendPlatform> platforms;
  std::string problem = fedcld::backend_discover(selection, &platforms);
  if (!problem.empty()) return die(problem);
  size_t device_count = 0;
  for (const auto &platform : platforms) {
    for (const auto &device : platform.devices) {
      std::string name = fedcld::device_name(device.handle);
      if (list_only) std::printf("%zu: %s\n", device_count, name.c_str());
      else FEDCLD_LOG(info, "exporting device %zu: %s", device_count, name.c_str());
      device_count++;
    }
  }
  if (list_only) return 0;

  std::signal(SIGPIPE, SIG_IGN);
  // Kernel printf output goes to this process's stdout: catch it there for the sessions it belongs to.
  // Never destroyed: its reader thread drains fd 1 until the process exits.
  auto *printf_capture = new fedcld::PrintfCapture;
  std::string no_capture = printf_capture->start();
  if (!no_capture.empty())
    FEDCLD_LOG(warn, "kernel printf output stays in fedcld's stdout: %s", no_capture.c_str());
  // Transfer staging buffers come and go by the megabyte: keep them in the heap for reuse instead of
  // mapping fresh pages (and taking a page fault per 4 KiB) for every chunk.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  uv_loop_t *loop = uv_default_loop();
  fedcld::Server server(loop, options, std::move(platforms));
  if (printf_capture->started()) server.print_gate().set_capture(printf_capture);
  int err = server.listen();
  if (err != 0)
    return die("cannot listen on " + options.host + ":" + std::to_string(options.port) + ": " + uv_strerror(err));
  int port = server.port();
  FEDCLD_LOG(info, "listening on %s:%d as node %s", options.host.c_str(), port, server.options().node.c_str());
  if (!port_file.empty()) {
    // Written to a temporary name and renamed, so that a reader never sees a partial file.
    std::string temporary = port_file + ".tmp";
    std::ofstream(temporary) << port << "\n";
    if (std::rename(temporary.c_str(), port_file.c_str()) != 0) return die("cannot write " + port_file);
  }
  uv_run(loop, UV_RUN_DEFAULT);
  uv_loop_close(loop);
  return 0;
}
