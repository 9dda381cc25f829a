#include "server.h"

#include <random>
#include <thread>

#include "host_cores.h"
#include "log.h"
#include "session.h"

namespace fedcld {

namespace {
// A session that was sent nothing for this long gets a heartbeat, checked as often: at most twice
// this without a word, which must stay well inside the shortest silence a client accepts (2 s,
// FEDCL_DAEMON_TIMEOUT). With 1 s, the silence reached 2 s during a long NVIDIA build and a client
// set to 2 s gave a healthy daemon up.
constexpr uint64_t kHeartbeatMs = 500;

std::chrono::microseconds busy_poll_for(long option) {
  if (option >= 0) return std::chrono::microseconds(option);
  // Polling pays where a core is free for it; on a machine of 2 or 3 the backend (a CPU device, say)
  // needs them all.
  // 1 ms spans a short kernel and a client's turn-around; a sleeping thread's wake-up costs 25-30 us
  // on a virtual GPU node.
  return std::chrono::microseconds(fedcl::usable_cores() >= 4 ? 1000 : 0);
}
}  // namespace

uint64_t random_id() {
  static std::random_device device;
  uint64_t id = 0;
  while (id == 0) id = (uint64_t(device()) << 32) | device();
  return id;
}

Server::Server(uv_loop_t *loop, ServerOptions options, uint64_t instance)
    : options_(std::move(options)), loop_(loop), instance_(instance), busy_poll_(busy_poll_for(options_.busy_poll_us)) {
  uv_async_init(loop_, &wakeup_, on_async);
  wakeup_.data = this;
  uv_timer_init(loop_, &watch_timer_);
  watch_timer_.data = this;
  uv_timer_init(loop_, &closing_timer_);
  closing_timer_.data = this;
}

Server::~Server() = default;

void Server::start_watch() {
  if (watching_) return;
  watching_ = true;
  uv_timer_start(&watch_timer_, [](uv_timer_t *timer) { static_cast<Server *>(timer->data)->watch_sessions(); },
                 kHeartbeatMs, kHeartbeatMs);
  uv_unref(reinterpret_cast<uv_handle_t *>(&watch_timer_));
}

void Server::close() {
  if (closing_) return;
  closing_ = true;
  for (auto &entry : std::unordered_map<uint64_t, std::shared_ptr<Session>>(sessions_))
    entry.second->close("daemon shutting down");
  uv_close(reinterpret_cast<uv_handle_t *>(&watch_timer_), nullptr);
  // The backend still reports commands of the sessions just closed (their objects released, their
  // watches pending): those reports run, and free what they hold, before the loop may end.
  uv_timer_start(&closing_timer_, [](uv_timer_t *timer) {
    auto *self = static_cast<Server *>(timer->data);
    self->watches_.store(0);  // the time is up: what is still out is dropped
    self->close_when_reported();
  }, kClosingMs, 0);
  close_when_reported();
}

void Server::close_when_reported() {
  if (!closing_ || watches_.load() > 0) return;
  {
    std::lock_guard<std::mutex> lock(posted_mutex_);
    if (closed_) return;
    closed_ = true;
  }
  uv_close(reinterpret_cast<uv_handle_t *>(&wakeup_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t *>(&closing_timer_), nullptr);
}

void Server::watch_sessions() {
  uint64_t now = uv_now(loop_);
  std::vector<std::shared_ptr<Session>> late, unresumed;
  for (auto &[number, session] : sessions_) {
    if (session->closed()) continue;
    if (session->parked()) {
      if (now - session->parked_at() >= options_.resume_window_ms) unresumed.push_back(session);
      continue;
    }
    if (session->handshake_deadline && now >= session->handshake_deadline)
      late.push_back(session);
    else if (session->greeted && now - session->last_sent >= kHeartbeatMs)
      session->send_heartbeat();
  }
  for (auto &session : late) {
    session->stranger_end = StrangerEnd::deadline;
    session->close("no handshake within " + std::to_string((session->handshake_deadline - session->opened_at + 999) / 1000) + " s");
  }
  for (auto &session : unresumed)
    session->close("not resumed within the resume window (" + std::to_string(options_.resume_window_ms) + " ms)");
}

std::shared_ptr<Session> Server::add_session() {
  uint64_t number = next_session_++;
  auto session = std::make_shared<Session>(*this, number);
  sessions_.emplace(number, session);
  return session;
}

void Server::session_closed(uint64_t number) { sessions_.erase(number); }

std::shared_ptr<Session> Server::session(uint64_t number) const {
  auto found = sessions_.find(number);
  return found == sessions_.end() || found->second->closed() ? nullptr : found->second;
}

std::vector<std::shared_ptr<Session>> Server::sessions() const {
  std::vector<std::shared_ptr<Session>> found;
  for (const auto &entry : sessions_)
    if (!entry.second->closed()) found.push_back(entry.second);
  return found;
}

void Server::run() {
  for (;;) {
    if (uv_run(loop_, UV_RUN_ONCE) == 0) return;  // sleeps until something happens
    if (busy_poll_.count() == 0) continue;
    set_polling(true);
    auto until = std::chrono::steady_clock::now() + busy_poll_;
    for (;;) {
      uint64_t before = activity_;
      if (uv_run(loop_, UV_RUN_NOWAIT) == 0) return set_polling(false), void();
      run_posted();
      if (activity_ != before) {
        until = std::chrono::steady_clock::now() + busy_poll_;
        continue;
      }
      if (std::chrono::steady_clock::now() < until) continue;
      if (!set_polling(false)) break;
      set_polling(true);  // a task came as polling ended: run it and poll on
    }
  }
}

bool Server::set_polling(bool polling) {
  std::lock_guard<std::mutex> lock(posted_mutex_);
  polling_ = polling;
  return !posted_.empty();
}

void Server::post(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(posted_mutex_);
  if (closed_) return;
  posted_.push_back(std::move(task));
  // A polling loop finds the task itself. Sent under the lock, so that close() never closes the
  // handle under a send.
  if (!polling_) uv_async_send(&wakeup_);
}

void Server::on_async(uv_async_t *async) { static_cast<Server *>(async->data)->run_posted(); }

void Server::run_posted() {
  std::vector<std::function<void()>> tasks;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(posted_mutex_);
      tasks.swap(posted_);
    }
    if (tasks.empty()) return;
    note_activity();
    for (auto &task : tasks) {
      // A task answers its own failures; one escaping is fedcld's bug, which must not end the process.
      try {
        task();
      } catch (const RequestError &error) {
        FEDCLD_LOG(error, "a failure escaped fedcld's work on the loop: %s", error.message.c_str());
      }
    }
    tasks.clear();
    close_when_reported();
  }
}

}  // namespace fedcld
