// Kernel printf: what a kernel prints reaches the application's stdout, in order with the
// application's own output, by the time the command's completion is observed; sessions of one
// daemon each get only their own output; kernels that cannot print cost no printf traffic.
// (That the bytes are the backend's own formatting is checked by tests/realprog/driver_check.sh.)
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "cl_harness.h"
#include "raw_session.h"

using namespace fedcl_test;

namespace {

// The test's stdout, captured; gtest reports failures on stdout, so a failed test shows (the end of)
// what was captured on stderr.
class StdoutCapture : public OutputCapture {
 public:
  StdoutCapture() : OutputCapture(stdout) {}
  ~StdoutCapture() {
    if (!::testing::Test::HasFailure()) return;
    std::string text = so_far();
    if (text.size() > 8192) text = "...\n" + text.substr(text.size() - 8192);
    std::fprintf(stderr, "--- the test's stdout while captured:\n%s--- end of captured stdout\n", text.c_str());
  }
};

const char kPrintSource[] = R"(
kernel void say(int tag, int launch, int spin, global int *sink) {
  uint acc = tag;
  for (int i = 0; i < spin; i++) acc = acc * 1103515245u + 12345u;  // about 2.3 ns an iteration on PoCL
  if (acc == 123456789u) sink[0] = acc;
  printf("session-%c launch %d item %d\n", tag, launch, (int)get_global_id(0));
}
kernel void text(int which) {
  if (which == 0) printf("first kernel line\n");
  else printf("kernel number %d\n", which);
}
kernel void silent_here(int which) {
  if (which == 42) printf("only when asked\n");
}
kernel void many(int lines) {
  for (int i = 0; i < lines; i++)
    printf("line %06d of a kernel that prints far more than a pipe holds..................\n", (int)get_global_id(0) * lines + i);
}
)";

const char kQuietSource[] = R"(
kernel void quiet(global int *x) { x[0] += 1; }
)";

struct PrintFixture : OneDeviceFixture {
  cl_program program = nullptr;
  cl_mem sink = nullptr;
  void SetUp() override {
    OneDeviceFixture::SetUp();
    program = build_program(context, kPrintSource);
    sink = create_buffer(context, CL_MEM_READ_WRITE, sizeof(int));
  }
  void TearDown() override {
    if (sink) clReleaseMemObject(sink);
    if (program) clReleaseProgram(program);
    OneDeviceFixture::TearDown();
  }
};

struct Printf : PrintFixture {};

// Enqueues launches of say() printing items lines each, tagged with tag.
cl_int enqueue_say(cl_command_queue queue, cl_kernel kernel, cl_mem sink, char tag, int launch, size_t items,
                   int spin, cl_uint waits = 0, const cl_event *wait_list = nullptr, cl_event *event = nullptr) {
  int tag_value = tag;
  cl_int err = clSetKernelArg(kernel, 0, sizeof tag_value, &tag_value);
  if (err == CL_SUCCESS) err = clSetKernelArg(kernel, 1, sizeof launch, &launch);
  if (err == CL_SUCCESS) err = clSetKernelArg(kernel, 2, sizeof spin, &spin);
  if (err == CL_SUCCESS) err = clSetKernelArg(kernel, 3, sizeof sink, &sink);
  if (err == CL_SUCCESS) err = clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &items, nullptr, waits, wait_list, event);
  return err;
}

// The lines of text that start with prefix.
std::vector<std::string> lines_with(const std::string &text, const std::string &prefix) {
  std::vector<std::string> found;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, prefix.size(), prefix) == 0) found.push_back(line);
  return found;
}

// Checks that text holds exactly the lines launches x items of say() with tag print, each launch's
// lines before the next launch's.
void expect_tagged_lines(const std::string &text, char tag, int launches, size_t items) {
  std::vector<std::string> lines = lines_with(text, std::string("session-") + tag);
  ASSERT_EQ(size_t(launches) * items, lines.size()) << text;
  std::set<std::pair<int, int>> seen;
  int last_launch = 0;
  for (const std::string &line : lines) {
    char got_tag = 0;
    int launch = -1, item = -1;
    ASSERT_EQ(3, std::sscanf(line.c_str(), "session-%c launch %d item %d", &got_tag, &launch, &item)) << line;
    EXPECT_GE(launch, last_launch) << "launch " << launch << "'s output came after launch " << last_launch << "'s";
    last_launch = launch;
    EXPECT_TRUE(seen.emplace(launch, item).second) << "twice: " << line;
  }
}

