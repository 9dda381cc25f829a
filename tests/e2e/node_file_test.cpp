// Files of the daemon's node (cl_fedcl_transfer): the daemon loads buffers from, and saves them to,
// files under its --file-root, and refuses every path that leads elsewhere.
#include <CL/cl_fedcl_transfer.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

std::string make_root() {
  std::string root = ::testing::TempDir() + "fedcl_node_files_" + std::to_string(getpid());
  mkdir(root.c_str(), 0755);
  return root;
}

void write_words(const std::string &path, const std::vector<uint32_t> &words) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char *>(words.data()), words.size() * 4);
}

std::vector<uint32_t> read_words(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint32_t> words;
  uint32_t word;
  while (in.read(reinterpret_cast<char *>(&word), 4)) words.push_back(word);
  return words;
}

struct NodeFiles : ::testing::Test {
  std::string root = make_root();
  Cluster cluster{1, {"--file-root", root}};
  std::mutex mutex;
  std::string notices;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  clEnqueueWriteBufferFromNodeFile_fn load = nullptr;
  clEnqueueReadBufferToNodeFile_fn save = nullptr;

  static void CL_CALLBACK collect(const char *message, const void *, size_t, void *self) {
    auto *test = static_cast<NodeFiles *>(self);
    std::lock_guard<std::mutex> lock(test->mutex);
    test->notices += std::string(message) + "\n";
  }
  std::string wait_notice(const std::string &what) {
    for (int i = 0; i < 100; i++) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (notices.find(what) != std::string::npos) return notices;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::lock_guard<std::mutex> lock(mutex);
    return notices;
  }
  void SetUp() override {
    cl_int err;
    context = clCreateContext(nullptr, 1, cluster.devices.data(), collect, this, &err);
    ASSERT_CL_OK(err);
    queue = create_queue(context, cluster.devices[0]);
    load = reinterpret_cast<clEnqueueWriteBufferFromNodeFile_fn>(
        clGetExtensionFunctionAddressForPlatform(cluster.platform, "clEnqueueWriteBufferFromNodeFile"));
    save = reinterpret_cast<clEnqueueReadBufferToNodeFile_fn>(
        clGetExtensionFunctionAddressForPlatform(cluster.platform, "clEnqueueReadBufferToNodeFile"));
    ASSERT_NE(nullptr, load);
    ASSERT_NE(nullptr, save);
  }
  void TearDown() override {
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    std::system(("rm -rf '" + root + "'").c_str());
  }
};

}  // namespace

TEST_F(NodeFiles, ABufferComesFromAndGoesToFilesOfTheNode) {
  const size_t n = (6 << 20) / 4 + 5, skip = 3;
  std::vector<uint32_t> words(n + skip);
  for (size_t i = 0; i < words.size(); i++) words[i] = uint32_t(i) * 40503u + 7;
  write_words(root + "/in.bin", words);
  mkdir((root + "/out").c_str(), 0755);
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, n * 4);
  cl_event loaded;
  ASSERT_CL_OK(load(queue, mem, CL_FALSE, 0, n * 4, "in.bin", skip * 4, 0, nullptr, &loaded));
  cl_kernel add = create_kernel(build_program(context, "kernel void add(global uint *x) { x[get_global_id(0)] += 1; }"), "add");
  set_arg(add, 0, mem);
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, add, 1, nullptr, &n, nullptr, 0, nullptr, nullptr));
  std::string absolute = root + "/out/saved.bin";
  ASSERT_CL_OK(save(queue, mem, CL_TRUE, 0, n * 4, absolute.c_str(), 0, 0, nullptr, nullptr));
  std::vector<uint32_t> saved = read_words(absolute);
  ASSERT_EQ(n, saved.size());
  for (size_t i = 0; i < n; i++) ASSERT_EQ(words[skip + i] + 1, saved[i]) << "word " << i;
  cl_int status = 1;
  ASSERT_CL_OK(clGetEventInfo(loaded, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_EQ(CL_COMPLETE, status);
  clReleaseEvent(loaded);
}

TEST_F(NodeFiles, PathsThatLeadOutsideTheRootAreRefused) {
  write_words(root + "/inside.bin", std::vector<uint32_t>(1024, 1));
  std::string outside = root + "_outside";
  mkdir(outside.c_str(), 0755);
  write_words(outside + "/secret.bin", std::vector<uint32_t>(1024, 2));
  ASSERT_EQ(0, symlink((outside + "/secret.bin").c_str(), (root + "/link.bin").c_str()));
  ASSERT_EQ(0, symlink(outside.c_str(), (root + "/dir").c_str()));
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, 4096);
  struct Case {
    const char *path;
    bool to_file;
    const char *why;
  };
  const std::string etc = "/etc/passwd", up = "../" + outside.substr(outside.rfind('/') + 1) + "/secret.bin";
  const Case cases[] = {{etc.c_str(), false, "outside the file root"},
                        {up.c_str(), false, "'..'"},
                        {"link.bin", false, "symbolic link"},
                        {"dir/secret.bin", false, "symbolic link"},
                        {"dir/new.bin", true, "symbolic link"},
                        {"link.bin", true, "symbolic links"}};
  for (const Case &c : cases) {
    cl_int err = c.to_file ? save(queue, mem, CL_TRUE, 0, 4096, c.path, 0, 0, nullptr, nullptr)
                           : load(queue, mem, CL_TRUE, 0, 4096, c.path, 0, 0, nullptr, nullptr);
    EXPECT_CL(CL_INVALID_VALUE, err) << c.path;
    EXPECT_NE(std::string::npos, wait_notice(c.why).find(c.why)) << c.path << ": " << notices;
  }
  EXPECT_EQ(std::vector<uint32_t>(1024, 2), read_words(outside + "/secret.bin")) << "a refused save wrote outside the root";
  struct stat st;
  EXPECT_NE(0, stat((outside + "/new.bin").c_str(), &st)) << "a refused save created a file outside the root";
  // Inside, all is well, and the daemon still serves the session.
  EXPECT_CL(CL_SUCCESS, load(queue, mem, CL_TRUE, 0, 4096, "inside.bin", 0, 0, nullptr, nullptr));
  std::system(("rm -rf '" + outside + "'").c_str());
}

