// The transfer engine's file commands (cl_fedcl_transfer): a file streams into a buffer as a
// command of the queue, through the real daemon, checked byte for byte.
#include <CL/cl_fedcl_transfer.h>

#include <atomic>
#include <cstring>
#include <cstdio>
#include <mutex>
#include <numeric>
#include <thread>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

// A temporary file holding words (or opened otherwise), closed and removed at the end.
struct TempFile {
  static inline int made = 0;
  std::string path = ::testing::TempDir() + "fedcl_file_transfer_" + std::to_string(::getpid()) + "_" + std::to_string(made++);
  FILE *file = nullptr;
  explicit TempFile(const std::vector<uint32_t> &words, const char *mode = "rb") {
    FILE *out = std::fopen(path.c_str(), "wb");
    if (!words.empty()) std::fwrite(words.data(), sizeof(uint32_t), words.size(), out);  // an empty vector's data() may be null
    std::fclose(out);
    file = std::fopen(path.c_str(), mode);
  }
  ~TempFile() {
    if (file) std::fclose(file);
    std::remove(path.c_str());
  }
};

std::vector<uint32_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint32_t> words(n);
  for (size_t i = 0; i < n; i++) words[i] = uint32_t(i) * 2654435761u + seed;
  return words;
}

struct FileTransfer : ::testing::Test {
  Cluster cluster{1};
  ContextNotices notices;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  clEnqueueWriteBufferFromStdioFile_fn write_from_file = nullptr;
  clEnqueueReadBufferToStdioFile_fn read_to_file = nullptr;

  void SetUp() override {
    cl_int err;
    context = clCreateContext(nullptr, 1, cluster.devices.data(), ContextNotices::callback, &notices, &err);
    ASSERT_CL_OK(err);
    queue = create_queue(context, cluster.devices[0]);
    write_from_file = reinterpret_cast<clEnqueueWriteBufferFromStdioFile_fn>(
        clGetExtensionFunctionAddressForPlatform(cluster.platform, "clEnqueueWriteBufferFromStdioFile"));
    ASSERT_NE(nullptr, write_from_file);
    read_to_file = reinterpret_cast<clEnqueueReadBufferToStdioFile_fn>(
        clGetExtensionFunctionAddressForPlatform(cluster.platform, "clEnqueueReadBufferToStdioFile"));
    ASSERT_NE(nullptr, read_to_file);
  }
  void TearDown() override {
    if (queue) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }
  std::vector<uint32_t> read(cl_mem mem, size_t n) {
    std::vector<uint32_t> out(n, 0xdeadbeef);
    EXPECT_CL(CL_SUCCESS, clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n * 4, out.data(), 0, nullptr, nullptr));
    return out;
  }
};

}  // namespace

TEST_F(FileTransfer, ThePlatformOffersTheExtension) {
  std::string extensions(1024, '\0');
  size_t size = 0;
  ASSERT_CL_OK(clGetPlatformInfo(cluster.platform, CL_PLATFORM_EXTENSIONS, extensions.size(), extensions.data(), &size));
  EXPECT_NE(std::string::npos, extensions.find(CL_FEDCL_TRANSFER_EXTENSION_NAME)) << extensions;
  // The loader's platform-less lookup (deprecated) asks a platform only for names that end in its
  // ICD suffix ("fedcl"): the paper's names come through the platform's own lookup alone.
  EXPECT_EQ(nullptr, clGetExtensionFunctionAddressForPlatform(cluster.platform, "clEnqueueNoSuchThing"));
}

