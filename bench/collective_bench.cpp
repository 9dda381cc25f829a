// fedcl_collective_bench: fedcl's collective commands against host MPI's collectives, each rank
// on a fedcld of its own (run it with bench/run_collectives.sh, under tests/mpi/run_mpi.sh):
//   --fedcl  rank 0 alone opens fedcl over every rank's daemon (FEDCL_RANK_HOSTS) and times each
//            collective over all of them, its buffers on the devices:
//              collective.fedcl.<kind>.n<N>.<size>
//   --mpi    every rank on its own daemon, in the same job layout:
//              collective.host.<kind>.n<N>.<size>    MPI's collective between host buffers
//              collective.staged.<kind>.n<N>.<size>  broadcast and all-reduce by hand: a blocking read
//                                                    of the device buffer, MPI, a blocking write back
// size is each participant's buffer (a block-wise collective moves blocks of size / N). Each line
// gives the median time of the repetitions (the slowest rank's, for MPI) in microseconds and the
// size over it in MiB/s. The fedcl results are checked against the host's computation once.
//
//   mpirun -np N fedcl_collective_bench --fedcl|--mpi [--quick] [--max-mib M]
#include <CL/cl_fedcl_transfer.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_cl.h"
#include "bench_platform.h"
#include "bench_stats.h"

using namespace bench;

namespace {

int rank = 0, ranks = 1;

const char *const kKinds[] = {"broadcast", "scatter", "gather", "all_gather", "reduce", "all_reduce", "all_to_all"};

struct Options {
  bool fedcl = false, quick = false;
  size_t max_mib = 256;
};

std::vector<size_t> sizes(const Options &o) {
  std::vector<size_t> out{4 << 10, 1 << 20};
  size_t large = (o.quick ? 64 : 256) << 20;
  if (large > (o.max_mib << 20)) large = o.max_mib << 20;
  if (large > out.back()) out.push_back(large);
  return out;
}

int repetitions(size_t size, const Options &o) {
  int reps = size <= (64 << 10) ? 50 : size <= (8 << 20) ? 20 : 3;
  return o.quick ? std::max(2, reps / 5) : reps;
}

std::string size_label(size_t size) {
  return size >= (1 << 20) ? std::to_string(size >> 20) + "MiB" : std::to_string(size >> 10) + "KiB";
}

void print(const char *impl, const char *kind, size_t size, double us) {
  std::printf("collective.%s.%s.n%d.%s %.1f us %.1f MiB/s\n", impl, kind, ranks, size_label(size).c_str(), us,
              double(size) / (1 << 20) / (us / 1e6));
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------------------------
// fedcl

struct Fedcl {
  cl_platform_id platform;
  std::vector<cl_device_id> devices;
  cl_context context;
  std::vector<cl_command_queue> queues;
  clEnqueueBroadcastBuffer_fn broadcast;
  clEnqueueScatterBuffer_fn scatter;
  clEnqueueGatherBuffer_fn gather;
  clEnqueueAllGatherBuffer_fn all_gather;
  clEnqueueReduceBuffer_fn reduce;
  clEnqueueAllReduceBuffer_fn all_reduce;
  clEnqueueAlltoAllBuffer_fn all_to_all;

  template <typename F>
  F function(const char *name) {
    auto f = reinterpret_cast<F>(clGetExtensionFunctionAddressForPlatform(platform, name));
    if (!f) throw std::runtime_error(std::string("fedcl has no ") + name);
    return f;
  }

  Fedcl() {
    platform = find_platform("fedcl", true, "run under bench/run_collectives.sh");
    cl_uint count = 0;
    check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count), "clGetDeviceIDs");
    devices.resize(count);
    check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, devices.data(), nullptr), "clGetDeviceIDs");
    if (count < cl_uint(ranks)) throw std::runtime_error("fedcl lists fewer devices than there are daemons");
    devices.resize(ranks);  // one per daemon, in FEDCL_HOSTS order
    cl_int err;
    context = clCreateContext(nullptr, cl_uint(ranks), devices.data(), nullptr, nullptr, &err);
    check(err, "clCreateContext");
    for (cl_device_id device : devices) {
      queues.push_back(clCreateCommandQueueWithProperties(context, device, nullptr, &err));
      check(err, "clCreateCommandQueueWithProperties");
    }
    broadcast = function<clEnqueueBroadcastBuffer_fn>("clEnqueueBroadcastBuffer");
    scatter = function<clEnqueueScatterBuffer_fn>("clEnqueueScatterBuffer");
    gather = function<clEnqueueGatherBuffer_fn>("clEnqueueGatherBuffer");
    all_gather = function<clEnqueueAllGatherBuffer_fn>("clEnqueueAllGatherBuffer");
    reduce = function<clEnqueueReduceBuffer_fn>("clEnqueueReduceBuffer");
    all_reduce = function<clEnqueueAllReduceBuffer_fn>("clEnqueueAllReduceBuffer");
    all_to_all = function<clEnqueueAlltoAllBuffer_fn>("clEnqueueAlltoAllBuffer");
  }
};

