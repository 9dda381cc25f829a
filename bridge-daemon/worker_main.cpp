// A session worker's process: `fedcld --session-worker MAIN_PID`, started by the main process
// (worker_pool.h) with its channel on fd 3 and its board on fd 4. It waits for its setup, loads the
// backend, says it is ready, and then runs one session (session_host.h).
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <capnp/message.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <memory>

#include "accounts.h"
#include "backend.h"
#include "control_channel.h"
#include "exec.h"
#include "log.h"
#include "malloc_config.h"
#include "printf_capture.h"
#include "session_host.h"
#include "trace.h"
#include "worker_board.h"
#include "worker_sandbox.h"
#include "worker_setup.h"

namespace fedcld {

namespace wire = fedcl::wire;

namespace {


constexpr int kChannelFd = 3;
constexpr int kBoardFd = 4;

struct Worker {
  uv_loop_t *loop;
  bool own_process;  // false: the fuzz target's, on the main process's loop
  ControlChannel *channel = nullptr;
  WorkerBoard *board = nullptr;
  std::unique_ptr<SessionHost> host;
  bool done = false;  // no session will come: the process ends
  int status = 0;

  // board_fd: the board's memfd, mapped here (and closed).
  Worker(uv_loop_t *loop, bool own_process, int board_fd) : loop(loop), own_process(own_process), board(board_map(board_fd)) {
    close(board_fd);
  }
  ~Worker() {
    host.reset();  // its sessions show their last numbers on the board
    if (board) munmap(board, sizeof(WorkerBoard));
  }

  // Whether the channel to the main process opened on fd.
  bool open(int fd) {
    channel = new ControlChannel(
        loop, [this](wire::WorkerMessage::Reader message, SessionLink *link) { on_message(message, link); },
        [this](const std::string &why) { on_closed(why); });
    return channel->open(fd) == 0 && channel->start() == 0;
  }

  void on_message(wire::WorkerMessage::Reader message, SessionLink *link) {
    if (host) return host->on_message(message, link);
    if (message.which() != wire::WorkerMessage::SETUP) {
      FEDCLD_LOG(error, "worker: the main process spoke before setting this worker up");
      return end(1);
    }
    set_up(message.getSetup());
  }

  void set_up(wire::WorkerSetup::Reader setup) {
    DaemonSettings settings = worker_setup_read(setup);
    log_set_level(settings.log_level);
    bool sandboxed = own_process && settings.server.sandbox;
    std::string problem;
    // The session's account first (what the backend makes is the account's), then the confinement,
    // before any thread: the backend's inherit the confinement of the thread that makes them.
    LocalAccount account = account_read(setup.getAccount());
    if (own_process && account.uid) {
      std::string why = account_become(account);
      if (!why.empty()) problem = "cannot run the session as " + log_quote(account.name) + ": " + why;
    }
    if (sandboxed && problem.empty()) problem = confine(setup.getScratch(), settings.trace_file);
    if (own_process && settings.server.session_open_files) {
      // The session's limits are its process's: before the backend opens anything.
      rlim_t files = settings.server.session_open_files;
      rlimit limit{files, files};
      if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
        FEDCLD_LOG(warn, "cannot limit the session's open files to %llu: %s", (unsigned long long)files, strerror(errno));
    }
    // Kernel printf output goes to this process's stdout: caught there for the session. Never
    // destroyed: its reader thread drains fd 1 until the process exits.
    auto *capture = own_process ? new PrintfCapture : nullptr;
    std::string no_capture = setup.getEnumerateOnly() || !capture ? "" : capture->start();
    std::vector<BackendPlatform> platforms;
    if (problem.empty()) {
      BackendCall call("clGetPlatformIDs and clGetDeviceInfo (loading the backend)");
      problem = backend_discover(settings.selection, &platforms);
    }
    if (problem.empty() && sandboxed) {
      std::string why = sandbox_filter_calls();
      if (!why.empty()) problem = "cannot confine the session worker: " + why;
    }
    for (auto &platform : platforms) {
      if (settings.kernel_name_guard >= 0) platform.safe_kernel_name_length = size_t(settings.kernel_name_guard);
      if (settings.stage_buffer_ranges >= 0) platform.maps_parts_wrongly = settings.stage_buffer_ranges;
      if (settings.transfer_window >= 0) platform.transfer_window = uint64_t(settings.transfer_window);
      if (settings.write_buffer_contents >= 0) platform.uploads_host_copies_late = settings.write_buffer_contents;
    }
    if (own_process && board) crash_report_install(board);  // over the backend's own handlers
    capnp::MallocMessageBuilder message;
    auto ready = message.initRoot<wire::WorkerMessage>().initReady();
    if (!problem.empty()) ready.setProblem(problem);
    auto list = ready.initPlatforms(platforms.size());
    for (size_t p = 0; p < platforms.size(); p++) {
      fill_info(list[p].initInfo(platforms[p].info.size()), platforms[p].info);
      auto devices = list[p].initDevices(platforms[p].devices.size());
      for (size_t d = 0; d < platforms[p].devices.size(); d++) {
        devices[d].setId(d + 1);
        fill_info(devices[d].initInfo(platforms[p].devices[d].info.size()), platforms[p].devices[d].info);
      }
    }
    bool enumerate_only = setup.getEnumerateOnly();
    if (!problem.empty() || enumerate_only) {
      // No session comes: the process ends once the main process has the answer.
      int exit_status = problem.empty() ? 0 : 1;
      return channel->send(message, nullptr, [this, exit_status](int) { end(exit_status); });
    }
    channel->send(message);
    if (!no_capture.empty()) FEDCLD_LOG(warn, "kernel printf output stays in fedcld's stdout: %s", no_capture.c_str());
    host = std::make_unique<SessionHost>(loop, settings, setup.getInstance(), std::move(platforms), channel, board);
    host->set_ends_with_process(own_process);
    if (capture && capture->started()) host->print_gate().set_capture(capture);
  }

