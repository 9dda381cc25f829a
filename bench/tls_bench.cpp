// fedcl_tls_bench: what one fedcl session costs per call and per byte, on whatever link the
// environment gives it (FEDCL_HOSTS, FEDCL_TLS, ...): bench/run_tls.sh runs it against a plain-TCP
// fedcld and a TLS one, alternating, and prints the ratios. With --link it measures the raw TCP link
// instead (bench_link.h), before any OpenCL call.
//
//   fedcl_tls_bench --label NAME [--quick]   prints "tls.NAME.METRIC VALUE UNIT" lines
//   fedcl_tls_bench --link [--quick]         prints "link.* VALUE UNIT" lines
#include <CL/cl.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_link.h"
#include "bench_platform.h"
#include "bench_stats.h"

namespace {

using bench::now_us;

void check(cl_int status, const char *what) {
  if (status != CL_SUCCESS) throw std::runtime_error(std::string(what) + " failed: " + std::to_string(status));
}

struct Session {
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_kernel kernel = nullptr;

  Session() {
    cl_platform_id platform = bench::find_platform("fedcl", true, "run through bench/run_tls.sh");
    check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), "clGetDeviceIDs (is FEDCL_HOSTS set, and the daemon up?)");
    cl_int err;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    check(err, "clCreateContext");
    queue = clCreateCommandQueueWithProperties(context, device, nullptr, &err);
    check(err, "clCreateCommandQueue");
    const char *source = "__kernel void tiny(__global int *x) { x[0] += 1; }";
    cl_program program = clCreateProgramWithSource(context, 1, &source, nullptr, &err);
    check(err, "clCreateProgramWithSource");
    check(clBuildProgram(program, 1, &device, "", nullptr, nullptr), "clBuildProgram");
    kernel = clCreateKernel(program, "tiny", &err);
    check(err, "clCreateKernel");
    clReleaseProgram(program);
  }
};

// A 64-byte blocking read, and one launch of the tiny kernel then clFinish: the round trips a call
// that waits pays. Medians and p99 of count calls after warm-ups, microseconds.
void round_trips(Session &s, const std::string &prefix, int count) {
  cl_int err;
  cl_mem small = clCreateBuffer(s.context, CL_MEM_READ_WRITE, 64, nullptr, &err);
  check(err, "clCreateBuffer");
  check(clSetKernelArg(s.kernel, 0, sizeof small, &small), "clSetKernelArg");
  char bytes[64];
  std::vector<double> reads, launches;
  size_t one = 1;
  for (int i = -count / 10; i < count; i++) {
    double start = now_us();
    check(clEnqueueReadBuffer(s.queue, small, CL_TRUE, 0, sizeof bytes, bytes, 0, nullptr, nullptr), "read");
    double middle = now_us();
    check(clEnqueueNDRangeKernel(s.queue, s.kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr), "launch");
    check(clFinish(s.queue), "clFinish");
    double end = now_us();
    if (i < 0) continue;  // warm-up
    reads.push_back(middle - start);
    launches.push_back(end - middle);
  }
  std::printf("%s.read_64B.median %.4g us\n%s.read_64B.p99 %.4g us\n", prefix.c_str(), bench::median(reads),
              prefix.c_str(), bench::p99(reads));
  std::printf("%s.enqueue_finish.median %.4g us\n%s.enqueue_finish.p99 %.4g us\n", prefix.c_str(),
              bench::median(launches), prefix.c_str(), bench::p99(launches));
  clReleaseMemObject(small);
}

// Blocking writes and reads of size bytes (checked once), median of reps; MiB/s.
void bandwidth(Session &s, const std::string &prefix, size_t size, int reps) {
  cl_int err;
  cl_mem buffer = clCreateBuffer(s.context, CL_MEM_READ_WRITE, size, nullptr, &err);
  check(err, "clCreateBuffer");
  std::vector<unsigned char> data(size), back(size);
  for (size_t i = 0; i < size; i++) data[i] = static_cast<unsigned char>(i * 131 + (i >> 13));
  std::vector<double> writes, reads;
  for (int i = -1; i < reps; i++) {
    double start = now_us();
    check(clEnqueueWriteBuffer(s.queue, buffer, CL_TRUE, 0, size, data.data(), 0, nullptr, nullptr), "write");
    double middle = now_us();
    check(clEnqueueReadBuffer(s.queue, buffer, CL_TRUE, 0, size, back.data(), 0, nullptr, nullptr), "read");
    double end = now_us();
    if (i < 0) {
      if (back != data) throw std::runtime_error("the bytes read back differ from those written");
      continue;
    }
    writes.push_back(size / 1048576.0 / ((middle - start) * 1e-6));
    reads.push_back(size / 1048576.0 / ((end - middle) * 1e-6));
  }
  std::string mib = std::to_string(size >> 20) + "MiB";
  std::printf("%s.write_%s %.5g MiB/s\n%s.read_%s %.5g MiB/s\n", prefix.c_str(), mib.c_str(), bench::median(writes),
              prefix.c_str(), mib.c_str(), bench::median(reads));
  clReleaseMemObject(buffer);
}

}  // namespace

int main(int argc, char **argv) {
  std::string label;
  bool link = false, quick = false;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    if (arg == "--label" && i + 1 < argc) label = argv[++i];
    else if (arg == "--link") link = true;
    else if (arg == "--quick") quick = true;
    else {
      std::fprintf(stderr, "usage: fedcl_tls_bench --label NAME [--quick] | --link [--quick]\n");
      return 2;
    }
  }
  try {
    if (link) {
      bench::LinkPlan plan;
      if (quick) plan = {2000, size_t(32) << 20, 2};
      bench::LinkResult result = bench::measure_link(plan);
      std::printf("link.tcp_rtt.median %.4g us\nlink.tcp_rtt.p99 %.4g us\n", result.rtt_median_us, result.rtt_p99_us);
      std::printf("link.tcp_upload %.5g MiB/s\nlink.tcp_download %.5g MiB/s\n", result.upload_mib_s, result.download_mib_s);
      return 0;
    }
    if (label.empty()) throw std::runtime_error("--label NAME or --link");
    Session session;
    std::string prefix = "tls." + label;
    round_trips(session, prefix, quick ? 300 : 3000);
    bandwidth(session, prefix, quick ? size_t(32) << 20 : size_t(256) << 20, quick ? 2 : 5);
  } catch (const std::exception &e) {
    std::printf("# error: %s\n", e.what());
    return 1;
  }
  return 0;
}