// Times one collective over every device: src and dst hold size bytes on each participant's daemon.
void run_fedcl_kind(Fedcl &f, const char *kind, size_t size, const Options &o) {
  size_t n = size_t(ranks), block = size / n / 4 * 4, count = size / 4;
  std::vector<cl_mem> src(n), dst(n);
  std::vector<int32_t> values(count);
  for (size_t p = 0; p < n; p++) {
    for (size_t i = 0; i < count; i++) values[i] = int32_t(p * 7 + i % 1000);
    cl_int err;
    src[p] = clCreateBuffer(f.context, CL_MEM_READ_WRITE, size, nullptr, &err);
    check(err, "clCreateBuffer");
    dst[p] = clCreateBuffer(f.context, CL_MEM_READ_WRITE, size, nullptr, &err);
    check(err, "clCreateBuffer");
    check(clEnqueueWriteBuffer(f.queues[p], src[p], CL_TRUE, 0, size, values.data(), 0, nullptr, nullptr), "write");
    check(clEnqueueWriteBuffer(f.queues[p], dst[p], CL_TRUE, 0, size, values.data(), 0, nullptr, nullptr), "write");
  }
  std::vector<cl_event> events(n);
  std::string k = kind;
  std::function<cl_int()> enqueue;
  cl_command_queue *q = f.queues.data();
  cl_uint un = cl_uint(n), root = 0;
  if (k == "broadcast") enqueue = [&] { return f.broadcast(un, q, root, dst.data(), nullptr, size, 0, nullptr, events.data()); };
  if (k == "scatter") enqueue = [&] { return f.scatter(un, q, root, src[0], 0, dst.data(), nullptr, block, 0, nullptr, events.data()); };
  if (k == "gather") enqueue = [&] { return f.gather(un, q, root, src.data(), nullptr, dst[0], 0, block, 0, nullptr, events.data()); };
  if (k == "all_gather") enqueue = [&] { return f.all_gather(un, q, src.data(), nullptr, dst.data(), nullptr, block, 0, nullptr, events.data()); };
  if (k == "reduce")
    enqueue = [&] { return f.reduce(un, q, root, src.data(), nullptr, dst[0], 0, size, CL_FEDCL_REDUCE_SUM, CL_FEDCL_INT32, 0, nullptr, events.data()); };
  if (k == "all_reduce")
    enqueue = [&] { return f.all_reduce(un, q, src.data(), nullptr, dst.data(), nullptr, size, CL_FEDCL_REDUCE_SUM, CL_FEDCL_INT32, 0, nullptr, events.data()); };
  if (k == "all_to_all") enqueue = [&] { return f.all_to_all(un, q, src.data(), nullptr, dst.data(), nullptr, block, 0, nullptr, events.data()); };

  std::vector<double> times;
  for (int r = -1; r < repetitions(size, o); r++) {
    double start = now_us();
    check(enqueue(), kind);
    check(clWaitForEvents(un, events.data()), "clWaitForEvents (collective)");
    if (r >= 0) times.push_back(now_us() - start);
    for (cl_event &event : events) clReleaseEvent(event);
    if (r == -1 && k == "all_reduce") {  // the result, once: every participant holds the sum
      std::vector<int32_t> got(count);
      for (size_t p = 0; p < n; p++) {
        check(clEnqueueReadBuffer(f.queues[p], dst[p], CL_TRUE, 0, size, got.data(), 0, nullptr, nullptr), "read");
        for (size_t i = 0; i < count; i++)
          if (got[i] != int32_t(7 * (n * (n - 1) / 2) + n * (i % 1000)))
            throw std::runtime_error("all_reduce: wrong sum at participant " + std::to_string(p));
      }
    }
  }
  print("fedcl", kind, size, median(times));
  for (size_t p = 0; p < n; p++) {
    clReleaseMemObject(src[p]);
    clReleaseMemObject(dst[p]);
  }
}