// A 10 MiB file (many chunks) into the middle of a buffer, non-blocking, then a kernel behind it on
// the in-order queue: the kernel sees the file's bytes, and the stream stands after them.
TEST_F(FileTransfer, AFileStreamsIntoABufferInQueueOrder) {
  const size_t n = (10 << 20) / 4 + 123, skip = 7, at = 1000;
  std::vector<uint32_t> contents = pattern(n, 5);
  TempFile file(contents);
  ASSERT_NE(nullptr, file.file);
  ASSERT_EQ(0, std::fseek(file.file, skip * 4, SEEK_SET));
  const size_t words = n - skip;
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, (at + words) * 4);
  cl_event loaded;
  ASSERT_CL_OK(write_from_file(queue, mem, CL_FALSE, at * 4, words * 4, file.file, 0, nullptr, &loaded));
  cl_kernel add = create_kernel(build_program(context, "kernel void add(global uint *x, uint v) { x[get_global_id(0)] += v; }"), "add");
  set_arg(add, 0, mem);
  set_arg(add, 1, 3u);
  const size_t offset = at, global = words;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, add, 1, &offset, &global, nullptr, 0, nullptr, nullptr));
  std::vector<uint32_t> out = read(mem, at + words);
  for (size_t i = 0; i < words; i++) ASSERT_EQ(contents[skip + i] + 3, out[at + i]) << "word " << i;
  cl_int status = 1;
  ASSERT_CL_OK(clGetEventInfo(loaded, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_EQ(CL_COMPLETE, status);
  cl_command_type type = 0;
  ASSERT_CL_OK(clGetEventInfo(loaded, CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr));
  EXPECT_EQ(cl_command_type(CL_COMMAND_WRITE_BUFFER), type);
  EXPECT_EQ(long(n * 4), std::ftell(file.file));
  clReleaseEvent(loaded);
}

TEST_F(FileTransfer, ABlockingLoadWaitsForItsWaitList) {
  const size_t n = 300000;
  std::vector<uint32_t> contents = pattern(n, 9);
  TempFile file(contents);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, n * 4);
  cl_int err;
  cl_event gate = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  cl_event loaded;
  ASSERT_CL_OK(write_from_file(queue, mem, CL_FALSE, 0, n * 4, file.file, 1, &gate, &loaded));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  cl_int status = 0;
  ASSERT_CL_OK(clGetEventInfo(loaded, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_GT(status, CL_COMPLETE) << "the load completed before its wait list";
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  ASSERT_CL_OK(clWaitForEvents(1, &loaded));
  EXPECT_TRUE(read(mem, n) == contents);
  // Blocking, from the start of the file again.
  std::rewind(file.file);
  cl_mem again = create_buffer(context, CL_MEM_READ_WRITE, n * 4);
  ASSERT_CL_OK(write_from_file(queue, again, CL_TRUE, 0, n * 4, file.file, 0, nullptr, nullptr));
  EXPECT_TRUE(read(again, n) == contents);
  clReleaseEvent(loaded);
  clReleaseEvent(gate);
}

// A file shorter than asked: the command fails (its event, the blocking call, the next wait on the
// buffer) and the context's callback says how far the file went; the buffer is never half-reported
// as loaded.
TEST_F(FileTransfer, AShortFileFailsTheCommand) {
  const size_t n = 1 << 20;
  TempFile file(pattern(n / 2, 1));
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, n * 4);
  cl_event loaded;
  ASSERT_CL_OK(write_from_file(queue, mem, CL_FALSE, 0, n * 4, file.file, 0, nullptr, &loaded));
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &loaded));
  cl_int status = 0;
  ASSERT_CL_OK(clGetEventInfo(loaded, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_EQ(CL_INVALID_VALUE, status);
  clReleaseEvent(loaded);
  EXPECT_TRUE(notices.wait_for("ended after " + std::to_string(n / 2 * 4))) << notices.all();
  // Blocking, on a fresh stream: the call itself returns the error.
  std::rewind(file.file);
  EXPECT_CL(CL_INVALID_VALUE, write_from_file(queue, mem, CL_TRUE, 0, n * 4, file.file, 0, nullptr, nullptr));
  // The daemon goes on serving the session.
  expect_vector_add(context, queue, 1000);
}

TEST_F(FileTransfer, AStreamOpenForWritingOnlyFailsTheCommand) {
  TempFile file(pattern(1000, 2), "ab");
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, 4000);
  EXPECT_CL(CL_INVALID_VALUE, write_from_file(queue, mem, CL_TRUE, 0, 4000, file.file, 0, nullptr, nullptr));
  EXPECT_TRUE(notices.wait_for("open for reading")) << notices.all();
}

