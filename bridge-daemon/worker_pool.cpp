#include "worker_pool.h"

#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <capnp/message.h>

#include <cstring>

#include "control_channel.h"
#include "listener.h"
#include "log.h"
#include "session.h"
#include "worker_board.h"
#include "worker_setup.h"

namespace fedcld {

namespace wire = fedcl::wire;

namespace {

constexpr uint64_t kWatchMs = 1000;
// Workers that ended one after another before they were ready: the backend cannot be loaded (a
// driver gone, a device lost). Spares are no longer started ahead then; each session tries anew.
constexpr unsigned kFailedStartsForNoSpares = 3;
// How long the reason a worker ended is kept for its client's resumption attempts, beyond the window.
constexpr uint64_t kDeathKeptMs = 60000;
// A worker's loop that stood still this long (it turns every second) is reported, once per stall,
// with where its thread stands: well before its client, which hears nothing meanwhile, gives the
// daemon up (10 s by default, FEDCL_DAEMON_TIMEOUT), and before the hang limit kills it.
constexpr uint64_t kStallReportMs = 3000;

// Removes path and all in it, on libuv's threads (a JIT cache may hold many files), never following
// a link: what the worker left there is the worker's.
void remove_folder(uv_loop_t *loop, std::string path) {
  struct Removal {
    uv_work_t request;
    std::string path;
  };
  auto *removal = new Removal{{}, std::move(path)};
  removal->request.data = removal;
  int err = uv_queue_work(loop, &removal->request, [](uv_work_t *request) {
    nftw(static_cast<Removal *>(request->data)->path.c_str(), [](const char *name, const struct stat *, int type, FTW *) {
      if (type == FTW_DP) rmdir(name);
      else unlink(name);
      return 0;
    }, 16, FTW_DEPTH | FTW_PHYS);
  }, [](uv_work_t *request, int) { delete static_cast<Removal *>(request->data); });
  if (err != 0) delete removal;
}

// The workers' folders of daemons of this user that ended without removing them (killed, or
// crashed): "fedcld-PID-XXXXXX" in folder, whose PID no longer runs.
void remove_stale_scratch(uv_loop_t *loop, const std::string &folder) {
  DIR *dir = opendir(folder.c_str());
  if (!dir) return;
  while (dirent *entry = readdir(dir)) {
    int pid = 0, end = 0;
    if (std::sscanf(entry->d_name, "fedcld-%d-%*6[A-Za-z0-9]%n", &pid, &end) != 1 || entry->d_name[end] != '\0') continue;
    struct stat status {};
    std::string path = folder + "/" + entry->d_name;
    if (lstat(path.c_str(), &status) != 0 || !S_ISDIR(status.st_mode) || status.st_uid != geteuid()) continue;
    if (pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH)) continue;
    remove_folder(loop, path);
  }
  closedir(dir);
}

const char *signal_name(int signum) {
  const char *name = sigabbrev_np(signum);
  static thread_local char text[32];
  snprintf(text, sizeof text, "SIG%s", name ? name : "?");
  return text;
}

std::vector<BackendPlatform> platforms_of(capnp::List<wire::PlatformDesc>::Reader list) {
  auto info_of = [](capnp::List<wire::InfoEntry>::Reader entries) {
    std::vector<InfoValue> info;
    for (auto entry : entries) info.push_back({entry.getParam(), {entry.getValue().begin(), entry.getValue().end()}});
    return info;
  };
  std::vector<BackendPlatform> platforms;
  for (auto desc : list) {
    BackendPlatform platform{nullptr, info_of(desc.getInfo()), {}};
    for (auto device : desc.getDevices()) platform.devices.push_back({nullptr, info_of(device.getInfo())});
    platforms.push_back(std::move(platform));
  }
  return platforms;
}

}  // namespace

void WorkerPool::end(Worker &worker, int signum) {
  if (worker.in_process) {
    // The fuzz target's: no process to signal; closing its channel ends it.
    if (worker.channel) in_process_ended(worker);
    return;
  }
  if (worker.pid > 0) kill(worker.pid, signum);
}

