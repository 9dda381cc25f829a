#include "federation_event.h"

#include <stdexcept>
#include <string>

#include "bench_cl.h"
#include "bench_stats.h"
#include "federation_kernels.h"

namespace bench {

namespace {

const size_t kOne = 1;

// The counter kernel bound to a counter of its own, so that no buffer ever needs to migrate.
struct Counter {
  OwnedMem counter;
  OwnedKernel kernel;
  cl_command_queue queue;

  Counter(const Federation &fed, cl_command_queue queue)
      : counter(fed.buffer(sizeof(cl_uint))), kernel(fed.kernel(kBumpKernel)), queue(queue) {
    cl_mem mem = counter;
    check(clSetKernelArg(kernel, 0, sizeof mem, &mem), "clSetKernelArg");
    const cl_uint zero = 0;
    check(clEnqueueWriteBuffer(queue, counter, CL_TRUE, 0, sizeof zero, &zero, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer");
  }

  void launch(cl_uint waits, const cl_event *wait, cl_event *event) {
    check(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &kOne, &kOne, waits, wait, event),
          "clEnqueueNDRangeKernel");
  }

  void expect(cl_uint runs, const char *what) {
    cl_uint value = 0;
    check(clEnqueueReadBuffer(queue, counter, CL_TRUE, 0, sizeof value, &value, 0, nullptr, nullptr),
          "clEnqueueReadBuffer");
    if (value != runs)
      throw std::runtime_error(std::string("events: ") + what + " ran " + std::to_string(value) + " times, not " +
                               std::to_string(runs));
  }
};

// A context of node's device alone, with its queue and the counter kernel built there: the launch
// of a program that never spans daemons, beside the federation's.
struct AloneContext {
  cl_context context;
  cl_command_queue queue;
  cl_program program;

  explicit AloneContext(const Node &node) {
    cl_int err;
    context = clCreateContext(nullptr, 1, &node.device, nullptr, nullptr, &err);
    check(err, "clCreateContext (node 0 alone)");
    queue = clCreateCommandQueueWithProperties(context, node.device, nullptr, &err);
    check(err, "clCreateCommandQueueWithProperties");
    const char *source = kFederationKernelSource;
    program = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
    check(err, "clCreateProgramWithSource");
    check(clBuildProgram(program, 1, &node.device, "", nullptr, nullptr), "clBuildProgram (node 0 alone)");
  }
  AloneContext(const AloneContext &) = delete;
  ~AloneContext() {
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }
};

// One launch of kernel on queue without an event, then clFinish.
double launch_finish(cl_command_queue queue, cl_kernel kernel) {
  double start = now_us();
  check(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &kOne, &kOne, 0, nullptr, nullptr), "clEnqueueNDRangeKernel");
  check(clFinish(queue), "clFinish");
  return now_us() - start;
}

// first, then second waiting for first's event, then clFinish on second's queue. flushed: with a
// clFlush of first's queue before second waits (the specification's condition for waiting on an
// event of another queue; programs often leave it out, and the drivers start first anyway).
double chain(Counter &first, Counter &second, bool flushed) {
  cl_event done;
  double start = now_us();
  first.launch(0, nullptr, &done);
  if (flushed) check(clFlush(first.queue), "clFlush");
  second.launch(1, &done, nullptr);
  check(clFinish(second.queue), "clFinish");
  double elapsed = now_us() - start;
  check(clReleaseEvent(done), "clReleaseEvent");
  return elapsed;
}

// A chain that shares a buffer, as real programs' chains do: the writer's node fills `bytes` of it
// (fed_fill, a new seed each time), the checker's node checks every word (fed_check) behind the
// writer's event, then clFinish on the checker's queue. Across nodes the bytes move every time.
struct SharedChain {
  size_t words;
  OwnedMem shared, stats;
  OwnedKernel fill, check;
  cl_command_queue writer, checker;
  cl_uint seed = 0, runs = 0;

