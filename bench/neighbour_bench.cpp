// fedcl_neighbour_bench: whether one session's long backend calls hold up another session of the same
// daemon. This process times enqueue + clFinish of an empty kernel on its own context; meanwhile
// (the "busy" rounds) a neighbour process opened on the same platform loops one kind of slow work:
//   build    clBuildProgram of a large generated program (a new -D each time, so that no compiler
//            cache answers), then its release;
//   context  clCreateContext, clCreateCommandQueue and their release.
// Quiet and busy rounds alternate, on the backend directly and on fedcl, in one run. Through fedcl
// the neighbour is another session, so another worker process of fedcld (docs/design-decisions.md,
// "Processes"): a slow call there must not reach this session's requests. What it may still cost
// is the host's CPU, which the same neighbour on the backend directly shows beside it.
//
//   fedcl_neighbour_bench [--rounds R] [--samples N] [--backend NAME] [--modes build,context]
//                         [--side both|fedcl|direct] [--neighbour process|thread]
//
// --neighbour thread: the neighbour is a thread of this process instead, so through fedcl the same
// session: whether a session's own slow calls hold up its other threads' commands.
// Prints `neighbour[_thread].<side>.<mode>.quiet|busy value us` (medians over rounds of each round's median),
// `.ratio` (busy / quiet) and `.neighbour_calls` (the neighbour's completed loops while measured),
// then the target: through fedcl, a busy neighbour raises the median by at most 10%.
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_cl.h"
#include "bench_stats.h"

using namespace bench;

namespace {

constexpr char kGo = 'g', kReady = 'r', kStop = 's';

// A program big enough that building it takes a while on any compiler: kernels that do not fold.
std::string large_program_source() {
  std::ostringstream source;
  for (int k = 0; k < 48; k++) {
    source << "__kernel void work" << k << "(__global float *a, int n) {\n"
           << "  float x = a[get_global_id(0)];\n"
           << "  for (int i = 0; i < n; i++) {\n";
    for (int step = 0; step < 12; step++)
      source << "    x = sin(x * " << (k + step + 1) << ".0f) + cos(x + " << step << ".5f) * SEED;\n";
    source << "  }\n  a[get_global_id(0)] = x;\n}\n";
  }
  return source.str();
}

struct SideSpec {
  std::string label, name_part;
  bool is_fedcl;
};

// The neighbour's work, in the process or thread that runs it: opens the platform, then loops the
// mode's calls until stop() says so, calling ready() after the first loop. Returns the loops
// completed (-1: a call failed).
long neighbour_work(const SideSpec &side, const std::string &mode, const std::function<bool()> &stop,
                    const std::function<void()> &ready) {
  long loops = 0;
  try {
    cl_platform_id platform = find_platform(side.name_part, side.is_fedcl, "see bench/README.md");
    cl_device_id device;
    check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), "clGetDeviceIDs");
    cl_int err = CL_SUCCESS;
    cl_context context = mode == "build" ? clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err) : nullptr;
    check(err, "clCreateContext");
    std::string source = large_program_source();
    do {
      if (mode == "build") {
        const char *text = source.c_str();
        cl_program program = clCreateProgramWithSource(context, 1, &text, nullptr, &err);
        check(err, "clCreateProgramWithSource");
        std::string options = "-DSEED=" + std::to_string(loops + 1) + ".0f";
        check(clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr), "clBuildProgram");
        clReleaseProgram(program);
      } else {
        cl_context made = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
        check(err, "clCreateContext");
        cl_command_queue queue = clCreateCommandQueueWithProperties(made, device, nullptr, &err);
        check(err, "clCreateCommandQueueWithProperties");
        clReleaseCommandQueue(queue);
        clReleaseContext(made);
      }
      if (++loops == 1) ready();
    } while (!stop());
    if (context) clReleaseContext(context);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fedcl_neighbour_bench: neighbour (%s, %s): %s\n", side.label.c_str(), mode.c_str(), e.what());
    loops = -1;
    ready();
  }
  return loops;
}

// One round's neighbour. A process is forked before this one touches OpenCL; it opens its platform
// when told to go, says when its first loop is done, loops until told to stop, then writes how many
// loops it completed and exits. A thread (--neighbour thread) shares this process's connection to
// the daemon, so its session: what it shows is whether a session's own slow calls hold up its
// other threads' commands.
class Neighbour {
 public:
  Neighbour(const SideSpec &side, const std::string &mode, bool as_thread) : side_(side), mode_(mode) {
    if (!as_thread) fork_process();
  }
  ~Neighbour() { finish(); }
  Neighbour(const Neighbour &) = delete;

