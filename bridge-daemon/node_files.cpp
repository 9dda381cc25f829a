#include "node_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "log.h"
#include "node_paths.h"
#include "peer_chunks.h"
#include "server.h"
#include "session_host.h"

namespace fedcld {

namespace {

// One node-file command: the buffer's chunks mapped (peer_chunks.h), each read from or written to
// the file on libuv's thread pool once it is reachable, then given back to the device.
struct NodeFileCopy : std::enable_shared_from_this<NodeFileCopy> {
  struct Work {
    uv_work_t request;
    std::shared_ptr<NodeFileCopy> copy;
    size_t k;
    ssize_t done = 0;
    int error = 0;
  };
  std::weak_ptr<Session> session;
  uint64_t buffer;
  int fd;
  uint64_t file_offset;
  bool to_file;
  std::string path;
  DeviceChunks device;
  OwnEvent event;
  size_t released = 0;

  NodeFileCopy(Call &call, Resolved &resolved, wire::Request::NodeFile::Reader request, int fd, std::string path)
      : session(call.session.weak_from_this()), buffer(request.getBuffer()), fd(fd), file_offset(request.getFileOffset()),
        to_file(request.getToFile()), path(std::move(path)),
        device(call, resolved, request.getBuffer(), request.getOffset(), request.getSize()), event(call) {}
  ~NodeFileCopy() { close(fd); }

  void start(Session &s) {
    auto self = shared_from_this();
    device.enqueue(s, to_file ? DeviceChunks::Direction::to_network : DeviceChunks::Direction::from_network,
                   [self](size_t k, cl_int status) { self->chunk_ready(k, status); },
                   [self](size_t, cl_int status) { self->chunk_released(status); });
    if (device.chunks.empty()) finish();
  }

  void chunk_ready(size_t k, cl_int status) {
    if (event.done()) return;
    if (status < 0) return fail(status, "the device could not make the buffer reachable (" + std::to_string(status) + ")");
    auto s = session.lock();
    if (!s) return;
    auto *work = new Work{{}, shared_from_this(), k};
    work->request.data = work;
    int err = uv_queue_work(s->server().loop(), &work->request, [](uv_work_t *request) {
      auto *w = static_cast<Work *>(request->data);
      const DeviceChunks::Chunk &chunk = w->copy->device.chunks[w->k];
      off_t at = off_t(w->copy->file_offset + chunk.at);
      w->done = w->copy->to_file ? pwrite(w->copy->fd, chunk.host, chunk.bytes, at) : pread(w->copy->fd, chunk.host, chunk.bytes, at);
      if (w->done < 0) w->error = errno;
    }, [](uv_work_t *request, int) {
      std::unique_ptr<Work> w(static_cast<Work *>(request->data));
      w->copy->chunk_copied(w->k, w->done, w->error);
    });
    if (err != 0) {
      delete work;
      fail(CL_OUT_OF_RESOURCES, std::string("cannot queue the file I/O: ") + uv_strerror(err));
    }
  }

  void chunk_copied(size_t k, ssize_t done, int error) {
    if (event.done()) return;
    const DeviceChunks::Chunk &chunk = device.chunks[k];
    if (done != ssize_t(chunk.bytes)) {
      std::string why = error ? std::string(to_file ? "writing" : "reading") + " failed: " + std::strerror(error)
                              : "the file ended after " + std::to_string(chunk.at + (done > 0 ? done : 0)) + " of the " +
                                    std::to_string(device.size()) + " bytes asked for";
      return fail(to_file ? CL_OUT_OF_RESOURCES : CL_INVALID_VALUE, why);
    }
    device.open_gate(k);
  }

  void chunk_released(cl_int status) {
    if (event.done()) return;
    if (status < 0) return fail(status, "giving the buffer back to the device failed (" + std::to_string(status) + ")");
    if (++released == device.chunks.size()) finish();
  }

  void finish() { event.finish(session.lock().get(), CL_COMPLETE, "", buffer, device.profiling()); }

  void fail(cl_int status, const std::string &why) {
    std::string message = std::string(to_file ? "writing buffer " : "loading buffer ") + std::to_string(buffer) +
                          (to_file ? " to " : " from ") + path + ": " + why;
    FEDCLD_LOG(warn, "%s", message.c_str());
    event.finish(session.lock().get(), status, message, buffer);
    device.open_all();
  }
};

}  // namespace

void exec_node_file(Call &call, wire::Request::NodeFile::Reader request) {
  Resolved resolved = resolve(call, request.getCommand());
  bool to_file = request.getToFile();
  std::string path = request.getPath(), error;
  struct stat st {};
  int fd = call.session.host().open_node_file(path, to_file, &st, &error);
  if (fd < 0) fail(CL_INVALID_VALUE, error);
  std::string shown = log_quote(path);
  uint64_t end = request.getFileOffset() + request.getSize();
  if (!to_file && uint64_t(st.st_size) < end) {
    close(fd);
    fail(CL_INVALID_VALUE, shown + " has " + std::to_string(st.st_size) + " bytes; " + std::to_string(request.getSize()) +
                               " were asked for from byte " + std::to_string(request.getFileOffset()));
  }
  std::shared_ptr<NodeFileCopy> copy;
  try {
    copy = std::make_shared<NodeFileCopy>(call, resolved, request, fd, shown);
  } catch (...) {
    close(fd);
    throw;
  }
  copy->start(call.session);
}

}  // namespace fedcld