  SharedChain(const Federation &fed, size_t bytes, cl_command_queue writer, cl_command_queue checker)
      : words(bytes / sizeof(cl_uint)), shared(fed.buffer(bytes)), stats(fed.buffer(2 * sizeof(cl_uint))),
        fill(fed.kernel(kFillKernel)), check(fed.kernel(kCheckKernel)), writer(writer), checker(checker) {
    cl_uint n = cl_uint(words), zeros[2] = {0, 0};
    cl_mem mem = shared, counts = stats;
    bench::check(clSetKernelArg(fill, 0, sizeof mem, &mem), "clSetKernelArg");
    bench::check(clSetKernelArg(fill, 1, sizeof n, &n), "clSetKernelArg");
    bench::check(clSetKernelArg(check, 0, sizeof mem, &mem), "clSetKernelArg");
    bench::check(clSetKernelArg(check, 1, sizeof n, &n), "clSetKernelArg");
    bench::check(clSetKernelArg(check, 3, sizeof counts, &counts), "clSetKernelArg");
    bench::check(clEnqueueWriteBuffer(checker, stats, CL_TRUE, 0, sizeof zeros, zeros, 0, nullptr, nullptr),
                 "clEnqueueWriteBuffer");
  }

  double run() {
    seed++;
    runs++;
    bench::check(clSetKernelArg(fill, 2, sizeof seed, &seed), "clSetKernelArg");
    bench::check(clSetKernelArg(check, 2, sizeof seed, &seed), "clSetKernelArg");
    size_t global = pattern_global_size(words);
    cl_event written;
    double start = now_us();
    bench::check(clEnqueueNDRangeKernel(writer, fill, 1, nullptr, &global, nullptr, 0, nullptr, &written),
                 "clEnqueueNDRangeKernel");
    bench::check(clFlush(writer), "clFlush");
    bench::check(clEnqueueNDRangeKernel(checker, check, 1, nullptr, &global, nullptr, 1, &written, nullptr),
                 "clEnqueueNDRangeKernel");
    bench::check(clFinish(checker), "clFinish");
    double elapsed = now_us() - start;
    bench::check(clReleaseEvent(written), "clReleaseEvent");
    return elapsed;
  }

