// fedcl_mpi_bench: device-to-device MPI messages between two ranks, each on a fedcl device of its
// own daemon (run it with bench/run_mpi.sh), in one run:
//   mpi.host.<size>     raw MPI between host buffers (MPI_Send / MPI_Recv)
//   mpi.staged.<size>   by hand: a blocking clEnqueueReadBuffer, MPI_Send / MPI_Recv, a blocking
//                       clEnqueueWriteBuffer
//   mpi.staged_complete.<size>  the same, the receiving rank waiting for its write to complete
//                       (clFinish): its bytes are in the buffer when it returns
//   mpi.command.<size>  clEnqueueSendBuffer / clEnqueueRecvBuffer, blocking
//   mpi.command_nonblocking.<size>  the same commands non-blocking, each followed by clWaitForEvents
//                       on its event (the path of a program that overlaps them with other work)
// Each is a ping-pong between the ranks; a message's time is half a round trip (median of the
// repetitions, the paths taking turns), printed as microseconds and MiB/s. Every message the
// commands deliver is checked.
//
//   mpirun -np 2 fedcl_mpi_bench [--quick] [--max-mib N]
#include <CL/cl_fedcl_mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_cl.h"
#include "bench_stats.h"

using namespace bench;

namespace {

int rank = 0;

// fedcl's platform and the MPI commands.
struct Device {
  std::unique_ptr<Side> side = open_side("fedcl", "fedcl", true);
  cl_command_queue queue = side->queue;
  cl_context context = side->context;
  clEnqueueSendBuffer_fn send = reinterpret_cast<clEnqueueSendBuffer_fn>(
      clGetExtensionFunctionAddressForPlatform(side->platform, "clEnqueueSendBuffer"));
  clEnqueueRecvBuffer_fn recv = reinterpret_cast<clEnqueueRecvBuffer_fn>(
      clGetExtensionFunctionAddressForPlatform(side->platform, "clEnqueueRecvBuffer"));
};

using Hop = void (*)(Device &, cl_mem, std::vector<uint8_t> &, size_t, bool sending);

void host_hop(Device &, cl_mem, std::vector<uint8_t> &host, size_t size, bool sending) {
  if (sending) MPI_Send(host.data(), int(size), MPI_BYTE, 1 - rank, 0, MPI_COMM_WORLD);
  else MPI_Recv(host.data(), int(size), MPI_BYTE, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

void staged_hop(Device &d, cl_mem buffer, std::vector<uint8_t> &host, size_t size, bool sending) {
  if (sending) {
    check(clEnqueueReadBuffer(d.queue, buffer, CL_TRUE, 0, size, host.data(), 0, nullptr, nullptr), "read");
    MPI_Send(host.data(), int(size), MPI_BYTE, 1 - rank, 0, MPI_COMM_WORLD);
  } else {
    MPI_Recv(host.data(), int(size), MPI_BYTE, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    check(clEnqueueWriteBuffer(d.queue, buffer, CL_TRUE, 0, size, host.data(), 0, nullptr, nullptr), "write");
  }
}

void staged_complete_hop(Device &d, cl_mem buffer, std::vector<uint8_t> &host, size_t size, bool sending) {
  staged_hop(d, buffer, host, size, sending);
  if (!sending) check(clFinish(d.queue), "finish");
}

void command_hop(Device &d, cl_mem buffer, std::vector<uint8_t> &, size_t size, bool sending) {
  if (sending) check(d.send(d.queue, buffer, CL_TRUE, 0, size, 1 - rank, 0, MPI_COMM_WORLD, 0, nullptr, nullptr), "send");
  else check(d.recv(d.queue, buffer, CL_TRUE, 0, size, 1 - rank, 0, MPI_COMM_WORLD, 0, nullptr, nullptr), "recv");
}

void command_nonblocking_hop(Device &d, cl_mem buffer, std::vector<uint8_t> &, size_t size, bool sending) {
  cl_event done = nullptr;
  if (sending) check(d.send(d.queue, buffer, CL_FALSE, 0, size, 1 - rank, 0, MPI_COMM_WORLD, 0, nullptr, &done), "send");
  else check(d.recv(d.queue, buffer, CL_FALSE, 0, size, 1 - rank, 0, MPI_COMM_WORLD, 0, nullptr, &done), "recv");
  check(clWaitForEvents(1, &done), "wait");
  clReleaseEvent(done);
}

// Adds `reps` one-way times (half a ping-pong's round trip), in microseconds, to samples.
void sample_one_way(Device &d, Hop hop, cl_mem buffer, std::vector<uint8_t> &host, size_t size, int reps,
                    std::vector<double> *samples) {
  for (int r = 0; r < reps + 1; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = now_us();
    hop(d, buffer, host, size, rank == 0);
    hop(d, buffer, host, size, rank != 0);
    if (r > 0) samples->push_back((now_us() - start) / 2);  // the first one warms up
  }
}

// The bytes rank 0 fills in and the pong brings back: checks that the commands moved them.
bool round_trip_intact(Device &d, cl_mem buffer, size_t size) {
  std::vector<uint32_t> words(size / 4), back(size / 4);
  for (size_t i = 0; i < words.size(); i++) words[i] = uint32_t(i * 2654435761u + size);
  if (rank == 0) check(clEnqueueWriteBuffer(d.queue, buffer, CL_TRUE, 0, size / 4 * 4, words.data(), 0, nullptr, nullptr), "write");
  std::vector<uint8_t> unused;
  command_hop(d, buffer, unused, size, rank == 0);
  command_hop(d, buffer, unused, size, rank != 0);
  if (rank != 0) return true;
  check(clEnqueueReadBuffer(d.queue, buffer, CL_TRUE, 0, size / 4 * 4, back.data(), 0, nullptr, nullptr), "read");
  return words == back;
}

}  // namespace

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int ranks;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  bool quick = false;
  size_t max_bytes = size_t(256) << 20;
  for (int i = 1; i < argc; i++) {
    if (std::string(argv[i]) == "--quick") quick = true, max_bytes = size_t(16) << 20;
    else if (std::string(argv[i]) == "--max-mib" && i + 1 < argc) max_bytes = size_t(std::stoul(argv[++i])) << 20;
  }
  if (ranks != 2) {
    if (rank == 0) std::fprintf(stderr, "fedcl_mpi_bench runs on two ranks\n");
    MPI_Finalize();
    return 2;
  }
  int status = 0;
  try {
    Device d;
    if (!d.send || !d.recv) throw std::runtime_error("no MPI commands on the fedcl platform");
    cl_int err;
    cl_mem buffer = clCreateBuffer(d.context, CL_MEM_READ_WRITE, max_bytes, nullptr, &err);
    check(err, "clCreateBuffer");
    std::vector<uint8_t> host(max_bytes);
    if (rank == 0) std::printf("load.before %.2f\n", load_average());
    // 64 B to the largest by fours, and the sizes the targets name: 8 B and 128 MiB.
    std::vector<size_t> sizes{8};
    for (size_t size = 64; size <= max_bytes; size *= 4) sizes.push_back(size);
    if ((size_t(128) << 20) <= max_bytes) sizes.push_back(size_t(128) << 20);
    std::sort(sizes.begin(), sizes.end());
    for (size_t size : sizes) {
      int reps = size <= (1 << 20) ? (quick ? 10 : 50) : size <= (16 << 20) ? (quick ? 3 : 10) : 5;
      if (!round_trip_intact(d, buffer, size)) throw std::runtime_error("the commands delivered wrong bytes at " + byte_label(size));
      struct Path {
        const char *name;
        Hop hop;
      } paths[] = {{"host", host_hop},
                   {"staged", staged_hop},
                   {"staged_complete", staged_complete_hop},
                   {"command", command_hop},
                   {"command_nonblocking", command_nonblocking_hop}};
      // The paths take turns, a few ping-pongs each, so that a noisy moment of a shared machine falls
      // on all of them rather than on whichever ran then.
      constexpr int kTurns = 5;
      constexpr size_t kPaths = sizeof paths / sizeof paths[0];
      std::vector<double> samples[kPaths];
      for (int turn = 0; turn < kTurns; turn++)
        for (size_t p = 0; p < kPaths; p++)
          sample_one_way(d, paths[p].hop, buffer, host, size, (reps + kTurns - 1) / kTurns, &samples[p]);
      for (size_t p = 0; p < kPaths; p++) {
        double us = median(samples[p]);
        if (rank == 0)
          std::printf("mpi.%s.%s %.1f us %.1f MiB/s\n", paths[p].name, byte_label(size).c_str(), us,
                      double(size) / (1 << 20) / (us * 1e-6));
      }
      std::fflush(stdout);
    }
    if (rank == 0) std::printf("load.after %.2f\n", load_average());
    clReleaseMemObject(buffer);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    status = 1;
  }
  MPI_Finalize();
  return status;
}
