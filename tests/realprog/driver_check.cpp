// driver_check: conformance-style checks of an OpenCL platform's behaviour, printed one per line
// ("section.check: result"), so that the same run on a backend used directly and through fedcl can
// be compared line by line (driver_check.sh does that). It prints nothing that differs between two
// correct drivers of one device: no device names, pointers or timings.
//
//   driver_check PLATFORM_SUBSTRING     (the first platform whose name contains it, first device)
//
// Each section runs under an alarm: a hang prints "SECTION: TIMEOUT" and exits with status 3.
#include <CL/cl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

cl_platform_id g_platform;
cl_device_id g_device;
cl_context g_context;
cl_command_queue g_queue;
const char *g_section = "start";
bool g_images;

void on_alarm(int) {
  char line[128];
  int n = snprintf(line, sizeof line, "%s: TIMEOUT\n", g_section);
  if (write(STDOUT_FILENO, line, n) < 0) {}
  _exit(3);
}

void section(const char *name, unsigned seconds = 60) {
  g_section = name;
  alarm(seconds);
}

void line(const char *check, const std::string &result) {
  printf("%s.%s: %s\n", g_section, check, result.c_str());
  fflush(stdout);
}

const char *name_of(cl_int code) {
  switch (code) {
#define NAME(c) \
  case c: return #c;
    NAME(CL_SUCCESS) NAME(CL_DEVICE_NOT_FOUND) NAME(CL_DEVICE_NOT_AVAILABLE) NAME(CL_COMPILER_NOT_AVAILABLE)
    NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE) NAME(CL_OUT_OF_RESOURCES) NAME(CL_OUT_OF_HOST_MEMORY)
    NAME(CL_PROFILING_INFO_NOT_AVAILABLE) NAME(CL_MEM_COPY_OVERLAP) NAME(CL_IMAGE_FORMAT_MISMATCH)
    NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED) NAME(CL_BUILD_PROGRAM_FAILURE) NAME(CL_MAP_FAILURE)
    NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET) NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    NAME(CL_COMPILE_PROGRAM_FAILURE) NAME(CL_LINKER_NOT_AVAILABLE) NAME(CL_LINK_PROGRAM_FAILURE)
    NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) NAME(CL_INVALID_VALUE) NAME(CL_INVALID_DEVICE_TYPE)
    NAME(CL_INVALID_PLATFORM) NAME(CL_INVALID_DEVICE) NAME(CL_INVALID_CONTEXT) NAME(CL_INVALID_QUEUE_PROPERTIES)
    NAME(CL_INVALID_COMMAND_QUEUE) NAME(CL_INVALID_HOST_PTR) NAME(CL_INVALID_MEM_OBJECT)
    NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) NAME(CL_INVALID_IMAGE_SIZE) NAME(CL_INVALID_SAMPLER)
    NAME(CL_INVALID_BINARY) NAME(CL_INVALID_BUILD_OPTIONS) NAME(CL_INVALID_PROGRAM)
    NAME(CL_INVALID_PROGRAM_EXECUTABLE) NAME(CL_INVALID_KERNEL_NAME) NAME(CL_INVALID_KERNEL_DEFINITION)
    NAME(CL_INVALID_KERNEL) NAME(CL_INVALID_ARG_INDEX) NAME(CL_INVALID_ARG_VALUE) NAME(CL_INVALID_ARG_SIZE)
    NAME(CL_INVALID_KERNEL_ARGS) NAME(CL_INVALID_WORK_DIMENSION) NAME(CL_INVALID_WORK_GROUP_SIZE)
    NAME(CL_INVALID_WORK_ITEM_SIZE) NAME(CL_INVALID_GLOBAL_OFFSET) NAME(CL_INVALID_EVENT_WAIT_LIST)
    NAME(CL_INVALID_EVENT) NAME(CL_INVALID_OPERATION) NAME(CL_INVALID_BUFFER_SIZE)
    NAME(CL_INVALID_GLOBAL_WORK_SIZE) NAME(CL_INVALID_PROPERTY) NAME(CL_INVALID_IMAGE_DESCRIPTOR)
    NAME(CL_INVALID_COMPILER_OPTIONS) NAME(CL_INVALID_LINKER_OPTIONS) NAME(CL_INVALID_DEVICE_PARTITION_COUNT)
    NAME(CL_INVALID_MIP_LEVEL) NAME(CL_INVALID_PIPE_SIZE) NAME(CL_INVALID_DEVICE_QUEUE)
    NAME(CL_INVALID_SPEC_ID) NAME(CL_MAX_SIZE_RESTRICTION_EXCEEDED)
#undef NAME
    default: return nullptr;
  }
}

std::string status(cl_int code) {
  const char *name = name_of(code);
  return name ? name : std::to_string(code);
}

void result(const char *check, cl_int code) { line(check, status(code)); }

cl_program build(const std::string &source, const char *options, cl_int *build_status) {
  const char *text = source.c_str();
  cl_int err;
  cl_program program = clCreateProgramWithSource(g_context, 1, &text, nullptr, &err);
  if (!program) {
    *build_status = err;
    return nullptr;
  }
  *build_status = clBuildProgram(program, 1, &g_device, options, nullptr, nullptr);
  return program;
}

// text with line breaks and other control characters escaped, to fit on one line.
std::string printable(const std::string &text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 32 && c < 127) out += static_cast<char>(c);
    else {
      char escaped[8];
      snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  return out;
}

std::string build_log(cl_program program) {
  size_t size = 0;
  clGetProgramBuildInfo(program, g_device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  clGetProgramBuildInfo(program, g_device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  return log.c_str();
}

cl_mem buffer(cl_mem_flags flags, size_t size, void *host = nullptr) {
  cl_int err;
  cl_mem mem = clCreateBuffer(g_context, flags, size, host, &err);
  if (!mem) fprintf(stderr, "clCreateBuffer failed: %s\n", status(err).c_str());
  return mem;
}

// Checks a backend is known to crash on (it aborts the whole run) are skipped on that backend, and
// through fedcl on the same device, so that both print the same line. The device's version string
// names the backend ("OpenCL 3.0 PoCL 3.1 ...") and reads the same through fedcl.
bool backend_crashes(const char *backend) {
  char version[256] = {};
  clGetDeviceInfo(g_device, CL_DEVICE_VERSION, sizeof version - 1, version, nullptr);
  return strstr(version, backend) != nullptr;
}

void skipped(const char *check, const char *why) { line(check, std::string("skipped: ") + why); }

bool device_version_at_least(int major, int minor) {
  char version[256] = {};
  clGetDeviceInfo(g_device, CL_DEVICE_VERSION, sizeof version - 1, version, nullptr);
  int M = 0, m = 0;
  sscanf(version, "OpenCL %d.%d", &M, &m);
  return M > major || (M == major && m >= minor);
}

// ---------------------------------------------------------------------------------------------

// Kernel names of every length: nothing may cut them at a fixed size.
void check_names() {
  section("names");
  // NVIDIA's own OpenCL aborts listing kernels with names past about 260 characters:
  // DRIVER_CHECK_NAME_LIMIT=257 keeps a comparison against it running (fedcl handles them).
  const char *limit = getenv("DRIVER_CHECK_NAME_LIMIT");
  for (size_t length : {8, 200, 1023, 1024, 1025, 2000, 5000}) {
    if (limit && *limit && length > std::strtoul(limit, nullptr, 10)) continue;
    std::string name = "k" + std::string(length - 1, 'n');
    std::string source = "kernel void " + name + "(global int *x) { x[get_global_id(0)] = " +
                         std::to_string(length) + "; }\nkernel void short_one(global int *x) { x[0] = 1; }\n";
    std::string prefix = std::to_string(length);
    cl_int err;
    cl_program program = build(source, "", &err);
    result((prefix + ".build").c_str(), err);
    if (err != CL_SUCCESS) {
      if (program) clReleaseProgram(program);
      continue;
    }
    size_t names_size = 0;
    clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &names_size);
    std::string names(names_size, '\0');
    clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, names_size, names.data(), nullptr);
    line((prefix + ".kernel_names_size").c_str(), std::to_string(names_size));
    line((prefix + ".kernel_names_has_it").c_str(), names.find(name) != std::string::npos ? "yes" : "no");
    cl_kernel kernel = clCreateKernel(program, name.c_str(), &err);
    result((prefix + ".create_kernel").c_str(), err);
    if (kernel) {
      size_t size = 0;
      clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &size);
      std::string got(size, '\0');
      clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, size, got.data(), nullptr);
      line((prefix + ".function_name_size").c_str(), std::to_string(size));
      line((prefix + ".function_name_equal").c_str(), got.c_str() == name ? "yes" : "no");
      char small[16];
      result((prefix + ".function_name_too_small").c_str(),
             clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, sizeof small, small, nullptr));
    }
    // PoCL 3.1 itself crashes running kernels whose names are longer than its cache's file names allow.
    if (kernel && length <= 200) {
      cl_mem out = buffer(CL_MEM_READ_WRITE, sizeof(int));
      clSetKernelArg(kernel, 0, sizeof out, &out);
      size_t one = 1;
      result((prefix + ".run").c_str(), clEnqueueNDRangeKernel(g_queue, kernel, 1, nullptr, &one, &one, 0, nullptr, nullptr));
      int value = 0;
      result((prefix + ".read").c_str(), clEnqueueReadBuffer(g_queue, out, CL_TRUE, 0, sizeof value, &value, 0, nullptr, nullptr));
      line((prefix + ".value").c_str(), std::to_string(value));
      clReleaseMemObject(out);
    }
    if (kernel) clReleaseKernel(kernel);
    cl_uint count = 0;
    cl_kernel all[4];
    result((prefix + ".create_kernels_in_program").c_str(), clCreateKernelsInProgram(program, 4, all, &count));
    line((prefix + ".kernel_count").c_str(), std::to_string(count));
    for (cl_uint k = 0; k < count && k < 4; k++) clReleaseKernel(all[k]);
    clReleaseProgram(program);
  }
}