WorkerPool::WorkerPool(Listener &listener) : listener_(listener) {
  uv_timer_init(listener_.loop(), &timer_);
  timer_.data = this;
}

WorkerPool::~WorkerPool() {
  if (!scratch_root_.empty()) rmdir(scratch_root_.c_str());  // emptied as each worker ended
}

std::string WorkerPool::make_scratch(Worker &worker) {
  if (scratch_root_.empty()) {
    const char *tmp = std::getenv("TMPDIR");
    std::string folder = tmp && *tmp ? tmp : "/tmp";
    remove_stale_scratch(listener_.loop(), folder);
    std::string pattern = folder + "/fedcld-" + std::to_string(getpid()) + "-XXXXXX";
    if (!mkdtemp(pattern.data())) return "cannot make a folder for the session workers under " + pattern + ": " + strerror(errno);
    // Workers of other accounts pass through to their own folder; none lists the others'.
    chmod(pattern.c_str(), 0711);
    scratch_root_ = pattern;
  }
  worker.scratch = scratch_root_ + "/w" + std::to_string(worker.id);
  bool made = mkdir(worker.scratch.c_str(), 0700) == 0;
  if (!made || (worker.account.uid && chown(worker.scratch.c_str(), worker.account.uid, worker.account.gid) != 0)) {
    std::string why = "cannot make " + worker.scratch + ": " + strerror(errno);
    if (made) rmdir(worker.scratch.c_str());
    worker.scratch.clear();
    return why;
  }
  return {};
}

Worker *WorkerPool::spawn(bool enumerator, const LocalAccount *account) {
  auto owned = std::make_unique<Worker>();
  Worker &worker = *owned;
  worker.pool = this;
  worker.id = next_id_++;
  worker.enumerator = enumerator;
  if (account) worker.account = *account;
  // The worker that listed the devices has the backend loaded: one load fewer at every start. Not
  // where sessions run as accounts: it is no account's.
  worker.enumerate_only = enumerator && (listener_.options().spare_workers == 0 || listener_.options().session_accounts);
  worker.started_ms = uv_now(listener_.loop());
  worker.process.data = &worker;
  int board_fd = board_create();
  if (board_fd < 0) {
    FEDCLD_LOG(error, "cannot make a session worker's board: %s", strerror(errno));
    return nullptr;
  }
  worker.board = board_map(board_fd);
  Worker *raw = &worker;
  worker.channel = new ControlChannel(
      listener_.loop(),
      [this, raw](wire::WorkerMessage::Reader message, SessionLink *link) { on_message(*raw, message, link); },
      [this, raw](const std::string &why) {
        // The worker closed its end: it is ending, and its exit tells how. Anything else is a
        // worker that misbehaved.
        if (raw->in_process) return in_process_ended(*raw);
        if (why == ControlChannel::kClosed || raw->state == Worker::State::gone || raw->pid <= 0) return;
        FEDCLD_LOG(error, "worker %d: %s; ending it", raw->pid, why.c_str());
        end(*raw, SIGKILL);
      });
  int err = 0;
  if (in_process_) {
    int ends[2];
    err = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0 ? worker.channel->open(ends[0]) : uv_translate_sys_error(errno);
    if (err == 0) {
      worker.in_process = true;
      worker.pid = getpid();
      in_process_(ends[1], dup(board_fd));
    }
  } else {
    err = start_process(worker, board_fd);
  }
  ::close(board_fd);  // the mapping stays
  if (err != 0) {
    FEDCLD_LOG(error, "cannot start a session worker: %s", uv_strerror(err));
    worker.channel->close();
    munmap(worker.board, sizeof(WorkerBoard));
    if (in_process_) return nullptr;  // no process handle was made
    owned.release();  // a failed spawn's handle is closed all the same: until libuv is done with it
    uv_close(reinterpret_cast<uv_handle_t *>(&worker.process),
             [](uv_handle_t *handle) { delete static_cast<Worker *>(handle->data); });
    return nullptr;
  }
  worker.channel->start();
  capnp::MallocMessageBuilder message;
  auto setup = message.initRoot<wire::WorkerMessage>().initSetup();
  worker_setup_fill(setup, listener_.settings(), listener_.options().node, listener_.instance());
  setup.setEnumerateOnly(worker.enumerate_only);
  if (!worker.in_process && listener_.options().sandbox) {
    // Without it the worker refuses to serve (it cannot be confined): it says so in its Ready.
    std::string why = make_scratch(worker);
    if (!why.empty()) FEDCLD_LOG(error, "%s", why.c_str());
    setup.setScratch(worker.scratch);
  }
  account_fill(setup.initAccount(), worker.account);
  worker.channel->send(message);
  FEDCLD_LOG(debug, "worker %d started%s", worker.pid, enumerator ? " to list the devices" : "");
  workers_.emplace(worker.id, std::move(owned));
  return raw;
}

