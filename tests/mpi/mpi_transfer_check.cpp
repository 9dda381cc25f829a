// The MPI commands (include/CL/cl_fedcl_mpi.h) in a real MPI job: every rank on a fedcld of its own
// (tests/mpi/run_mpi.sh starts them and gives each rank its FEDCL_HOSTS), checked word for word.
// Prints what failed and exits 1; run as `mpirun -np 2` or `-np 3`. The argument `funneled` starts
// MPI with MPI_THREAD_FUNNELED instead of MPI_THREAD_MULTIPLE (fedcl then progresses MPI only inside
// fedcl's calls on this thread). FEDCL_PEER_LINKS=0 makes large messages take the staged path.
#include <CL/cl_fedcl_mpi.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int rank = 0, ranks = 1, failures = 0;

#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      std::fprintf(stderr, "rank %d: FAILED %s: ", rank, #cond);      \
      std::fprintf(stderr, __VA_ARGS__);                              \
      std::fprintf(stderr, "\n");                                     \
      failures++;                                                     \
    }                                                                 \
  } while (0)
#define CL_OK(call) CHECK((call) == CL_SUCCESS, "%s", #call)

uint32_t word(size_t i, uint32_t seed) { return uint32_t(i) * 2654435761u + seed; }

struct Fedcl {
  cl_platform_id platform = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_kernel fill = nullptr, add = nullptr;
  clEnqueueSendBuffer_fn send = nullptr;
  clEnqueueRecvBuffer_fn recv = nullptr;
  clEnqueueSendrecvBuffer_fn sendrecv = nullptr;
  clCreateEventFromMPIRequest_fn event_from = nullptr;
  clFedclIrecvFromDevice_fn host_recv = nullptr;

  Fedcl() {
    cl_uint count = 0;
    clGetPlatformIDs(0, nullptr, &count);
    std::vector<cl_platform_id> platforms(count);
    clGetPlatformIDs(count, platforms.data(), nullptr);
    for (cl_platform_id p : platforms) {
      char name[32] = {};
      clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name - 1, name, nullptr);
      if (std::string(name) == "fedcl") platform = p;
    }
    cl_device_id device;
    cl_int err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr);
    CHECK(err == CL_SUCCESS, "no fedcl device (%d)", err);
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    queue = clCreateCommandQueueWithProperties(context, device, nullptr, &err);
    const char *source =
        "kernel void fill(global uint *x, uint seed) { size_t i = get_global_id(0); x[i] = (uint)i * 2654435761u + seed; }\n"
        "kernel void add(global uint *x, uint v) { x[get_global_id(0)] += v; }\n";
    cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
    CL_OK(clBuildProgram(program, 1, &device, "", nullptr, nullptr));
    fill = clCreateKernel(program, "fill", &err);
    add = clCreateKernel(program, "add", &err);
    send = reinterpret_cast<clEnqueueSendBuffer_fn>(clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueSendBuffer"));
    recv = reinterpret_cast<clEnqueueRecvBuffer_fn>(clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueRecvBuffer"));
    sendrecv = reinterpret_cast<clEnqueueSendrecvBuffer_fn>(clGetExtensionFunctionAddressForPlatform(platform, "clEnqueueSendrecvBuffer"));
    event_from = reinterpret_cast<clCreateEventFromMPIRequest_fn>(
        clGetExtensionFunctionAddressForPlatform(platform, "clCreateEventFromMPIRequest"));
    host_recv = reinterpret_cast<clFedclIrecvFromDevice_fn>(clGetExtensionFunctionAddressForPlatform(platform, "clFedclIrecvFromDevice"));
    CHECK(send && recv && sendrecv && event_from && host_recv, "the MPI commands are not reachable");
  }
  // An in-order queue of the same device, for commands that must not wait behind f.queue's.
  cl_command_queue another_queue() {
    cl_device_id device;
    clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof device, &device, nullptr);
    cl_int err;
    cl_command_queue other = clCreateCommandQueueWithProperties(context, device, nullptr, &err);
    CHECK(err == CL_SUCCESS, "another queue (%d)", err);
    return other;
  }
  cl_mem buffer(size_t words) {
    cl_int err;
    return clCreateBuffer(context, CL_MEM_READ_WRITE, words * 4, nullptr, &err);
  }
  void run(cl_kernel kernel, cl_mem mem, uint32_t value, size_t words) {
    clSetKernelArg(kernel, 0, sizeof mem, &mem);
    clSetKernelArg(kernel, 1, sizeof value, &value);
    CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &words, nullptr, 0, nullptr, nullptr));
  }
  std::vector<uint32_t> read(cl_mem mem, size_t words) {
    std::vector<uint32_t> out(words);
    CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, words * 4, out.data(), 0, nullptr, nullptr));
    return out;
  }
};

