#include "federation_migrate.h"

#include <stdexcept>
#include <string>

#include "bench_cl.h"
#include "bench_stats.h"
#include "federation_kernels.h"

namespace bench {

namespace {

// Repetitions per size: about 1 GiB moved per size, at least 3 and at most 20 (a quarter, at least
// 2, with --quick), after one warm-up.
int repetitions(size_t bytes, const FederationPlan &plan) {
  size_t full = (size_t(1) << 30) / bytes;
  int reps = int(full < 3 ? 3 : full > 20 ? 20 : full);
  return plan.quick ? std::max(2, reps / 4) : reps;
}

class Migration {
 public:
  Migration(Federation &fed, size_t bytes)
      : fed_(fed), a_(fed.nodes.at(0)), b_(fed.nodes.at(1)), n_(cl_uint(bytes / sizeof(cl_uint))),
        buffer_(fed.buffer(bytes)), stats_(fed.buffer(2 * sizeof(cl_uint))), fill_(fed.kernel(kFillKernel)),
        check_(fed.kernel(kCheckKernel)) {
    cl_mem buffer = buffer_, stats = stats_;
    set(fill_, 0, sizeof buffer, &buffer);
    set(fill_, 1, sizeof n_, &n_);
    set(check_, 0, sizeof buffer, &buffer);
    set(check_, 1, sizeof n_, &n_);
    set(check_, 3, sizeof stats, &stats);
    reset_stats();
  }

  // Node 0 writes the pattern of seed and has finished.
  void write_on_a(cl_uint seed) {
    set(fill_, 2, sizeof seed, &seed);
    launch(a_.queue, fill_);
    check(clFinish(a_.queue), "clFinish (node 0)");
  }

  // Moves the buffer to node 1 ahead of use (clEnqueueMigrateMemObjects) and waits for it there;
  // returns microseconds. The copy alone is timed: a kernel reading the buffer would add its own
  // time, more than the copy's on one core for large buffers.
  double migrate_to_b() {
    cl_mem buffer = buffer_;
    double start = now_us();
    check(clEnqueueMigrateMemObjects(b_.queue, 1, &buffer, 0, 0, nullptr, nullptr), "clEnqueueMigrateMemObjects");
    check(clFinish(b_.queue), "clFinish (node 1)");
    return now_us() - start;
  }

  // A kernel on node 1 compares the whole buffer with what node 0 wrote (untimed).
  void check_on_b(cl_uint seed) {
    set(check_, 2, sizeof seed, &seed);
    launch(b_.queue, check_);
    check(clFinish(b_.queue), "clFinish (node 1)");
  }

  // The reads since the last call saw reads * n uints, all as written.
  void verify(int reads, cl_uint seed) {
    cl_uint stats[2];
    check(clEnqueueReadBuffer(b_.queue, stats_, CL_TRUE, 0, sizeof stats, stats, 0, nullptr, nullptr),
          "clEnqueueReadBuffer (check counts)");
    if (stats[0] != 0)
      throw std::runtime_error("migration: " + std::to_string(stats[0]) + " uints on node 1 differ from node 0's (seed " +
                               std::to_string(seed) + ")");
    if (stats[1] != cl_uint(uint64_t(reads) * n_))
      throw std::runtime_error("migration: the check kernel looked at " + std::to_string(stats[1]) + " uints, not " +
                               std::to_string(uint64_t(reads) * n_));
    reset_stats();
  }

 private:
  static void set(cl_kernel kernel, cl_uint index, size_t size, const void *value) {
    check(clSetKernelArg(kernel, index, size, value), "clSetKernelArg");
  }

  void launch(cl_command_queue queue, cl_kernel kernel) {
    size_t global = pattern_global_size(n_);
    check(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel");
  }

  void reset_stats() {
    const cl_uint zero[2] = {0, 0};
    check(clEnqueueWriteBuffer(b_.queue, stats_, CL_TRUE, 0, sizeof zero, zero, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer (check counts)");
  }

  Federation &fed_;
  const Node &a_, &b_;
  cl_uint n_;
  OwnedMem buffer_, stats_;
  OwnedKernel fill_, check_;
};

}  // namespace

Measures measure_migration(Federation &fed, const FederationPlan &plan) {
  if (fed.nodes.size() < 2) throw std::runtime_error("migration needs two nodes");
  Measures out;
  for (size_t bytes = size_t(1) << 20; bytes <= plan.max_migration; bytes *= 4) {
    Migration migration(fed, bytes);
    const int reps = repetitions(bytes, plan);
    std::vector<double> moved;
    for (int r = -1; r < reps; r++) {  // r = -1: warm-up (first creation of the buffer on node 1)
      cl_uint seed = cl_uint(bytes >> 20) * 1000 + cl_uint(r + 2);
      migration.write_on_a(seed);
      double time = migration.migrate_to_b();  // the buffer is stale on node 1: it moves
      migration.check_on_b(seed);
      migration.verify(1, seed);
      if (r >= 0) moved.push_back(time);
    }
    const std::string name = "migrate." + byte_label(bytes);
    double time_us = median(moved);
    out.push_back({name + ".time", "ms", time_us / 1000});
    out.push_back({name, "MiB/s", bytes / double(1 << 20) / (time_us * 1e-6)});
  }
  return out;
}

}  // namespace bench