int WorkerPool::start_process(Worker &worker, int board_fd) {
  // The worker is this very binary (also after an upgrade replaced the file), started again.
  std::string main_pid = std::to_string(getpid());
  char *args[] = {const_cast<char *>("fedcld"), const_cast<char *>("--session-worker"),
                  const_cast<char *>(main_pid.c_str()), nullptr};
  uv_stdio_container_t stdio[kNodeFilesFd + 1];
  stdio[0].flags = UV_IGNORE;
  stdio[1].flags = UV_INHERIT_FD;
  stdio[1].data.fd = STDOUT_FILENO;
  stdio[2].flags = UV_INHERIT_FD;
  stdio[2].data.fd = STDERR_FILENO;
  stdio[3].flags = uv_stdio_flags(UV_CREATE_PIPE | UV_READABLE_PIPE | UV_WRITABLE_PIPE);
  stdio[3].data.stream = reinterpret_cast<uv_stream_t *>(worker.channel->pipe());
  stdio[4].flags = UV_INHERIT_FD;
  stdio[4].data.fd = board_fd;
  int files = listener_.node_files().attach(worker.id);
  if (files < 0) return uv_translate_sys_error(errno);
  stdio[kNodeFilesFd].flags = UV_INHERIT_FD;
  stdio[kNodeFilesFd].data.fd = files;
  // The daemon's environment, without a key a client's variable may have left there: a session's
  // code reads its worker's memory, the environment included.
  std::vector<char *> environment;
  for (char **entry = environ; *entry; entry++)
    if (std::strncmp(*entry, "FEDCL_KEY=", 10) != 0) environment.push_back(*entry);
  environment.push_back(nullptr);
  uv_process_options_t options{};
  options.exit_cb = on_exit;
  options.file = "/proc/self/exe";
  options.args = args;
  options.env = environment.data();
  options.stdio_count = kNodeFilesFd + 1;
  options.stdio = stdio;
  int err = uv_spawn(listener_.loop(), &worker.process, &options);
  ::close(files);
  if (err == 0) worker.pid = worker.process.pid;
  else listener_.node_files().detach(worker.id);
  return err;
}

void WorkerPool::in_process_ended(Worker &worker) {
  worker.channel->close();
  worker.channel = nullptr;
  exited(worker, 0, 0);
  uint64_t id = worker.id;
  listener_.post([this, id] { workers_.erase(id); });
}

void WorkerPool::enumerate(Enumerated done) {
  enumerated_ = std::move(done);
  if (!spawn(true)) {
    auto report = std::move(enumerated_);
    report({}, "cannot start a process to list the devices");
  }
}

void WorkerPool::start() {
  uv_timer_start(&timer_, [](uv_timer_t *timer) { static_cast<WorkerPool *>(timer->data)->watch(); }, kWatchMs, kWatchMs);
  uv_unref(reinterpret_cast<uv_handle_t *>(&timer_));
  replenish();
}