// What builds on the backend builds through the driver, with the same status and log.
void check_builds() {
  section("builds", 120);
  struct Case {
    const char *name, *source, *options;
  } cases[] = {
      {"no_args", "void kernel test(){}", ""},
      {"no_args_spaced", "__kernel void test(void) { }\n", ""},
      {"no_args_with_arg_info", "void kernel test(){}", "-cl-kernel-arg-info"},
      {"mixed", "void kernel a(){}\nkernel void b(global float *x, float y) { x[0] = y; }\n", ""},
      {"options", "kernel void f(global float *x) { x[0] = VALUE; }", "-DVALUE=2.5f -cl-fast-relaxed-math"},
      {"syntax_error", "kernel void f(global float *x) { x[0] = ; }", ""},
      {"bad_option", "kernel void f(global float *x) { }", "-cl-no-such-option"},
  };
  for (const Case &c : cases) {
    cl_int err;
    cl_program program = build(c.source, c.options, &err);
    std::string prefix = c.name;
    result((prefix + ".build").c_str(), err);
    if (!program) continue;
    cl_build_status build_status = 0;
    clGetProgramBuildInfo(program, g_device, CL_PROGRAM_BUILD_STATUS, sizeof build_status, &build_status, nullptr);
    line((prefix + ".status").c_str(), std::to_string(build_status));
    std::string log = build_log(program);
    line((prefix + ".log_empty").c_str(), log.find_first_not_of(" \n\t") == std::string::npos ? "yes" : "no");
    if (err == CL_SUCCESS) line((prefix + ".log").c_str(), printable(log.substr(0, 120)));
    size_t options_size = 0;
    clGetProgramBuildInfo(program, g_device, CL_PROGRAM_BUILD_OPTIONS, 0, nullptr, &options_size);
    std::string options(options_size, '\0');
    clGetProgramBuildInfo(program, g_device, CL_PROGRAM_BUILD_OPTIONS, options_size, options.data(), nullptr);
    line((prefix + ".options").c_str(), "'" + std::string(options.c_str()) + "'");
    if (err == CL_SUCCESS) {
      cl_uint count = 0;
      clCreateKernelsInProgram(program, 0, nullptr, &count);
      line((prefix + ".kernels").c_str(), std::to_string(count));
      std::vector<cl_kernel> kernels(count);
      clCreateKernelsInProgram(program, count, kernels.data(), nullptr);
      for (cl_kernel kernel : kernels) {
        cl_uint nargs = 0;
        clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, nullptr);
        cl_kernel_arg_address_qualifier address = 0;
        cl_int info = nargs ? clGetKernelArgInfo(kernel, 0, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof address, &address, nullptr)
                            : CL_SUCCESS;
        char type[64] = {};
        cl_int type_info = nargs ? clGetKernelArgInfo(kernel, 0, CL_KERNEL_ARG_TYPE_NAME, sizeof type - 1, type, nullptr)
                                 : CL_SUCCESS;
        line((prefix + ".kernel_args").c_str(), std::to_string(nargs) + " address " + status(info) + " type " + status(type_info) +
                                                    (type_info == CL_SUCCESS && nargs ? std::string(" ") + type : ""));
        if (nargs == 0) {
          size_t one = 1;
          result((prefix + ".run").c_str(), clEnqueueNDRangeKernel(g_queue, kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr));
          result((prefix + ".finish").c_str(), clFinish(g_queue));
        }
        clReleaseKernel(kernel);
      }
    }
    clReleaseProgram(program);
  }

  // Built in several steps: compile with a header, then link.
  const char *header = "#define SCALE 3\nint helper(int x);\n";
  const char *lib = "#include \"scale.h\"\nint helper(int x) { return x * SCALE; }\n";
  const char *main_source = "#include \"scale.h\"\nkernel void use(global int *x) { x[0] = helper(x[0]); }\nvoid kernel empty(){}\n";
  cl_int err;
  cl_program header_program = clCreateProgramWithSource(g_context, 1, &header, nullptr, &err);
  cl_program lib_program = clCreateProgramWithSource(g_context, 1, &lib, nullptr, &err);
  cl_program main_program = clCreateProgramWithSource(g_context, 1, &main_source, nullptr, &err);
  const char *header_name = "scale.h";
  result("compile.lib", clCompileProgram(lib_program, 1, &g_device, "", 1, &header_program, &header_name, nullptr, nullptr));
  result("compile.main", clCompileProgram(main_program, 1, &g_device, "", 1, &header_program, &header_name, nullptr, nullptr));
  cl_program inputs[] = {lib_program, main_program};
  cl_program linked = clLinkProgram(g_context, 1, &g_device, "", 2, inputs, nullptr, nullptr, &err);
  result("link", err);
  if (linked) {
    cl_kernel kernel = clCreateKernel(linked, "use", &err);
    result("link.create_kernel", err);
    if (kernel) {
      int value = 7;
      cl_mem x = buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof value, &value);
      clSetKernelArg(kernel, 0, sizeof x, &x);
      size_t one = 1;
      result("link.run", clEnqueueNDRangeKernel(g_queue, kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr));
      clEnqueueReadBuffer(g_queue, x, CL_TRUE, 0, sizeof value, &value, 0, nullptr, nullptr);
      line("link.value", std::to_string(value));
      clReleaseMemObject(x);
      clReleaseKernel(kernel);
    }
    cl_kernel empty = clCreateKernel(linked, "empty", &err);
    result("link.create_empty", err);
    if (empty) clReleaseKernel(empty);
    clReleaseProgram(linked);
  }
  clReleaseProgram(main_program);
  clReleaseProgram(lib_program);
  clReleaseProgram(header_program);
}