void run_fedcl(const Options &o) {
  if (rank != 0) return;
  Fedcl f;
  for (size_t size : sizes(o))
    for (const char *kind : kKinds) run_fedcl_kind(f, kind, size, o);
}

// ---------------------------------------------------------------------------------------------
// host MPI, and staging by hand

// The slowest rank's time of each repetition; median over them.
void time_mpi(const char *impl, const char *kind, size_t size, const Options &o, const std::function<void()> &once) {
  std::vector<double> times;
  for (int r = -1; r < repetitions(size, o); r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = now_us();
    once();
    double mine = now_us() - start, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (r >= 0) times.push_back(slowest);
  }
  if (rank == 0) print(impl, kind, size, median(times));
}

void run_mpi(const Options &o) {
  cl_platform_id platform = find_platform("fedcl", true, "run under bench/run_collectives.sh");
  cl_device_id device;
  check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), "clGetDeviceIDs");
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  check(err, "clCreateContext");
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, nullptr, &err);
  check(err, "clCreateCommandQueueWithProperties");
  for (size_t size : sizes(o)) {
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
  // Rank 0 of a --fedcl job talks to every daemon of the job, in rank order (tests/mpi/run_mpi.sh
  // gives each rank its own). Set before MPI_Init: Open MPI's hwloc lists OpenCL devices there, and
  // fedcl connects once.
  const char *rank_text = std::getenv("OMPI_COMM_WORLD_RANK"), *all = std::getenv("FEDCL_RANK_HOSTS");
  bool fedcl_mode = false;
  for (int i = 1; i < argc; i++) fedcl_mode |= std::strcmp(argv[i], "--fedcl") == 0;
  if (fedcl_mode && all && rank_text && std::strcmp(rank_text, "0") == 0) setenv("FEDCL_HOSTS", all, 1);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  Options o;
  bool mode = false;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    if (arg == "--fedcl" || arg == "--mpi") {
      o.fedcl = arg == "--fedcl";
      mode = true;
    } else if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--max-mib" && i + 1 < argc) {
      o.max_mib = std::strtoul(argv[++i], nullptr, 10);
    } else {
      mode = false;
      break;
    }
  }
  if (!mode) {
    if (rank == 0) std::fprintf(stderr, "usage: mpirun -np N fedcl_collective_bench --fedcl|--mpi [--quick] [--max-mib M]\n");
    MPI_Finalize();
    return 2;
  }
  int status = 0;
  try {
    if (o.fedcl) run_fedcl(o);
    else run_mpi(o);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fedcl_collective_bench (rank %d): %s\n", rank, e.what());
    status = 1;
  }
  int worst = 0;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
