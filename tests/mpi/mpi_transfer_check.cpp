// The MPI commands (include/CL/cl_fedcl_mpi.h) in a real MPI job: every rank on a fedcld of its own
// (tests/mpi/run_mpi.sh starts them and gives each rank its FEDCL_HOSTS), checked word for word.
// Prints what failed and exits 1; run as `mpirun -np 2` or `-np 3`.
#include <CL/cl_fedcl_mpi.h>

#include <chrono>
#include <cstdio>
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
    CHECK(send && recv, "the MPI commands are not reachable");
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
  CHECK(wrong == 0, "%s: %zu of %zu words wrong, first at %zu", what, wrong, got.size(), first);
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  CHECK(provided == MPI_THREAD_MULTIPLE, "MPI gives thread level %d", provided);
  Fedcl f;
  const size_t n = (12 << 20) / 4 + 3;
  const int next = (rank + 1) % ranks, previous = (rank + ranks - 1) % ranks;

  // Device to device around the ring, non-blocking, ordered by the queue: each rank fills a buffer
  // with a kernel, sends it on, receives its neighbour's, adds to it with a kernel and checks.
  {
    cl_mem out = f.buffer(n), in = f.buffer(n);
    f.run(f.fill, out, 100 + rank, n);
    cl_event sent, received;
    CL_OK(f.send(f.queue, out, CL_FALSE, 0, n * 4, next, 7, MPI_COMM_WORLD, 0, nullptr, &sent));
    CL_OK(f.recv(f.queue, in, CL_FALSE, 0, n * 4, previous, 7, MPI_COMM_WORLD, 0, nullptr, &received));
    f.run(f.add, in, 5, n);
    expect_pattern(f.read(in, n), 100 + previous, 5, "device to device");
    CL_OK(clWaitForEvents(1, &sent));
    cl_int status = 1;
    clGetEventInfo(received, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    CHECK(status == CL_COMPLETE, "the receive's event ended as %d", status);
    clReleaseEvent(sent);
    clReleaseEvent(received);
  }

  // A host's MPI_Send into a device receive, and a device send into a host's MPI_Recv.
  {
    std::vector<uint32_t> host(n);
    for (size_t i = 0; i < n; i++) host[i] = word(i, 200 + rank);
    cl_mem in = f.buffer(n), out = f.buffer(n);
    MPI_Request request;
    MPI_Isend(host.data(), int(n * 4), MPI_BYTE, next, 8, MPI_COMM_WORLD, &request);
    CL_OK(f.recv(f.queue, in, CL_TRUE, 0, n * 4, previous, 8, MPI_COMM_WORLD, 0, nullptr, nullptr));
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    expect_pattern(f.read(in, n), 200 + previous, 0, "host MPI_Send to device");

    f.run(f.fill, out, 300 + rank, n);
    std::vector<uint32_t> got(n);
    MPI_Irecv(got.data(), int(n * 4), MPI_BYTE, previous, 9, MPI_COMM_WORLD, &request);
    CL_OK(f.send(f.queue, out, CL_TRUE, 0, n * 4, next, 9, MPI_COMM_WORLD, 0, nullptr, nullptr));
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    expect_pattern(got, 300 + previous, 0, "device to host MPI_Recv");
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
    cl_device_id device;
    clGetCommandQueueInfo(f.queue, CL_QUEUE_DEVICE, sizeof device, &device, nullptr);
    cl_command_queue other = clCreateCommandQueueWithProperties(f.context, device, nullptr, &err);
    CL_OK(f.send(other, out, CL_TRUE, 0, 4096, next, 10, MPI_COMM_WORLD, 0, nullptr, nullptr));
    clReleaseCommandQueue(other);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cl_int status = 0;
    clGetEventInfo(received, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    CHECK(status > CL_COMPLETE, "the receive completed before its wait list (%d)", status);
    CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
    CL_OK(clWaitForEvents(1, &received));
    expect_pattern(f.read(in, 1024), 400 + previous, 0, "a receive behind a user event");
  }
  // Wait: the sends above are blocking, but a rank's send may still wait for the next rank's
  // receive; the barrier keeps the tests apart.
  MPI_Barrier(MPI_COMM_WORLD);

  // A message longer than the receive expects: MPI's truncation is the command's failure.
  {
    std::vector<uint32_t> host(2000, 1);
    cl_mem in = f.buffer(1000);
    MPI_Request request;
    MPI_Isend(host.data(), 8000, MPI_BYTE, next, 11, MPI_COMM_WORLD, &request);
    cl_int err = f.recv(f.queue, in, CL_TRUE, 0, 4000, previous, 11, MPI_COMM_WORLD, 0, nullptr, nullptr);
    CHECK(err == CL_INVALID_VALUE, "a truncating receive returned %d", err);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    // The queue goes on serving.
    cl_mem ok = f.buffer(64);
    f.run(f.fill, ok, 7, 64);
    expect_pattern(f.read(ok, 64), 7, 0, "a kernel after the failed receive");
  }

  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s: %d failure(s) on %d ranks\n", all ? "FAIL" : "PASS", all, ranks);
  MPI_Finalize();
  return all ? 1 : 0;
}
