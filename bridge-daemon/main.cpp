// fedcld: the fedcl bridge daemon. Serves this node's OpenCL devices to fedcl clients.
#include <uv.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include "backend.h"
#include "daemon_options.h"
#include "log.h"
#include "memory_trim.h"
#include "printf_capture.h"
#include "server.h"
#include "trace.h"

namespace {

int die(const std::string &message) {
  std::fprintf(stderr, "fedcld: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  fedcld::configure_malloc();  // before the backend starts its threads, which allocate
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
  const fedcld::ServerOptions &options = settings.server;
  bool list_only = settings.list_only;
  const std::string &port_file = settings.port_file;

  std::vector<fedcld::BackendPlatform> platforms;
  std::string problem = fedcld::backend_discover(settings.selection, &platforms);
  if (!problem.empty()) return die(problem);
  size_t device_count = 0;
  for (auto &platform : platforms) {
    if (settings.kernel_name_guard >= 0) platform.safe_kernel_name_length = size_t(settings.kernel_name_guard);
    for (const auto &device : platform.devices) {
      std::string name = fedcld::device_name(device.handle);
      if (list_only) std::printf("%zu: %s\n", device_count, name.c_str());
      else FEDCLD_LOG(info, "exporting device %zu: %s", device_count, name.c_str());
      device_count++;
    }
  }
  if (list_only) return 0;
  if (!settings.trace_file.empty()) {
    std::string why = fedcl::trace::start(settings.trace_file);
    if (!why.empty()) return die("--trace: " + why);
  }

  std::signal(SIGPIPE, SIG_IGN);
  // Kernel printf output goes to this process's stdout: catch it there for the sessions it belongs to.
  // Never destroyed: its reader thread drains fd 1 until the process exits.
  auto *printf_capture = new fedcld::PrintfCapture;
  std::string no_capture = printf_capture->start();
  if (!no_capture.empty())
    FEDCLD_LOG(warn, "kernel printf output stays in fedcld's stdout: %s", no_capture.c_str());
  uv_loop_t *loop = uv_default_loop();
  fedcld::Server server(loop, options, std::move(platforms));
  if (printf_capture->started()) server.print_gate().set_capture(printf_capture);
  std::string tls_problem = server.setup_tls();
  if (!tls_problem.empty()) return die(tls_problem);
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
  server.run();
  uv_loop_close(loop);
  return 0;
}