// Many commands of one out-of-order queue linked by a web of events: each adds atomically, so the
// sum is known whatever order the queue picks; markers and barriers with and without wait lists.
void out_of_order_web(cl_command_queue queue, cl_program program, const char *prefix) {
  cl_int err;
  cl_kernel kernel = clCreateKernel(program, "web_add", &err);
  cl_mem x = buffer(CL_MEM_READ_WRITE, 64 * sizeof(int));
  int zero = 0;
  clEnqueueFillBuffer(queue, x, &zero, sizeof zero, 0, 64 * sizeof(int), 0, nullptr, nullptr);
  clFinish(queue);
  clSetKernelArg(kernel, 0, sizeof x, &x);
  std::vector<cl_event> events;
  unsigned seed = 12345, expected = 0;
  cl_int failures = 0;
  size_t n = 64;
  for (int i = 1; i <= 300; i++) {
    seed = seed * 1103515245 + 12345;
    std::vector<cl_event> wait;
    for (unsigned d = 0; d < (seed >> 16) % 4 && !events.empty(); d++) {
      cl_event pick = events[(seed >> (d * 4 + 3)) % events.size()];
      // PoCL 3.1 crashes on an event listed twice.
      if (std::find(wait.begin(), wait.end(), pick) == wait.end()) wait.push_back(pick);
    }
    cl_event event;
    if (i % 25 == 0) {
      failures |= clEnqueueBarrierWithWaitList(queue, wait.size(), wait.empty() ? nullptr : wait.data(), &event);
    } else if (i % 10 == 0) {
      failures |= clEnqueueMarkerWithWaitList(queue, wait.size(), wait.empty() ? nullptr : wait.data(), &event);
    } else {
      clSetKernelArg(kernel, 1, sizeof i, &i);
      failures |= clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &n, nullptr, wait.size(), wait.empty() ? nullptr : wait.data(), &event);
      expected += i;
    }
    events.push_back(event);
    if (getenv("DRIVER_CHECK_TRACE")) fprintf(stderr, "web %d: %zu waits\n", i, wait.size());
    if (i % 100 == 0) failures |= clWaitForEvents(3, &events[events.size() - 3]);
  }
  result((std::string(prefix) + ".enqueues").c_str(), failures);
  result((std::string(prefix) + ".finish").c_str(), clFinish(queue));
  cl_int statuses = 0;
  for (cl_event event : events) {
    cl_int status = 0;
    clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    statuses |= status;
    clReleaseEvent(event);
  }
  line((std::string(prefix) + ".all_complete").c_str(), statuses == CL_COMPLETE ? "yes" : "no");
  std::vector<unsigned> out(64);
  clEnqueueReadBuffer(queue, x, CL_TRUE, 0, 64 * sizeof(int), out.data(), 0, nullptr, nullptr);
  bool right = true;
  for (unsigned v : out) right &= v == expected;
  line((std::string(prefix) + ".sum").c_str(), right ? "right" : "wrong");
  clReleaseMemObject(x);
  clReleaseKernel(kernel);
}

// The first command of a fresh out-of-order queue waits for a user event that is set only after
// many more commands, a marker and a barrier were enqueued behind it.
void gated_first() {
  cl_int err;
  cl_command_queue queue = clCreateCommandQueue(g_context, g_device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &err);
  cl_program program = build("kernel void inc(global int *x) { atomic_inc(&x[get_global_id(0)]); }", "", &err);
  cl_kernel kernel = clCreateKernel(program, "inc", &err);
  cl_mem x = buffer(CL_MEM_READ_WRITE, 16 * sizeof(int));
  int zero = 0;
  clEnqueueFillBuffer(queue, x, &zero, sizeof zero, 0, 16 * sizeof(int), 0, nullptr, nullptr);
  clFinish(queue);
  clSetKernelArg(kernel, 0, sizeof x, &x);
  cl_event user = clCreateUserEvent(g_context, &err), first, previous;
  size_t n = 16;
  cl_int failures = clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &n, nullptr, 1, &user, &first);
  clFlush(queue);
  previous = first;
  for (int i = 0; i < 20; i++) {
    cl_event next;
    failures |= clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &n, nullptr, i % 2, i % 2 ? &previous : nullptr, &next);
    if (previous != first) clReleaseEvent(previous);
    previous = next;
  }
  cl_event marker, barrier;
  failures |= clEnqueueMarkerWithWaitList(queue, 1, &first, &marker);
  failures |= clEnqueueBarrierWithWaitList(queue, 0, nullptr, &barrier);
  clFlush(queue);
  result("gated_first.enqueues", failures);
  result("gated_first.set_user", clSetUserEventStatus(user, CL_COMPLETE));
  result("gated_first.wait", clWaitForEvents(1, &barrier));
  result("gated_first.finish", clFinish(queue));
  int out[16];
  clEnqueueReadBuffer(queue, x, CL_TRUE, 0, sizeof out, out, 0, nullptr, nullptr);
  line("gated_first.value", std::to_string(out[0]) + " " + std::to_string(out[15]));
  for (cl_event e : {user, first, previous, marker, barrier}) clReleaseEvent(e);
  clReleaseMemObject(x);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseCommandQueue(queue);
}