TEST_F(NodeFiles, AShortFileFailsTheLoad) {
  write_words(root + "/short.bin", std::vector<uint32_t>(100, 3));
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, 4096);
  cl_event loaded;
  ASSERT_CL_OK(load(queue, mem, CL_FALSE, 0, 4096, "short.bin", 0, 0, nullptr, &loaded));
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &loaded));
  EXPECT_NE(std::string::npos, wait_notice("has 400 bytes").find("has 400 bytes")) << notices;
  clReleaseEvent(loaded);
}

TEST(NodeFilesWithoutARoot, NoFileIsServed) {
  Cluster cluster{1};
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, cluster.devices.data(), nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, cluster.devices[0]);
  auto load = reinterpret_cast<clEnqueueWriteBufferFromNodeFile_fn>(
      clGetExtensionFunctionAddressForPlatform(cluster.platform, "clEnqueueWriteBufferFromNodeFile"));
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, 64);
  EXPECT_CL(CL_INVALID_VALUE, load(queue, mem, CL_TRUE, 0, 64, "/etc/hostname", 0, 0, nullptr, nullptr));
}

// A daemon that stages part of a buffer through its own memory instead of mapping it, as on NVIDIA
// (fedcld --stage-buffer-ranges): a range of a buffer goes to a file and comes back from it.
TEST(NodeFilesStaged, ARangeOfABufferIsSavedAndLoaded) {
  std::string root = make_root() + "_staged";
  mkdir(root.c_str(), 0755);
  Cluster cluster{1, {"--file-root", root, "--stage-buffer-ranges", "yes"}};
  auto load = reinterpret_cast<clEnqueueWriteBufferFromNodeFile_fn>(
      clGetExtensionFunctionAddressForPlatform(cluster.platform, "clEnqueueWriteBufferFromNodeFile"));
  auto save = reinterpret_cast<clEnqueueReadBufferToNodeFile_fn>(
      clGetExtensionFunctionAddressForPlatform(cluster.platform, "clEnqueueReadBufferToNodeFile"));
  cl_int err;
  cl_context context = clCreateContext(nullptr, 1, cluster.devices.data(), nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_command_queue queue = create_queue(context, cluster.devices[0]);
  const size_t n = (3 << 20) / 4, skip = 100;
  std::vector<uint32_t> words(n);
  for (size_t i = 0; i < n; i++) words[i] = uint32_t(i) * 2246822519u + 1;
  cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, n * 4);
  ASSERT_CL_OK(clEnqueueWriteBuffer(queue, mem, CL_TRUE, 0, n * 4, words.data(), 0, nullptr, nullptr));
  ASSERT_CL_OK(save(queue, mem, CL_TRUE, skip * 4, (n - skip) * 4, "range.bin", 0, 0, nullptr, nullptr));
  std::vector<uint32_t> saved = read_words(root + "/range.bin");
  EXPECT_TRUE(std::equal(words.begin() + skip, words.end(), saved.begin(), saved.end())) << saved.size() << " words saved";
  // Back, over the front of the buffer.
  ASSERT_CL_OK(load(queue, mem, CL_TRUE, 0, (n - skip) * 4, "range.bin", 0, 0, nullptr, nullptr));
  std::vector<uint32_t> got(n), want = words;
  std::copy(words.begin() + skip, words.end(), want.begin());
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, n * 4, got.data(), 0, nullptr, nullptr));
  EXPECT_TRUE(got == want);
  clReleaseMemObject(mem);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  std::system(("rm -rf '" + root + "'").c_str());
}