// A child process that uses fedcl (the runtime connects once per process, so a second session of
// the same daemon needs a second process). The parent must not have made an OpenCL call yet: the
// child then starts with no runtime threads to lose. Its stdout goes to a file.
class Child {
 public:
  // body runs in the child once the parent calls go(); its result is the child's exit status.
  template <typename Setup, typename Body>
  Child(Setup setup, Body body) {
    char pattern[] = "/tmp/fedcl-child-stdout-XXXXXX";
    int out = mkstemp(pattern);
    if (out < 0 || pipe(ready_) != 0 || pipe(go_) != 0) throw std::runtime_error("child set-up failed");
    path_ = pattern;
    std::fflush(stdout);
    pid_ = fork();
    if (pid_ == 0) {
      alarm(50);  // never outlive the test
      dup2(out, STDOUT_FILENO);
      close(ready_[0]);
      close(go_[1]);
      int status = setup();
      char byte = char(status);
      if (write(ready_[1], &byte, 1) != 1 || status != 0) _exit(status ? status : 90);
      if (read(go_[0], &byte, 1) != 1) _exit(91);  // the parent went away
      status = body();
      std::fflush(stdout);
      _exit(status);
    }
    close(out);
    close(ready_[1]);
    close(go_[0]);
  }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(ready_[0]);
    close(go_[1]);
    unlink(path_.c_str());
  }
  // Waits for the child's set-up; returns its status (0: ready).
  int ready() {
    char byte = 99;
    return read(ready_[0], &byte, 1) == 1 ? byte : 98;
  }
  void go() {
    char byte = 1;
    (void)!write(go_[1], &byte, 1);
  }
  // The child's exit status, or -1 if it did not exit within timeout.
  int wait(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  bool exited() {
    int status = 0;
    if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) pid_ = -1;
    return pid_ <= 0;
  }
  std::string output() const { return read_file(path_); }

 private:
  pid_t pid_ = -1;
  int ready_[2] = {-1, -1}, go_[2] = {-1, -1};
  std::string path_;
};

// What a session of a two-session test sets up (in the child, and in the test itself): the fedcl
// device, a context, an in-order queue and say(); released at the end.
struct SayingSession {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_kernel kernel = nullptr;
  cl_mem sink = nullptr;
  int setup() {
    try {
      std::vector<cl_device_id> devices = fedcl_devices(fedcl_platform());
      if (devices.empty()) return 2;
      cl_int err;
      context = clCreateContext(nullptr, 1, devices.data(), nullptr, nullptr, &err);
      if (err != CL_SUCCESS) return 3;
      queue = create_queue(context, devices[0]);
      kernel = create_kernel(build_program(context, kPrintSource), "say");
      sink = create_buffer(context, CL_MEM_READ_WRITE, sizeof(int));
      return 0;
    } catch (const std::exception &) {
      return 4;
    }
  }
  int print(char tag, int launches, size_t items, int spin) {
    for (int launch = 1; launch <= launches; launch++)
      if (enqueue_say(queue, kernel, sink, tag, launch, items, spin) != CL_SUCCESS) return 5;
    return clFinish(queue) == CL_SUCCESS ? 0 : 6;
  }
  ~SayingSession() {
    if (sink) clReleaseMemObject(sink);
    if (kernel) clReleaseKernel(kernel);
    if (queue) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }
};

}  // namespace