TEST_F(FileTransfer, ArgumentsAreCheckedAtTheCall) {
  TempFile file(pattern(10, 3));
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, 40);
  EXPECT_CL(CL_INVALID_VALUE, write_from_file(queue, mem, CL_TRUE, 0, 40, nullptr, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, write_from_file(queue, mem, CL_TRUE, 8, 40, file.file, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_MEM_OBJECT, write_from_file(queue, nullptr, CL_TRUE, 0, 40, file.file, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_COMMAND_QUEUE, write_from_file(nullptr, mem, CL_TRUE, 0, 40, file.file, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_EVENT_WAIT_LIST, write_from_file(queue, mem, CL_TRUE, 0, 40, file.file, 1, nullptr, nullptr));
  cl_mem no_host = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_HOST_NO_ACCESS, 40);
  EXPECT_CL(CL_INVALID_OPERATION, write_from_file(queue, no_host, CL_TRUE, 0, 40, file.file, 0, nullptr, nullptr));
  EXPECT_EQ(0L, std::ftell(file.file)) << "a refused command read the file";
}

std::vector<uint32_t> file_words(const std::string &path) {
  std::vector<uint32_t> words;
  FILE *in = std::fopen(path.c_str(), "rb");
  uint32_t word;
  while (in && std::fread(&word, 4, 1, in) == 1) words.push_back(word);
  if (in) std::fclose(in);
  return words;
}

// A buffer written by a kernel goes to a file behind the kernel in the queue, while the buffer is
// then overwritten by the next command: the file holds what the kernel left, from where the stream
// stood, and a file load brings it back.
TEST_F(FileTransfer, ABufferGoesToAFileInQueueOrder) {
  const size_t n = (9 << 20) / 4 + 77;
  std::vector<uint32_t> contents = pattern(n, 21);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * 4, contents.data());
  cl_kernel add = create_kernel(build_program(context, "kernel void add(global uint *x, uint v) { x[get_global_id(0)] += v; }"), "add");
  set_arg(add, 0, mem);
  set_arg(add, 1, 5u);
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, add, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));
  TempFile file({0xabcdef01u}, "wb");  // the stream stands at 0 of an emptied file
  ASSERT_GE(std::fputs("head", file.file), 0);
  cl_event saved;
  ASSERT_CL_OK(read_to_file(queue, mem, CL_FALSE, 4, (n - 1) * 4, file.file, 0, nullptr, &saved));
  const uint32_t zero = 0;
  ASSERT_CL_OK(clEnqueueFillBuffer(queue, mem, &zero, 4, 0, n * 4, 0, nullptr, nullptr));
  ASSERT_CL_OK(clWaitForEvents(1, &saved));
  cl_command_type type = 0;
  ASSERT_CL_OK(clGetEventInfo(saved, CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr));
  EXPECT_EQ(cl_command_type(CL_COMMAND_READ_BUFFER), type);
  clReleaseEvent(saved);
  std::vector<uint32_t> words = file_words(file.path);
  ASSERT_EQ(n, words.size());  // "head" + n - 1 words
  EXPECT_EQ(0, std::memcmp(words.data(), "head", 4));
  for (size_t i = 1; i < n; i++) ASSERT_EQ(contents[i] + 5, words[i]) << "word " << i;
  // Back again, blocking.
  FILE *in = std::fopen(file.path.c_str(), "rb");
  ASSERT_EQ(0, std::fseek(in, 4, SEEK_SET));
  ASSERT_CL_OK(write_from_file(queue, mem, CL_TRUE, 4, (n - 1) * 4, in, 0, nullptr, nullptr));
  std::fclose(in);
  std::vector<uint32_t> back = read(mem, n);
  EXPECT_EQ(0u, back[0]);
  for (size_t i = 1; i < n; i++) ASSERT_EQ(contents[i] + 5, back[i]) << "word " << i;
}

TEST_F(FileTransfer, AStreamOpenForReadingOnlyFailsTheSave) {
  TempFile file(pattern(10, 1), "rb");
  std::vector<uint32_t> contents = pattern(1000, 4);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 4000, contents.data());
  EXPECT_CL(CL_INVALID_VALUE, read_to_file(queue, mem, CL_TRUE, 0, 4000, file.file, 0, nullptr, nullptr));
  EXPECT_TRUE(notices.wait_for("open for writing")) << notices.all();
  expect_vector_add(context, queue, 1000);
}