  // The worker's scratch folder holds what the backend writes (JIT caches, temporary files: its
  // own, never another session's), and Landlock confines the process to it. "" or why not.
  static std::string confine(const std::string &scratch, const std::string &trace_file) {
    if (scratch.empty()) return "cannot confine the session worker: the main process gave it no scratch folder";
    for (const char *sub : {"/tmp", "/cache", "/cache/pocl", "/cache/nvidia"})
      if (mkdir((scratch + sub).c_str(), 0700) != 0 && errno != EEXIST)
        return "cannot make the session worker's folder " + scratch + sub + ": " + std::strerror(errno);
    setenv("HOME", scratch.c_str(), 1);
    setenv("TMPDIR", (scratch + "/tmp").c_str(), 1);
    setenv("XDG_CACHE_HOME", (scratch + "/cache").c_str(), 1);
    setenv("POCL_CACHE_DIR", (scratch + "/cache/pocl").c_str(), 1);
    setenv("CUDA_CACHE_PATH", (scratch + "/cache/nvidia").c_str(), 1);
    std::vector<std::string> writable = sandbox_report_folders();
    if (!trace_file.empty()) writable.push_back(trace_file.substr(0, trace_file.rfind('/') + 1));
    std::string why = sandbox_confine({scratch, sandbox_backend_paths(), writable});
    return why.empty() ? "" : "cannot confine the session worker: " + why;
  }

  // Before a session: the channel closes, and the process ends.
  void end(int exit_status) {
    status = exit_status;
    done = true;
    channel->close();
  }

  void on_closed(const std::string &why) {
    // The main process is gone (then this process is being killed too) or broke the protocol.
    if (why != ControlChannel::kClosed) FEDCLD_LOG(error, "worker: %s", why.c_str());
    if (host) return host->close();
    end(1);
  }
};

}  // namespace

int session_worker_main(int argc, char **argv) {
  // A worker never outlives the daemon that started it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (argc < 3 || getppid() != std::atoi(argv[2])) return 1;
  prctl(PR_SET_NAME, "fedcld-session");  // what top shows (started as /proc/self/exe, it would be "exe")
  std::signal(SIGPIPE, SIG_IGN);
  configure_malloc();  // before the backend starts its threads, which allocate
  Worker worker(uv_default_loop(), true, kBoardFd);
  if (worker.board) crash_report_install(worker.board);
  if (!worker.open(kChannelFd)) return 1;
  while (!worker.host && !worker.done)
    if (uv_run(worker.loop, UV_RUN_ONCE) == 0) break;
  if (worker.host && worker.host->ends_with_process()) {
    worker.host->run();
    // The session is over. What it held (contexts, memory on the device) goes with the process, as a
    // program's does when it exits: no release one by one, no backend teardown at exit (NVIDIA's
    // took tens of seconds for a session of a hundred contexts, holding the GPU's memory all along).
    fedcl::trace::write_now();
    std::fflush(nullptr);
    _exit(worker.status);
  }
  if (worker.host) worker.host->run();
  else uv_run(worker.loop, UV_RUN_DEFAULT);  // the channel's last words
  worker.host.reset();
  return worker.status;
}

void start_worker_in_process(uv_loop_t *loop, int channel_fd, int board_fd) {
  // Kept: the backend may still report commands of a session that ended (its posts are dropped, but
  // the host they name must be there). Those whose session ended a minute ago are let go.
  static std::vector<std::pair<uint64_t, std::unique_ptr<Worker>>> workers;
  uint64_t now = uv_now(loop);
  for (auto it = workers.begin(); it != workers.end();) {
    Worker &old = *it->second;
    if (it->first == 0 && old.host && old.host->closed()) it->first = now;
    bool gone = it->first != 0 && now - it->first > 60000;
    it = gone ? workers.erase(it) : std::next(it);
  }
  auto worker = std::make_unique<Worker>(loop, false, board_fd);
  if (worker->open(channel_fd)) workers.emplace_back(0, std::move(worker));
}

}  // namespace fedcld