void expect_pattern(const std::vector<uint32_t> &got, uint32_t seed, uint32_t plus, const char *what) {
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < got.size(); i++)
    if (got[i] != word(i, seed) + plus && !wrong++) first = i;
  CHECK(wrong == 0, "%s: %zu of %zu words wrong, first at %zu (%08x, not %08x)", what, wrong, got.size(), first,
        wrong ? got[first] : 0, wrong ? word(first, seed) + plus : 0);
}

// Waits for a host MPI request the way the thread level allows: MPI_Wait where fedcl has a thread
// of its own, else through an event that fedcl's waits progress.
void wait_request(Fedcl &f, MPI_Request *request, bool multiple) {
  if (multiple) {
    MPI_Wait(request, MPI_STATUS_IGNORE);
    return;
  }
  cl_int err;
  cl_event done = f.event_from(f.context, request, &err);
  CL_OK(err);
  CL_OK(clWaitForEvents(1, &done));
  clReleaseEvent(done);
}

cl_int status_of(cl_event event) {
  cl_int status = 1;
  clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  return status;
}

// The event's status once it has one, or what it still is after 30 s: a hang is reported, not suffered.
cl_int settled_status(cl_event event) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (status_of(event) > CL_COMPLETE && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return status_of(event);
}

}  // namespace

