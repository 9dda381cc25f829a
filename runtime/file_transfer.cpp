#include "file_transfer.h"

#include <cerrno>
#include <chrono>
#include <map>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "coherence.h"
#include "command.h"
#include "host_stream.h"
#include "runtime.h"
#include "transfer_chunks.h"

namespace fedcl {

namespace {

// Runs file jobs: those of one stream one after the other, in the order their commands were
// enqueued (each reads or writes from where the previous one left the stream), those of different
// streams at once, each stream on a thread of its own: jobs block on the file and on the socket,
// which no application or runtime thread may wait for, and jobs of different streams may wait for
// each other through their queues (a save behind a load).
class StreamJobs {
 public:
  static StreamJobs &get() {
    static StreamJobs *jobs = new StreamJobs();  // never destroyed: jobs may run at exit
    return *jobs;
  }
  void run(FILE *stream, std::function<void()> job) {
    std::lock_guard<std::mutex> lock(mutex_);
    Queue &queue = queues_[stream];
    queue.jobs.push_back(std::move(job));
    if (queue.running) return;
    queue.running = true;
    std::thread([this, stream] { drain(stream); }).detach();
  }

 private:
  struct Queue {
    std::deque<std::function<void()>> jobs;
    bool running = false;
  };
  void drain(FILE *stream) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      Queue &queue = queues_[stream];
      if (queue.jobs.empty()) {
        queues_.erase(stream);
        return;
      }
      auto job = std::move(queue.jobs.front());
      queue.jobs.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::unordered_map<FILE *, Queue> queues_;
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
      abort_receive(connection, transfer, CL_INVALID_VALUE, "clEnqueueWriteBufferFromStdioFile: " + why);
      return;
    }
    if (stream_to_receive(connection, transfer, size, at, chunk.bytes.get(), chunk.size) != CL_SUCCESS) return;  // the daemon is gone
    at += chunk.size;
  }
}

// Writes the chunks of a transfer to this process into a file, in order, as they arrive; completes
// the command's event once every byte is in the file and the daemon's side is done.
class FileSink {
 public:
  FileSink(FILE *file, uint64_t size, _cl_event *event, bool profiling)
      : file_(file), size_(size), event_(event), profiling_(profiling) {
    hold(event_);
    if (profiling_) times_[0] = times_[1] = now_ns();
  }
  ~FileSink() { unhold(event_); }

  // Receiver thread: a chunk came.
  void chunk(uint64_t offset, std::unique_ptr<uint8_t[]> bytes, uint64_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (profiling_ && !times_[2]) times_[2] = now_ns();
    chunks_.emplace(offset, Chunk{std::move(bytes), size});
    cv_.notify_all();
  }
  // Callback thread: the daemon's side ended (the last chunk left, or the command failed).
  void sent(cl_int status) {
    std::lock_guard<std::mutex> lock(mutex_);
    sent_ = true;
    sent_status_ = status;
    cv_.notify_all();
  }

  // A thread of its own: writes the chunks in order, then completes the event.
  void run(cl_context context) {
    cl_int status = write_all();
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return sent_; });
    if (status == CL_COMPLETE && sent_status_ < 0) status = sent_status_;
    lock.unlock();
    if (status < 0 && !why_.empty()) Runtime::get().notify(context, "fedcl: clEnqueueReadBufferToStdioFile: " + why_);
    uint64_t times[4] = {times_[0], times_[1], times_[2] ? times_[2] : times_[1], now_ns()};
    Runtime::get().complete(event_, status, profiling_ && status == CL_COMPLETE ? times : nullptr);
  }

 private:
  struct Chunk {
    std::unique_ptr<uint8_t[]> bytes;
    uint64_t size;
  };
  static uint64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  cl_int write_all() {
    uint64_t written = 0;
    while (written < size_) {
      Chunk chunk;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return chunks_.count(written) || (sent_ && sent_status_ < 0); });
        auto it = chunks_.find(written);
        if (it == chunks_.end()) return sent_status_;  // the daemon's side failed: no more chunks
        chunk = std::move(it->second);
        chunks_.erase(it);
      }
      if (std::fwrite(chunk.bytes.get(), 1, chunk.size, file_) != chunk.size) {
        int error = errno ? errno : EIO;
        why_ = "writing the file failed after " + std::to_string(written) + " of " + std::to_string(size_) +
               " bytes: " + std::strerror(error) + (error == EBADF ? " (is the stream open for writing?)" : "");
        return error == EBADF ? CL_INVALID_VALUE : CL_OUT_OF_RESOURCES;
      }
      written += chunk.size;
    }
    if (std::fflush(file_) != 0) {
      why_ = std::string("flushing the file failed: ") + std::strerror(errno);
      return CL_OUT_OF_RESOURCES;
    }
    return CL_COMPLETE;
  }

  FILE *file_;
  uint64_t size_;
  _cl_event *event_;
  bool profiling_;
  uint64_t times_[3] = {};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<uint64_t, Chunk> chunks_;
  bool sent_ = false;
  cl_int sent_status_ = CL_QUEUED;
  std::string why_;
};