void WorkerPool::replenish() {
  if (closing_ || failed_starts_ >= kFailedStartsForNoSpares || listener_.options().session_accounts) return;
  size_t spares = 0;
  for (const auto &[id, worker] : workers_)
    if (!worker->enumerator && worker->waiting.empty() &&
        (worker->state == Worker::State::spare || worker->state == Worker::State::starting))
      spares++;
  for (; spares < listener_.options().spare_workers; spares++)
    if (!spawn(false)) return;
}

void WorkerPool::take(Got got) {
  if (closing_) return got(nullptr, "fedcld is shutting down");
  Worker *chosen = nullptr;
  for (auto &[id, worker] : workers_) {
    if (worker->enumerator) continue;
    if (worker->state == Worker::State::spare) {
      chosen = worker.get();
      break;
    }
    if (worker->state == Worker::State::starting && worker->waiting.empty() && !chosen) chosen = worker.get();
  }
  if (!chosen) chosen = spawn(false);
  if (!chosen) return got(nullptr, "fedcld cannot start a process for the session");
  if (chosen->state == Worker::State::spare) {
    chosen->state = Worker::State::serving;
    got(chosen, "");
  } else {
    chosen->waiting.push_back(std::move(got));
  }
  replenish();
}

void WorkerPool::take_for(const LocalAccount &account, Got got) {
  if (closing_) return got(nullptr, "fedcld is shutting down");
  Worker *worker = spawn(false, &account);
  if (!worker) return got(nullptr, "fedcld cannot start a process for the session");
  worker->waiting.push_back(std::move(got));
}

void WorkerPool::serving(Worker &worker) {
  listener_.counters().session_started();
  worker.state = Worker::State::serving;
  worker.since_ms = uv_now(listener_.loop());
}

void WorkerPool::unused(Worker &worker) {
  if (worker.state == Worker::State::serving && worker.token == 0) worker.state = Worker::State::spare;
}

Worker *WorkerPool::by_id(uint64_t id) {
  auto it = workers_.find(id);
  return it == workers_.end() || it->second->state == Worker::State::gone ? nullptr : it->second.get();
}

Worker *WorkerPool::by_token(uint64_t token) {
  for (auto &[id, worker] : workers_)
    if (worker->state == Worker::State::serving && worker->token == token) return worker.get();
  return nullptr;
}

Worker *WorkerPool::by_resume_token(const std::string &token) {
  for (auto &[id, worker] : workers_)
    if (worker->state == Worker::State::serving && !token.empty() && worker->resume_token == token) return worker.get();
  return nullptr;
}

std::string WorkerPool::death_of(const std::string &resume_token) const {
  auto it = deaths_.find(resume_token);
  return it == deaths_.end() ? "" : it->second.why;
}

std::vector<const Worker *> WorkerPool::sessions() const {
  std::vector<const Worker *> found;
  for (const auto &[id, worker] : workers_)
    if (worker->state == Worker::State::serving && worker->token) found.push_back(worker.get());
  return found;
}

size_t WorkerPool::session_count() const { return sessions().size(); }

void WorkerPool::on_message(Worker &worker, wire::WorkerMessage::Reader message, SessionLink *link) {
  switch (message.which()) {
    case wire::WorkerMessage::READY: return ready(worker, message.getReady());
    case wire::WorkerMessage::DIAL:
      if (worker.state == Worker::State::serving) return listener_.peers().dial(worker, message.getDial());
      break;
    default: break;
  }
  FEDCLD_LOG(error, "worker %d sent a message it may not send (%u): ending it", worker.pid, unsigned(message.which()));
  if (link) session_link_discard(link);
  end(worker, SIGKILL);
}

