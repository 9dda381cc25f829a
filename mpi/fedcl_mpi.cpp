// libfedcl_mpi.so: the transfer engine's MPI commands (include/CL/cl_fedcl_mpi.h), a library of
// their own so that the ICD never links MPI. They use the program's MPI and reach fedcl's objects
// through the OpenCL API like any program: a send is a device read into host memory followed, on a
// thread of the command's own, by MPI_Send; a receive is the transfer engine's load from a stream
// (clEnqueueWriteBufferFromStdioFile) whose other end is a pipe that such a thread fills with the
// message. Both are ordered by the queue and the wait list, and their events complete when the
// message has gone or landed.
//
// This is the path staged through the hosts; the direct path over the daemons' peer links for
// large messages between fedcl devices is still to come (docs/transfer-engine.md).
#include <CL/cl_fedcl_mpi.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

namespace {

// MPI counts are ints: a message goes as pieces of at most this many bytes, in order (MPI keeps the
// order of messages with the same source, tag and communicator).
constexpr size_t kPieceBytes = size_t(1) << 30;

bool thread_level_ok() {
  int level = MPI_THREAD_SINGLE;
  if (MPI_Query_thread(&level) != MPI_SUCCESS || level < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "fedcl: the MPI commands need MPI initialised with MPI_THREAD_MULTIPLE (MPI_Init_thread); "
                         "this program has thread level %d\n", level);
    return false;
  }
  return true;
}

cl_context queue_context(cl_command_queue queue) {
  cl_context context = nullptr;
  clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof context, &context, nullptr);
  return context;
}

// Waits for event (a blocking command) and returns what it ended with.
cl_int finish_blocking(cl_event event) {
  cl_int status = CL_SUCCESS;
  clWaitForEvents(1, &event);
  clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  return status < 0 ? status : CL_SUCCESS;
}

// Hands the command's event to the application, or waits for it first.
cl_int hand_out(cl_event done, bool blocking, cl_event *event) {
  cl_int err = blocking ? finish_blocking(done) : CL_SUCCESS;
  if (event) *event = done;
  else clReleaseEvent(done);
  return err;
}

}  // namespace