// A rank dies while a message is on its way: the job ends (mpirun's part); this returns only if the
// victim outlived the transfer, which the caller counts as a failure.
int die_mid_transfer(Fedcl &f, bool kill_sender) {
  const size_t n = (64 << 20) / 4;
  cl_mem buffer = f.buffer(n);
  cl_event done;
  if (rank == 0) {
    f.run(f.fill, buffer, 1, n);
    CL_OK(f.send(f.queue, buffer, CL_FALSE, 0, n * 4, 1, 20, MPI_COMM_WORLD, 0, nullptr, &done));
  } else {
    CL_OK(f.recv(f.queue, buffer, CL_FALSE, 0, n * 4, 0, 20, MPI_COMM_WORLD, 0, nullptr, &done));
  }
  if ((rank == 0) == kill_sender) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    raise(SIGKILL);
  }
  clWaitForEvents(1, &done);
  MPI_Barrier(MPI_COMM_WORLD);  // the victim never comes
  std::fprintf(stderr, "rank %d: the victim outlived the transfer\n", rank);
  return 1;
}

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  bool multiple = mode != "funneled";
  int provided = 0;
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  CHECK(provided >= (multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED), "MPI gives thread level %d", provided);
  Fedcl f;
  if (mode == "kill-sender" || mode == "kill-receiver") return die_mid_transfer(f, mode == "kill-sender");
  const size_t large = (12 << 20) / 4 + 3, small = 1000;  // words: above and below the threshold
  const int next = (rank + 1) % ranks, previous = (rank + ranks - 1) % ranks;

  // Device to device around the ring, non-blocking, ordered by the queue: each rank fills a buffer
  // with a kernel, sends it on, receives its neighbour's, adds to it with a kernel and checks.
  for (size_t n : {large, small}) {
    cl_mem out = f.buffer(n), in = f.buffer(n);
    f.run(f.fill, out, 100 + rank, n);
    cl_event sent, received;
    CL_OK(f.send(f.queue, out, CL_FALSE, 0, n * 4, next, 7, MPI_COMM_WORLD, 0, nullptr, &sent));
    CL_OK(f.recv(f.queue, in, CL_FALSE, 0, n * 4, previous, 7, MPI_COMM_WORLD, 0, nullptr, &received));
    f.run(f.add, in, 5, n);
    expect_pattern(f.read(in, n), 100 + previous, 5, n == large ? "device to device, large" : "device to device, small");
    CL_OK(clWaitForEvents(1, &sent));
    CHECK(status_of(received) == CL_COMPLETE, "the receive's event ended as %d", status_of(received));
    clReleaseEvent(sent);
    clReleaseEvent(received);
    clReleaseMemObject(out);
    clReleaseMemObject(in);
  }

  // Blocking commands, and two messages on the same tag taken in the order they were sent. The
  // receives on a queue of their own: behind them on an in-order queue, the sends would wait for
  // them, and so would the neighbour's.
  {
    cl_command_queue receiving = f.another_queue();
    cl_mem a = f.buffer(large), b = f.buffer(large), in1 = f.buffer(large), in2 = f.buffer(large);
    f.run(f.fill, a, 110 + rank, large);
    f.run(f.fill, b, 120 + rank, large);
    cl_event received[2];
    CL_OK(f.recv(receiving, in1, CL_FALSE, 0, large * 4, previous, 12, MPI_COMM_WORLD, 0, nullptr, &received[0]));
    CL_OK(f.recv(receiving, in2, CL_FALSE, 0, large * 4, previous, 12, MPI_COMM_WORLD, 0, nullptr, &received[1]));
    CL_OK(f.send(f.queue, a, CL_TRUE, 0, large * 4, next, 12, MPI_COMM_WORLD, 0, nullptr, nullptr));
    CL_OK(f.send(f.queue, b, CL_TRUE, 0, large * 4, next, 12, MPI_COMM_WORLD, 0, nullptr, nullptr));
    CL_OK(clWaitForEvents(2, received));
    expect_pattern(f.read(in1, large), 110 + previous, 0, "the first of two messages on one tag");
    expect_pattern(f.read(in2, large), 120 + previous, 0, "the second of two messages on one tag");
    for (cl_event e : received) clReleaseEvent(e);
    for (cl_mem m : {a, b, in1, in2}) clReleaseMemObject(m);
    clReleaseCommandQueue(receiving);
  }

  // A receive that reaches its daemon after the sender's bytes: rank 1's daemon is still making a
  // buffer from 128 MiB of host memory (off its loop, and no later request of the session overtakes
  // that) when rank 0's bytes come over the peer link. They must wait there until the receive names
  // their sender; dropped, the receive would wait for ever.
  if (rank < 2) {
    cl_mem mem = f.buffer(large);
    cl_event done = nullptr;
    if (rank == 0) {
      f.run(f.fill, mem, 150, large);
      CL_OK(f.send(f.queue, mem, CL_FALSE, 0, large * 4, 1, 21, MPI_COMM_WORLD, 0, nullptr, &done));
    } else {
      std::vector<uint8_t> contents(128 << 20, 1);
      cl_int err;
      cl_mem slow = clCreateBuffer(f.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, contents.size(), contents.data(), &err);
      CL_OK(err);
      CL_OK(f.recv(f.queue, mem, CL_FALSE, 0, large * 4, 0, 21, MPI_COMM_WORLD, 0, nullptr, &done));
      clReleaseMemObject(slow);
    }
    // Where fedcl has its own MPI thread, bounded; below MPI_THREAD_MULTIPLE only fedcl's waits
    // progress MPI (a hang then meets the job's time limit).
    if (!multiple) clWaitForEvents(1, &done);
    cl_int status = settled_status(done);
    if (status > CL_COMPLETE) {
      std::fprintf(stderr, "rank %d: FAILED: a %s behind a slow buffer creation never completed\n", rank,
                   rank ? "receive" : "send");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CHECK(status == CL_COMPLETE, "the %s behind a slow buffer creation ended as %d", rank ? "receive" : "send", status);
    if (rank == 1) expect_pattern(f.read(mem, large), 150, 0, "a receive whose daemon was busy when the bytes came");
    clReleaseEvent(done);
    clReleaseMemObject(mem);
  }

  // A large message from the middle of a buffer into the middle of another: the daemons move part
  // of each (staged, on a backend that maps parts wrongly: fedcld --stage-buffer-ranges yes).
  {
    cl_mem from = f.buffer(3 * large), into = f.buffer(3 * large);
    f.run(f.fill, from, 140 + rank, 3 * large);
    f.run(f.fill, into, 7, 3 * large);
    CL_OK(clFinish(f.queue));  // the receive runs on another queue
    cl_command_queue receiving = f.another_queue();
    cl_event received;
    CL_OK(f.recv(receiving, into, CL_FALSE, large * 4, large * 4, previous, 14, MPI_COMM_WORLD, 0, nullptr, &received));
    CL_OK(f.send(f.queue, from, CL_TRUE, large * 4, large * 4, next, 14, MPI_COMM_WORLD, 0, nullptr, nullptr));
    CL_OK(clWaitForEvents(1, &received));
    std::vector<uint32_t> got = f.read(into, 3 * large), want(3 * large);
    for (size_t i = 0; i < want.size(); i++) want[i] = word(i, i >= large && i < 2 * large ? 140 + previous : 7);
    size_t wrong = 0;
    for (size_t i = 0; i < got.size(); i++) wrong += got[i] != want[i];
    CHECK(wrong == 0, "part of a buffer into part of another: %zu of %zu words wrong", wrong, got.size());
    clReleaseEvent(received);
    for (cl_mem m : {from, into}) clReleaseMemObject(m);
    clReleaseCommandQueue(receiving);
  }

  // Two sends to one route leave in the order they were enqueued, even when the later one has its
  // bytes first: the first waits for a user event, the second (on another queue) does not.
  for (size_t n : {small, large}) {
    cl_int err;
    cl_command_queue other = f.another_queue();
    cl_mem first = f.buffer(n), second = f.buffer(n), in1 = f.buffer(n), in2 = f.buffer(n);
    f.run(f.fill, first, 130 + rank, n);
    f.run(f.fill, second, 140 + rank, n);
    CL_OK(clFinish(f.queue));
    cl_event gate = clCreateUserEvent(f.context, &err), sent[2], received[2];
    CL_OK(f.send(f.queue, first, CL_FALSE, 0, n * 4, next, 17, MPI_COMM_WORLD, 1, &gate, &sent[0]));
    CL_OK(f.send(other, second, CL_FALSE, 0, n * 4, next, 17, MPI_COMM_WORLD, 0, nullptr, &sent[1]));
    CL_OK(f.recv(other, in1, CL_FALSE, 0, n * 4, previous, 17, MPI_COMM_WORLD, 0, nullptr, &received[0]));
    CL_OK(f.recv(other, in2, CL_FALSE, 0, n * 4, previous, 17, MPI_COMM_WORLD, 0, nullptr, &received[1]));
    // Time for the second's bytes to leave its device (they need nothing from this thread).
    clFlush(other);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
    CL_OK(clWaitForEvents(2, received));
    expect_pattern(f.read(in1, n), 130 + previous, 0, "the first of two sends, its bytes last");
    expect_pattern(f.read(in2, n), 140 + previous, 0, "the second of two sends, its bytes first");
    CL_OK(clWaitForEvents(2, sent));
    for (cl_event e : {gate, sent[0], sent[1], received[0], received[1]}) clReleaseEvent(e);
    for (cl_mem m : {first, second, in1, in2}) clReleaseMemObject(m);
    clReleaseCommandQueue(other);
  }

  // What the application may release right after enqueueing (the commands' queues, the send's
  // buffer): the commands still run behind their gate, and their events complete.
  for (size_t n : {small, large}) {
    cl_int err;
    cl_command_queue sending = f.another_queue(), receiving = f.another_queue();
    cl_mem out = f.buffer(n), in = f.buffer(n);
    f.run(f.fill, out, 160 + rank, n);
    CL_OK(clFinish(f.queue));
    cl_event gate = clCreateUserEvent(f.context, &err), sent, received;
    CL_OK(err);
    CL_OK(f.send(sending, out, CL_FALSE, 0, n * 4, next, 23, MPI_COMM_WORLD, 1, &gate, &sent));
    CL_OK(f.recv(receiving, in, CL_FALSE, 0, n * 4, previous, 23, MPI_COMM_WORLD, 0, nullptr, &received));
    clReleaseCommandQueue(sending);
    clReleaseCommandQueue(receiving);
    clReleaseMemObject(out);
    CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
    cl_event both[] = {sent, received};
    CL_OK(clWaitForEvents(2, both));
    CHECK(status_of(sent) == CL_COMPLETE && status_of(received) == CL_COMPLETE,
          "commands whose queues and buffer were released ended as %d and %d", status_of(sent), status_of(received));
    expect_pattern(f.read(in, n), 160 + previous, 0, "a receive whose queue was released, from a released buffer");
    for (cl_event e : {gate, sent, received}) clReleaseEvent(e);
    clReleaseMemObject(in);
  }

  // A host's MPI_Send into a device receive; a device send into a host's MPI_Recv (small) or
  // clFedclIrecvFromDevice (large).
  for (size_t n : {large, small}) {
    std::vector<uint32_t> host(n);
    for (size_t i = 0; i < n; i++) host[i] = word(i, 200 + rank);
    cl_mem in = f.buffer(n), out = f.buffer(n);
    MPI_Request request;
    MPI_Isend(host.data(), int(n * 4), MPI_BYTE, next, 8, MPI_COMM_WORLD, &request);
    CL_OK(f.recv(f.queue, in, CL_TRUE, 0, n * 4, previous, 8, MPI_COMM_WORLD, 0, nullptr, nullptr));
    wait_request(f, &request, multiple);
    expect_pattern(f.read(in, n), 200 + previous, 0, "host MPI_Send to device");

    f.run(f.fill, out, 300 + rank, n);
    std::vector<uint32_t> got(n);
    if (n == small) MPI_Irecv(got.data(), int(n * 4), MPI_BYTE, previous, 9, MPI_COMM_WORLD, &request);
    else CHECK(f.host_recv(got.data(), n * 4, previous, 9, MPI_COMM_WORLD, &request) == MPI_SUCCESS, "clFedclIrecvFromDevice");
    CL_OK(f.send(f.queue, out, CL_TRUE, 0, n * 4, next, 9, MPI_COMM_WORLD, 0, nullptr, nullptr));
    wait_request(f, &request, multiple);
    expect_pattern(got, 300 + previous, 0, n == small ? "device to host MPI_Recv" : "device to clFedclIrecvFromDevice");
    clReleaseMemObject(in);
    clReleaseMemObject(out);
  }

  // A receive behind a user event: the message may come at once, the buffer waits for the gate.
  {
    cl_mem in = f.buffer(1024), out = f.buffer(1024);
    f.run(f.fill, out, 400 + rank, 1024);
    CL_OK(clFinish(f.queue));
    cl_int err;
    cl_event gate = clCreateUserEvent(f.context, &err), received;
    CL_OK(f.recv(f.queue, in, CL_FALSE, 0, 4096, previous, 10, MPI_COMM_WORLD, 1, &gate, &received));
    // The send on a queue of its own: on f.queue it would wait behind the gated receive.
    cl_command_queue other = f.another_queue();
    CL_OK(f.send(other, out, CL_TRUE, 0, 4096, next, 10, MPI_COMM_WORLD, 0, nullptr, nullptr));
    clReleaseCommandQueue(other);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(status_of(received) > CL_COMPLETE, "the receive completed before its wait list (%d)", status_of(received));
    CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
    CL_OK(clWaitForEvents(1, &received));
    expect_pattern(f.read(in, 1024), 400 + previous, 0, "a receive behind a user event");
  }

  // A blocking small receive that asks for its event: it returns once the message is taken (with
  // MPI_THREAD_MULTIPLE, as a blocking write returns), and the event says when the bytes are in the
  // buffer: a read on another queue that waits for it finds them.
  {
    cl_mem in = f.buffer(1024), out = f.buffer(1024);
    f.run(f.fill, out, 450 + rank, 1024);
    CL_OK(clFinish(f.queue));
    cl_command_queue sending = f.another_queue(), reading = f.another_queue();
    CL_OK(f.send(sending, out, CL_FALSE, 0, 4096, next, 19, MPI_COMM_WORLD, 0, nullptr, nullptr));
    cl_event received = nullptr;
    CL_OK(f.recv(f.queue, in, CL_TRUE, 0, 4096, previous, 19, MPI_COMM_WORLD, 0, nullptr, &received));
    CHECK(received != nullptr, "a blocking receive asked for its event gave none");
    std::vector<uint32_t> got(1024);
    if (received) {
      CL_OK(clEnqueueReadBuffer(reading, in, CL_TRUE, 0, 4096, got.data(), 1, &received, nullptr));
      CHECK(status_of(received) == CL_COMPLETE, "the receive's event ended as %d", status_of(received));
      clReleaseEvent(received);
    }
    expect_pattern(got, 450 + previous, 0, "a blocking receive's event, waited for on another queue");
    CL_OK(clFinish(sending));
    clReleaseCommandQueue(sending);
    clReleaseCommandQueue(reading);
    clReleaseMemObject(in);
    clReleaseMemObject(out);
  }

  // The paper's Listing 5: a host's MPI_Irecv becomes an event that a write to the device waits for,
  // and a kernel behind it.
  {
    const size_t n = 4096;
    std::vector<uint32_t> mine(n), got(n, 0);
    for (size_t i = 0; i < n; i++) mine[i] = word(i, 500 + rank);
    MPI_Request request, sent;
    MPI_Irecv(got.data(), int(n * 4), MPI_BYTE, previous, 13, MPI_COMM_WORLD, &request);
    cl_int err;
    cl_event arrived = f.event_from(f.context, &request, &err);
    CL_OK(err);
    CHECK(request == MPI_REQUEST_NULL, "the request was not taken over");
    cl_mem in = f.buffer(n);
    CL_OK(clEnqueueWriteBuffer(f.queue, in, CL_FALSE, 0, n * 4, got.data(), 1, &arrived, nullptr));
    f.run(f.add, in, 3, n);
    CHECK(status_of(arrived) > CL_COMPLETE, "the event completed before the message was sent (%d)", status_of(arrived));
    MPI_Barrier(MPI_COMM_WORLD);  // no rank sends before every rank has looked
    MPI_Isend(mine.data(), int(n * 4), MPI_BYTE, next, 13, MPI_COMM_WORLD, &sent);
    expect_pattern(f.read(in, n), 500 + previous, 3, "a write behind clCreateEventFromMPIRequest");
    CHECK(status_of(arrived) == CL_COMPLETE, "the request's event ended as %d", status_of(arrived));
    wait_request(f, &sent, multiple);
    clReleaseEvent(arrived);
  }

  // Halo exchange with clEnqueueSendrecvBuffer in one buffer: the first and last 'halo' words of a
  // rank's block are its neighbours' edges. Periodic (both neighbours), then open at the ends
  // (MPI_PROC_NULL), both large and small.
  for (size_t halo : {large / 3, size_t(64)}) {
    for (bool periodic : {true, false}) {
      const size_t n = 3 * halo;  // [left halo | own | right halo]
      cl_mem grid = f.buffer(n);
      f.run(f.fill, grid, 600 + rank, n);
      int up = periodic || rank + 1 < ranks ? next : MPI_PROC_NULL;
      int down = periodic || rank > 0 ? previous : MPI_PROC_NULL;
      cl_event first;
      // Own block's last part goes up, into the next rank's left halo; the left halo comes from below.
      CL_OK(f.sendrecv(f.queue, grid, grid, CL_FALSE, halo * 4, halo * 4, up, 14, 0, halo * 4, down, 14, MPI_COMM_WORLD,
                       0, nullptr, &first));
      // Own block's first part goes down, into the previous rank's right halo.
      CL_OK(f.sendrecv(f.queue, grid, grid, CL_TRUE, halo * 4, halo * 4, down, 15, 2 * halo * 4, halo * 4, up, 15,
                       MPI_COMM_WORLD, 1, &first, nullptr));
      std::vector<uint32_t> got = f.read(grid, n);
      size_t wrong = 0;
      for (size_t i = 0; i < n; i++) {
        size_t own = i % halo + halo;  // the sender's word that lands at i
        uint32_t want = i < halo ? (down == MPI_PROC_NULL ? word(i, 600 + rank) : word(own, 600 + down))
                        : i < 2 * halo ? word(i, 600 + rank)
                        : (up == MPI_PROC_NULL ? word(i, 600 + rank) : word(own, 600 + up));
        wrong += got[i] != want;
      }
      CHECK(wrong == 0, "halo exchange (%zu words, %s): %zu words wrong", halo, periodic ? "periodic" : "open", wrong);
      clReleaseEvent(first);
      clReleaseMemObject(grid);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);

  // A blocking small send behind a failed event: the send fails, and the receive fails rather than
  // wait for a message that will not come (an empty one comes). Each on a queue of its own.
  {
    cl_mem in = f.buffer(256), out = f.buffer(256);
    cl_int err;
    cl_event failed = clCreateUserEvent(f.context, &err), received;
    CL_OK(clSetUserEventStatus(failed, -1));
    cl_command_queue receiving = f.another_queue(), sending = f.another_queue();
    CL_OK(f.recv(receiving, in, CL_FALSE, 0, 1024, previous, 17, MPI_COMM_WORLD, 0, nullptr, &received));
    err = f.send(sending, out, CL_TRUE, 0, 1024, next, 17, MPI_COMM_WORLD, 1, &failed, nullptr);
    CHECK(err < 0, "a blocking send behind a failed event returned %d", err);
    clWaitForEvents(1, &received);
    CHECK(status_of(received) < 0, "its receive ended as %d", status_of(received));
    clReleaseEvent(received);
    clReleaseEvent(failed);
    clReleaseCommandQueue(receiving);
    clReleaseCommandQueue(sending);
    clReleaseMemObject(in);
    clReleaseMemObject(out);
  }

  // A message longer than the receive expects: MPI's truncation is the command's failure; from a
  // host (plain), and between devices (the envelope: both commands fail).
  {
    std::vector<uint32_t> host(2000, 1);
    cl_mem in = f.buffer(1000);
    MPI_Request request;
    MPI_Isend(host.data(), 8000, MPI_BYTE, next, 11, MPI_COMM_WORLD, &request);
    cl_int err = f.recv(f.queue, in, CL_TRUE, 0, 4000, previous, 11, MPI_COMM_WORLD, 0, nullptr, nullptr);
    CHECK(err == CL_INVALID_VALUE, "a truncating receive returned %d", err);
    wait_request(f, &request, multiple);

    // The receive on a queue of its own: behind the failed send on an in-order queue, it could fail
    // for that reason first.
    cl_command_queue receiving = f.another_queue();
    cl_mem big = f.buffer(large), smaller = f.buffer(large);
    cl_event sent, received;
    CL_OK(f.send(f.queue, big, CL_FALSE, 0, large * 4, next, 16, MPI_COMM_WORLD, 0, nullptr, &sent));
    CL_OK(f.recv(receiving, smaller, CL_FALSE, 0, large * 4 - 4096, previous, 16, MPI_COMM_WORLD, 0, nullptr, &received));
    clWaitForEvents(1, &received);
    clWaitForEvents(1, &sent);
    CHECK(status_of(received) == CL_INVALID_VALUE, "a truncating device receive ended as %d", status_of(received));
    // The sender learns of it where the receiver answered an envelope; a plain message has gone.
    const char *threshold = std::getenv("FEDCL_MPI_DIRECT_MIN");
    bool plain = threshold && std::string(threshold) == "off";
    CHECK(plain ? status_of(sent) == CL_COMPLETE : status_of(sent) < 0, "its device send ended as %d", status_of(sent));
    // A blocking receive below the threshold probes the message on its own thread: the envelope (or
    // the larger plain message) is answered as any receive answers it, and both commands end the same.
    cl_command_queue sending = f.another_queue(), receiving_here = f.another_queue();
    cl_mem few = f.buffer(256);
    CL_OK(f.send(sending, big, CL_FALSE, 0, large * 4, next, 18, MPI_COMM_WORLD, 0, nullptr, &sent));
    cl_int blocking_err = f.recv(receiving_here, few, CL_TRUE, 0, 1024, previous, 18, MPI_COMM_WORLD, 0, nullptr, nullptr);
    CHECK(blocking_err == CL_INVALID_VALUE, "a truncating blocking device receive returned %d", blocking_err);
    clWaitForEvents(1, &sent);
    CHECK(plain ? status_of(sent) == CL_COMPLETE : status_of(sent) < 0, "its device send ended as %d", status_of(sent));
    clReleaseCommandQueue(sending);
    clReleaseCommandQueue(receiving_here);
    // The queue goes on serving.
    cl_mem ok = f.buffer(64);
    f.run(f.fill, ok, 7, 64);
    expect_pattern(f.read(ok, 64), 7, 0, "a kernel after the failed receive");
    clReleaseCommandQueue(receiving);
  }

  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s: %d failure(s) on %d ranks\n", all ? "FAIL" : "PASS", all, ranks);
  MPI_Finalize();
  return all ? 1 : 0;
}
