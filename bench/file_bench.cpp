// fedcl_file_bench: the transfer engine's file commands against the serial pattern they replace,
// with the two limits beside them, all in one run on the fedcl platform:
//   file.read.<size>                plain fread of the file into host memory (page cache warm)
//   device.write.<size>             fedcl's blocking clEnqueueWriteBuffer from host memory
//   file_to_device.serial.<size>    fread, then a blocking clEnqueueWriteBuffer
//   file_to_device.command.<size>   a blocking clEnqueueWriteBufferFromStdioFile
//   device_to_file.serial.<size>    a blocking clEnqueueReadBuffer, then fwrite and fflush
//   device_to_file.command.<size>   a blocking clEnqueueReadBufferToStdioFile
// in MiB/s (median of the repetitions), and the targets for 64 MiB and more. Every load is
// checked against the file, every save against the buffer.
//
//   fedcl_file_bench [--quick] [--dir DIR]    (run it with scripts/with-fedcld.sh)
#include <CL/cl.h>
#include <CL/cl_fedcl_transfer.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include "bench_platform.h"
#include "bench_stats.h"

using namespace bench;

namespace {

void check(cl_int err, const char *what) {
  if (err != CL_SUCCESS) throw std::runtime_error(std::string(what) + " failed with " + std::to_string(err));
}

struct Fedcl {
  cl_platform_id platform = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  clEnqueueWriteBufferFromStdioFile_fn load = nullptr;
  clEnqueueReadBufferToStdioFile_fn save = nullptr;
};

Fedcl open_fedcl() {
  Fedcl f;
  f.platform = find_platform("fedcl", true, "set OCL_ICD_VENDORS and FEDCL_HOSTS");
  cl_device_id device;
  check(clGetDeviceIDs(f.platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), "clGetDeviceIDs");
  cl_int err;
  f.context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  check(err, "clCreateContext");
  f.queue = clCreateCommandQueueWithProperties(f.context, device, nullptr, &err);
  check(err, "clCreateCommandQueueWithProperties");
  f.load = reinterpret_cast<clEnqueueWriteBufferFromStdioFile_fn>(
      clGetExtensionFunctionAddressForPlatform(f.platform, "clEnqueueWriteBufferFromStdioFile"));
  f.save = reinterpret_cast<clEnqueueReadBufferToStdioFile_fn>(
      clGetExtensionFunctionAddressForPlatform(f.platform, "clEnqueueReadBufferToStdioFile"));
  if (!f.load || !f.save) throw std::runtime_error("the platform lacks cl_fedcl_transfer");
  return f;
}

std::string label(size_t bytes) {
  return bytes >= (size_t(1) << 30) ? std::to_string(bytes >> 30) + "GiB" : std::to_string(bytes >> 20) + "MiB";
}

FILE *open_or_throw(const std::string &path, const char *mode) {
  FILE *file = std::fopen(path.c_str(), mode);
  if (!file) throw std::runtime_error("cannot open " + path);
  return file;
}

// Times fn reps times after one warm-up; returns MiB/s of bytes per call (median).
template <typename F>
double rate(size_t bytes, int reps, F fn) {
  std::vector<double> us;
  for (int r = -1; r < reps; r++) {
    double start = now_us();
    fn();
    if (r >= 0) us.push_back(now_us() - start);
  }
  return bytes / double(1 << 20) / (median(us) * 1e-6);
}

void print(const std::string &metric, double value, const char *unit) { std::printf("%s %.6g %s\n", metric.c_str(), value, unit); }

}  // namespace