// One out-of-order queue whose commands wait on each other: wait lists, markers, barriers, user events.
void check_out_of_order() {
  section("ooo");
  cl_command_queue_properties props = 0;
  clGetDeviceInfo(g_device, CL_DEVICE_QUEUE_PROPERTIES, sizeof props, &props, nullptr);
  if (!(props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)) {
    line("supported", "no");
    return;
  }
  cl_int err;
  for (cl_command_queue_properties extra : {cl_command_queue_properties(0), cl_command_queue_properties(CL_QUEUE_PROFILING_ENABLE)}) {
    cl_command_queue queue = clCreateCommandQueue(g_context, g_device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | extra, &err);
    cl_program program = build("kernel void web_add(global int *x, int v) { atomic_add(&x[get_global_id(0)], v); }", "", &err);
    out_of_order_web(queue, program, extra ? "web_profiling" : "web");
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
  }
  gated_first();
  cl_command_queue queue = clCreateCommandQueue(g_context, g_device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE, &err);
  result("create", err);
  const char *source =
      "kernel void add(global int *x, int v) { x[get_global_id(0)] += v; }\n"
      "kernel void mul(global int *x, int v) { x[get_global_id(0)] *= v; }\n";
  cl_program program = build(source, "", &err);
  cl_kernel add = clCreateKernel(program, "add", &err), mul = clCreateKernel(program, "mul", &err);
  const size_t n = 1024;
  std::vector<int> host(n, 1);
  cl_mem x = buffer(CL_MEM_READ_WRITE, n * sizeof(int));
  cl_event written, added, multiplied, marker, barrier_event, gated;
  result("write", clEnqueueWriteBuffer(queue, x, CL_FALSE, 0, n * sizeof(int), host.data(), 0, nullptr, &written));
  int two = 2, three = 3, five = 5;
  clSetKernelArg(add, 0, sizeof x, &x);
  clSetKernelArg(add, 1, sizeof two, &two);
  result("add", clEnqueueNDRangeKernel(queue, add, 1, nullptr, &n, nullptr, 1, &written, &added));  // 3
  clSetKernelArg(mul, 0, sizeof x, &x);
  clSetKernelArg(mul, 1, sizeof three, &three);
  result("mul", clEnqueueNDRangeKernel(queue, mul, 1, nullptr, &n, nullptr, 1, &added, &multiplied));  // 9
  result("marker", clEnqueueMarkerWithWaitList(queue, 1, &multiplied, &marker));
  result("barrier", clEnqueueBarrierWithWaitList(queue, 0, nullptr, &barrier_event));
  cl_event user = clCreateUserEvent(g_context, &err);
  result("user_event", err);
  cl_event gate[] = {marker, user};
  clSetKernelArg(add, 1, sizeof five, &five);
  result("gated_add", clEnqueueNDRangeKernel(queue, add, 1, nullptr, &n, nullptr, 2, gate, &gated));  // 14
  clFlush(queue);
  cl_int gated_status = 0;
  clGetEventInfo(gated, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof gated_status, &gated_status, nullptr);
  line("gated_before_user", gated_status == CL_COMPLETE ? "complete" : "not complete");
  result("set_user", clSetUserEventStatus(user, CL_COMPLETE));
  std::vector<int> out(n, 0);
  cl_event read;
  result("read", clEnqueueReadBuffer(queue, x, CL_FALSE, 0, n * sizeof(int), out.data(), 1, &gated, &read));
  result("wait", clWaitForEvents(1, &read));
  result("finish", clFinish(queue));
  bool right = true;
  for (int v : out) right &= v == 14;
  line("values", right ? "right" : "wrong " + std::to_string(out[0]));
  // A second user event that fails: what waits on it fails, what does not completes.
  cl_event failing = clCreateUserEvent(g_context, &err), doomed, independent;
  result("doomed", clEnqueueNDRangeKernel(queue, add, 1, nullptr, &n, nullptr, 1, &failing, &doomed));
  result("independent", clEnqueueMarkerWithWaitList(queue, 1, &read, &independent));
  result("fail_user", clSetUserEventStatus(failing, -1234));
  result("wait_independent", clWaitForEvents(1, &independent));
  result("wait_doomed", clWaitForEvents(1, &doomed));
  cl_int doomed_status = 0;
  clGetEventInfo(doomed, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof doomed_status, &doomed_status, nullptr);
  line("doomed_status", doomed_status < 0 ? "failed" : std::to_string(doomed_status));
  clFinish(queue);
  // Another failing user event: a barrier follows every command before it, a command after the
  // barrier follows the barrier, a command of other memory before the barrier follows nothing (each
  // command has a buffer of its own: PoCL also orders the commands that use one buffer).
  cl_mem y = buffer(CL_MEM_READ_WRITE, n * sizeof(int)), z = buffer(CL_MEM_READ_WRITE, n * sizeof(int)),
         w = buffer(CL_MEM_READ_WRITE, n * sizeof(int));
  cl_event failing_again = clCreateUserEvent(g_context, &err), doomed_again, unrelated, fence, behind_fence;
  clSetKernelArg(add, 0, sizeof y, &y);
  result("doomed_again", clEnqueueNDRangeKernel(queue, add, 1, nullptr, &n, nullptr, 1, &failing_again, &doomed_again));
  clSetKernelArg(add, 0, sizeof w, &w);
  result("unrelated", clEnqueueNDRangeKernel(queue, add, 1, nullptr, &n, nullptr, 0, nullptr, &unrelated));
  result("fence", clEnqueueBarrierWithWaitList(queue, 0, nullptr, &fence));
  clSetKernelArg(add, 0, sizeof z, &z);
  result("behind_fence", clEnqueueNDRangeKernel(queue, add, 1, nullptr, &n, nullptr, 0, nullptr, &behind_fence));
  clFlush(queue);
  result("fail_user_again", clSetUserEventStatus(failing_again, -1234));
  const std::pair<const char *, cl_event> outcomes[] = {
      {"doomed_again", doomed_again}, {"unrelated", unrelated}, {"fence", fence}, {"behind_fence", behind_fence}};
  for (const auto &[name, event] : outcomes) {
    clWaitForEvents(1, &event);
    cl_int status = 0;
    clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    line((std::string(name) + "_status").c_str(), status < 0 ? "failed" : std::to_string(status));
  }
  clFinish(queue);
  for (cl_event e : {written, added, multiplied, marker, barrier_event, gated, user, read, failing, doomed, independent,
                     failing_again, doomed_again, unrelated, fence, behind_fence})
    clReleaseEvent(e);
  for (cl_mem m : {y, z, w}) clReleaseMemObject(m);
  clReleaseMemObject(x);
  clReleaseKernel(add);
  clReleaseKernel(mul);
  clReleaseProgram(program);
  clReleaseCommandQueue(queue);
}

// Image formats for every flag combination and image type, and image arrays.
void check_images() {
  section("images");
  if (!g_images) {
    line("supported", "no");
    return;
  }
  const cl_mem_flags access[] = {CL_MEM_READ_WRITE, CL_MEM_READ_ONLY, CL_MEM_WRITE_ONLY, CL_MEM_KERNEL_READ_AND_WRITE,
                                 CL_MEM_READ_WRITE | CL_MEM_KERNEL_READ_AND_WRITE};
  const cl_mem_flags extra[] = {0, CL_MEM_HOST_NO_ACCESS, CL_MEM_HOST_READ_ONLY, CL_MEM_HOST_WRITE_ONLY,
                                CL_MEM_USE_HOST_PTR, CL_MEM_ALLOC_HOST_PTR, CL_MEM_COPY_HOST_PTR};
  const cl_mem_object_type types[] = {CL_MEM_OBJECT_IMAGE1D, CL_MEM_OBJECT_IMAGE1D_BUFFER, CL_MEM_OBJECT_IMAGE1D_ARRAY,
                                      CL_MEM_OBJECT_IMAGE2D, CL_MEM_OBJECT_IMAGE2D_ARRAY, CL_MEM_OBJECT_IMAGE3D};
  for (cl_mem_flags a : access)
    for (cl_mem_flags e : extra)
      for (cl_mem_object_type t : types) {
        cl_uint count = 0;
        cl_int err = clGetSupportedImageFormats(g_context, a | e, t, 0, nullptr, &count);
        char check[96];
        snprintf(check, sizeof check, "formats.%llx.%x", (unsigned long long)(a | e), t);
        line(check, status(err) + " " + std::to_string(count));
      }
  struct Array {
    const char *name;
    cl_mem_object_type type;
    cl_image_format format;
  } arrays[] = {
      {"1d_array_rgba8", CL_MEM_OBJECT_IMAGE1D_ARRAY, {CL_RGBA, CL_UNORM_INT8}},
      {"1d_array_rgba_float", CL_MEM_OBJECT_IMAGE1D_ARRAY, {CL_RGBA, CL_FLOAT}},
      {"2d_array_rgba8", CL_MEM_OBJECT_IMAGE2D_ARRAY, {CL_RGBA, CL_UNORM_INT8}},
      {"2d_array_r_float", CL_MEM_OBJECT_IMAGE2D_ARRAY, {CL_R, CL_FLOAT}},
      {"2d_array_rgba_uint", CL_MEM_OBJECT_IMAGE2D_ARRAY, {CL_RGBA, CL_UNSIGNED_INT32}},
  };
  for (const Array &array : arrays) {
    cl_image_desc desc = {};
    desc.image_type = array.type;
    desc.image_width = 16;
    desc.image_height = array.type == CL_MEM_OBJECT_IMAGE2D_ARRAY ? 8 : 0;
    desc.image_array_size = 4;
    cl_int err;
    cl_mem image = clCreateImage(g_context, CL_MEM_READ_WRITE, &array.format, &desc, nullptr, &err);
    result(array.name, err);
    if (!image) continue;
    size_t elem = 0;
    clGetImageInfo(image, CL_IMAGE_ELEMENT_SIZE, sizeof elem, &elem, nullptr);
    size_t region[3] = {16, array.type == CL_MEM_OBJECT_IMAGE2D_ARRAY ? 8u : 4u, array.type == CL_MEM_OBJECT_IMAGE2D_ARRAY ? 4u : 1u};
    size_t bytes = elem * region[0] * region[1] * region[2], origin[3] = {};
    std::vector<unsigned char> in(bytes), out(bytes);
    for (size_t i = 0; i < bytes; i++) in[i] = static_cast<unsigned char>(i * 7 + 1);
    result((std::string(array.name) + ".write").c_str(),
           clEnqueueWriteImage(g_queue, image, CL_TRUE, origin, region, 0, 0, in.data(), 0, nullptr, nullptr));
    result((std::string(array.name) + ".read").c_str(),
           clEnqueueReadImage(g_queue, image, CL_TRUE, origin, region, 0, 0, out.data(), 0, nullptr, nullptr));
    line((std::string(array.name) + ".same").c_str(), in == out ? "yes" : "no");
    clReleaseMemObject(image);
  }
}

