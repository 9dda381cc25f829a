#include "bench_solver.h"

#include <CL/cl_fedcl_command_buffer.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "bench_stats.h"

namespace bench {

// Five kernels, each adding its own constant to its own vector: cheap enough that the launch cost
// shows at the small size, and exactly checkable after any number of iterations.
const char *const kSolverKernelSource = R"CLC(
__kernel void solver_step0(__global int *v) { v[get_global_id(0)] += 1; }
__kernel void solver_step1(__global int *v) { v[get_global_id(0)] += 2; }
__kernel void solver_step2(__global int *v) { v[get_global_id(0)] += 3; }
__kernel void solver_step3(__global int *v) { v[get_global_id(0)] += 4; }
__kernel void solver_step4(__global int *v) { v[get_global_id(0)] += 5; }
)CLC";

namespace {

constexpr int kSteps = 5;

// The extension's entry points on side's platform, or none where its device lacks 0.9.5 or later
// (the first version whose calls take the arguments these do).
struct CommandBufferCalls {
  fedcl_clCreateCommandBufferKHR_fn create = nullptr;
  fedcl_clCommandNDRangeKernelKHR_fn launch = nullptr;
  fedcl_clFinalizeCommandBufferKHR_fn finalize = nullptr;
  fedcl_clEnqueueCommandBufferKHR_fn enqueue = nullptr;
  fedcl_clReleaseCommandBufferKHR_fn release = nullptr;
  bool available() const { return create && launch && finalize && enqueue && release; }
};

cl_version command_buffer_version(const Side &side) {
  size_t size = 0;
  if (clGetDeviceInfo(side.device, CL_DEVICE_EXTENSIONS_WITH_VERSION, 0, nullptr, &size) != CL_SUCCESS) return 0;
  std::vector<cl_name_version> list(size / sizeof(cl_name_version));
  if (clGetDeviceInfo(side.device, CL_DEVICE_EXTENSIONS_WITH_VERSION, size, list.data(), nullptr) != CL_SUCCESS) return 0;
  for (const cl_name_version &entry : list)
    if (std::strcmp(entry.name, "cl_khr_command_buffer") == 0) return entry.version;
  return 0;
}

CommandBufferCalls command_buffer_calls(const Side &side) {
  CommandBufferCalls calls;
  if (command_buffer_version(side) < CL_MAKE_VERSION(0, 9, 5)) return calls;
  auto find = [&](auto &function, const char *name) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(
        clGetExtensionFunctionAddressForPlatform(side.platform, name));
  };
  find(calls.create, "clCreateCommandBufferKHR");
  find(calls.launch, "clCommandNDRangeKernelKHR");
  find(calls.finalize, "clFinalizeCommandBufferKHR");
  find(calls.enqueue, "clEnqueueCommandBufferKHR");
  find(calls.release, "clReleaseCommandBufferKHR");
  return calls;
}

struct SolverSetup {
  size_t items;
  std::vector<cl_mem> vectors;
  std::vector<cl_kernel> kernels;

  SolverSetup(const Side &side, size_t n) : items(n) {
    for (int s = 0; s < kSteps; s++) {
      vectors.push_back(side.buffer(n * sizeof(cl_int)));
      kernels.push_back(side.kernel(("solver_step" + std::to_string(s)).c_str()));
      check(clSetKernelArg(kernels[s], 0, sizeof(cl_mem), &vectors[s]), "clSetKernelArg");
    }
  }
  SolverSetup(const SolverSetup &) = delete;
  ~SolverSetup() {
    for (cl_kernel kernel : kernels) clReleaseKernel(kernel);
    for (cl_mem mem : vectors) clReleaseMemObject(mem);
  }

  void reset(const Side &side) {
    const cl_int zero = 0;
    for (cl_mem mem : vectors)
      check(clEnqueueFillBuffer(side.queue, mem, &zero, sizeof zero, 0, items * sizeof(cl_int), 0, nullptr, nullptr),
            "clEnqueueFillBuffer");
    check(clFinish(side.queue), "clFinish");
  }

  // Every step must have run iterations times, or the timings mean nothing.
  void expect(const Side &side, int iterations) {
    for (int s = 0; s < kSteps; s++) {
      cl_int first = -1, last = -1;
      check(clEnqueueReadBuffer(side.queue, vectors[s], CL_TRUE, 0, sizeof first, &first, 0, nullptr, nullptr),
            "clEnqueueReadBuffer");
      check(clEnqueueReadBuffer(side.queue, vectors[s], CL_TRUE, (items - 1) * sizeof last, sizeof last, &last, 0,
                                nullptr, nullptr),
            "clEnqueueReadBuffer");
      cl_int expected = cl_int(iterations * (s + 1));
      if (first != expected || last != expected)
        throw std::runtime_error(side.label + ": solver step " + std::to_string(s) + " gave " + std::to_string(first) +
                                 " and " + std::to_string(last) + ", not " + std::to_string(expected));
    }
  }
};

// Microseconds per iteration of run(iterations), which enqueues them; the median of reps runs.
template <typename Run>
double per_iteration(const Side &side, SolverSetup &setup, int iterations, const Run &run) {
  const int reps = 3;
  std::vector<double> samples;
  for (int r = -1; r < reps; r++) {
    setup.reset(side);
    double start = now_us();
    run(iterations);
    check(clFinish(side.queue), "clFinish");
    double took = now_us() - start;
    setup.expect(side, iterations);
    if (r >= 0) samples.push_back(took / iterations);
  }
  return median(samples);
}

Measures measure_size(Side &side, const Plan &plan, const std::string &name, size_t items, int full_iterations) {
  SolverSetup setup(side, items);
  const int iterations = plan.count(full_iterations);
  double plain = per_iteration(side, setup, iterations, [&](int count) {
    for (int i = 0; i < count; i++)
      for (cl_kernel kernel : setup.kernels)
        check(clEnqueueNDRangeKernel(side.queue, kernel, 1, nullptr, &setup.items, nullptr, 0, nullptr, nullptr),
              "clEnqueueNDRangeKernel");
  });
  double recorded = std::nan("");
  CommandBufferCalls calls = command_buffer_calls(side);
  if (calls.available()) {
    cl_int err = CL_SUCCESS;
    cl_command_buffer_khr buffer = calls.create(1, &side.queue, nullptr, &err);
    check(err, "clCreateCommandBufferKHR");
    for (cl_kernel kernel : setup.kernels)
      check(calls.launch(buffer, nullptr, nullptr, kernel, 1, nullptr, &setup.items, nullptr, 0, nullptr, nullptr,
                         nullptr),
            "clCommandNDRangeKernelKHR");
    check(calls.finalize(buffer), "clFinalizeCommandBufferKHR");
    recorded = per_iteration(side, setup, iterations, [&](int count) {
      for (int i = 0; i < count; i++)
        check(calls.enqueue(0, nullptr, buffer, 0, nullptr, nullptr), "clEnqueueCommandBufferKHR");
    });
    calls.release(buffer);
  }
  return {{"solver." + name + ".plain", "us", plain},
          {"solver." + name + ".command_buffer", "us", recorded},
          {"solver." + name + ".command_buffer_vs_plain", "x", plain / recorded}};
}

}  // namespace

Measures measure_solver_loop(Side &side, const Plan &plan) {
  Measures small = measure_size(side, plan, "small", 256, 10000);
  Measures large = measure_size(side, plan, "large", size_t(1) << 20, side.is_gpu() ? 10000 : 500);
  small.insert(small.end(), large.begin(), large.end());
  return small;
}

}  // namespace bench