void WorkerPool::ready(Worker &worker, wire::WorkerReady::Reader ready) {
  FEDCLD_LOG(debug, "worker %d is ready (%.0f ms)", worker.pid, double(uv_now(listener_.loop()) - worker.started_ms));
  if (worker.state != Worker::State::starting) return;
  std::string problem = ready.getProblem();
  if (worker.enumerator) {
    auto done = std::move(enumerated_);
    if (done) done(problem.empty() ? platforms_of(ready.getPlatforms()) : std::vector<BackendPlatform>{}, problem);
    if (worker.enumerate_only || !problem.empty()) return;  // it ends by itself
    worker.enumerator = false;
  }
  if (!problem.empty()) {
    FEDCLD_LOG(error, "a session worker could not load the backend: %s", problem.c_str());
    return;  // it ends by itself, and its exit reports to whoever waits
  }
  failed_starts_ = 0;
  worker.state = Worker::State::spare;
  if (worker.waiting.empty()) return;
  auto waiting = std::move(worker.waiting);
  worker.state = Worker::State::serving;
  waiting.front()(&worker, "");
  // A worker takes one session: any other waiter (none, as take() queues one per worker) starts anew.
  for (size_t i = 1; i < waiting.size(); i++) take(std::move(waiting[i]));
}

void WorkerPool::on_exit(uv_process_t *process, int64_t status, int term_signal) {
  auto *worker = static_cast<Worker *>(process->data);
  worker->channel->close();
  worker->channel = nullptr;
  worker->pool->exited(*worker, status, term_signal);
  worker->pool->listener_.node_files().detach(worker->id);
  if (!worker->scratch.empty()) remove_folder(process->loop, std::move(worker->scratch));
  uv_close(reinterpret_cast<uv_handle_t *>(process), [](uv_handle_t *handle) {
    auto *worker = static_cast<Worker *>(handle->data);
    worker->pool->workers_.erase(worker->id);
  });
}

std::string WorkerPool::describe_end(const Worker &worker, int64_t status, int term_signal) const {
  std::string node = " on node " + listener_.options().node;
  if (!worker.hung.empty()) return "fedcld ended the session's worker process" + node + ": " + worker.hung;
  if (term_signal == 0) return "the session's worker process" + node + " exited with status " + std::to_string(status);
  std::string call = worker.board ? std::string(worker.board->crash_call) : "";
  std::string last = worker.board ? std::string(worker.board->last_call) : "";
  std::string driver = "the backend's driver";
  if (worker.platform < listener_.platforms().size()) {
    std::string name = info_string(listener_.platforms()[worker.platform].info, CL_PLATFORM_NAME);
    if (!name.empty()) driver = "the " + name + " driver";
  }
  std::string sig = signal_name(term_signal);
  if (!call.empty()) return driver + " crashed (" + sig + ") in " + call + node;
  if (worker.board && worker.board->crash_signal.load() == 0)
    return "the session's worker process" + node + " was killed (" + sig + ")";
  return driver + " or fedcld crashed (" + sig + ") in one of the session worker's threads, outside any call" +
         (last.empty() ? "" : " (the last: " + last + ")") + node;
}

void WorkerPool::exited(Worker &worker, int64_t status, int term_signal) {
  std::string why = describe_end(worker, status, term_signal);
  bool failure = term_signal != 0 || status != 0 || !worker.hung.empty();
  if (worker.enumerator) {
    if (auto done = std::move(enumerated_)) done({}, "the process that lists the devices ended: " + why);
  } else if (worker.state == Worker::State::serving && worker.token) {
    if (failure && !closing_) {
      listener_.counters().worker_failed(!worker.hung.empty());
      FEDCLD_LOG(error, "session %llu (client %s): %s; the daemon and its other sessions go on", (unsigned long long)worker.number,
                 log_quote(worker.client).c_str(), why.c_str());
      if (!worker.resume_token.empty()) deaths_[worker.resume_token] = {why, uv_now(listener_.loop())};
    } else {
      FEDCLD_LOG(debug, "worker %d of session %llu ended", worker.pid, (unsigned long long)worker.number);
    }
    listener_.peers().worker_gone(worker);
  } else if (worker.state == Worker::State::starting || worker.state == Worker::State::spare) {
    if (!closing_) {
      failed_starts_++;
      FEDCLD_LOG(error, "a session worker ended before it took a session: %s%s", why.c_str(),
                 failed_starts_ >= kFailedStartsForNoSpares ? " (no more are started ahead)" : "");
    }
    auto waiting = std::move(worker.waiting);
    for (auto &got : waiting) got(nullptr, "its worker process ended before it was ready: " + why);
  }
  worker.state = Worker::State::gone;
  if (worker.board) listener_.counters().retire(*worker.board);
  if (worker.board) munmap(worker.board, sizeof(WorkerBoard));
  worker.board = nullptr;
  replenish();
}

