// subbuffer_stencil: a 1D 3-point stencil split over several devices through sub-buffers, the way
// users split grids; plain OpenCL, nothing fedcl-specific.
//
// Two parent buffers A and B hold the whole domain (N floats each) and the iterations ping-pong
// between them. Slab s (on device s % devices, with a queue of its own) owns a contiguous range of
// the domain. In each iteration its kernel reads a sub-buffer of the source parent that covers its
// slab plus a halo of H bytes on each side where a neighbour exists, and writes the sub-buffer of the
// destination parent that covers its slab:
//
//     out[i] = 0.25 in[i-1] + 0.5 in[i] + 0.25 in[i+1]     (in[0] and in[N-1] stay as they are)
//
// The kernel of slab s in iteration t waits for the events of slabs s-1, s, s+1 of iteration t-1 and
// nothing else; there is no clEnqueueMigrateMemObjects and no copy between devices, so the driver
// keeps the sub-buffers coherent. Afterwards the result is read back (per slab's sub-buffer or the
// whole parent) and compared with the same stencil on the host. The products are exact (powers of
// two) and the sums run in the same order, so a correct device gives the host's bits; the check
// allows a relative error of 1e-5 all the same and reports the largest.
//
// Then every object is released, the parents first by default (legal: a sub-buffer keeps its parent
// alive), and the program exits normally.
//
// Output, one "key value" line each: the set-up (platform, devices, slabs, sizes), then
// seconds_per_iteration (all of them), seconds_first_iteration and seconds_per_iteration_after_first
// (through fedcl the first also brings each device its slab; an iterative program runs on the rest),
// max_abs_error, max_rel_error, mismatches, result_fnv1a (a hash of the
// result's bytes), "result ok|mismatch" and "released ORDER". Exit status: 0 when the result is
// right and every call succeeded, 1 on a mismatch, 2 on bad usage or an OpenCL error, 3 on a timeout.
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120  // OpenCL 1.2 calls only
#endif
#include <CL/cl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char *kUsage =
    "usage: subbuffer_stencil [options]\n"
    "  --platform SUBSTR        the first platform whose name contains SUBSTR (all its devices);\n"
    "                           default: the first platform with at least 2 devices (with --slabs,\n"
    "                           the first platform with a device when none has 2)\n"
    "  --slabs D                split into D slabs, slab s on device s mod devices, one queue each\n"
    "                           (default: one slab per device; D >= 2)\n"
    "  --mib M                  MiB per parent buffer (default 64, i.e. 16 Mi floats)\n"
    "  --elements N             floats per parent buffer (instead of --mib)\n"
    "  --halo BYTES             halo on each side of a slab's input sub-buffer (default 4096)\n"
    "  --iterations T           stencil steps (default 20)\n"
    "  --readback slabs|parent  read the result through each slab's sub-buffer on its own queue, or\n"
    "                           the whole parent on the first queue (default parent)\n"
    "  --release-order parents-first|children-first|kernels-first   (default parents-first; kernels-first:\n"
    "                           the kernels and the program, then the parents, then the sub-buffers)\n"
    "  --timeout S              give up after S seconds, exit status 3 (default 600; 0: never)\n";

const char *kSource = R"CLC(
kernel void stencil(global const float *in, global float *out, uint in_offset, uint count, uint first, uint n) {
  uint i = get_global_id(0);
  if (i >= count) return;
  uint g = first + i;
  uint j = in_offset + i;
  float v;
  if (g == 0 || g == n - 1)
    v = in[j];
  else
    v = 0.25f * in[j - 1] + 0.5f * in[j] + 0.25f * in[j + 1];
  out[i] = v;
}
)CLC";

const char *name_of(cl_int code) {
  switch (code) {
#define NAME(c) \
  case c: return #c;
    NAME(CL_SUCCESS) NAME(CL_DEVICE_NOT_FOUND) NAME(CL_DEVICE_NOT_AVAILABLE) NAME(CL_COMPILER_NOT_AVAILABLE)
    NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE) NAME(CL_OUT_OF_RESOURCES) NAME(CL_OUT_OF_HOST_MEMORY)
    NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET) NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    NAME(CL_BUILD_PROGRAM_FAILURE) NAME(CL_INVALID_VALUE) NAME(CL_INVALID_PLATFORM) NAME(CL_INVALID_DEVICE)
    NAME(CL_INVALID_CONTEXT) NAME(CL_INVALID_COMMAND_QUEUE) NAME(CL_INVALID_MEM_OBJECT)
    NAME(CL_INVALID_PROGRAM_EXECUTABLE) NAME(CL_INVALID_KERNEL) NAME(CL_INVALID_KERNEL_ARGS)
    NAME(CL_INVALID_ARG_INDEX) NAME(CL_INVALID_ARG_VALUE) NAME(CL_INVALID_ARG_SIZE)
    NAME(CL_INVALID_WORK_GROUP_SIZE) NAME(CL_INVALID_EVENT_WAIT_LIST) NAME(CL_INVALID_EVENT)
    NAME(CL_INVALID_OPERATION) NAME(CL_INVALID_BUFFER_SIZE) NAME(CL_INVALID_GLOBAL_WORK_SIZE)