int main(int argc, char **argv) {
  bool quick = false;
  std::string dir = "/tmp";
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
    else return std::fprintf(stderr, "usage: fedcl_file_bench [--quick] [--dir DIR]\n"), 2;
  }
  try {
    Fedcl f = open_fedcl();
    const size_t max = quick ? size_t(64) << 20 : size_t(1) << 30;
    std::string in_path = dir + "/fedcl_file_bench_in." + std::to_string(getpid());
    std::string out_path = dir + "/fedcl_file_bench_out." + std::to_string(getpid());
    int failures = 0, unmet = 0;
    std::printf("# fedcl_file_bench: files in %s (the input is read once first: page cache warm)\n", dir.c_str());
    for (size_t bytes = size_t(1) << 20; bytes <= max; bytes *= 4) {
      const int reps = bytes >= (size_t(256) << 20) ? 3 : quick ? 3 : 5;
      std::vector<uint8_t> data(bytes), host(bytes), back(bytes);
      for (size_t i = 0; i < bytes; i++) data[i] = uint8_t(i * 131 + (i >> 12));
      {
        FILE *out = open_or_throw(in_path, "wb");
        std::fwrite(data.data(), 1, bytes, out);
        std::fclose(out);
      }
      cl_int err;
      cl_mem mem = clCreateBuffer(f.context, CL_MEM_READ_WRITE, bytes, nullptr, &err);
      check(err, "clCreateBuffer");
      const std::string size = label(bytes);
      auto fread_all = [&] {
        FILE *in = open_or_throw(in_path, "rb");
        if (std::fread(host.data(), 1, bytes, in) != bytes) throw std::runtime_error("short read of the input");
        std::fclose(in);
      };
      double file_read = rate(bytes, reps, fread_all);
      double device_write = rate(bytes, reps, [&] {
        check(clEnqueueWriteBuffer(f.queue, mem, CL_TRUE, 0, bytes, data.data(), 0, nullptr, nullptr), "clEnqueueWriteBuffer");
      });
      double load_serial = rate(bytes, reps, [&] {
        fread_all();
        check(clEnqueueWriteBuffer(f.queue, mem, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr), "clEnqueueWriteBuffer");
      });
      double load_command = rate(bytes, reps, [&] {
        FILE *in = open_or_throw(in_path, "rb");
        check(f.load(f.queue, mem, CL_TRUE, 0, bytes, in, 0, nullptr, nullptr), "clEnqueueWriteBufferFromStdioFile");
        std::fclose(in);
      });
      check(clEnqueueReadBuffer(f.queue, mem, CL_TRUE, 0, bytes, back.data(), 0, nullptr, nullptr), "clEnqueueReadBuffer");
      if (back != data) {
        std::printf("# FAILED: the buffer loaded from the %s file differs from it\n", size.c_str());
        failures++;
      }
      double save_serial = rate(bytes, reps, [&] {
        check(clEnqueueReadBuffer(f.queue, mem, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr), "clEnqueueReadBuffer");
        FILE *out = open_or_throw(out_path, "wb");
        std::fwrite(host.data(), 1, bytes, out);
        std::fflush(out);
        std::fclose(out);
      });
      double save_command = rate(bytes, reps, [&] {
        FILE *out = open_or_throw(out_path, "wb");
        check(f.save(f.queue, mem, CL_TRUE, 0, bytes, out, 0, nullptr, nullptr), "clEnqueueReadBufferToStdioFile");
        std::fclose(out);
      });
      {
        FILE *in = open_or_throw(out_path, "rb");
        size_t got = std::fread(back.data(), 1, bytes, in);
        std::fclose(in);
        if (got != bytes || back != data) {
          std::printf("# FAILED: the %s file saved from the buffer differs from it\n", size.c_str());
          failures++;
        }
      }
      clReleaseMemObject(mem);
      print("file.read." + size, file_read, "MiB/s");
      print("device.write." + size, device_write, "MiB/s");
      print("file_to_device.serial." + size, load_serial, "MiB/s");
      print("file_to_device.command." + size, load_command, "MiB/s");
      print("file_to_device.vs_serial." + size, load_command / load_serial, "x");
      print("file_to_device.of_slower_limit." + size, load_command / std::min(file_read, device_write), "x");
      print("device_to_file.serial." + size, save_serial, "MiB/s");
      print("device_to_file.command." + size, save_command, "MiB/s");
      print("device_to_file.vs_serial." + size, save_command / save_serial, "x");
      if (bytes >= (size_t(64) << 20)) {
        bool gain = load_command / load_serial >= 1.18, limit = load_command / std::min(file_read, device_write) >= 0.9;
        std::printf("# target file_to_device %s: %.3gx the serial pattern (>= 1.18: %s), %.3g of the slower limit (>= 0.9: %s)\n",
                    size.c_str(), load_command / load_serial, gain ? "MET" : "NOT MET",
                    load_command / std::min(file_read, device_write), limit ? "MET" : "NOT MET");
        unmet += !gain + !limit;
      }
      std::fflush(stdout);
    }
    std::remove(in_path.c_str());
    std::remove(out_path.c_str());
    std::printf("# %d check(s) failed, %d target(s) not met\n", failures, unmet);
    return failures ? 1 : 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fedcl_file_bench: %s\n", e.what());
    return 1;
  }
}