// Profiling works for both commands: the four times are there and ordered.
TEST_F(FileTransfer, ProfilingTimesAreOrdered) {
  cl_command_queue profiled;
  cl_int err;
  cl_queue_properties properties[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  profiled = clCreateCommandQueueWithProperties(context, cluster.devices[0], properties, &err);
  ASSERT_CL_OK(err);
  const size_t n = 1 << 20;
  TempFile source(pattern(n, 3));
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, n * 4);
  TempFile sink({}, "wb");
  cl_event events[2];
  ASSERT_CL_OK(write_from_file(profiled, mem, CL_FALSE, 0, n * 4, source.file, 0, nullptr, &events[0]));
  ASSERT_CL_OK(read_to_file(profiled, mem, CL_FALSE, 0, n * 4, sink.file, 0, nullptr, &events[1]));
  ASSERT_CL_OK(clWaitForEvents(2, events));
  for (cl_event event : events) {
    cl_ulong times[4];
    const cl_profiling_info params[4] = {CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
                                         CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END};
    for (int i = 0; i < 4; i++) ASSERT_CL_OK(clGetEventProfilingInfo(event, params[i], sizeof times[i], &times[i], nullptr));
    for (int i = 1; i < 4; i++) EXPECT_LE(times[i - 1], times[i]) << "profiling time " << i;
    EXPECT_LT(times[0], times[3]);
    clReleaseEvent(event);
  }
  EXPECT_TRUE(file_words(sink.path) == pattern(n, 3));
  clReleaseCommandQueue(profiled);
}

// Commands on one stream run in the order they were enqueued, each from where the previous one
// left the stream; clFinish returns only once the saves are in their file, and a command behind a
// save on an in-order queue runs after it.
TEST_F(FileTransfer, CommandsOnOneStreamFollowEachOther) {
  const size_t n = 3 << 20, parts = 6, part = n / parts;
  std::vector<uint32_t> contents = pattern(n, 31);
  TempFile source(contents);
  TempFile sink({}, "wb");
  cl_mem mems[parts];
  for (size_t p = 0; p < parts; p++) {
    mems[p] = create_buffer(context, CL_MEM_READ_WRITE, part * 4);
    ASSERT_CL_OK(write_from_file(queue, mems[p], CL_FALSE, 0, part * 4, source.file, 0, nullptr, nullptr));
  }
  for (size_t p = 0; p < parts; p++)
    ASSERT_CL_OK(read_to_file(queue, mems[parts - 1 - p], CL_FALSE, 0, part * 4, sink.file, 0, nullptr, nullptr));
  cl_event after;
  ASSERT_CL_OK(clEnqueueMarkerWithWaitList(queue, 0, nullptr, &after));
  ASSERT_CL_OK(clFinish(queue));
  cl_int status = 1;
  ASSERT_CL_OK(clGetEventInfo(after, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_EQ(CL_COMPLETE, status);
  clReleaseEvent(after);
  std::vector<uint32_t> words = file_words(sink.path);  // without a close: clFinish flushed it all
  ASSERT_EQ(n, words.size());
  for (size_t p = 0; p < parts; p++)
    for (size_t i = 0; i < part; i++)
      ASSERT_EQ(contents[(parts - 1 - p) * part + i], words[p * part + i]) << "part " << p << " word " << i;
}

// Two daemons: a file loaded on one daemon is what a kernel on the other sees.
TEST(FileTransferAcrossDaemons, ALoadedBufferMigrates) {
  Cluster cluster{2};
  cl_int err;
  cl_context context = clCreateContext(nullptr, 2, cluster.devices.data(), nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue q0 = create_queue(context, cluster.devices[0]), q1 = create_queue(context, cluster.devices[1]);
  auto write_from_file = reinterpret_cast<clEnqueueWriteBufferFromStdioFile_fn>(
      clGetExtensionFunctionAddressForPlatform(cluster.platform, "clEnqueueWriteBufferFromStdioFile"));
  const size_t n = 3 << 20;
  std::vector<uint32_t> contents = pattern(n, 11);
  TempFile file(contents);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, n * 4);
  cl_event loaded;
  ASSERT_CL_OK(write_from_file(q1, mem, CL_FALSE, 0, n * 4, file.file, 0, nullptr, &loaded));
  std::vector<uint32_t> out(n);
  ASSERT_CL_OK(clEnqueueReadBuffer(q0, mem, CL_TRUE, 0, n * 4, out.data(), 1, &loaded, nullptr));
  EXPECT_TRUE(out == contents);
  clReleaseEvent(loaded);
}