#undef NAME
    default: return nullptr;
  }
}

std::string status(cl_int code) {
  const char *name = name_of(code);
  return name ? name : std::to_string(code);
}

[[noreturn]] void fail(const char *what, cl_int code) {
  printf("error %s: %s\n", what, status(code).c_str());
  printf("result error\n");
  fflush(stdout);
  exit(2);
}

void check(cl_int code, const char *what) {
  if (code != CL_SUCCESS) fail(what, code);
}

[[noreturn]] void usage_error(const std::string &why) {
  fprintf(stderr, "subbuffer_stencil: %s\n", why.c_str());
  fputs(kUsage, stderr);
  exit(2);
}

void on_alarm(int) {
  const char line[] = "result timeout\n";
  if (write(STDOUT_FILENO, line, sizeof line - 1) < 0) {}
  _exit(3);
}

std::string platform_name(cl_platform_id platform) {
  char name[512] = {};
  clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name - 1, name, nullptr);
  return name;
}

std::string device_name(cl_device_id device) {
  char name[512] = {};
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name - 1, name, nullptr);
  return name;
}

std::vector<cl_device_id> devices_of(cl_platform_id platform) {
  cl_uint count = 0;
  if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS) return {};
  std::vector<cl_device_id> devices(count);
  clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, devices.data(), nullptr);
  return devices;
}

unsigned long parse_number(const char *option, const char *text) {
  char *end = nullptr;
  errno = 0;
  unsigned long value = std::strtoul(text, &end, 10);
  if (!*text || *end || errno || text[0] == '-') usage_error(std::string(option) + " wants a number, not '" + text + "'");
  return value;
}

// The host's stencil step, in the kernel's order of operations.
void host_step(const std::vector<float> &in, std::vector<float> &out) {
  size_t n = in.size();
  for (size_t g = 0; g < n; g++)
    out[g] = (g == 0 || g == n - 1) ? in[g] : 0.25f * in[g - 1] + 0.5f * in[g] + 0.25f * in[g + 1];
}

uint64_t fnv1a(const void *data, size_t bytes) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint64_t hash = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; i++) hash = (hash ^ p[i]) * 1099511628211ull;
  return hash;
}

struct Slab {
  size_t first = 0, count = 0;     // the floats it owns: [first, first + count)
  size_t in_first = 0, in_count = 0;  // its input sub-buffer: slab plus halos
  cl_command_queue queue = nullptr;
  cl_mem in[2] = {}, out[2] = {};  // [p]: sub-buffers of parent p (0: A, 1: B)
  cl_kernel kernel[2] = {};        // [p]: reads parent p, writes the other
};

}  // namespace