extern "C" CL_API_ENTRY cl_int CL_API_CALL clEnqueueSendBuffer(cl_command_queue queue, cl_mem buffer,
                                                               cl_bool blocking, size_t offset, size_t size, int dest,
                                                               int tag, MPI_Comm comm, cl_uint num_events,
                                                               const cl_event *wait_list, cl_event *event) {
  if (!thread_level_ok()) return CL_INVALID_OPERATION;
  std::shared_ptr<uint8_t[]> staging(new (std::nothrow) uint8_t[size ? size : 1]);
  if (!staging) return CL_OUT_OF_HOST_MEMORY;
  cl_event read = nullptr;
  cl_int err = clEnqueueReadBuffer(queue, buffer, CL_FALSE, offset, size, staging.get(), num_events, wait_list, &read);
  if (err != CL_SUCCESS) return err;
  // The command's end, in the queue: later commands (and clFinish) wait until MPI has the bytes.
  cl_event sent = clCreateUserEvent(queue_context(queue), &err);
  if (err != CL_SUCCESS) return clReleaseEvent(read), err;
  cl_event done = nullptr;
  err = clEnqueueMarkerWithWaitList(queue, 1, &sent, &done);
  if (err != CL_SUCCESS) return clSetUserEventStatus(sent, CL_OUT_OF_RESOURCES), clReleaseEvent(sent), clReleaseEvent(read), err;
  clFlush(queue);
  std::thread([read, sent, staging, size, dest, tag, comm] {
    cl_int status = CL_COMPLETE;
    clWaitForEvents(1, &read);
    clGetEventInfo(read, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    for (size_t at = 0; status == CL_COMPLETE && at < size; at += kPieceBytes) {
      int piece = int(std::min(kPieceBytes, size - at));
      if (MPI_Send(staging.get() + at, piece, MPI_BYTE, dest, tag, comm) != MPI_SUCCESS) status = CL_OUT_OF_RESOURCES;
    }
    if (size == 0 && status == CL_COMPLETE && MPI_Send(nullptr, 0, MPI_BYTE, dest, tag, comm) != MPI_SUCCESS)
      status = CL_OUT_OF_RESOURCES;
    clSetUserEventStatus(sent, status < 0 ? status : CL_COMPLETE);
    clReleaseEvent(sent);
    clReleaseEvent(read);
  }).detach();
  return hand_out(done, blocking, event);
}

extern "C" CL_API_ENTRY cl_int CL_API_CALL clEnqueueRecvBuffer(cl_command_queue queue, cl_mem buffer,
                                                               cl_bool blocking, size_t offset, size_t size, int src,
                                                               int tag, MPI_Comm comm, cl_uint num_events,
                                                               const cl_event *wait_list, cl_event *event) {
  if (!thread_level_ok()) return CL_INVALID_OPERATION;
  // The command is the transfer engine's load from a stream, whose other end is a pipe this
  // library fills with the message as it comes: the load takes its place in the queue at once and
  // streams the bytes into the device as they arrive. A message of the wrong size closes the pipe
  // early, which fails the load.
  cl_device_id device = nullptr;
  cl_platform_id platform = nullptr;
  clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof device, &device, nullptr);
  clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr);
  auto load = reinterpret_cast<clEnqueueWriteBufferFromStdioFile_fn>(
      clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueWriteBufferFromStdioFile"));
  if (!load) return CL_INVALID_OPERATION;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return CL_OUT_OF_HOST_MEMORY;
  FILE *reader = fdopen(fds[0], "rb");
  if (!reader) {
    close(fds[0]);
    close(fds[1]);
    return CL_OUT_OF_HOST_MEMORY;
  }
  cl_event done = nullptr;
  cl_int err = load(queue, buffer, CL_FALSE, offset, size, reader, num_events, wait_list, &done);
  if (err != CL_SUCCESS) {
    fclose(reader);
    close(fds[1]);
    return err;
  }
  clRetainEvent(done);  // the thread's, whatever the application does with its own
  // The message is received as soon as it comes, whatever the queue is doing: a command behind this
  // one may be the send the peer waits for.
  std::thread([reader, writer = fds[1], size, src, tag, comm, done] {
    std::string why;
    size_t at = 0;
    std::unique_ptr<uint8_t[]> piece_bytes;
    do {
      size_t want = std::min(kPieceBytes, size - at);
      MPI_Message message;
      MPI_Status mpi_status;
      int count = 0;
      if (MPI_Mprobe(src, tag, comm, &message, &mpi_status) != MPI_SUCCESS ||
          MPI_Get_count(&mpi_status, MPI_BYTE, &count) != MPI_SUCCESS) {
        why = "MPI could not receive the message";
        break;
      }
      std::unique_ptr<uint8_t[]> bytes(new uint8_t[count ? count : 1]);
      // Taken whatever its size, so that it does not wait forever for a receive that will not come.
      if (MPI_Mrecv(bytes.get(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        why = "MPI could not receive the message";
        break;
      }
      if (size_t(count) != want) {
        why = "a message of " + std::to_string(at + count) + " bytes came where " + std::to_string(size) +
              " were expected" + (size_t(count) > want ? " (truncation)" : "");
        break;
      }
      for (size_t written = 0; written < want;) {
        ssize_t n = write(writer, bytes.get() + written, want - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          why = "the load stopped taking the message";
          break;
        }
        written += size_t(n);
      }
      at += want;
    } while (why.empty() && at < size);
    if (!why.empty()) std::fprintf(stderr, "fedcl: clEnqueueRecvBuffer from rank %d, tag %d: %s\n", src, tag, why.c_str());
    close(writer);  // early, on a failure: the load finds its stream short and fails
    clWaitForEvents(1, &done);
    clReleaseEvent(done);
    fclose(reader);
  }).detach();
  return hand_out(done, blocking, event);
}