  // Every word the checker saw was the writer's of that run.
  void expect(const char *what) {
    cl_uint counts[2] = {};
    bench::check(clEnqueueReadBuffer(checker, stats, CL_TRUE, 0, sizeof counts, counts, 0, nullptr, nullptr),
                 "clEnqueueReadBuffer");
    if (counts[0] != 0 || counts[1] != runs * words)
      throw std::runtime_error(std::string("events: ") + what + ": " + std::to_string(counts[0]) + " of " +
                               std::to_string(counts[1]) + " words checked were wrong (" +
                               std::to_string(runs * words) + " expected)");
  }
};

}  // namespace

Measures measure_events(Federation &fed, const FederationPlan &plan) {
  if (fed.nodes.size() < 2) throw std::runtime_error("events need two nodes");
  const Node &a = fed.nodes[0], &b = fed.nodes[1];
  Counter a_first(fed, a.queue), a_second(fed, a.second), b_second(fed, b.queue);
  const int warmup = 50, reps = plan.count(plan.event_reps);
  std::vector<double> cross, same, cross_unflushed, same_unflushed;
  // Interleaved, so that a change in the machine's load touches all alike.
  for (int r = -warmup; r < reps; r++) {
    double c = chain(a_first, b_second, true);
    double s = chain(a_first, a_second, true);
    double cu = chain(a_first, b_second, false);
    double su = chain(a_first, a_second, false);
    if (r < 0) continue;
    cross.push_back(c);
    same.push_back(s);
    cross_unflushed.push_back(cu);
    same_unflushed.push_back(su);
  }
  const cl_uint runs = cl_uint(2 * (warmup + reps));
  a_first.expect(2 * runs, "the first kernel (node 0)");

  // A launch and clFinish on node 0 in the context over every node, against the same in a context
  // of node 0 alone, interleaved: what spanning daemons costs a kernel that moves nothing. On NVIDIA
  // each launch then also pays the GPU's switch between the two contexts (170 us a launch on an
  // H200, where fedcl_bench's enqueue + clFinish takes 40), alike on both sides; in blocks of 50
  // instead, the drift between blocks on the 2-core VM was larger than the difference.
  AloneContext alone(a);
  cl_int err;
  OwnedMem alone_counter(clCreateBuffer(alone.context, CL_MEM_READ_WRITE, sizeof(cl_uint), nullptr, &err));
  check(err, "clCreateBuffer");
  OwnedKernel alone_bump(clCreateKernel(alone.program, kBumpKernel, &err));
  check(err, "clCreateKernel");
  check(clSetKernelArg(alone_bump, 0, sizeof(cl_mem), alone_counter.address()), "clSetKernelArg");
  std::vector<double> federated, by_itself;
  for (int r = -warmup; r < reps; r++) {
    double f = launch_finish(a.queue, a_first.kernel);
    double o = launch_finish(alone.queue, alone_bump);
    if (r < 0) continue;
    federated.push_back(f);
    by_itself.push_back(o);
  }
  a_first.expect(2 * runs + cl_uint(warmup + reps), "the launches on node 0");
  a_second.expect(runs, "the second kernel on node 0");
  b_second.expect(runs, "the second kernel on node 1");

  double cross_median = median(cross), cross_p99 = p99(cross), same_median = median(same), same_p99 = p99(same);
  return {{"event.cross_node.median", "us", cross_median}, {"event.cross_node.p99", "us", cross_p99},
          {"event.same_node.median", "us", same_median},   {"event.same_node.p99", "us", same_p99},
          {"event.extra.median", "us", cross_median - same_median}, {"event.extra.p99", "us", cross_p99 - same_p99},
          {"event.unflushed.cross_node.median", "us", median(cross_unflushed)},
          {"event.unflushed.same_node.median", "us", median(same_unflushed)},
          {"event.unflushed.extra.median", "us", median(cross_unflushed) - median(same_unflushed)},
          {"event.launch.federated.median", "us", median(federated)},
          {"event.launch.alone.median", "us", median(by_itself)},
          {"event.launch.extra.median", "us", median(federated) - median(by_itself)}};
}

Measures measure_shared_chains(Federation &fed, const FederationPlan &plan) {
  if (fed.nodes.size() < 2) throw std::runtime_error("shared chains need two nodes");
  const Node &a = fed.nodes[0], &b = fed.nodes[1];
  const int warmup = 50, reps = plan.count(plan.event_reps);
  Measures rows;
  for (size_t bytes : plan.shared_sizes) {
    SharedChain across(fed, bytes, a.queue, b.queue), within(fed, bytes, a.queue, a.second);
    std::vector<double> times_across, times_within;
    for (int r = -warmup; r < reps; r++) {
      double c = across.run();
      double s = within.run();
      if (r < 0) continue;
      times_across.push_back(c);
      times_within.push_back(s);
    }
    std::string label = byte_label(bytes);
    across.expect(("a " + label + " buffer written on node 0, checked on node 1").c_str());
    within.expect(("a " + label + " buffer written and checked on node 0").c_str());
    std::string row = "event.shared." + label;
    rows.push_back({row + ".cross_node.median", "us", median(times_across)});
    rows.push_back({row + ".cross_node.p99", "us", p99(times_across)});
    rows.push_back({row + ".same_node.median", "us", median(times_within)});
    rows.push_back({row + ".same_node.p99", "us", p99(times_within)});
    rows.push_back({row + ".extra.median", "us", median(times_across) - median(times_within)});
    rows.push_back({row + ".extra.p99", "us", p99(times_across) - p99(times_within)});
  }
  return rows;
}

}  // namespace bench