// Rectangular copies within one buffer.
void check_rect() {
  section("rect");
  const size_t size = 64 * 64;
  std::vector<unsigned char> host(size);
  for (size_t i = 0; i < size; i++) host[i] = static_cast<unsigned char>(i * 13 + 5);
  cl_mem mem = buffer(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, size, host.data());
  size_t src[3] = {0, 0, 0}, dst[3] = {32, 0, 0}, region[3] = {16, 8, 1};
  result("same_buffer_disjoint", clEnqueueCopyBufferRect(g_queue, mem, mem, src, dst, region, 64, 0, 64, 0, 0, nullptr, nullptr));
  size_t dst2[3] = {8, 2, 0};
  result("same_buffer_overlap", clEnqueueCopyBufferRect(g_queue, mem, mem, src, dst2, region, 64, 0, 64, 0, 0, nullptr, nullptr));
  size_t dst3[3] = {0, 16, 0};
  result("same_buffer_rows_apart", clEnqueueCopyBufferRect(g_queue, mem, mem, src, dst3, region, 64, 0, 64, 0, 0, nullptr, nullptr));
  size_t src4[3] = {4, 0, 0}, dst4[3] = {4, 0, 1}, region4[3] = {4, 4, 1};
  result("same_buffer_next_slice", clEnqueueCopyBufferRect(g_queue, mem, mem, src4, dst4, region4, 16, 256, 16, 256, 0, nullptr, nullptr));
  result("zero_pitches_overlap_check", clEnqueueCopyBufferRect(g_queue, mem, mem, src, src, region, 0, 0, 0, 0, 0, nullptr, nullptr));
  std::vector<unsigned char> out(size);
  result("read", clEnqueueReadBuffer(g_queue, mem, CL_TRUE, 0, size, out.data(), 0, nullptr, nullptr));
  std::vector<unsigned char> expect = host;
  for (size_t y = 0; y < 8; y++)
    for (size_t x = 0; x < 16; x++) expect[y * 64 + 32 + x] = host[y * 64 + x];
  for (size_t y = 0; y < 8; y++)
    for (size_t x = 0; x < 16; x++) expect[(y + 16) * 64 + x] = host[y * 64 + x];
  for (size_t y = 0; y < 4; y++)
    for (size_t x = 0; x < 4; x++) expect[256 + y * 16 + 4 + x] = expect[y * 16 + 4 + x];
  line("values", out == expect ? "right" : "wrong");
  clReleaseMemObject(mem);
}

// printf in kernels: every kind of format, printed before the line that follows the synchronisation.
void check_printf() {
  section("printf");
  const char *source = R"CLC(
constant char greeting[] = "constant string";
kernel void formats(global const float *f, global const int *i) {
  printf("ints %d %i %u %x %X %o %5d|%-5d|%05d %+d\n", i[0], i[1], (uint)i[2], i[3], i[3], i[4], i[0], i[0], i[0], i[0]);
  printf("longs %ld %lu %lx\n", (long)i[5] * 1000000007L, (ulong)i[5] * 3000000000UL, (long)i[3] << 32);
  printf("shorts %hd %hhd %hu\n", (short)i[1], (char)i[1], (ushort)i[2]);
  printf("chars %c%c%c %%\n", 'f', 'e', 'd');
  printf("floats %f %e %g %.3f %10.2f %-8.1e|\n", f[0], f[1], f[2], f[0], f[1], f[2]);
  printf("limits %e %e %g %g %f\n", FLT_MAX, FLT_MIN, f[3] / 0.0f, -f[3] / 0.0f, -0.0f);
  printf("nan %f\n", sqrt(-f[3]));
  printf("hexfloat %a %A\n", f[0], f[1]);
  printf("vectors %v4d %v2f %v3u %v4hlf\n", (int4)(1, -2, 3, -4), (float2)(0.5f, -1.25f), (uint3)(7, 8, 9), (float4)(f[0], f[1], f[2], 1.0f));
  printf("vector hex %#v4x %v8hhd\n", (uint4)(10, 11, 12, 13), (char8)(1, 2, 3, 4, 5, 6, 7, 8));
  printf("strings %s|%10s|%-10s|%s\n", "literal", "right", "left", greeting);
  printf("plain line without arguments\n");
  printf("%s %d\n", "done", get_global_id(0));
}
kernel void quiet(global int *x) { x[0] = 1; }
)CLC";
  cl_int err;
  cl_program program = build(source, "", &err);
  result("build", err);
  if (err != CL_SUCCESS) {
    if (program) fprintf(stderr, "%s\n", build_log(program).c_str());
    return;
  }
  cl_kernel kernel = clCreateKernel(program, "formats", &err);
  float floats[4] = {3.14159265f, -2.5e-7f, 123456.789f, 1.0f};
  int ints[6] = {42, -17, -294967296, 0xBEEF, 8, 5};
  cl_mem f = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof floats, floats);
  cl_mem i = buffer(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof ints, ints);
  clSetKernelArg(kernel, 0, sizeof f, &f);
  clSetKernelArg(kernel, 1, sizeof i, &i);
  size_t one = 1;
  // Nothing is printed between a launch and its synchronisation: the kernel's output may come at
  // any moment in between, on a driver thread.
  line("before", "run");
  cl_int run = clEnqueueNDRangeKernel(g_queue, kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr);
  cl_int finished = clFinish(g_queue);
  result("run", run);
  result("finish", finished);
  fflush(stdout);
  line("after", "finish");
  // Twice in a row, synchronised by waiting for the event.
  cl_event events[2];
  clEnqueueNDRangeKernel(g_queue, kernel, 1, nullptr, &one, nullptr, 0, nullptr, &events[0]);
  clEnqueueNDRangeKernel(g_queue, kernel, 1, nullptr, &one, nullptr, 0, nullptr, &events[1]);
  result("wait", clWaitForEvents(2, events));
  fflush(stdout);
  line("after", "wait");
  clReleaseEvent(events[0]);
  clReleaseEvent(events[1]);
  clReleaseMemObject(f);
  clReleaseMemObject(i);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
}