TEST_F(Printf, OutputIsOnStdoutWhenFinishReturns) {
  cl_kernel kernel = create_kernel(program, "text");
  StdoutCapture capture;
  std::printf("application before\n");
  int which = 0;
  set_arg(kernel, 0, which);
  size_t one = 1;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(queue));
  EXPECT_EQ("application before\nfirst kernel line\n", capture.so_far());
  std::printf("application between\n");
  // Waiting for the event is enough too.
  which = 2;
  set_arg(kernel, 0, which);
  cl_event event;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &one, nullptr, 0, nullptr, &event));
  ASSERT_CL_OK(clWaitForEvents(1, &event));
  EXPECT_EQ("application before\nfirst kernel line\napplication between\nkernel number 2\n", capture.so_far());
  clReleaseEvent(event);
  clReleaseKernel(kernel);
}

TEST_F(Printf, SeveralKernelsPrintInQueueOrder) {
  cl_kernel kernel = create_kernel(program, "text");
  StdoutCapture capture;
  size_t one = 1;
  std::string expected;
  for (int which = 1; which <= 12; which++) {
    set_arg(kernel, 0, which);
    ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr));
    expected += "kernel number " + std::to_string(which) + "\n";
  }
  // A blocking read after them: its completion also comes after their output.
  int value = 0;
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, sink, CL_TRUE, 0, sizeof value, &value, 0, nullptr, nullptr));
  EXPECT_EQ(expected, capture.so_far());
  std::printf("application after\n");
  ASSERT_CL_OK(clFinish(queue));
  EXPECT_EQ(expected + "application after\n", capture.so_far());
  clReleaseKernel(kernel);
}

TEST_F(Printf, OutOfOrderQueueAndBarrier) {
  cl_command_queue ooo = create_queue(context, device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  cl_kernel kernel = create_kernel(program, "say");
  StdoutCapture capture;
  cl_int err;
  cl_event gate = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  // A barrier waits for a user event; the printing command after it must not run before it.
  ASSERT_CL_OK(clEnqueueBarrierWithWaitList(ooo, 1, &gate, nullptr));
  ASSERT_CL_OK(enqueue_say(ooo, kernel, sink, 'O', 1, 3, 0));
  ASSERT_CL_OK(clFlush(ooo));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ("", capture.so_far());
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  ASSERT_CL_OK(clFinish(ooo));
  expect_tagged_lines(capture.so_far(), 'O', 1, 3);
  clReleaseEvent(gate);
  clReleaseKernel(kernel);
  clReleaseCommandQueue(ooo);
}

// Runs many() on items work-items printing lines lines each, and checks every line arrived whole.
void expect_many_lines(cl_command_queue queue, cl_kernel kernel, size_t items, int lines) {
  set_arg(kernel, 0, lines);
  StdoutCapture capture;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &items, nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(queue));
  std::string text = capture.so_far();
  std::vector<std::string> found = lines_with(text, "line ");
  const size_t total = items * lines;
  ASSERT_EQ(total, found.size());
  std::sort(found.begin(), found.end());
  for (size_t i = 0; i < total; i++) {
    char expected[128];
    std::snprintf(expected, sizeof expected, "line %06d of a kernel that prints far more than a pipe holds..................", int(i));
    ASSERT_EQ(expected, found[i]);
  }
  EXPECT_EQ(total * 81, text.size());
}

TEST_F(Printf, MoreThanAPipeHoldsArrivesWhole) {
  cl_kernel kernel = create_kernel(program, "many");
  // 4096 work-items, 81 bytes each: 324 KiB, more than a default pipe's 64 KiB, written by several
  // of PoCL's threads at once.
  expect_many_lines(queue, kernel, 4096, 1);
  // One work-item printing 1.6 MiB: more than fedcld's pipe holds (1 MiB by default), in one write.
  expect_many_lines(queue, kernel, 1, 20000);
  clReleaseKernel(kernel);
}