int main(int argc, char **argv) {
  std::string platform_substring, readback = "parent", release_order = "parents-first";
  size_t elements = 16u << 20, halo_bytes = 4096;
  unsigned long slabs_wanted = 0, iterations = 20, timeout = 600;
  for (int i = 1; i < argc; i++) {
    std::string option = argv[i];
    if (option == "-h" || option == "--help") {
      fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) usage_error(option + " needs a value (or is unknown)");
    const char *value = argv[++i];
    if (option == "--platform") platform_substring = value;
    else if (option == "--slabs") slabs_wanted = parse_number("--slabs", value);
    else if (option == "--mib") elements = parse_number("--mib", value) * (1u << 20) / sizeof(float);
    else if (option == "--elements") elements = parse_number("--elements", value);
    else if (option == "--halo") halo_bytes = parse_number("--halo", value);
    else if (option == "--iterations") iterations = parse_number("--iterations", value);
    else if (option == "--timeout") timeout = parse_number("--timeout", value);
    else if (option == "--readback") readback = value;
    else if (option == "--release-order") release_order = value;
    else usage_error("unknown option " + option);
  }
  if (readback != "slabs" && readback != "parent") usage_error("--readback is slabs or parent");
  if (release_order != "parents-first" && release_order != "children-first" && release_order != "kernels-first")
    usage_error("--release-order is parents-first, children-first or kernels-first");
  if (slabs_wanted == 1) usage_error("--slabs must be at least 2");
  if (halo_bytes == 0 || halo_bytes % sizeof(float)) usage_error("--halo must be a positive multiple of 4 bytes");
  if (elements < 2 || elements > UINT32_MAX) usage_error("the domain must have 2 to 2^32-1 elements");
  if (iterations == 0) usage_error("--iterations must be at least 1");
  signal(SIGALRM, on_alarm);
  alarm(static_cast<unsigned>(timeout));

  // The platform and its devices.
  cl_uint platform_count = 0;
  clGetPlatformIDs(0, nullptr, &platform_count);
  std::vector<cl_platform_id> platforms(platform_count);
  if (platform_count) check(clGetPlatformIDs(platform_count, platforms.data(), nullptr), "clGetPlatformIDs");
  cl_platform_id platform = nullptr;
  std::vector<cl_device_id> devices;
  for (cl_platform_id p : platforms) {
    std::vector<cl_device_id> of_p = devices_of(p);
    bool fits = platform_substring.empty() ? of_p.size() >= 2
                                           : platform_name(p).find(platform_substring) != std::string::npos;
    if (fits) {
      platform = p;
      devices = of_p;
      break;
    }
  }
  if (!platform && platform_substring.empty() && slabs_wanted >= 2) {
    for (cl_platform_id p : platforms) {
      devices = devices_of(p);
      if (!devices.empty()) {
        platform = p;
        break;
      }
    }
  }
  if (!platform || devices.empty()) {
    printf("error no platform %s\nresult error\n",
           platform_substring.empty() ? "with 2 devices (use --slabs to split over fewer)"
                                      : ("named like '" + platform_substring + "' with a device").c_str());
    return 2;
  }
  size_t slab_count = slabs_wanted ? slabs_wanted : devices.size();
  if (slab_count < 2) {
    printf("error the platform has %zu device; use --slabs 2 or more\nresult error\n", devices.size());
    return 2;
  }
  size_t used_devices = std::min(slab_count, devices.size());
  devices.resize(used_devices);
  printf("platform %s\n", platform_name(platform).c_str());
  printf("devices %zu\n", used_devices);
  for (size_t d = 0; d < used_devices; d++) printf("device %zu %s\n", d, device_name(devices[d]).c_str());

  // Slab boundaries fall on the strictest sub-buffer alignment of the devices; so must the halo.
  size_t align_bytes = sizeof(float);
  for (cl_device_id device : devices) {
    cl_uint bits = 0;
    check(clGetDeviceInfo(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, nullptr),
          "clGetDeviceInfo(CL_DEVICE_MEM_BASE_ADDR_ALIGN)");
    align_bytes = std::max<size_t>(align_bytes, bits / 8);
  }
  if (halo_bytes % align_bytes)
    usage_error("--halo " + std::to_string(halo_bytes) + " is not a multiple of the devices' sub-buffer alignment (" +
                std::to_string(align_bytes) + " bytes)");
  const size_t unit = align_bytes / sizeof(float), halo = halo_bytes / sizeof(float);
  const size_t n = elements, bytes = n * sizeof(float);
  std::vector<Slab> slabs(slab_count);
  size_t per_slab = n / slab_count / unit * unit;
  if (per_slab < halo) {
    printf("error %zu elements in %zu slabs leave fewer than the halo's %zu per slab\nresult error\n", n, slab_count, halo);
    return 2;
  }
  for (size_t s = 0; s < slab_count; s++) {
    Slab &slab = slabs[s];
    slab.first = s * per_slab;
    slab.count = s + 1 == slab_count ? n - slab.first : per_slab;
    size_t left = s > 0 ? halo : 0, right = s + 1 < slab_count ? halo : 0;
    slab.in_first = slab.first - left;
    slab.in_count = slab.count + left + right;
  }
  printf("slabs %zu\n", slab_count);
  for (size_t s = 0; s < slab_count; s++)
    printf("slab %zu device %zu first %zu elements %zu input_first %zu input_elements %zu\n", s, s % used_devices,
           slabs[s].first, slabs[s].count, slabs[s].in_first, slabs[s].in_count);
  printf("elements %zu\n", n);
  printf("parent_bytes %zu\n", bytes);
  printf("halo_bytes %zu\n", halo_bytes);
  printf("iterations %lu\n", iterations);
  printf("readback %s\n", readback.c_str());
  printf("release_order %s\n", release_order.c_str());
  fflush(stdout);

  // Context, queues, program.
  cl_int err;
  cl_context context = clCreateContext(nullptr, static_cast<cl_uint>(used_devices), devices.data(), nullptr, nullptr, &err);
  check(err, "clCreateContext");
  for (size_t s = 0; s < slab_count; s++) {
    slabs[s].queue = clCreateCommandQueue(context, devices[s % used_devices], 0, &err);
    check(err, "clCreateCommandQueue");
  }
  cl_program program = clCreateProgramWithSource(context, 1, &kSource, nullptr, &err);
  check(err, "clCreateProgramWithSource");
  err = clBuildProgram(program, static_cast<cl_uint>(used_devices), devices.data(), "", nullptr, nullptr);
  if (err != CL_SUCCESS) {
    size_t size = 0;
    clGetProgramBuildInfo(program, devices[0], CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
    std::string log(size, '\0');
    clGetProgramBuildInfo(program, devices[0], CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
    fprintf(stderr, "build log:\n%s\n", log.c_str());
    fail("clBuildProgram", err);
  }

  // Parents, sub-buffers and one kernel per slab and direction, its arguments set once.
  cl_mem parent[2];
  for (cl_mem &p : parent) {
    p = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, nullptr, &err);
    check(err, "clCreateBuffer");
  }
  for (Slab &slab : slabs) {
    for (int p = 0; p < 2; p++) {
      cl_buffer_region in_region = {slab.in_first * sizeof(float), slab.in_count * sizeof(float)};
      slab.in[p] = clCreateSubBuffer(parent[p], CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &in_region, &err);
      check(err, "clCreateSubBuffer(input)");
      cl_buffer_region out_region = {slab.first * sizeof(float), slab.count * sizeof(float)};
      slab.out[p] = clCreateSubBuffer(parent[p], CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &out_region, &err);
      check(err, "clCreateSubBuffer(output)");
    }
    for (int p = 0; p < 2; p++) {
      cl_kernel kernel = slab.kernel[p] = clCreateKernel(program, "stencil", &err);
      check(err, "clCreateKernel");
      cl_uint in_offset = static_cast<cl_uint>(slab.first - slab.in_first), count = static_cast<cl_uint>(slab.count),
              first = static_cast<cl_uint>(slab.first), total = static_cast<cl_uint>(n);
      check(clSetKernelArg(kernel, 0, sizeof(cl_mem), &slab.in[p]), "clSetKernelArg(in)");
      check(clSetKernelArg(kernel, 1, sizeof(cl_mem), &slab.out[1 - p]), "clSetKernelArg(out)");
      check(clSetKernelArg(kernel, 2, sizeof in_offset, &in_offset), "clSetKernelArg(in_offset)");
      check(clSetKernelArg(kernel, 3, sizeof count, &count), "clSetKernelArg(count)");
      check(clSetKernelArg(kernel, 4, sizeof first, &first), "clSetKernelArg(first)");
      check(clSetKernelArg(kernel, 5, sizeof total, &total), "clSetKernelArg(n)");
    }
  }

  // The initial state, written into A through the first queue.
  std::vector<float> initial(n);
  for (size_t i = 0; i < n; i++) initial[i] = static_cast<float>((static_cast<uint32_t>(i) * 2654435761u) >> 22);
  check(clEnqueueWriteBuffer(slabs[0].queue, parent[0], CL_TRUE, 0, bytes, initial.data(), 0, nullptr, nullptr),
        "clEnqueueWriteBuffer");

  // The iterations: neighbour events only.
  auto start = std::chrono::steady_clock::now(), first_done = start;
  std::vector<cl_event> previous(slab_count, nullptr), current(slab_count, nullptr);
  for (unsigned long t = 0; t < iterations; t++) {
    if (t == 1) {
      check(clWaitForEvents(static_cast<cl_uint>(slab_count), previous.data()), "clWaitForEvents");
      first_done = std::chrono::steady_clock::now();
    }
    int source = t % 2;
    for (size_t s = 0; s < slab_count; s++) {
      std::vector<cl_event> wait;
      if (t > 0)
        for (size_t k = s > 0 ? s - 1 : 0; k <= s + 1 && k < slab_count; k++) wait.push_back(previous[k]);
      size_t global = slabs[s].count;
      check(clEnqueueNDRangeKernel(slabs[s].queue, slabs[s].kernel[source], 1, nullptr, &global, nullptr,
                                   static_cast<cl_uint>(wait.size()), wait.empty() ? nullptr : wait.data(), &current[s]),
            "clEnqueueNDRangeKernel");
    }
    for (Slab &slab : slabs) check(clFlush(slab.queue), "clFlush");
    for (cl_event &event : previous)
      if (event) check(clReleaseEvent(event), "clReleaseEvent");
    previous.swap(current);
  }
  check(clWaitForEvents(static_cast<cl_uint>(slab_count), previous.data()), "clWaitForEvents");
  auto end = std::chrono::steady_clock::now();
  double seconds = std::chrono::duration<double>(end - start).count();
  double first_seconds = std::chrono::duration<double>(first_done - start).count();
  for (cl_event event : previous) {
    cl_int execution = CL_COMPLETE;
    check(clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof execution, &execution, nullptr), "clGetEventInfo");
    if (execution != CL_COMPLETE) fail("a last kernel's execution status", execution);
  }

  // Read the result back.
  const int result_parent = iterations % 2;
  std::vector<float> got(n, std::nanf(""));
  if (readback == "parent") {
    check(clEnqueueReadBuffer(slabs[0].queue, parent[result_parent], CL_TRUE, 0, bytes, got.data(),
                              static_cast<cl_uint>(slab_count), previous.data(), nullptr),
          "clEnqueueReadBuffer(parent)");
  } else {
    for (size_t s = 0; s < slab_count; s++)
      check(clEnqueueReadBuffer(slabs[s].queue, slabs[s].out[result_parent], CL_FALSE, 0, slabs[s].count * sizeof(float),
                                got.data() + slabs[s].first, 1, &previous[s], nullptr),
            "clEnqueueReadBuffer(slab)");
    for (Slab &slab : slabs) check(clFinish(slab.queue), "clFinish");
  }
  for (cl_event event : previous) check(clReleaseEvent(event), "clReleaseEvent");

  // The same on the host.
  std::vector<float> expected = initial, scratch(n);
  for (unsigned long t = 0; t < iterations; t++) {
    host_step(expected, scratch);
    expected.swap(scratch);
  }
  double max_abs = 0, max_rel = 0;
  size_t mismatches = 0, first_bad = n;
  for (size_t i = 0; i < n; i++) {
    double want = expected[i], have = got[i];
    double abs_error = std::fabs(have - want), rel_error = abs_error / std::max(std::fabs(want), 1e-30);
    if (std::isnan(have)) abs_error = rel_error = INFINITY;
    max_abs = std::max(max_abs, abs_error);
    max_rel = std::max(max_rel, rel_error);
    if (!(rel_error <= 1e-5)) {
      if (first_bad == n) first_bad = i;
      mismatches++;
    }
  }
  bool ok = mismatches == 0;
  printf("seconds_per_iteration %.6f\n", seconds / iterations);
  if (iterations > 1) {
    printf("seconds_first_iteration %.6f\n", first_seconds);
    printf("seconds_per_iteration_after_first %.6f\n", (seconds - first_seconds) / (iterations - 1));
  }
  printf("max_abs_error %.9g\n", max_abs);
  printf("max_rel_error %.9g\n", max_rel);
  printf("mismatches %zu\n", mismatches);
  if (!ok) {
    size_t s = 0;
    while (s + 1 < slab_count && slabs[s + 1].first <= first_bad) s++;
    printf("first_mismatch %zu slab %zu offset_in_slab %zu expected %.9g got %.9g\n", first_bad, s,
           first_bad - slabs[s].first, expected[first_bad], got[first_bad]);
  }
  printf("result_fnv1a %016llx\n", static_cast<unsigned long long>(fnv1a(got.data(), bytes)));
  printf("result %s\n", ok ? "ok" : "mismatch");
  fflush(stdout);

  // Release everything, in the order asked for.
  auto release_parents = [&] {
    for (cl_mem p : parent) check(clReleaseMemObject(p), "clReleaseMemObject(parent)");
  };
  auto release_children = [&] {
    for (Slab &slab : slabs)
      for (int p = 0; p < 2; p++) {
        check(clReleaseMemObject(slab.in[p]), "clReleaseMemObject(input sub-buffer)");
        check(clReleaseMemObject(slab.out[p]), "clReleaseMemObject(output sub-buffer)");
      }
  };
  auto release_kernels = [&] {
    for (Slab &slab : slabs)
      for (cl_kernel kernel : slab.kernel) check(clReleaseKernel(kernel), "clReleaseKernel");
    check(clReleaseProgram(program), "clReleaseProgram");
  };
  if (release_order == "kernels-first") release_kernels();
  if (release_order == "children-first") release_children();
  release_parents();
  if (release_order == "parents-first") release_children();
  if (release_order != "kernels-first") release_kernels();
  else release_children();
  for (Slab &slab : slabs) check(clReleaseCommandQueue(slab.queue), "clReleaseCommandQueue");
  check(clReleaseContext(context), "clReleaseContext");
  alarm(0);
  printf("released %s\n", release_order.c_str());
  return ok ? 0 : 1;
}
