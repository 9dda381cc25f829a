#include "file_transfer.h"

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "coherence.h"
#include "command.h"
#include "transfer_chunks.h"

namespace fedcl {

namespace {

// Runs file jobs one after the other on a thread of their own: they block on the file and on the
// socket, which no application or runtime thread may wait for.
class FileWorker {
 public:
  static FileWorker &get() {
    static FileWorker *worker = new FileWorker();  // never destroyed: jobs may run at exit
    return *worker;
  }
  void run(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thread_.joinable()) thread_ = std::thread([this] { main(); });
    jobs_.push_back(std::move(job));
    cv_.notify_one();
  }

 private:
  void main() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return !jobs_.empty(); });
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::thread thread_;
};

// A chunk read from the file, on its way from the reading thread to the sending one.
struct FileChunk {
  std::unique_ptr<uint8_t[]> bytes;
  size_t size = 0, wanted = 0;
  int error = 0;  // errno of a failed read
};

// Reads the file chunk by chunk on a thread of its own while the caller sends the previous chunk.
class ChunkReader {
 public:
  ChunkReader(FILE *file, uint64_t size) : file_(file), size_(size), chunk_(transfer_chunk_bytes(size)) {
    thread_ = std::thread([this] { main(); });
  }
  ~ChunkReader() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  // The next chunk, in order; false once every chunk was handed out.
  bool next(FileChunk *chunk) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return !ready_.empty() || handed_ == chunks(); });
    if (ready_.empty()) return false;
    *chunk = std::move(ready_.front());
    ready_.pop_front();
    handed_++;
    cv_.notify_all();
    return true;
  }

 private:
  static constexpr size_t kAhead = 2;
  size_t chunks() const { return size_ ? (size_ + chunk_ - 1) / chunk_ : 0; }
  void main() {
    for (size_t k = 0; k < chunks(); k++) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || ready_.size() < kAhead; });
        if (stopping_) return;
      }
      FileChunk chunk;
      chunk.wanted = std::min<uint64_t>(chunk_, size_ - k * chunk_);
      chunk.bytes.reset(new (std::nothrow) uint8_t[chunk.wanted]);
      if (!chunk.bytes) {
        chunk.error = ENOMEM;
      } else {
        chunk.size = std::fread(chunk.bytes.get(), 1, chunk.wanted, file_);
        if (chunk.size < chunk.wanted && std::ferror(file_)) chunk.error = errno ? errno : EIO;
      }
      bool last = chunk.size < chunk.wanted;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ready_.push_back(std::move(chunk));
      }
      cv_.notify_all();
      if (last) return;  // the sender stops at a short chunk
    }
  }
  FILE *file_;
  uint64_t size_, chunk_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<FileChunk> ready_;
  size_t handed_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

void post_abort(Connection *connection, uint64_t transfer, cl_int status, const std::string &message) {
  RequestMessage request;
  auto abort = request.root.initTransferAbort();
  abort.setTransfer(transfer);
  abort.setStatus(status);
  abort.setMessage(message);
  connection->post(request);
  connection->flush();
}

// Streams size bytes of file into the receive of transfer on connection's daemon.
void stream_file(Connection *connection, uint64_t transfer, uint64_t size, FILE *file) {
  ChunkReader reader(file, size);
  FileChunk chunk;
  uint64_t at = 0;
  while (reader.next(&chunk)) {
    if (chunk.size < chunk.wanted) {
      std::string why = chunk.error ? std::string("reading the file failed: ") + std::strerror(chunk.error) +
                                          (chunk.error == EBADF ? " (is the stream open for reading?)" : "")
                                    : "the file ended after " + std::to_string(at + chunk.size) + " of the " +
                                          std::to_string(size) + " bytes asked for";
      post_abort(connection, transfer, CL_INVALID_VALUE, "clEnqueueWriteBufferFromStdioFile: " + why);
      return;
    }
    RequestMessage request;
    auto data = request.root.initTransferData();
    data.setTransfer(transfer);
    data.setOffset(at);
    if (connection->post(request, chunk.bytes.get(), chunk.size) != CL_SUCCESS) return;  // the daemon is gone
    at += chunk.size;
  }
  connection->flush();
}

}  // namespace

cl_int enqueue_write_from_file(cl_command_queue queue, cl_mem mem, bool blocking, size_t offset, size_t size,
                               FILE *file, cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  Command command(queue, CL_COMMAND_WRITE_BUFFER);
  cl_int err = command.begin(num_events, wait_list, event, true);
  if (err == CL_SUCCESS && blocking && wait_list_failed(num_events, wait_list))
    err = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
  if (err == CL_SUCCESS) err = mem_prepare(mem, command, offset == 0 && size == mem->size);
  if (err != CL_SUCCESS) return err;
  uint64_t transfer = new_object_id();
  RequestMessage request;
  auto receive = request.root.initReceiveFromPeer();
  command.fill(receive.initCommand());
  receive.setMemObject(mem->id);
  receive.setOffset(offset);
  receive.setSize(size);
  receive.setSender(0);
  receive.setTransfer(transfer);
  err = command.send(request);
  if (err != CL_SUCCESS) return err;
  if (queue->context->parts.size() > 1) mem_written(mem, queue->connection, command.event());
  Connection *connection = queue->connection;
  FileWorker::get().run([connection, transfer, size, file] { stream_file(connection, transfer, size, file); });
  if (!blocking) return CL_SUCCESS;
  // A blocking call returns what failed the command (a short file: CL_INVALID_VALUE).
  command.wait();
  {
    std::lock_guard<std::mutex> lock(command.event()->mutex);
    if (command.event()->status < 0) return command.event()->status;
  }
  return connection->take_error(mem->id);
}

}  // namespace fedcl
