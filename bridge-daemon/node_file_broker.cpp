#include "node_file_broker.h"

#include <poll.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <unistd.h>

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cerrno>
#include <cstring>

#include "descriptor_passing.h"
#include "fedcl.capnp.h"
#include "log.h"
#include "node_paths.h"

namespace fedcld {

namespace wire = fedcl::wire;

namespace {

// A path is at most PATH_MAX bytes; the message around it is a few words more.
constexpr size_t kMaxPacketWords = 1024;
constexpr int kAnswerWaitMs = 5000;

// Sends message, with fd beside it when fd >= 0; whether it all left.
bool send_packet(int socket, capnp::MessageBuilder &message, int fd) {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  iovec data{words.begin(), words.size() * sizeof(capnp::word)};
  return fedcl::send_with_descriptor(socket, &data, 1, fd) == ssize_t(data.iov_len);
}

// One packet into words; its bytes (0: the other end closed, -1: errno), and *fd the descriptor
// beside it (-1: none).
ssize_t receive_packet(int socket, capnp::word *words, int *fd) {
  iovec data{words, kMaxPacketWords * sizeof(capnp::word)};
  msghdr header{};
  header.msg_iov = &data;
  header.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  header.msg_control = control;
  header.msg_controllen = sizeof control;
  ssize_t got;
  do got = recvmsg(socket, &header, MSG_CMSG_CLOEXEC);
  while (got < 0 && errno == EINTR);
  *fd = -1;
  for (cmsghdr *c = CMSG_FIRSTHDR(&header); got >= 0 && c; c = CMSG_NXTHDR(&header, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
      std::memcpy(fd, CMSG_DATA(c), sizeof *fd);
  if (got > 0 && (header.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
    errno = EMSGSIZE;
    return -1;
  }
  return got;
}

// This thread's file-system identity is account's while it lives (setfsuid and setfsgid: this thread
// alone, and only for file access); none without an account.
struct FileIdentity {
  bool switched;
  explicit FileIdentity(NodeOwner account) : switched(account.uid != 0) {
    if (!switched) return;
    setfsgid(account.gid);
    setfsuid(account.uid);
  }
  ~FileIdentity() {
    if (!switched) return;
    setfsuid(geteuid());
    setfsgid(getegid());
  }
};

}  // namespace

struct NodeFileBroker::Line {
  uv_poll_t poll;
  int socket;
  uint64_t worker;
  NodeFileBroker *broker;
};

NodeFileBroker::NodeFileBroker(uv_loop_t *loop, std::string root, UserOf user_of)
    : loop_(loop), folders_(std::move(root)), user_of_(std::move(user_of)) {}

NodeFileBroker::~NodeFileBroker() {
  while (!lines_.empty()) detach(lines_.begin()->first);
}

int NodeFileBroker::attach(uint64_t worker) {
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, ends) != 0) return -1;
  auto *line = new Line{{}, ends[0], worker, this};
  if (uv_poll_init(loop_, &line->poll, ends[0]) != 0) {
    close(ends[0]);
    close(ends[1]);
    delete line;
    errno = EINVAL;
    return -1;
  }
  line->poll.data = line;
  uv_poll_start(&line->poll, UV_READABLE | UV_DISCONNECT, [](uv_poll_t *poll, int status, int) {
    auto *line = static_cast<Line *>(poll->data);
    if (status < 0) return line->broker->detach(line->worker);
    line->broker->serve(*line);
  });
  lines_[worker] = line;
  return ends[1];
}

void NodeFileBroker::detach(uint64_t worker) {
  auto it = lines_.find(worker);
  if (it == lines_.end()) return;
  Line *line = it->second;
  lines_.erase(it);
  uv_close(reinterpret_cast<uv_handle_t *>(&line->poll), [](uv_handle_t *handle) {
    auto *line = static_cast<Line *>(handle->data);
    close(line->socket);
    delete line;
  });
}

void NodeFileBroker::serve(Line &line) {
  capnp::word words[kMaxPacketWords];
  int stray = -1;
  ssize_t got = receive_packet(line.socket, words, &stray);
  if (got < 0 && errno == EAGAIN) return;
  if (stray >= 0) close(stray);  // a worker sends no descriptors
  uint64_t worker = line.worker;
  auto drop = [&](const char *why) {
    if (got != 0) FEDCLD_LOG(error, "worker %llu's node file request: %s; its file socket closes", (unsigned long long)worker, why);
    detach(worker);
  };
  if (got <= 0 || got % sizeof(capnp::word) != 0) return drop(got <= 0 ? std::strerror(errno) : "a packet of no whole message");
  std::string path, user, error;
  bool for_writing = false;
  try {
    capnp::FlatArrayMessageReader reader(kj::arrayPtr(words, size_t(got) / sizeof(capnp::word)));
    auto request = reader.getRoot<wire::NodeFileOpen>();
    path = request.getPath();
    for_writing = request.getForWriting();
  } catch (const kj::Exception &) {
    return drop("not a NodeFileOpen");
  }
  int fd = -1;
  NodeOwner account;
  if (!user_of_(worker, &user, &account)) {
    error = "the worker has no session";
  } else if (const NodeFolders::Folder *folder = folders_.folder(user, account, &error)) {
    struct stat st {};
    // As the session's account, where it has one: the files it makes are its own, and the file
    // system's permissions hold too.
    FileIdentity as_account(account);
    fd = node_file_open(folder->fd, path, for_writing, &st, &error);
    if (fd < 0) error += " (node files are in " + folder->path + ")";
  }
  capnp::MallocMessageBuilder message;
  message.initRoot<wire::NodeFileOpened>().setError(error);
  bool sent = send_packet(line.socket, message, fd);
  if (fd >= 0) close(fd);
  if (!sent) drop(std::strerror(errno));
}

int node_file_request(const std::string &path, bool for_writing, struct stat *st, std::string *error) {
  capnp::word words[kMaxPacketWords];
  int fd = -1;
  // An answer that came after its request gave up is not this request's.
  while (receive_packet(kNodeFilesFd, words, &fd) > 0)
    if (fd >= 0) close(fd);
  capnp::MallocMessageBuilder message;
  auto request = message.initRoot<wire::NodeFileOpen>();
  request.setPath(path);
  request.setForWriting(for_writing);
  if (!send_packet(kNodeFilesFd, message, -1))
    return *error = std::string("cannot ask the main process for the file: ") + std::strerror(errno), -1;
  pollfd ready{kNodeFilesFd, POLLIN, 0};
  int waited;
  do waited = poll(&ready, 1, kAnswerWaitMs);
  while (waited < 0 && errno == EINTR);
  if (waited == 0) return *error = "the main process did not open the file within 5 s", -1;
  ssize_t got = receive_packet(kNodeFilesFd, words, &fd);
  if (got <= 0 || got % sizeof(capnp::word) != 0) {
    if (fd >= 0) close(fd);
    return *error = "no answer from the main process about the file", -1;
  }
  try {
    capnp::FlatArrayMessageReader reader(kj::arrayPtr(words, size_t(got) / sizeof(capnp::word)));
    *error = reader.getRoot<wire::NodeFileOpened>().getError();
  } catch (const kj::Exception &) {
    *error = "a malformed answer from the main process about the file";
  }
  if (!error->empty() || fd < 0 || fstat(fd, st) != 0) {
    if (error->empty()) *error = "the main process sent no file";
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

}  // namespace fedcld