  // Starts it and returns once its first loop is done (false: it failed, or took a minute).
  bool start() {
    if (pid_ < 0) {
      thread_ = std::thread([this] {
        loops_ = neighbour_work(side_, mode_, [this] { return stop_.load(); }, [this] { ready_ = true; });
      });
      for (int waited_ms = 0; !ready_ && waited_ms < 60000; waited_ms++) usleep(1000);
      return ready_ && loops_ >= 0;
    }
    if (write(control_, &kGo, 1) != 1) return false;
    pollfd ready{status_, POLLIN, 0};
    char byte = 0;
    return poll(&ready, 1, 60000) == 1 && read(status_, &byte, 1) == 1 && byte == kReady;
  }

  // Stops it; returns the loops it completed (-1: it failed).
  long stop() {
    long loops = -1;
    if (pid_ < 0) {
      stop_ = true;
      if (thread_.joinable()) thread_.join();
      loops = loops_;
    } else if (write(control_, &kStop, 1) != 1 || read(status_, &loops, sizeof loops) != ssize_t(sizeof loops)) {
      loops = -1;
    }
    finish();
    return loops;
  }

 private:
  void fork_process() {
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      // Only its own pipe ends: a copy of another neighbour's would keep that one from seeing its end.
      for (int fd = 3; fd < 1024; fd++)
        if (fd != to_child[0] && fd != from_child[1]) close(fd);
      child_main(to_child[0], from_child[1]);
    }
    close(to_child[0]);
    close(from_child[1]);
    control_ = to_child[1];
    status_ = from_child[0];
  }

  [[noreturn]] void child_main(int control, int status) {
    char byte = 0;
    if (read(control, &byte, 1) != 1 || byte != kGo) _exit(0);
    fcntl(control, F_SETFL, O_NONBLOCK);
    long loops = neighbour_work(
        side_, mode_,
        [&] {
          ssize_t got = read(control, &byte, 1);
          return !(got < 0 && errno == EAGAIN);  // told to stop, or the parent is gone
        },
        [&] {
          if (write(status, &kReady, 1) != 1) _exit(1);
        });
    if (write(status, &loops, sizeof loops) != ssize_t(sizeof loops)) _exit(1);
    _exit(0);
  }

  // Closes the pipes (a process that never started ends at that) and waits for it.
  void finish() {
    if (pid_ > 0) {
      close(control_);
      close(status_);
      waitpid(pid_, nullptr, 0);
      pid_ = 0;
    }
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  SideSpec side_;
  std::string mode_;
  pid_t pid_ = -1;  // a process: its pid (0 once it ended); -1: a thread
  int control_ = -1, status_ = -1;  // this process's ends: it writes control, reads status
  std::thread thread_;
  std::atomic<bool> stop_{false}, ready_{false};
  std::atomic<long> loops_{0};
};

// The measured session: an empty kernel on one work-item, enqueued and finished.
class Probe {
 public:
  Probe(const std::string &label, const std::string &name_part, bool is_fedcl)
      : side_(open_side(label, name_part, is_fedcl)) {
    const char *source = "__kernel void nothing(__global int *a) { }";
    cl_int err = CL_SUCCESS;
    program_ = clCreateProgramWithSource(side_->context, 1, &source, nullptr, &err);
    check(err, "clCreateProgramWithSource");
    check(clBuildProgram(program_, 1, &side_->device, "", nullptr, nullptr), "clBuildProgram");
    kernel_ = make_kernel(program_, "nothing");
    buffer_ = make_buffer(side_->context, 64, CL_MEM_READ_WRITE);
    check(clSetKernelArg(kernel_, 0, sizeof buffer_, &buffer_), "clSetKernelArg");
  }
  ~Probe() {
    clReleaseMemObject(buffer_);
    clReleaseKernel(kernel_);
    clReleaseProgram(program_);
  }

  // The median of samples enqueue + clFinish, after a few warm-ups.
  double median_us(int samples) {
    std::vector<double> times;
    size_t one = 1;
    for (int i = 0; i < samples + 10; i++) {
      double begin = now_us();
      check(clEnqueueNDRangeKernel(side_->queue, kernel_, 1, nullptr, &one, nullptr, 0, nullptr, nullptr),
            "clEnqueueNDRangeKernel");
      check(clFinish(side_->queue), "clFinish");
      if (i >= 10) times.push_back(now_us() - begin);
    }
    return median(times);
  }