// Launch errors the enqueue itself must return.
void check_launch() {
  section("launch");
  const char *source =
      "kernel __attribute__((reqd_work_group_size(4, 1, 1))) void fixed(global int *x) { x[get_global_id(0)] = 1; }\n"
      "kernel void free_size(global int *x) { x[get_global_id(0)] = 2; }\n"
      "kernel void untouching(global int *x) { }\n";
  cl_int err;
  cl_program program = build(source, "", &err);
  cl_kernel fixed = clCreateKernel(program, "fixed", &err), free_size = clCreateKernel(program, "free_size", &err);
  // A kernel that writes nothing for launches whose ids may wrap around: a backend that runs them
  // anyway (PoCL does) must not write outside the buffer.
  cl_kernel untouching = clCreateKernel(program, "untouching", &err);
  cl_mem x = buffer(CL_MEM_READ_WRITE, 4096);
  clSetKernelArg(fixed, 0, sizeof x, &x);
  clSetKernelArg(free_size, 0, sizeof x, &x);
  clSetKernelArg(untouching, 0, sizeof x, &x);
  size_t compile_size[3] = {};
  clGetKernelWorkGroupInfo(fixed, g_device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof compile_size, compile_size, nullptr);
  line("compile_work_group_size", std::to_string(compile_size[0]) + "," + std::to_string(compile_size[1]) + "," +
                                      std::to_string(compile_size[2]));
  size_t global = 16, local8 = 8, local4 = 4, global10 = 10, zero = 0, global2[2] = {8, 8}, local2[2] = {4, 2};
  result("reqd_mismatch", clEnqueueNDRangeKernel(g_queue, fixed, 1, nullptr, &global, &local8, 0, nullptr, nullptr));
  result("reqd_match", clEnqueueNDRangeKernel(g_queue, fixed, 1, nullptr, &global, &local4, 0, nullptr, nullptr));
  result("reqd_null_local", clEnqueueNDRangeKernel(g_queue, fixed, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  result("reqd_2d_mismatch", clEnqueueNDRangeKernel(g_queue, fixed, 2, nullptr, global2, local2, 0, nullptr, nullptr));
  result("reqd_finish", clFinish(g_queue));
  result("non_uniform", clEnqueueNDRangeKernel(g_queue, free_size, 1, nullptr, &global10, &local4, 0, nullptr, nullptr));
  result("non_uniform_finish", clFinish(g_queue));
  cl_event zero_event = nullptr;
  result("zero_global", clEnqueueNDRangeKernel(g_queue, free_size, 1, nullptr, &zero, nullptr, 0, nullptr, &zero_event));
  if (zero_event) {
    result("zero_global_wait", clWaitForEvents(1, &zero_event));
    clReleaseEvent(zero_event);
  }
  result("zero_global_local", clEnqueueNDRangeKernel(g_queue, free_size, 1, nullptr, &zero, &local4, 0, nullptr, nullptr));
  result("zero_finish", clFinish(g_queue));
  size_t huge_offset = SIZE_MAX - 4;
  result("offset_overflow", clEnqueueNDRangeKernel(g_queue, untouching, 1, &huge_offset, &global, nullptr, 0, nullptr, nullptr));
  result("work_dim_0", clEnqueueNDRangeKernel(g_queue, free_size, 0, nullptr, &global, nullptr, 0, nullptr, nullptr));
  result("work_dim_4", clEnqueueNDRangeKernel(g_queue, free_size, 4, nullptr, &global, nullptr, 0, nullptr, nullptr));
  result("null_global", clEnqueueNDRangeKernel(g_queue, free_size, 1, nullptr, nullptr, nullptr, 0, nullptr, nullptr));
  size_t big_local = 1 << 20;
  result("local_too_big", clEnqueueNDRangeKernel(g_queue, free_size, 1, nullptr, &big_local, &big_local, 0, nullptr, nullptr));
  cl_event null_event = nullptr;
  result("wait_list_null_entry", clEnqueueNDRangeKernel(g_queue, free_size, 1, nullptr, &global, nullptr, 1, &null_event, nullptr));
  result("errors_finish", clFinish(g_queue));
  clReleaseKernel(fixed);
  clReleaseKernel(free_size);
  clReleaseKernel(untouching);
  clReleaseProgram(program);

  program = build("kernel void f(global int *x) { x[get_global_id(0)] = 3; }", "-cl-uniform-work-group-size", &err);
  result("uniform.build", err);
  cl_kernel uniform = clCreateKernel(program, "f", &err);
  clSetKernelArg(uniform, 0, sizeof x, &x);
  result("uniform.non_uniform", clEnqueueNDRangeKernel(g_queue, uniform, 1, nullptr, &global10, &local4, 0, nullptr, nullptr));
  result("uniform.uniform", clEnqueueNDRangeKernel(g_queue, uniform, 1, nullptr, &global, &local4, 0, nullptr, nullptr));
  result("uniform.finish", clFinish(g_queue));
  clReleaseKernel(uniform);
  clReleaseProgram(program);
  program = build("kernel void f(global int *x) { x[get_global_id(0)] = 3; }", "-cl-std=CL1.2", &err);
  result("cl12.build", err);
  cl_kernel cl12 = clCreateKernel(program, "f", &err);
  clSetKernelArg(cl12, 0, sizeof x, &x);
  result("cl12.non_uniform", clEnqueueNDRangeKernel(g_queue, cl12, 1, nullptr, &global10, &local4, 0, nullptr, nullptr));
  result("cl12.finish", clFinish(g_queue));
  clReleaseKernel(cl12);
  clReleaseProgram(program);
  clReleaseMemObject(x);
}

// Host access flags decide which maps are allowed.
void check_host_access() {
  section("host_access");
  struct Flag {
    const char *name;
    cl_mem_flags flags;
  } flags[] = {{"default", 0}, {"host_write_only", CL_MEM_HOST_WRITE_ONLY}, {"host_read_only", CL_MEM_HOST_READ_ONLY},
               {"host_no_access", CL_MEM_HOST_NO_ACCESS}};
  struct Map {
    const char *name;
    cl_map_flags flags;
  } maps[] = {{"read", CL_MAP_READ}, {"write", CL_MAP_WRITE}, {"read_write", CL_MAP_READ | CL_MAP_WRITE},
              {"invalidate", CL_MAP_WRITE_INVALIDATE_REGION}};
  cl_uint align = 0;
  clGetDeviceInfo(g_device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align, &align, nullptr);
  size_t sub_offset = align / 8;
  for (const Flag &flag : flags) {
    cl_mem mem = buffer(CL_MEM_READ_WRITE | flag.flags, 2 * sub_offset + 256);
    cl_buffer_region region = {sub_offset, 256};
    cl_int err;
    cl_mem sub = clCreateSubBuffer(mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    result((std::string(flag.name) + ".sub_buffer").c_str(), err);
    cl_mem image = nullptr;
    if (g_images) {
      cl_image_format format = {CL_RGBA, CL_UNORM_INT8};
      cl_image_desc desc = {};
      desc.image_type = CL_MEM_OBJECT_IMAGE2D;
      desc.image_width = desc.image_height = 8;
      image = clCreateImage(g_context, CL_MEM_READ_WRITE | flag.flags, &format, &desc, nullptr, &err);
    }
    for (const Map &map : maps) {
      for (cl_mem target : {mem, sub, image}) {
        if (!target) continue;
        const char *kind = target == mem ? "buffer" : target == sub ? "sub_buffer" : "image";
        void *pointer;
        if (target == image) {
          size_t origin[3] = {}, region3[3] = {8, 8, 1}, row = 0;
          pointer = clEnqueueMapImage(g_queue, target, CL_TRUE, map.flags, origin, region3, &row, nullptr, 0, nullptr,
                                      nullptr, &err);
        } else {
          pointer = clEnqueueMapBuffer(g_queue, target, CL_TRUE, map.flags, 0, 64, 0, nullptr, nullptr, &err);
        }
        result((std::string(flag.name) + "." + kind + "." + map.name).c_str(), err);
        if (pointer) clEnqueueUnmapMemObject(g_queue, target, pointer, 0, nullptr, nullptr);
      }
    }
    std::vector<char> bytes(64);
    result((std::string(flag.name) + ".read").c_str(), clEnqueueReadBuffer(g_queue, mem, CL_TRUE, 0, 64, bytes.data(), 0, nullptr, nullptr));
    result((std::string(flag.name) + ".write").c_str(), clEnqueueWriteBuffer(g_queue, mem, CL_TRUE, 0, 64, bytes.data(), 0, nullptr, nullptr));
    result((std::string(flag.name) + ".finish").c_str(), clFinish(g_queue));
    if (image) clReleaseMemObject(image);
    if (sub) clReleaseMemObject(sub);
    clReleaseMemObject(mem);
  }
  cl_int err;
  cl_mem parent = buffer(CL_MEM_READ_WRITE | CL_MEM_HOST_WRITE_ONLY, 1024);
  cl_buffer_region region = {0, 256};
  cl_mem sub = clCreateSubBuffer(parent, CL_MEM_HOST_READ_ONLY, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  result("sub_buffer_conflicting_host_flags", err);
  if (sub) clReleaseMemObject(sub);
  clReleaseMemObject(parent);
}

// Queries that echo what the application gave.
void check_properties() {
  section("properties");
  if (!device_version_at_least(3, 0)) {
    line("supported", "no");
    return;
  }
  cl_mem_properties empty[] = {0};
  cl_int err;
  for (int with : {0, 1}) {
    cl_mem mem = clCreateBufferWithProperties(g_context, with ? empty : nullptr, CL_MEM_READ_WRITE, 64, nullptr, &err);
    std::string prefix = with ? "buffer_empty_list" : "buffer_null";
    result((prefix + ".create").c_str(), err);
    if (!mem) continue;
    size_t size = 99;
    cl_mem_properties value[4] = {7, 7, 7, 7};
    result((prefix + ".query").c_str(), clGetMemObjectInfo(mem, CL_MEM_PROPERTIES, sizeof value, value, &size));
    line((prefix + ".size").c_str(), std::to_string(size));
    if (size) line((prefix + ".value").c_str(), std::to_string(value[0]));
    clReleaseMemObject(mem);
  }
  if (g_images) {
    cl_image_format format = {CL_RGBA, CL_UNORM_INT8};
    cl_image_desc desc = {};
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = desc.image_height = 4;
    cl_mem image = clCreateImageWithProperties(g_context, empty, CL_MEM_READ_WRITE, &format, &desc, nullptr, &err);
    result("image_empty_list.create", err);
    if (image) {
      size_t size = 99;
      cl_mem_properties value[4] = {7, 7, 7, 7};
      result("image_empty_list.query", clGetMemObjectInfo(image, CL_MEM_PROPERTIES, sizeof value, value, &size));
      line("image_empty_list.size", std::to_string(size));
      if (size) line("image_empty_list.value", std::to_string(value[0]));
      clReleaseMemObject(image);
    }
  }
  cl_mem_properties bad[] = {0x12345, 1, 0};
  cl_mem mem = clCreateBufferWithProperties(g_context, bad, CL_MEM_READ_WRITE, 64, nullptr, &err);
  result("buffer_unknown_property", err);
  if (mem) clReleaseMemObject(mem);
  cl_queue_properties qprops[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  cl_command_queue queue = clCreateCommandQueueWithProperties(g_context, g_device, qprops, &err);
  result("queue.create", err);
  if (queue) {
    size_t size = 0;
    cl_queue_properties value[8] = {};
    result("queue.query", clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES_ARRAY, sizeof value, value, &size));
    line("queue.size", std::to_string(size));
    line("queue.values", std::to_string(value[0]) + " " + std::to_string(value[1]) + " " + std::to_string(value[2]));
    clReleaseCommandQueue(queue);
  }
}

// Queue creation with invalid property values.
void check_queues() {
  section("queues");
  cl_int err;
  struct Case {
    const char *name;
    cl_command_queue_properties props;
  } cases[] = {{"unknown_bit", 1 << 10},
               {"all_unknown_bits", ~static_cast<cl_command_queue_properties>(0xf)},
               {"on_device_alone", CL_QUEUE_ON_DEVICE},
               {"on_device_in_order", CL_QUEUE_ON_DEVICE | CL_QUEUE_PROFILING_ENABLE},
               {"on_device_default", CL_QUEUE_ON_DEVICE_DEFAULT},
               {"profiling", CL_QUEUE_PROFILING_ENABLE}};
  for (const Case &c : cases) {
    cl_command_queue queue = clCreateCommandQueue(g_context, g_device, c.props, &err);
    result((std::string(c.name) + ".legacy").c_str(), err);
    if (queue) clReleaseCommandQueue(queue);
    std::string check = std::string(c.name) + ".with_properties";
    if ((c.props & CL_QUEUE_ON_DEVICE) && backend_crashes("PoCL")) {
      skipped(check.c_str(), "PoCL 3.1 aborts (device-side queues unimplemented)");
      continue;
    }
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, c.props, 0};
    queue = clCreateCommandQueueWithProperties(g_context, g_device, props, &err);
    result(check.c_str(), err);
    if (queue) clReleaseCommandQueue(queue);
  }
  cl_queue_properties unknown_name[] = {0x7777, 1, 0};
  cl_command_queue queue = clCreateCommandQueueWithProperties(g_context, g_device, unknown_name, &err);
  result("unknown_property_name", err);
  if (queue) clReleaseCommandQueue(queue);
  cl_queue_properties size_without_device[] = {CL_QUEUE_SIZE, 1024, 0};
  queue = clCreateCommandQueueWithProperties(g_context, g_device, size_without_device, &err);
  result("size_without_on_device", err);
  if (queue) clReleaseCommandQueue(queue);
  queue = clCreateCommandQueue(g_context, nullptr, 0, &err);
  result("null_device", err);
  if (queue) clReleaseCommandQueue(queue);
}

// Error conditions of creation and enqueue calls that a driver finds at once.
void check_sweep() {
  section("sweep");
  cl_int err;
  cl_ulong max_alloc = 0;
  clGetDeviceInfo(g_device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, nullptr);
  char host[256] = {};
  auto create = [&](const char *name, cl_mem_flags flags, size_t size, void *ptr) {
    cl_mem mem = clCreateBuffer(g_context, flags, size, ptr, &err);
    result(name, err);
    if (mem) clReleaseMemObject(mem);
  };
  create("buffer.zero_size", CL_MEM_READ_WRITE, 0, nullptr);
  create("buffer.too_big", CL_MEM_READ_WRITE, max_alloc + 1, nullptr);
  create("buffer.read_and_write_only", CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY, 64, nullptr);
  create("buffer.use_host_ptr_null", CL_MEM_USE_HOST_PTR, 64, nullptr);
  create("buffer.host_ptr_without_flag", CL_MEM_READ_WRITE, 64, host);
  create("buffer.use_and_alloc", CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR, 64, host);
  create("buffer.use_and_copy", CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR, 64, host);
  create("buffer.host_read_and_write_only", CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_WRITE_ONLY, 64, nullptr);
  create("buffer.host_no_access_and_read", CL_MEM_HOST_NO_ACCESS | CL_MEM_HOST_READ_ONLY, 64, nullptr);
  create("buffer.unknown_flag", static_cast<cl_mem_flags>(1) << 40, 64, nullptr);

  cl_mem a = buffer(CL_MEM_READ_WRITE, 256), b = buffer(CL_MEM_READ_WRITE, 256);
  cl_buffer_region region = {1, 16};
  cl_mem sub = clCreateSubBuffer(a, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  result("sub.misaligned", err);
  if (sub) clReleaseMemObject(sub);
  region = {0, 512};
  sub = clCreateSubBuffer(a, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  result("sub.out_of_bounds", err);
  if (sub) clReleaseMemObject(sub);
  region = {0, 0};
  sub = clCreateSubBuffer(a, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  result("sub.zero_size", err);
  if (sub) clReleaseMemObject(sub);
  sub = clCreateSubBuffer(a, CL_MEM_READ_WRITE, 0x7777, &region, &err);
  result("sub.bad_type", err);
  if (sub) clReleaseMemObject(sub);

  char data[512];
  result("read.out_of_bounds", clEnqueueReadBuffer(g_queue, a, CL_TRUE, 200, 100, data, 0, nullptr, nullptr));
  result("read.null_ptr", clEnqueueReadBuffer(g_queue, a, CL_TRUE, 0, 16, nullptr, 0, nullptr, nullptr));
  result("read.zero_size", clEnqueueReadBuffer(g_queue, a, CL_TRUE, 0, 0, data, 0, nullptr, nullptr));
  result("write.out_of_bounds", clEnqueueWriteBuffer(g_queue, a, CL_TRUE, 256, 1, data, 0, nullptr, nullptr));
  result("write.null_buffer", clEnqueueWriteBuffer(g_queue, nullptr, CL_TRUE, 0, 1, data, 0, nullptr, nullptr));
  cl_event null_event = nullptr;
  result("write.wait_list_null_entry", clEnqueueWriteBuffer(g_queue, a, CL_FALSE, 0, 1, data, 1, &null_event, nullptr));
  result("write.wait_list_without_count", clEnqueueWriteBuffer(g_queue, a, CL_FALSE, 0, 1, data, 0, &null_event, nullptr));
  result("copy.overlap", clEnqueueCopyBuffer(g_queue, a, a, 0, 8, 16, 0, nullptr, nullptr));
  result("copy.same_disjoint", clEnqueueCopyBuffer(g_queue, a, a, 0, 32, 16, 0, nullptr, nullptr));
  result("copy.out_of_bounds", clEnqueueCopyBuffer(g_queue, a, b, 250, 0, 16, 0, nullptr, nullptr));
  result("copy.zero_size", clEnqueueCopyBuffer(g_queue, a, b, 0, 0, 0, 0, nullptr, nullptr));
  int pattern = 5;
  result("fill.pattern_3", clEnqueueFillBuffer(g_queue, a, &pattern, 3, 0, 12, 0, nullptr, nullptr));
  result("fill.offset_unaligned", clEnqueueFillBuffer(g_queue, a, &pattern, 4, 2, 12, 0, nullptr, nullptr));
  result("fill.size_unaligned", clEnqueueFillBuffer(g_queue, a, &pattern, 4, 0, 10, 0, nullptr, nullptr));
  result("fill.out_of_bounds", clEnqueueFillBuffer(g_queue, a, &pattern, 4, 248, 12, 0, nullptr, nullptr));
  void *map = clEnqueueMapBuffer(g_queue, a, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE_INVALIDATE_REGION, 0, 16, 0, nullptr, nullptr, &err);
  result("map.read_and_invalidate", err);
  if (map) clEnqueueUnmapMemObject(g_queue, a, map, 0, nullptr, nullptr);
  map = clEnqueueMapBuffer(g_queue, a, CL_TRUE, CL_MAP_READ, 250, 16, 0, nullptr, nullptr, &err);
  result("map.out_of_bounds", err);
  if (map) clEnqueueUnmapMemObject(g_queue, a, map, 0, nullptr, nullptr);
  map = clEnqueueMapBuffer(g_queue, a, CL_TRUE, CL_MAP_READ, 0, 0, 0, nullptr, nullptr, &err);
  result("map.zero_size", err);
  if (map) clEnqueueUnmapMemObject(g_queue, a, map, 0, nullptr, nullptr);
  result("unmap.not_mapped", clEnqueueUnmapMemObject(g_queue, a, data, 0, nullptr, nullptr));
  result("migrate.bad_flags", clEnqueueMigrateMemObjects(g_queue, 1, &a, 0x100, 0, nullptr, nullptr));
  result("migrate.none", clEnqueueMigrateMemObjects(g_queue, 0, &a, 0, 0, nullptr, nullptr));
  size_t o[3] = {}, r[3] = {4, 4, 1};
  result("read_rect.row_pitch_small", clEnqueueReadBufferRect(g_queue, a, CL_TRUE, o, o, r, 2, 0, 0, 0, data, 0, nullptr, nullptr));
  size_t r_zero[3] = {0, 4, 1};
  result("read_rect.zero_region", clEnqueueReadBufferRect(g_queue, a, CL_TRUE, o, o, r_zero, 0, 0, 0, 0, data, 0, nullptr, nullptr));
  size_t r_big[3] = {16, 32, 1};
  result("read_rect.out_of_bounds", clEnqueueReadBufferRect(g_queue, a, CL_TRUE, o, o, r_big, 0, 0, 0, 0, data, 0, nullptr, nullptr));
  result("finish", clFinish(g_queue));

  result("wait.none", clWaitForEvents(0, nullptr));
  cl_event user = clCreateUserEvent(g_context, &err);
  result("user.set_positive", clSetUserEventStatus(user, 1));
  result("user.set_complete", clSetUserEventStatus(user, CL_COMPLETE));
  result("user.set_twice", clSetUserEventStatus(user, CL_COMPLETE));
  cl_ulong when = 0;
  result("user.profiling", clGetEventProfilingInfo(user, CL_PROFILING_COMMAND_END, sizeof when, &when, nullptr));
  clReleaseEvent(user);
  cl_event marker;
  clEnqueueMarkerWithWaitList(g_queue, 0, nullptr, &marker);
  clWaitForEvents(1, &marker);
  result("event.profiling_not_enabled", clGetEventProfilingInfo(marker, CL_PROFILING_COMMAND_END, sizeof when, &when, nullptr));
  clReleaseEvent(marker);

  const char *source = "kernel void k(global int *x, int v, local int *l) { x[0] = v; }";
  cl_program program = clCreateProgramWithSource(g_context, 1, &source, nullptr, &err);
  cl_kernel kernel = clCreateKernel(program, "k", &err);
  result("kernel.before_build", err);
  if (kernel) clReleaseKernel(kernel);
  if (backend_crashes("PoCL"))
    skipped("program.bad_device", "PoCL 3.1 crashes on a handle that is not a device");
  else
    result("program.bad_device", clBuildProgram(program, 1, reinterpret_cast<cl_device_id *>(&a), "", nullptr, nullptr));
  result("program.devices_count_without_list", clBuildProgram(program, 1, nullptr, "", nullptr, nullptr));
  result("program.build", clBuildProgram(program, 1, &g_device, "", nullptr, nullptr));
  kernel = clCreateKernel(program, "nope", &err);
  result("kernel.unknown_name", err);
  kernel = clCreateKernel(program, "k", &err);
  int v = 1;
  result("arg.index", clSetKernelArg(kernel, 3, sizeof v, &v));
  result("arg.value_size", clSetKernelArg(kernel, 1, 2, &v));
  result("arg.value_null", clSetKernelArg(kernel, 1, sizeof v, nullptr));
  result("arg.mem_size", clSetKernelArg(kernel, 0, 4, &a));
  result("arg.mem_not_mem", clSetKernelArg(kernel, 0, sizeof(cl_mem), &g_queue));
  cl_mem null_mem = nullptr;
  result("arg.mem_null", clSetKernelArg(kernel, 0, sizeof(cl_mem), &null_mem));
  result("arg.local_with_value", clSetKernelArg(kernel, 2, 16, &v));
  result("arg.local_zero", clSetKernelArg(kernel, 2, 0, nullptr));
  size_t one = 1;
  result("launch.args_unset", clEnqueueNDRangeKernel(g_queue, kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr));
  result("program.rebuild_with_kernel", clBuildProgram(program, 1, &g_device, "", nullptr, nullptr));
  clReleaseKernel(kernel);
  result("program.bad_options", clBuildProgram(program, 1, &g_device, "-cl-nonsense", nullptr, nullptr));
  clReleaseProgram(program);
  program = clCreateProgramWithSource(g_context, 0, &source, nullptr, &err);
  result("program.zero_count", err);
  const char *null_source = nullptr;
  program = clCreateProgramWithSource(g_context, 1, &null_source, nullptr, &err);
  result("program.null_string", err);
  result("final_finish", clFinish(g_queue));
  clReleaseMemObject(a);
  clReleaseMemObject(b);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PLATFORM_SUBSTRING\n", argv[0]);
    return 2;
  }
  signal(SIGALRM, on_alarm);
  section("start");
  cl_uint count = 0;
  clGetPlatformIDs(0, nullptr, &count);
  std::vector<cl_platform_id> platforms(count);
  clGetPlatformIDs(count, platforms.data(), nullptr);
  for (cl_platform_id platform : platforms) {
    char name[256] = {};
    clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name - 1, name, nullptr);
    if (strstr(name, argv[1])) {
      g_platform = platform;
      break;
    }
  }
  if (!g_platform) {
    fprintf(stderr, "no platform named like '%s'\n", argv[1]);
    return 2;
  }
  if (clGetDeviceIDs(g_platform, CL_DEVICE_TYPE_ALL, 1, &g_device, nullptr) != CL_SUCCESS) {
    fprintf(stderr, "the platform has no device\n");
    return 2;
  }
  cl_bool images = CL_FALSE;
  clGetDeviceInfo(g_device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, nullptr);
  g_images = images;
  cl_int err;
  g_context = clCreateContext(nullptr, 1, &g_device, nullptr, nullptr, &err);
  g_queue = clCreateCommandQueue(g_context, g_device, 0, &err);
  if (!g_queue) {
    fprintf(stderr, "no context or queue: %s\n", status(err).c_str());
    return 2;
  }
  char vendor[256] = {};
  clGetDeviceInfo(g_device, CL_DEVICE_VENDOR, sizeof vendor - 1, vendor, nullptr);
  printf("device.vendor: %s\n", vendor);
  const char *only = getenv("DRIVER_CHECK_ONLY");  // one section, when a run needs explaining
  struct {
    const char *name;
    void (*run)();
  } sections[] = {{"names", check_names},   {"builds", check_builds},         {"ooo", check_out_of_order},
                  {"images", check_images}, {"rect", check_rect},             {"printf", check_printf},
                  {"launch", check_launch}, {"host_access", check_host_access}, {"properties", check_properties},
                  {"queues", check_queues}, {"sweep", check_sweep}};
  for (auto &s : sections)
    if (!only || !*only || strcmp(only, s.name) == 0) s.run();
  alarm(0);
  clReleaseCommandQueue(g_queue);
  clReleaseContext(g_context);
  printf("end: all sections ran\n");
  return 0;
}
