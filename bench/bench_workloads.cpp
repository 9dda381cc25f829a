#include "bench_workloads.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "bench_nbody.h"
#include "bench_stats.h"

namespace bench {

const char *const kTinyKernelSource = R"CLC(
__kernel void bench_tiny(__global int *counter) { counter[0] += 1; }
)CLC";

namespace {

const size_t kOne = 1;

void enqueue_tiny(const Side &side, cl_kernel kernel) {
  check(clEnqueueNDRangeKernel(side.queue, kernel, 1, nullptr, &kOne, nullptr, 0, nullptr, nullptr),
        "clEnqueueNDRangeKernel");
}

// A counter buffer set to zero and the tiny kernel bound to it.
struct TinySetup {
  OwnedMem counter;
  OwnedKernel kernel;

  explicit TinySetup(const Side &side) : counter(side.buffer(sizeof(cl_int))), kernel(side.kernel("bench_tiny")) {
    cl_mem mem = counter;
    check(clSetKernelArg(kernel, 0, sizeof mem, &mem), "clSetKernelArg");
    reset(side);
  }

  void reset(const Side &side) {
    cl_int zero = 0;
    check(clEnqueueWriteBuffer(side.queue, counter, CL_TRUE, 0, sizeof zero, &zero, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer");
  }

  // The kernels must really have run, or the timings mean nothing.
  void expect(const Side &side, long runs) {
    cl_int value = -1;
    check(clEnqueueReadBuffer(side.queue, counter, CL_TRUE, 0, sizeof value, &value, 0, nullptr, nullptr),
          "clEnqueueReadBuffer");
    if (value != runs)
      throw std::runtime_error(side.label + ": the tiny kernel ran " + std::to_string(value) + " times, not " +
                               std::to_string(runs));
  }
};

// The median and p99 of one call's times; each has a round trip as its floor's link cost.
Measures median_and_p99(const std::string &name, std::vector<double> &samples_us) {
  return {{name + ".median", "us", median(samples_us), round_trip()},
          {name + ".p99", "us", p99(samples_us), round_trip(true)}};
}

// Times each creation in batches; the objects of a batch are released (untimed) after it.
template <typename Create, typename Release>
Measures creation_cost(const std::string &name, const Side &side, const Plan &plan, Create create, Release release) {
  const int batch = 1000, batches = plan.count(5);
  std::vector<double> samples;
  for (int b = -1; b < batches; b++) {  // batch -1 warms up
    std::vector<decltype(create())> made;
    made.reserve(batch);
    for (int i = 0; i < batch; i++) {
      double start = now_us();
      made.push_back(create());
      double took = now_us() - start;
      if (b >= 0) samples.push_back(took);
    }
    for (auto object : made) release(object);
    check(clFinish(side.queue), "clFinish");
  }
  return median_and_p99(name, samples);
}

}  // namespace

Measures measure_set_kernel_arg(Side &side, const Plan &plan) {
  // The nine arguments of the NBody kernel, set in turn as NVIDIA's sample does every step.
  const cl_int n = 1024;
  OwnedMem pos0(side.buffer(n * sizeof(cl_float4))), pos1(side.buffer(n * sizeof(cl_float4)));
  OwnedMem vel0(side.buffer(n * sizeof(cl_float4))), vel1(side.buffer(n * sizeof(cl_float4)));
  OwnedKernel kernel(side.kernel(kNbodyKernelName));
  const int rounds = 100, batches = plan.count(200);
  size_t local = nbody_local_size(side);
  std::vector<double> per_call;
  for (int b = -10; b < batches; b++) {  // negative batches warm up
    double start = now_us();
    for (int r = 0; r < rounds; r++) {
      if (r & 1) nbody_set_args(kernel, pos1, vel1, pos0, vel0, n, local);
      else nbody_set_args(kernel, pos0, vel0, pos1, vel1, n, local);
    }
    double took = now_us() - start;
    if (b >= 0) per_call.push_back(took / (rounds * kNbodyArgCount));
  }
  return {{"set_kernel_arg", "us", median(per_call), round_trip()}};
}

Measures measure_ndrange_enqueue(Side &side, const Plan &plan) {
  TinySetup tiny(side);
  // Each batch follows a clFinish (untimed). Its first launch is the one a program pays after every
  // synchronisation (NBody's pattern); the others are back-to-back launches.
  const int batch = 25, batches = plan.count(200);
  std::vector<double> back_to_back, after_finish;
  for (int b = -1; b < batches; b++) {
    for (int i = 0; i < batch; i++) {
      double start = now_us();
      enqueue_tiny(side, tiny.kernel);
      double took = now_us() - start;
      if (b >= 0) (i == 0 ? after_finish : back_to_back).push_back(took);
    }
    check(clFinish(side.queue), "clFinish");
  }
  tiny.expect(side, long(batch) * (batches + 1));
  Measures measures = median_and_p99("ndrange_enqueue", back_to_back);
  measures.push_back({"ndrange_enqueue.after_finish.median", "us", median(after_finish), round_trip()});
  return measures;
}

Measures measure_tiny_throughput(Side &side, const Plan &plan) {
  TinySetup tiny(side);
  const int kernels = plan.count(5000), reps = 5;
  // Alternately without events and with each launch's event released at once, as a Python loop
  // that drops the event PyOpenCL's enqueue returns does.
  std::vector<double> rates, rates_with_event;
  for (int r = -1; r < reps; r++) {
    for (bool event_wanted : {false, true}) {
      tiny.reset(side);
      double start = now_us();
      for (int i = 0; i < kernels; i++) {
        cl_event event = nullptr;
        check(clEnqueueNDRangeKernel(side.queue, tiny.kernel, 1, nullptr, &kOne, nullptr, 0, nullptr,
                                     event_wanted ? &event : nullptr),
              "clEnqueueNDRangeKernel");
        if (event) check(clReleaseEvent(event), "clReleaseEvent");
      }
      check(clFinish(side.queue), "clFinish");
      double took = now_us() - start;
      tiny.expect(side, kernels);
      if (r >= 0) (event_wanted ? rates_with_event : rates).push_back(kernels / (took * 1e-6));
    }
  }
  return {{"tiny_kernel_throughput", "kernels/s", median(rates)},
          {"tiny_kernel_throughput.with_event", "kernels/s", median(rates_with_event)}};
}

Measures measure_enqueue_finish(Side &side, const Plan &plan) {
  TinySetup tiny(side);
  const int iterations = plan.count(2000), warmup = 100;
  // Alternately without and with the launch's event (PyOpenCL asks for one at every enqueue).
  std::vector<double> samples, with_event;
  for (int i = -warmup; i < iterations; i++) {
    for (bool event_wanted : {false, true}) {
      cl_event event = nullptr;
      double start = now_us();
      check(clEnqueueNDRangeKernel(side.queue, tiny.kernel, 1, nullptr, &kOne, nullptr, 0, nullptr,
                                   event_wanted ? &event : nullptr),
            "clEnqueueNDRangeKernel");
      check(clFinish(side.queue), "clFinish");
      if (event) check(clReleaseEvent(event), "clReleaseEvent");
      double took = now_us() - start;
      if (i >= 0) (event_wanted ? with_event : samples).push_back(took);
    }
  }
  tiny.expect(side, 2 * (iterations + warmup));
  Measures measures = median_and_p99("enqueue_finish", samples);
  Measures evented = median_and_p99("enqueue_finish.with_event", with_event);
  measures.insert(measures.end(), evented.begin(), evented.end());
  return measures;
}

namespace {

void CL_CALLBACK release_gate(cl_event, cl_int status, void *gate) {
  clSetUserEventStatus(static_cast<cl_event>(gate), status < 0 ? status : CL_COMPLETE);
}

// How the second kernel learns that the first completed: the driver keeps the dependency; a user
// event set by the first's completion callback, or by a thread that polls the first's status (as
// fedcld learns of a command on NVIDIA, and sets a stand-in once a peer's signal came); or the
// second is enqueued only once the poll saw the first complete (no user event at all).
enum class Relay { driver, callback, polled, enqueued };

void wait_complete_polling(cl_event event) {
  cl_int status = CL_QUEUED;
  do check(clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr), "clGetEventInfo");
  while (status > CL_COMPLETE);
  if (status < 0) throw std::runtime_error("event_relay: the first kernel failed with " + std::to_string(status));
}

// The first kernel on side.queue, then the second on second_queue behind it as relay says, then
// clFinish of second_queue; in us.
double dependency_chain(Side &side, cl_command_queue second_queue, cl_kernel first, cl_kernel second, Relay relay) {
  const size_t one = 1;
  double start = now_us();
  cl_event done = nullptr, gate = nullptr;
  check(clEnqueueNDRangeKernel(side.queue, first, 1, nullptr, &one, &one, 0, nullptr, &done), "clEnqueueNDRangeKernel");
  check(clFlush(side.queue), "clFlush");
  if (relay == Relay::callback || relay == Relay::polled) {
    cl_int err = CL_SUCCESS;
    gate = clCreateUserEvent(side.context, &err);
    check(err, "clCreateUserEvent");
    if (relay == Relay::callback) check(clSetEventCallback(done, CL_COMPLETE, release_gate, gate), "clSetEventCallback");
  }
  if (relay == Relay::enqueued) wait_complete_polling(done);
  cl_event waited = gate ? gate : done;
  cl_uint waits = relay == Relay::enqueued ? 0 : 1;
  check(clEnqueueNDRangeKernel(second_queue, second, 1, nullptr, &one, &one, waits, waits ? &waited : nullptr, nullptr),
        "clEnqueueNDRangeKernel");
  if (relay == Relay::polled) {
    check(clFlush(second_queue), "clFlush");
    wait_complete_polling(done);
    check(clSetUserEventStatus(gate, CL_COMPLETE), "clSetUserEventStatus");
  }
  check(clFinish(second_queue), "clFinish");
  double took = now_us() - start;
  check(clReleaseEvent(done), "clReleaseEvent");
  if (gate) check(clReleaseEvent(gate), "clReleaseEvent");
  return took;
}

}  // namespace

Measures measure_event_relay(Side &side, const Plan &plan) {
  TinySetup first(side), second(side);
  cl_int err = CL_SUCCESS;
  cl_command_queue second_queue = clCreateCommandQueueWithProperties(side.context, side.device, nullptr, &err);
  check(err, "clCreateCommandQueueWithProperties");
  OwnedQueue owned_queue(second_queue);
  const int iterations = plan.count(2000), warmup = 50;
  const Relay relays[] = {Relay::driver, Relay::callback, Relay::polled, Relay::enqueued};
  std::vector<double> samples[4];
  // Interleaved, so that a change in the machine's load touches all alike.
  for (int i = -warmup; i < iterations; i++)
    for (int r = 0; r < 4; r++) {
      double took = dependency_chain(side, second_queue, first.kernel, second.kernel, relays[r]);
      if (i >= 0) samples[r].push_back(took);
    }
  const int chains = 4 * (iterations + warmup);
  first.expect(side, chains);
  check(clFinish(side.queue), "clFinish");
  cl_int value = -1;
  check(clEnqueueReadBuffer(second_queue, second.counter, CL_TRUE, 0, sizeof value, &value, 0, nullptr, nullptr),
        "clEnqueueReadBuffer");
  if (value != chains)
    throw std::runtime_error(side.label + ": the second kernel ran " + std::to_string(value) + " times, not " +
                             std::to_string(chains));
  return {{"event_relay.driver.median", "us", median(samples[0])},
          {"event_relay.host.median", "us", median(samples[1])},
          {"event_relay.host.p99", "us", p99(samples[1])},
          {"event_relay.polled.median", "us", median(samples[2])},
          {"event_relay.enqueued.median", "us", median(samples[3])}};
}

Measures measure_create_buffer(Side &side, const Plan &plan) {
  return creation_cost(
      "create_buffer", side, plan, [&] { return side.buffer(4096); },
      [](cl_mem mem) { check(clReleaseMemObject(mem), "clReleaseMemObject"); });
}

Measures measure_create_kernel(Side &side, const Plan &plan) {
  return creation_cost(
      "create_kernel", side, plan, [&] { return side.kernel("bench_tiny"); },
      [](cl_kernel kernel) { check(clReleaseKernel(kernel), "clReleaseKernel"); });
}

Measures measure_create_release(Side &side, const Plan &plan) {
  // What a program that makes a scratch buffer and drops it again pays: the pair, timed together.
  const int iterations = plan.count(5000), warmup = 100;
  std::vector<double> samples;
  for (int i = -warmup; i < iterations; i++) {
    double start = now_us();
    check(clReleaseMemObject(side.buffer(4096)), "clReleaseMemObject");
    double took = now_us() - start;
    if (i >= 0) samples.push_back(took);
  }
  check(clFinish(side.queue), "clFinish");  // releases fedcl sent on ahead are done before the next workload
  return median_and_p99("create_release", samples);
}

bool holds_largest_transfer(const Side &side) {
  // Room for the transfer buffer and the driver's own needs beside it.
  return side.max_mem_alloc >= kLargestTransfer && side.global_mem >= 2 * kLargestTransfer;
}

Measures measure_transfers(Side &side, const Plan &plan) {
  struct Size {
    const char *label;
    size_t bytes;
  };
  const Size sizes[] = {{"64B", 64},
                        {"4KiB", 4 << 10},
                        {"64KiB", 64 << 10},
                        {"1MiB", size_t(1) << 20},
                        {"16MiB", size_t(16) << 20},
                        {"256MiB", size_t(256) << 20},
                        {"1GiB", kLargestTransfer}};
  size_t largest = 0;
  for (const Size &size : sizes)
    if (size.bytes <= plan.max_transfer) largest = size.bytes;
  // Page-aligned host memory, touched before timing, as an application's arrays would be.
  auto host_alloc = [&](int fill) {
    auto *p = static_cast<uint8_t *>(std::aligned_alloc(4096, largest));
    if (!p) throw std::runtime_error("out of host memory");
    std::memset(p, fill, largest);
    return std::unique_ptr<uint8_t, decltype(&std::free)>(p, &std::free);
  };
  auto source = host_alloc(0);
  for (size_t i = 0; i < largest; i++) source.get()[i] = uint8_t(i * 7 + 3);
  auto sink = host_alloc(0);
  OwnedMem mem(side.buffer(largest));

  Measures measures;
  auto add = [&](const std::string &name, LinkCost link, std::vector<double> &us) {
    double t = median(us);
    measures.push_back({name + ".time", "us", t, link});
    measures.push_back({name + ".bandwidth", "MiB/s", link.bytes / double(1 << 20) / (t * 1e-6), link});
  };
  for (const Size &size : sizes) {
    if (size.bytes > largest) continue;
    int reps = plan.count(int(std::clamp<size_t>((size_t(512) << 20) / size.bytes, 5, 2000)));
    int warmup = std::max(1, reps / 10);
    std::vector<double> write_us, read_us;
    for (int i = -warmup; i < reps; i++) {
      // A blocking write returns once the bytes are taken; clFinish adds the wait until the device has them.
      double start = now_us();
      check(clEnqueueWriteBuffer(side.queue, mem, CL_TRUE, 0, size.bytes, source.get(), 0, nullptr, nullptr),
            "clEnqueueWriteBuffer");
      check(clFinish(side.queue), "clFinish");
      double took = now_us() - start;
      if (i >= 0) write_us.push_back(took);
    }
    for (int i = -warmup; i < reps; i++) {
      double start = now_us();
      check(clEnqueueReadBuffer(side.queue, mem, CL_TRUE, 0, size.bytes, sink.get(), 0, nullptr, nullptr),
            "clEnqueueReadBuffer");
      double took = now_us() - start;
      if (i >= 0) read_us.push_back(took);
    }
    add(std::string("write.") + size.label, transfer(LinkCost::kUpload, size.bytes), write_us);
    add(std::string("read.") + size.label, transfer(LinkCost::kDownload, size.bytes), read_us);
  }
  if (std::memcmp(source.get(), sink.get(), largest) != 0)
    throw std::runtime_error(side.label + ": the bytes read back differ from those written");
  return measures;
}

}  // namespace bench
