// fedcl_collective_mpi_bench: what fedcl's collective commands stand against, each rank on a fedcl
// device of its own daemon (run it with tests/mpi/run_mpi.sh; bench/run_collectives.sh runs it beside
// fedcl_collective_bench):
//   collective.host.<kind>.n<N>.<size>    host MPI's collective between host buffers
//   collective.staged.<kind>.n<N>.<size>  broadcast and all-reduce by hand: a blocking read of the
//                                         device buffer, MPI, a blocking write back
// Each line gives the median of the repetitions of the slowest rank's time, in microseconds, and the
// size over it in MiB/s; size is each rank's buffer, as in fedcl_collective_bench.
//
//   mpirun -np N fedcl_collective_mpi_bench [--quick] [--max-mib M] [--only KIND,...]
#include <mpi.h>

#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_cl.h"
#include "bench_platform.h"
#include "bench_stats.h"
#include "collective_common.h"

using namespace bench;

namespace {

int rank = 0, ranks = 1;

// The slowest rank's time of each repetition; median over them.
void time_mpi(const char *impl, const char *kind, size_t size, const CollectiveOptions &o, const std::function<void()> &once) {
  if (!collective_selected(o, kind)) return;
  std::vector<double> times;
  for (int r = -1; r < collective_repetitions(size, o); r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = now_us();
    once();
    double mine = now_us() - start, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (r >= 0) times.push_back(slowest);
  }
  if (rank == 0) print_collective(impl, kind, ranks, size, median(times));
}

void run(const CollectiveOptions &o) {
  cl_platform_id platform = find_platform("fedcl", true, "run it with tests/mpi/run_mpi.sh");
  cl_device_id device;
  check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), "clGetDeviceIDs");
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  check(err, "clCreateContext");
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, nullptr, &err);
  check(err, "clCreateCommandQueueWithProperties");
  for (size_t size : collective_sizes(o)) {
    int count = int(size / 4), block = int(size / 4 / size_t(ranks));
    std::vector<int32_t> a(count, rank), b(count);
    time_mpi("host", "broadcast", size, o, [&] { MPI_Bcast(a.data(), count, MPI_INT, 0, MPI_COMM_WORLD); });
    time_mpi("host", "scatter", size, o,
             [&] { MPI_Scatter(a.data(), block, MPI_INT, b.data(), block, MPI_INT, 0, MPI_COMM_WORLD); });
    time_mpi("host", "gather", size, o,
             [&] { MPI_Gather(a.data(), block, MPI_INT, b.data(), block, MPI_INT, 0, MPI_COMM_WORLD); });
    time_mpi("host", "all_gather", size, o,
             [&] { MPI_Allgather(a.data(), block, MPI_INT, b.data(), block, MPI_INT, MPI_COMM_WORLD); });
    time_mpi("host", "reduce", size, o, [&] { MPI_Reduce(a.data(), b.data(), count, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD); });
    time_mpi("host", "all_reduce", size, o,
             [&] { MPI_Allreduce(a.data(), b.data(), count, MPI_INT, MPI_SUM, MPI_COMM_WORLD); });
    time_mpi("host", "all_to_all", size, o,
             [&] { MPI_Alltoall(a.data(), block, MPI_INT, b.data(), block, MPI_INT, MPI_COMM_WORLD); });
    cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, size, nullptr, &err);
    check(err, "clCreateBuffer");
    check(clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, size, a.data(), 0, nullptr, nullptr), "write");
    auto staged = [&](const std::function<void()> &mpi) {
      return [&, mpi] {
        check(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, size, a.data(), 0, nullptr, nullptr), "read");
        mpi();
        check(clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, size, a.data(), 0, nullptr, nullptr), "write");
        check(clFinish(queue), "clFinish");
      };
    };
    time_mpi("staged", "broadcast", size, o, staged([&] { MPI_Bcast(a.data(), count, MPI_INT, 0, MPI_COMM_WORLD); }));
    time_mpi("staged", "all_reduce", size, o,
             staged([&] { MPI_Allreduce(MPI_IN_PLACE, a.data(), count, MPI_INT, MPI_SUM, MPI_COMM_WORLD); }));
    clReleaseMemObject(buffer);
  }
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  CollectiveOptions o;
  if (!parse_collective_options(argc, argv, &o)) {
    if (rank == 0) std::fprintf(stderr, "usage: mpirun -np N fedcl_collective_mpi_bench [--quick] [--max-mib M] [--only KIND,...]\n");
    MPI_Finalize();
    return 2;
  }
  int status = 0;
  try {
    run(o);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fedcl_collective_mpi_bench (rank %d): %s\n", rank, e.what());
    status = 1;
  }
  int worst = 0;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
