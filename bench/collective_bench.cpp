// fedcl_collective_bench: fedcl's collective commands over every device of the fedcl platform (run
// it with scripts/with-fedcld.sh --daemons N, a daemon per "node"; bench/run_collectives.sh runs it
// beside host MPI's collectives, fedcl_collective_mpi_bench). Each collective over every device, its
// buffers on the devices:
//   collective.fedcl.<kind>.n<N>.<size> <median us> us <MiB/s> MiB/s
// size is each participant's buffer (a block-wise collective moves blocks of size / N). The
// all-reduce's result is checked against the host's once.
//
//   fedcl_collective_bench [--quick] [--max-mib M] [--only KIND,...]
#include <CL/cl_fedcl_transfer.h>

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
    platform = find_platform("fedcl", true, "run it with scripts/with-fedcld.sh --daemons N");
    cl_uint count = 0;
    check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count), "clGetDeviceIDs");
    devices.resize(count);
    check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, devices.data(), nullptr), "clGetDeviceIDs");
    if (count < 2) throw std::runtime_error("fedcl lists fewer than 2 devices: start 2 daemons or more");
    cl_int err;
    context = clCreateContext(nullptr, count, devices.data(), nullptr, nullptr, &err);
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

// The value at element i of participant p's buffers: a 128-byte pattern that clEnqueueFillBuffer
// lays down on the daemon itself, so that setting up moves no bulk bytes through the client (on a
// shaped link that would take longer than the collectives).
constexpr size_t kPatternInts = 32;
int32_t pattern_value(size_t p, size_t i) { return int32_t(p * 7 + i % kPatternInts); }

// Times one collective over every device: src and dst hold size bytes on each participant's daemon.
void run_kind(Fedcl &f, const std::string &kind, size_t size, const CollectiveOptions &o) {
  size_t n = f.devices.size(), block = size / n / 4 * 4, count = size / 4;
  std::vector<cl_mem> src(n), dst(n);
  int32_t pattern[kPatternInts];
  for (size_t p = 0; p < n; p++) {
    for (size_t i = 0; i < kPatternInts; i++) pattern[i] = pattern_value(p, i);
    cl_int err;
    src[p] = clCreateBuffer(f.context, CL_MEM_READ_WRITE, size, nullptr, &err);
    check(err, "clCreateBuffer");
    dst[p] = clCreateBuffer(f.context, CL_MEM_READ_WRITE, size, nullptr, &err);
    check(err, "clCreateBuffer");
    check(clEnqueueFillBuffer(f.queues[p], src[p], pattern, sizeof pattern, 0, size, 0, nullptr, nullptr), "fill");
    check(clEnqueueFillBuffer(f.queues[p], dst[p], pattern, sizeof pattern, 0, size, 0, nullptr, nullptr), "fill");
    check(clFinish(f.queues[p]), "clFinish (fill)");
  }
  std::vector<cl_event> events(n);
  const std::string &k = kind;
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
  for (int r = -1; r < collective_repetitions(size, o); r++) {
    double start = now_us();
    check(enqueue(), kind.c_str());
    check(clWaitForEvents(un, events.data()), "clWaitForEvents (collective)");
    if (r >= 0) times.push_back(now_us() - start);
    for (cl_event &event : events) clReleaseEvent(event);
    if (r == -1 && k == "all_reduce") {  // the result, once: every participant holds the sum
      std::vector<int32_t> got(count);
      for (size_t p = 0; p < n; p++) {
        check(clEnqueueReadBuffer(f.queues[p], dst[p], CL_TRUE, 0, size, got.data(), 0, nullptr, nullptr), "read");
        for (size_t i = 0; i < count; i++)
          if (got[i] != int32_t(7 * (n * (n - 1) / 2) + n * (i % kPatternInts)))
            throw std::runtime_error("all_reduce: wrong sum at participant " + std::to_string(p));
      }
    }
  }
  print_collective("fedcl", kind, int(n), size, median(times));
  for (size_t p = 0; p < n; p++) {
    clReleaseMemObject(src[p]);
    clReleaseMemObject(dst[p]);
  }
}


}  // namespace

int main(int argc, char **argv) {
  CollectiveOptions o;
  if (!parse_collective_options(argc, argv, &o)) {
    std::fprintf(stderr, "usage: fedcl_collective_bench [--quick] [--max-mib M] [--only KIND,...]\n");
    return 2;
  }
  try {
    Fedcl f;
    for (size_t size : collective_sizes(o))
      for (const std::string &kind : collective_kinds())
        if (collective_selected(o, kind)) run_kind(f, kind, size, o);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fedcl_collective_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