 private:
  std::unique_ptr<Side> side_;
  cl_program program_ = nullptr;
  cl_kernel kernel_ = nullptr;
  cl_mem buffer_ = nullptr;
};

std::vector<std::string> split(const std::string &list) {
  std::vector<std::string> parts;
  std::stringstream stream(list);
  for (std::string part; std::getline(stream, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

}  // namespace

int main(int argc, char **argv) {
  int rounds = 3, samples = 2000;
  std::string backend = "Portable Computing Language", modes_list = "build,context", which = "both", kind = "process";
  for (int i = 1; i < argc; i++) {
    bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--rounds") && has_value) rounds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--samples") && has_value) samples = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--backend") && has_value) backend = argv[++i];
    else if (!std::strcmp(argv[i], "--modes") && has_value) modes_list = argv[++i];
    else if (!std::strcmp(argv[i], "--side") && has_value) which = argv[++i];
    else if (!std::strcmp(argv[i], "--neighbour") && has_value) kind = argv[++i];
    else {
      std::fprintf(stderr, "usage: fedcl_neighbour_bench [--rounds R] [--samples N] [--backend NAME] "
                           "[--modes build,context] [--side both|fedcl|direct] [--neighbour process|thread]\n");
      return 2;
    }
  }
  bool as_thread = kind == "thread";
  if (!as_thread && kind != "process") {
    std::fprintf(stderr, "fedcl_neighbour_bench: --neighbour is process or thread\n");
    return 2;
  }
  std::vector<std::string> modes = split(modes_list);
  for (const std::string &mode : modes)
    if (mode != "build" && mode != "context") {
      std::fprintf(stderr, "fedcl_neighbour_bench: unknown mode '%s' (build, context)\n", mode.c_str());
      return 2;
    }
  std::vector<SideSpec> sides;
  if (which != "fedcl") sides.push_back({"direct", backend, false});
  if (which != "direct") sides.push_back({"fedcl", "fedcl", true});
  if (sides.empty() || rounds < 1 || samples < 1) return 2;

  // Every neighbour is forked now, before this process starts a driver's threads.
  std::map<std::string, std::vector<std::unique_ptr<Neighbour>>> neighbours;
  for (const SideSpec &side : sides)
    for (const std::string &mode : modes)
      for (int r = 0; r < rounds; r++)
        neighbours[side.label + "." + mode].push_back(std::make_unique<Neighbour>(side, mode, as_thread));

  int status = 0;
  std::printf("host.load_1min.start %.2f\n", load_average());
  try {
    for (const SideSpec &side : sides) {
      Probe probe(side.label, side.name_part, side.is_fedcl);
      for (const std::string &mode : modes) {
        std::string name = side.label + "." + mode;
        std::vector<double> quiet, busy;
        long loops = 0;
        for (int r = 0; r < rounds; r++) {
          // Which goes first alternates, so that a drift of the machine costs both alike.
          bool busy_first = r % 2;
          Neighbour &neighbour = *neighbours[name][size_t(r)];
          for (int half = 0; half < 2; half++) {
            if ((half == 0) == busy_first) {
              if (!neighbour.start()) throw std::runtime_error("the " + name + " neighbour did not start");
              busy.push_back(probe.median_us(samples));
              long done = neighbour.stop();
              if (done < 0) throw std::runtime_error("the " + name + " neighbour failed");
              loops += done;
            } else {
              quiet.push_back(probe.median_us(samples));
            }
          }
        }
        double q = median(quiet), b = median(busy);
        const char *metric = as_thread ? "neighbour_thread" : "neighbour";
        std::printf("%s.%s.quiet %.1f us\n", metric, name.c_str(), q);
        std::printf("%s.%s.busy %.1f us\n", metric, name.c_str(), b);
        std::printf("%s.%s.ratio %.3f x\n", metric, name.c_str(), b / q);
        std::printf("%s.%s.neighbour_calls %ld calls\n", metric, name.c_str(), loops);
        if (side.is_fedcl && !as_thread)  // the target is about another session
          std::printf("target.neighbour_%s %s (busy / quiet %.3f, at most 1.10)\n", mode.c_str(),
                      b / q <= 1.10 ? "met" : "not met", b / q);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fedcl_neighbour_bench: %s\n", e.what());
    status = 1;
  }
  neighbours.clear();  // neighbours that never ran (after a failure) end when their pipes close
  std::printf("host.load_1min.end %.2f\n", load_average());
  return status;
}