// A blocking command's end: what failed it (a short file: CL_INVALID_VALUE), or an error the daemon
// reported for the buffer meanwhile.
cl_int wait_file_command(Command &command, Connection *connection, cl_mem mem) {
  command.wait();
  {
    std::lock_guard<std::mutex> lock(command.event()->mutex);
    if (command.event()->status < 0) return command.event()->status;
  }
  return connection->take_error(mem->id);
}

void CL_CALLBACK on_sent(cl_event, cl_int status, void *user_data) {
  std::unique_ptr<std::shared_ptr<FileSink>> sink(static_cast<std::shared_ptr<FileSink> *>(user_data));
  (*sink)->sent(status);
}

}  // namespace

cl_int enqueue_read_to_file(cl_command_queue queue, cl_mem mem, bool blocking, size_t offset, size_t size,
                            FILE *file, cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  // The daemon's command (its event: the device side) and the application's event, which completes
  // once the bytes are in the file too. The latter lives in this process alone: other daemons'
  // commands that wait for it are released by the runtime, as for a user event.
  Command command(queue, CL_COMMAND_READ_BUFFER);
  cl_int err = command.begin_streamed(blocking, mem, MemSpan::read(offset, size), num_events, wait_list, nullptr);
  if (err != CL_SUCCESS) return err;
  _cl_event *done = event_create(queue->context, queue, CL_COMMAND_READ_BUFFER, CL_QUEUED);
  done->connection = nullptr;
  queue->add_local(done);
  auto sink = std::make_shared<FileSink>(file, size, done, queue->properties & CL_QUEUE_PROFILING_ENABLE);
  uint64_t transfer = new_object_id();
  Runtime::get().add_sink(transfer, [sink](uint64_t at, std::unique_ptr<uint8_t[]> bytes, uint64_t bytes_size) {
    sink->chunk(at, std::move(bytes), bytes_size);
  });
  {
    std::lock_guard<std::mutex> lock(command.event()->mutex);
    command.event()->callbacks.push_back({CL_COMPLETE, on_sent, new std::shared_ptr<FileSink>(sink)});
  }
  err = send_device_send(command, mem, offset, size, transfer, false);
  if (err != CL_SUCCESS) {
    Runtime::get().remove_sink(transfer);
    release(done);
    return err;
  }
  cl_context context = queue->context;
  StreamJobs::get().run(file, [sink, transfer, context] {
    sink->run(context);
    Runtime::get().remove_sink(transfer);
  });
  if (event) *event = done;
  if (!blocking) {
    if (!event) release(done);
    return CL_SUCCESS;
  }
  cl_int status = wait_complete(done);
  if (!event) release(done);
  return status < 0 ? status : CL_SUCCESS;
}

cl_int enqueue_write_from_file(cl_command_queue queue, cl_mem mem, bool blocking, size_t offset, size_t size,
                               FILE *file, cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  Command command(queue, CL_COMMAND_WRITE_BUFFER);
  cl_int err = command.begin_streamed(blocking, mem, MemSpan::written(offset, size), num_events, wait_list, event);
  if (err != CL_SUCCESS) return err;
  uint64_t transfer = 0;
  err = send_host_receive(command, mem, offset, size, &transfer);
  if (err != CL_SUCCESS) return err;
  Connection *connection = queue->connection;
  StreamJobs::get().run(file, [connection, transfer, size, file] { stream_file(connection, transfer, size, file); });
  return blocking ? wait_file_command(command, connection, mem) : CL_SUCCESS;
}

cl_int enqueue_node_file(cl_command_queue queue, cl_mem mem, bool blocking, size_t offset, size_t size,
                         const char *path, uint64_t file_offset, bool to_file, cl_uint num_events,
                         const cl_event *wait_list, cl_event *event) {
  Command command(queue, to_file ? CL_COMMAND_READ_BUFFER : CL_COMMAND_WRITE_BUFFER);
  MemSpan span = to_file ? MemSpan::read(offset, size) : MemSpan::written(offset, size);
  cl_int err = command.begin_streamed(blocking, mem, span, num_events, wait_list, event);
  if (err != CL_SUCCESS) return err;
  RequestMessage request;
  auto file = request.root.initNodeFile();
  command.fill(file.initCommand());
  file.setBuffer(mem->id);
  file.setOffset(offset);
  file.setSize(size);
  file.setPath(path);
  file.setFileOffset(file_offset);
  file.setToFile(to_file);
  err = command.send(request);
  if (err != CL_SUCCESS) return err;
  if (!to_file && queue->context->parts.size() > 1) mem_written(mem, queue->connection, command.event(), span);
  return blocking ? wait_file_command(command, queue->connection, mem) : CL_SUCCESS;
}

}  // namespace fedcl