TEST_F(Printf, ProgramFromBinaryPrints) {
  std::vector<unsigned char> binary = program_binary(program);
  size_t size = binary.size();
  const unsigned char *binaries[] = {binary.data()};
  cl_int err, status;
  cl_program from_binary = clCreateProgramWithBinary(context, 1, &device, &size, binaries, &status, &err);
  ASSERT_CL_OK(err);
  ASSERT_CL_OK(clBuildProgram(from_binary, 0, nullptr, "", nullptr, nullptr));
  cl_kernel kernel = create_kernel(from_binary, "text");
  int which = 7;
  set_arg(kernel, 0, which);
  StdoutCapture capture;
  size_t one = 1;
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(queue));
  EXPECT_EQ("kernel number 7\n", capture.so_far());
  clReleaseKernel(kernel);
  clReleaseProgram(from_binary);
}

TEST_F(Printf, FailedDependencyLeavesTheGateFree) {
  cl_kernel kernel = create_kernel(program, "say");
  cl_command_queue other = create_queue(context, device);
  StdoutCapture capture;
  cl_int err;
  cl_event failing = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  cl_event doomed;
  ASSERT_CL_OK(enqueue_say(queue, kernel, sink, 'F', 1, 2, 0, 1, &failing, &doomed));
  ASSERT_CL_OK(clFlush(queue));
  ASSERT_CL_OK(clSetUserEventStatus(failing, -1234));
  EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, clWaitForEvents(1, &doomed));
  // Printing goes on, on another queue.
  cl_kernel again = create_kernel(program, "say");
  ASSERT_CL_OK(enqueue_say(other, again, sink, 'G', 1, 2, 0));
  ASSERT_CL_OK(clFinish(other));
  expect_tagged_lines(capture.so_far(), 'G', 1, 2);
  EXPECT_EQ(0u, lines_with(capture.so_far(), "session-F").size());
  clReleaseEvent(doomed);
  clReleaseEvent(failing);
  clReleaseKernel(again);
  clReleaseKernel(kernel);
  clReleaseCommandQueue(other);
}

TEST(PrintfSessions, ConcurrentSessionsGetOnlyTheirOwnOutput) {
  DaemonProcess daemon;
  set_hosts(daemon.endpoint());
  const int launches = 12;
  const size_t items = 4;
  const int spin = 200000;
  SayingSession child_session;
  Child child([&] { return child_session.setup(); }, [&] { return child_session.print('B', launches, items, spin); });
  ASSERT_EQ(0, child.ready());

  SayingSession app;
  ASSERT_EQ(0, app.setup());
  cl_command_queue queue = app.queue;
  cl_kernel kernel = app.kernel;
  cl_mem sink = app.sink;
  StdoutCapture capture;
  child.go();
  for (int launch = 1; launch <= launches; launch++)
    ASSERT_CL_OK(enqueue_say(queue, kernel, sink, 'A', launch, items, spin));
  ASSERT_CL_OK(clFinish(queue));
  ASSERT_EQ(0, child.wait(std::chrono::seconds(40))) << child.output();

  std::string mine = capture.so_far(), theirs = child.output();
  expect_tagged_lines(mine, 'A', launches, items);
  expect_tagged_lines(theirs, 'B', launches, items);
  EXPECT_EQ(0u, lines_with(mine, "session-B").size()) << mine;
  EXPECT_EQ(0u, lines_with(theirs, "session-A").size()) << theirs;
}

// A printing command that waits for something takes the gate only once it could run: a session
// whose printing command waits for a user event never holds up another session's printing.
TEST(PrintfSessions, WaitingPrintingCommandDoesNotBlockOtherSessions) {
  DaemonProcess daemon;
  set_hosts(daemon.endpoint());
  SayingSession child_session;
  Child child([&] { return child_session.setup(); }, [&] { return child_session.print('B', 3, 2, 0); });
  ASSERT_EQ(0, child.ready());

  SayingSession app;
  ASSERT_EQ(0, app.setup());
  cl_int err;
  cl_context context = app.context;
  cl_command_queue queue = app.queue;
  cl_kernel kernel = app.kernel;
  cl_mem sink = app.sink;
  cl_event later = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  StdoutCapture capture;
  ASSERT_CL_OK(enqueue_say(queue, kernel, sink, 'A', 1, 2, 0, 1, &later));
  ASSERT_CL_OK(clFlush(queue));
  child.go();
  EXPECT_EQ(0, child.wait(std::chrono::seconds(20))) << "the other session's printing was held up";
  expect_tagged_lines(child.output(), 'B', 3, 2);
  EXPECT_EQ("", capture.so_far());
  ASSERT_CL_OK(clSetUserEventStatus(later, CL_COMPLETE));
  ASSERT_CL_OK(clFinish(queue));
  expect_tagged_lines(capture.so_far(), 'A', 1, 2);
  clReleaseEvent(later);
}

