// fedcld: the fedcl bridge daemon. Serves this node's OpenCL devices to fedcl clients.
//
// This is its main process (listener.h), which never calls the backend; `--session-worker` makes
// the process it starts for each session (worker_main.cpp).
#include <sys/prctl.h>
#include <sys/resource.h>
#include <uv.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "backend.h"
#include "daemon_options.h"
#include "listener.h"
#include "log.h"
#include "session_host.h"
#include "worker_sandbox.h"

namespace {

int die(const std::string &message) {
  std::fprintf(stderr, "fedcld: %s\n", message.c_str());
  return 2;
}

// A failure once the listener may have started its session workers: the process ends at once.
// Returning from main ran exit handlers with libuv's SIGCHLD handler still installed, and a worker's
// exit signal arriving then crashed fedcld (CI, ASan build, Metrics.AnAddressThatCannotBeServed...:
// 8 of 40 runs on a loaded machine). The workers end with this process (PR_SET_PDEATHSIG).
[[noreturn]] void die_serving(const std::string &message) {
  die(message);
  std::fflush(stderr);
  std::_Exit(2);
}

// Every connection is a file descriptor, a stranger's too: at the usual soft limit of 1024, 1,100
// idle connections left no descriptor for the next client. The soft limit goes up to the hard one
// (the unit sets that: LimitNOFILE), and the handshake caps keep room below it for the sessions
// (handshake_limits.h). Session workers inherit it, unless --session-open-files sets theirs.
void raise_open_file_limit() {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= files.rlim_max) return;
  files.rlim_cur = files.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &files) != 0) std::fprintf(stderr, "fedcld: cannot raise the open-file limit: %s\n", std::strerror(errno));
}

// --list: the devices the backend offers, from this process (it serves nothing).
int list_devices(const fedcld::DaemonSettings &settings) {
  std::vector<fedcld::BackendPlatform> platforms;
  std::string problem = fedcld::backend_discover(settings.selection, &platforms);
  if (!problem.empty()) return die(problem);
  size_t count = 0;
  for (const auto &platform : platforms)
    for (const auto &device : platform.devices) std::printf("%zu: %s\n", count++, fedcld::device_name(device.handle).c_str());
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "--session-worker") == 0) return fedcld::session_worker_main(argc, argv);
  fedcld::DaemonSettings settings;
  std::vector<std::string> problems = fedcld::load_daemon_settings(argc, argv, settings);
  if (settings.help) {
    std::fputs(fedcld::daemon_usage().c_str(), stdout);
    return 0;
  }
  if (!problems.empty()) {
    // Every problem at once, so that a configuration is fixed in one pass.
    for (const std::string &problem : problems) std::fprintf(stderr, "fedcld: %s\n", problem.c_str());
    std::fprintf(stderr, "fedcld: not started (fedcld --help lists the options)\n");
    return 2;
  }
  fedcld::log_set_level(settings.log_level);
  for (const std::string &warning : settings.warnings) FEDCLD_LOG(warn, "%s", warning.c_str());
  if (settings.list_only) return list_devices(settings);

  // The main process holds the keys: no process of the same user reads its memory or traces it.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  std::signal(SIGPIPE, SIG_IGN);
  raise_open_file_limit();
  uv_loop_t *loop = uv_default_loop();
  fedcld::Listener listener(loop, settings);
  std::string tls_problem = listener.setup_tls();
  if (!tls_problem.empty()) return die(tls_problem);
  const fedcld::ServerOptions &options = listener.options();
  int err = listener.bind();
  if (err != 0) return die("cannot listen on " + options.host + ":" + std::to_string(options.port) + ": " + uv_strerror(err));
  std::string problem = listener.enumerate();
  if (!problem.empty()) return die(problem);
  size_t device_count = 0;
  for (const auto &platform : listener.platforms())
    for (const auto &device : platform.devices)
      FEDCLD_LOG(info, "exporting device %zu: %s", device_count++, fedcld::info_string(device.info, CL_DEVICE_NAME).c_str());
  if (!options.sandbox) {
    FEDCLD_LOG(warn, "session workers are not confined (sandbox = no): a session may read, signal and trace the others");
  } else {
    fedcld::SandboxSupport support = fedcld::sandbox_support();
    std::string what = fedcld::sandbox_describe(support);
    if (support.seccomp && support.landlock_abi > 0) FEDCLD_LOG(info, "%s", what.c_str());
    else FEDCLD_LOG(warn, "%s", what.c_str());
  }
  err = listener.listen();
  if (err != 0)
    die_serving("cannot listen on " + options.host + ":" + std::to_string(options.port) + ": " + uv_strerror(err));
  int port = listener.port();
  FEDCLD_LOG(info, "listening on %s:%d%s%s as node %s", options.host.c_str(), port,
             listener.local_socket().empty() ? "" : " and ", listener.local_socket().c_str(), options.node.c_str());
  if (!settings.metrics_host.empty()) {
    err = listener.listen_metrics(settings.metrics_host, settings.metrics_port);
    if (err != 0)
      die_serving("cannot serve metrics on " + settings.metrics_host + ":" + std::to_string(settings.metrics_port) + ": " + uv_strerror(err));
    FEDCLD_LOG(info, "metrics at http://%s:%d/metrics", settings.metrics_host.c_str(), listener.metrics_port());
  }
  // Written to a temporary name and renamed, so that a reader never sees a partial file.
  auto write_port = [](const std::string &path, int value) {
    std::string temporary = path + ".tmp";
    std::ofstream(temporary) << value << "\n";
    return std::rename(temporary.c_str(), path.c_str()) == 0;
  };
  if (!settings.port_file.empty()) {
    // The metrics port first: a reader that waits for the port file finds both.
    if (!settings.metrics_host.empty() && !write_port(settings.port_file + ".metrics", listener.metrics_port()))
      die_serving("cannot write " + settings.port_file + ".metrics");
    if (!write_port(settings.port_file, port)) die_serving("cannot write " + settings.port_file);
  }
  listener.run();
  uv_loop_close(loop);
  return 0;
}