void WorkerPool::watch() {
  uint64_t now_ms = uv_now(listener_.loop());
  uint64_t now_ns = uv_hrtime();
  uint64_t limit_ms = listener_.options().worker_hang_ms;
  for (auto &[id, worker] : workers_) {
    if (worker->state == Worker::State::gone || !worker->board || !worker->hung.empty() || worker->in_process) continue;
    uint64_t turned = worker->board->loop_turned_ns.load();
    // A worker's loop turns every second (its board's timer); one that stood still for the limit is
    // stuck in a backend call on the loop, and its client has given it up long ago (no heartbeat).
    uint64_t still_ms = turned ? (now_ns - std::min(now_ns, turned)) / 1000000 : now_ms - worker->started_ms;
    if (worker->stall_reported && turned != worker->stall_reported) {
      FEDCLD_LOG(warn, "worker %d of session %llu: its loop turns again, after standing still for about %llu ms",
                 worker->pid, (unsigned long long)worker->number,
                 (unsigned long long)((turned - std::min(turned, worker->stall_reported)) / 1000000));
      worker->stall_reported = 0;
    }
    if (turned && still_ms >= kStallReportMs && still_ms < limit_ms && !worker->stall_reported)
      report_stall(*worker, still_ms);
    if (still_ms < limit_ms) continue;
    std::string last = worker->board->last_call;
    worker->hung = "it stood still for " + std::to_string(still_ms / 1000) + " s" +
                   (last.empty() ? "" : " (in or after " + last + ")");
    FEDCLD_LOG(error, "worker %d of session %llu: %s; killing it", worker->pid, (unsigned long long)worker->number,
               worker->hung.c_str());
    end(*worker, SIGKILL);
  }
  for (auto it = deaths_.begin(); it != deaths_.end();)
    it = now_ms - it->second.at_ms > listener_.options().resume_window_ms + kDeathKeptMs ? deaths_.erase(it) : std::next(it);
}

void WorkerPool::report_stall(Worker &worker, uint64_t still_ms) {
  worker.stall_reported = worker.board->loop_turned_ns.load();
  std::string last = worker.board->last_call;
  std::string call = last.empty() ? "" : " (in or after " + last + ")";
  // The backtrace interrupts the loop thread's system call: a driver's wait resumes, but a call that
  // does not expect a signal may end early. So only where the operator asked for the details.
  bool backtrace = log_enabled(LogLevel::debug);
  FEDCLD_LOG(warn, "worker %d of session %llu: its loop has stood still for %llu ms%s%s", worker.pid,
             (unsigned long long)worker.number, (unsigned long long)still_ms, call.c_str(),
             backtrace ? "; where it stands follows" : "");
  // To the loop's thread (the worker's first: its id is the process's), not any of its threads.
  if (backtrace) syscall(SYS_tgkill, worker.pid, worker.pid, kStallReportSignal);
}

void WorkerPool::close() {
  closing_ = true;
  uv_timer_stop(&timer_);
  uv_close(reinterpret_cast<uv_handle_t *>(&timer_), nullptr);
  for (auto &[id, worker] : workers_)
    if (worker->state != Worker::State::gone) end(*worker, SIGTERM);
}

}  // namespace fedcld