// A session that goes away while its printing command runs hands the gate on once that command is
// done: the next session prints as usual.
TEST(PrintfSessions, SessionThatVanishesWhilePrintingReleasesTheGate) {
  DaemonProcess daemon;
  set_hosts(daemon.endpoint());
  SayingSession child_session;
  Child child([&] { return child_session.setup(); }, [&] {
    // A long printing kernel, then exit without waiting: the daemon sees the session close while
    // the kernel runs.
    if (enqueue_say(child_session.queue, child_session.kernel, child_session.sink, 'V', 1, 2, 100000000) != CL_SUCCESS)
      return 5;
    if (clFlush(child_session.queue) != CL_SUCCESS) return 6;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return 0;
  });
  ASSERT_EQ(0, child.ready());
  child.go();
  ASSERT_EQ(0, child.wait(std::chrono::seconds(20)));

  SayingSession app;
  ASSERT_EQ(0, app.setup());
  cl_command_queue queue = app.queue;
  cl_kernel kernel = app.kernel;
  cl_mem sink = app.sink;
  StdoutCapture capture;
  ASSERT_CL_OK(enqueue_say(queue, kernel, sink, 'A', 1, 2, 0));
  ASSERT_CL_OK(clFinish(queue));
  std::string mine = capture.so_far();
  expect_tagged_lines(mine, 'A', 1, 2);
  EXPECT_EQ(0u, lines_with(mine, "session-V").size()) << mine;
}

