#include "keys.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>

#include "log.h"

namespace fedcld {

namespace {

constexpr unsigned kListPollMs = 1000;

std::string_view trim(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t\r") + 1 - begin);
}

}  // namespace

KeyList key_list_parse(const std::string &text, const std::string &source) {
  KeyList list;
  std::string_view rest(text);
  for (int number = 1; !rest.empty(); number++) {
    size_t end = rest.find('\n');
    std::string_view line = trim(rest.substr(0, end).substr(0, rest.substr(0, end).find('#')));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (line.empty()) continue;
    std::string where = source + ":" + std::to_string(number);
    size_t space = line.find_first_of(" \t");
    std::string user(line.substr(0, space));
    std::string_view key = space == std::string_view::npos ? std::string_view() : trim(line.substr(space));
    if (key.empty()) {
      list.problems.push_back(where + ": user " + log_quote(user) + " has no key");
      continue;
    }
    fedcl::Secret secret;
    if (key.front() == '/') {
      std::string why, warning;
      secret = fedcl::secret_read_file(std::string(key), &why, &warning);
      if (secret.empty()) {
        list.problems.push_back(where + ": cannot use a key for user " + log_quote(user) + ": " + why);
        continue;
      }
      if (!warning.empty()) list.warnings.push_back(where + ": " + warning);
    } else if (std::string why = fedcl::key_too_short(key); !why.empty()) {
      list.problems.push_back(where + ": user " + log_quote(user) + ": " + why);
      continue;
    } else {
      secret = fedcl::Secret(key);
    }
    if (!list.keys.emplace(user, std::move(secret)).second)
      list.problems.push_back(where + ": user " + log_quote(user) + " listed twice");
  }
  return list;
}

KeyList key_list_load(const std::string &path) {
  KeyList unusable;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat status {};
  if (fd < 0 || fstat(fd, &status) != 0) {
    unusable.unreadable = path + ": " + std::strerror(errno);
    if (fd >= 0) close(fd);
    return unusable;
  }
  fedcl::KeyFileCheck check = fedcl::key_file_check(path, status.st_uid, status.st_mode, geteuid());
  if (!check.refused.empty()) {
    close(fd);
    unusable.unreadable = check.refused;
    return unusable;
  }
  std::string text;
  char chunk[4096];
  ssize_t got;
  while ((got = read(fd, chunk, sizeof chunk)) != 0) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    text.append(chunk, size_t(got));
  }
  int read_errno = errno;
  close(fd);
  sodium_memzero(chunk, sizeof chunk);
  if (got < 0) {
    fedcl::secret_wipe(text);
    unusable.unreadable = path + ": " + std::strerror(read_errno);
    return unusable;
  }
  KeyList list = key_list_parse(text, path);
  fedcl::secret_wipe(text);
  if (!check.warning.empty()) list.warnings.insert(list.warnings.begin(), check.warning);
  return list;
}

KeyStore::KeyStore(fedcl::Secret cluster_key, std::string list_path)
    : cluster_key_(std::move(cluster_key)), list_path_(std::move(list_path)) {
  unsigned char decoy[32];
  randombytes_buf(decoy, sizeof decoy);
  decoy_ = fedcl::Secret(std::string_view(reinterpret_cast<const char *>(decoy), sizeof decoy));
  sodium_memzero(decoy, sizeof decoy);
  take(list_path_.empty() ? KeyList{} : key_list_load(list_path_));
}

struct KeyStore::Reload {
  uv_work_t work;
  KeyStore *store;
  KeyList list;
};

void KeyStore::watch(uv_loop_t *loop) {
  if (list_path_.empty() || poll_) return;
  poll_ = new uv_fs_poll_t;
  uv_fs_poll_init(loop, poll_);
  poll_->data = this;
  uv_fs_poll_start(poll_, [](uv_fs_poll_t *handle, int, const uv_stat_t *, const uv_stat_t *) {
    auto *store = static_cast<KeyStore *>(handle->data);
    if (store->loading_) store->changed_again_ = true;
    else store->start_load();
  }, list_path_.c_str(), kListPollMs);
  uv_unref(reinterpret_cast<uv_handle_t *>(poll_));
  // The poll compares with what it first sees, which may already be a change made after the list was
  // read at start: read it once more now that the watch is in place.
  start_load();
}

void KeyStore::start_load() {
  loading_ = true;
  auto *reload = new Reload{{}, this, {}};
  reload->work.data = reload;
  uv_queue_work(poll_->loop, &reload->work,
                [](uv_work_t *work) {
                  auto *reload = static_cast<Reload *>(work->data);
                  reload->list = key_list_load(reload->store->list_path_);
                },
                [](uv_work_t *work, int) {
                  std::unique_ptr<Reload> reload(static_cast<Reload *>(work->data));
                  KeyStore *store = reload->store;
                  store->loading_ = false;
                  if (!store->poll_) return;  // closed meanwhile
                  store->take(std::move(reload->list));
                  // The file changed again while it was read: what was read may be half old.
                  if (std::exchange(store->changed_again_, false)) store->start_load();
                });
}

void KeyStore::close() {
  if (!poll_) return;
  uv_close(reinterpret_cast<uv_handle_t *>(poll_), [](uv_handle_t *handle) { delete reinterpret_cast<uv_fs_poll_t *>(handle); });
  poll_ = nullptr;
}

void KeyStore::take(KeyList list) {
  if (!list_path_.empty()) {
    if (!list.unreadable.empty())
      FEDCLD_LOG(warn, "the key list cannot be read (%s): its users are refused until it can", list.unreadable.c_str());
    for (const std::string &problem : list.problems) FEDCLD_LOG(warn, "key list: %s (line ignored)", problem.c_str());
    for (const std::string &warning : list.warnings) FEDCLD_LOG(warn, "key list: %s", warning.c_str());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (loads_ > 0) FEDCLD_LOG(info, "key list %s loaded again: %zu users", list_path_.c_str(), list.keys.size());
  list_ = std::make_shared<const KeyList>(std::move(list));
  loads_++;
}

fedcl::Secret KeyStore::key_for(const std::string &user) const {
  std::shared_ptr<const KeyList> list;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    list = list_;
  }
  if (!user.empty() && !list_path_.empty()) {
    if (!list->unreadable.empty()) return decoy_;  // fail closed: not the cluster key instead
    auto found = list->keys.find(user);
    if (found != list->keys.end()) return found->second;
  }
  return cluster_key_.empty() ? decoy_ : cluster_key_;
}

uint64_t KeyStore::loads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return loads_;
}

}  // namespace fedcld