// On the wire: a kernel that cannot print (its program never names printf) and one that could but
// does not send no printf bytes; a kernel that prints sends them in a notice, before its completion.
// The daemon's log shows that kernels that cannot print never go through the print gate.
TEST(PrintfWire, OnlyPrintingKernelsSendPrintfBytes) {
  namespace wire = fedcl::wire;
  StderrCapture daemon_log;  // the daemon inherits it
  DaemonProcess daemon({"--log-level", "debug"});
  RawSession raw(daemon.port());
  ASSERT_TRUE(raw.send_hello(wire::PROTOCOL_VERSION, 1));
  ReceivedFrame frame;
  ASSERT_TRUE(raw.read_frame(&frame));
  ASSERT_EQ(CL_SUCCESS, frame.reader->getRoot<wire::Reply>().getStatus());

  const uint64_t base = wire::FIRST_CLIENT_ID;
  const uint64_t context = base + 1, queue = base + 2, quiet_program = base + 3, print_program = base + 4,
                 quiet = base + 5, silent_here = base + 6, loud = base + 7, buffer = base + 8;
  uint64_t seq = 2;
  auto send = [&](auto fill) {
    capnp::MallocMessageBuilder message;
    auto request = message.initRoot<wire::Request>();
    fill(request);
    return raw.send_request(message);
  };
  // Reads frames up to the reply to seq; returns the notices' printf bytes and the completions in
  // the order they came ("<printf bytes>" or "event N").
  auto until_reply = [&](uint64_t seq, std::vector<std::string> *seen) {
    for (;;) {
      ReceivedFrame next;
      if (!raw.read_frame(&next)) return false;
      if (next.header.kind == uint16_t(wire::FrameKind::REPLY)) {
        auto reply = next.reader->getRoot<wire::Reply>();
        if (reply.getSeq() == seq) return reply.getStatus() == CL_SUCCESS;
        continue;
      }
      auto notice = next.reader->getRoot<wire::Notice>();
      EXPECT_EQ(next.header.payload_bytes, notice.getPrintfBytes());
      if (next.header.payload_bytes) seen->push_back(std::string(next.payload.begin(), next.payload.end()));
      for (auto completion : notice.getCompletions()) seen->push_back("event " + std::to_string(completion.getEvent()));
      for (auto error : notice.getErrors()) seen->push_back(std::string("error ") + error.getMessage().cStr());
    }
  };
  ASSERT_TRUE(send([&](wire::Request::Builder r) {
    auto c = r.initCreateContext();
    c.setId(context);
    c.initDevices(1).set(0, 1);
  }));
  ASSERT_TRUE(send([&](wire::Request::Builder r) {
    auto q = r.initCreateQueue();
    q.setId(queue);
    q.setContext(context);
    q.setDevice(1);
  }));
  for (auto [id, source] : {std::pair<uint64_t, const char *>{quiet_program, kQuietSource}, {print_program, kPrintSource}}) {
    ASSERT_TRUE(send([&](wire::Request::Builder r) {
      auto p = r.initCreateProgramWithSource();
      p.setId(id);
      p.setContext(context);
      p.setSource(source);
    }));
    uint64_t build_seq = seq++;
    ASSERT_TRUE(send([&](wire::Request::Builder r) {
      r.setSeq(build_seq);
      r.initBuildProgram().setProgram(id);
    }));
    std::vector<std::string> seen;
    ASSERT_TRUE(until_reply(build_seq, &seen));
  }
  for (auto [id, program, name] : {std::tuple<uint64_t, uint64_t, const char *>{quiet, quiet_program, "quiet"},
                                   {silent_here, print_program, "silent_here"},
                                   {loud, print_program, "text"}}) {
    ASSERT_TRUE(send([&](wire::Request::Builder r) {
      auto k = r.initCreateKernel();
      k.setId(id);
      k.setProgram(program);
      k.setName(name);
    }));
  }
  ASSERT_TRUE(send([&](wire::Request::Builder r) {
    auto b = r.initCreateBuffer();
    b.setId(buffer);
    b.setContext(context);
    b.setFlags(CL_MEM_READ_WRITE);
    b.setSize(sizeof(int));
  }));
  auto launch = [&](uint64_t kernel, uint64_t event, bool buffer_arg, int value) {
    return send([&](wire::Request::Builder r) {
      auto n = r.initNdRange();
      auto command = n.initCommand();
      command.setQueue(queue);
      command.setEvent(event);
      n.setKernel(kernel);
      auto arg = n.initArgs(1)[0];
      arg.setIndex(0);
      if (buffer_arg) arg.setMemObject(buffer);
      else arg.setValue(kj::arrayPtr(reinterpret_cast<const kj::byte *>(&value), sizeof value));
      n.initGlobal(1).set(0, 1);
    });
  };
  auto finish = [&](std::vector<std::string> *seen) {
    uint64_t finish_seq = seq++;
    return send([&](wire::Request::Builder r) {
             r.setSeq(finish_seq);
             r.setFinish(queue);
           }) &&
           until_reply(finish_seq, seen);
  };

  // Kernels that print nothing: no printf bytes at all.
  for (uint64_t kernel : {quiet, silent_here}) {
    std::vector<std::string> seen, expected;
    uint64_t first = base + 100 + 10 * (kernel - base);
    for (uint64_t event = first; event < first + 5; event++) {
      ASSERT_TRUE(launch(kernel, event, kernel == quiet, 0));
      expected.push_back("event " + std::to_string(event));
    }
    ASSERT_TRUE(finish(&seen));
    // Completions of one queue may reach the client in any order (seen reordered under TSan).
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(expected, seen);
  }

  // A kernel that prints: its bytes come first, then its completion.
  std::vector<std::string> seen;
  ASSERT_TRUE(launch(loud, base + 200, false, 5));
  ASSERT_TRUE(finish(&seen));
  EXPECT_EQ((std::vector<std::string>{"kernel number 5\n", "event " + std::to_string(base + 200)}), seen);
  // The five launches of silent_here and the one of text went through the gate, none of quiet.
  daemon.stop();
  EXPECT_EQ(6u, count_occurrences(daemon_log.text(), "print gate: a command of session 1 completed"));
}
