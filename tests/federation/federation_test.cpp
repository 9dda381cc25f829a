// Federation tests: one context over several fedcld nodes, buffers that move between them and events
// that cross them, and nodes that die or lose their network while they hold data.
//
// They run against daemons started by scripts/netns-cluster.sh (each node in a network namespace of
// its own, or on loopback ports without root) and written against the public OpenCL API alone, so
// that they hold whichever way the runtime moves the data: through the client, or daemon to daemon
// over peer links. Every result is compared, byte for byte, with the same computation on the host.
// ctest runs each TEST on a cluster of its own (tests/CMakeLists.txt, label "federation").
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "cl_harness.h"
#include "federation_env.h"

using namespace fedcl_test;
using namespace fedcl_federation;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Words = std::vector<uint32_t>;

namespace {

// The kernels and, below, the same computations on the host. get_global_id includes a global offset,
// so a kernel run over part of a buffer computes the same as the host over that range.
const char kSource[] = R"(
__kernel void ping(__global uint *x, uint step) {
  size_t i = get_global_id(0);
  x[i] = x[i] * 3u + step + (uint)i;
}
__kernel void pong(__global uint *x, uint step) {
  size_t i = get_global_id(0);
  uint v = x[i];
  x[i] = (v ^ (v >> 5)) + step * 7u;
}
__kernel void fill(__global uint *x, uint seed) {
  size_t i = get_global_id(0);
  x[i] = (uint)i * 2654435761u + seed;
}
__kernel void add(__global uint *x, uint value) { x[get_global_id(0)] += value; }
__kernel void combine(__global const uint *x, __global const uint *y, __global uint *out, uint k, uint m) {
  size_t i = get_global_id(0);
  out[i] = x[i] * m + (y[i] ^ k) + (uint)i;
}
)";

void ping(Words &x, uint32_t step, size_t begin = 0, size_t end = SIZE_MAX) {
  for (size_t i = begin; i < std::min(end, x.size()); i++) x[i] = x[i] * 3u + step + uint32_t(i);
}
void pong(Words &x, uint32_t step, size_t begin = 0, size_t end = SIZE_MAX) {
  for (size_t i = begin; i < std::min(end, x.size()); i++) x[i] = (x[i] ^ (x[i] >> 5)) + step * 7u;
}
void fill(Words &x, uint32_t seed, size_t begin = 0, size_t end = SIZE_MAX) {
  for (size_t i = begin; i < std::min(end, x.size()); i++) x[i] = uint32_t(i) * 2654435761u + seed;
}
void add(Words &x, uint32_t value, size_t begin = 0, size_t end = SIZE_MAX) {
  for (size_t i = begin; i < std::min(end, x.size()); i++) x[i] += value;
}
void mix(const Words &x, const Words &y, Words &out, uint32_t k, uint32_t m) {
  for (size_t i = 0; i < out.size(); i++) out[i] = x[i] * m + (y[i] ^ k) + uint32_t(i);
}
Words filled(size_t n, uint32_t seed) {
  Words x(n);
  fill(x, seed);
  return x;
}

// "" when got is want, else where they differ and how (a buffer of zeros, or one that kept an older
// value, reads differently from a few wrong words).
std::string diff(const Words &want, const Words &got) {
  if (want.size() != got.size()) return "size " + std::to_string(got.size()) + " instead of " + std::to_string(want.size());
  size_t wrong = 0, zeros = 0, first = SIZE_MAX;
  for (size_t i = 0; i < want.size(); i++) {
    if (want[i] == got[i]) continue;
    if (first == SIZE_MAX) first = i;
    wrong++;
    if (got[i] == 0) zeros++;
  }
  if (!wrong) return {};
  std::ostringstream out;
  out << wrong << " of " << want.size() << " words differ (" << zeros << " of them zero); first at index " << first
      << ": got " << got[first] << ", want " << want[first];
  return out.str();
}

// Throws with the status name: the test fails there, with the call named.
void ok(cl_int err, const std::string &what) {
  if (err != CL_SUCCESS)
    throw std::runtime_error(what + " failed with " + status_name(err) + " (" + std::to_string(err) + ")");
}

cl_int event_status(cl_event event) {
  cl_int status = CL_QUEUED;
  ok(clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr), "clGetEventInfo");
  return status;
}

cl_event user_event(cl_context context) {
  cl_int err;
  cl_event event = clCreateUserEvent(context, &err);
  ok(err, "clCreateUserEvent");
  return event;
}

bool ends_with(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

constexpr seconds kHang{45};  // what a call may take before it counts as hung

// An event of another daemon than the one a wait returned from is complete there, but its status
// reaches this process with that daemon's notice, which may come after: such statuses are waited
// for (wait_for_status), not read at once.

// Every test ends (as a failure naming its step) after this long, before ctest's 120 s timeout.
constexpr seconds kTestLimit{100};

struct Federation : ::testing::Test {
  Watchdog watchdog{kTestLimit};
  ClusterEnv env;
  Notices notices;
  cl_platform_id platform = nullptr;
  std::vector<cl_device_id> devices;  // devices[k]: node k's device
  cl_context context = nullptr;
  std::vector<cl_command_queue> queues;  // queues[k]: an in-order queue on node k
  cl_program program = nullptr;

  void SetUp() override {
    std::string problem = env.load();
    ASSERT_TRUE(problem.empty()) << problem;
    platform = fedcl_platform();
    cl_int err;
    std::vector<cl_device_id> all = fedcl_devices(platform, &err);
    ASSERT_CL_OK(err);
    // Daemons are started with --name nodeK; their devices are named "... @ nodeK".
    for (size_t k = 0; k < env.nodes(); k++) {
      cl_device_id found = nullptr;
      for (cl_device_id device : all)
        if (ends_with(device_string(device, CL_DEVICE_NAME), " @ node" + std::to_string(k))) found = device;
      ASSERT_NE(nullptr, found) << "no device of node" << k << " (" << env.hosts[k] << ") among " << all.size();
      devices.push_back(found);
    }
    cl_context_properties properties[] = {CL_CONTEXT_PLATFORM, cl_context_properties(platform), 0};
    context = clCreateContext(properties, cl_uint(devices.size()), devices.data(), Notices::callback, &notices, &err);
    ASSERT_CL_OK(err);
    for (cl_device_id device : devices) queues.push_back(create_queue(context, device));
    program = build_program(context, kSource);
  }

  // Objects are not released at the end: some tests leave a node dead, and the process ends anyway.

  // Names what the test does now: printed, and named by the watchdog if the test hangs there.
  void step(const std::string &what) {
    std::printf("[ step     ] %s\n", what.c_str());
    std::fflush(stdout);
    watchdog.step(what);
  }

  void require_nodes(size_t count) {
    ASSERT_GE(env.nodes(), count) << "this test wants " << count << " nodes (netns-cluster.sh --nodes)";
  }

  cl_mem buffer(size_t words, const Words *initial = nullptr) {
    cl_mem_flags flags = CL_MEM_READ_WRITE | (initial ? CL_MEM_COPY_HOST_PTR : 0);
    return create_buffer(context, flags, words * 4, initial ? const_cast<uint32_t *>(initial->data()) : nullptr);
  }

  cl_kernel kernel(const char *name) { return create_kernel(program, name); }

  // Enqueues kernel over [offset, offset + global) on queue after the wait list, flushes the queue
  // (another queue may wait for the event) and returns the event.
  cl_event run(cl_command_queue queue, cl_kernel kernel, size_t global, std::vector<cl_event> wait = {}, size_t offset = 0) {
    cl_event event = nullptr;
    ok(clEnqueueNDRangeKernel(queue, kernel, 1, offset ? &offset : nullptr, &global, nullptr, cl_uint(wait.size()),
                              wait.empty() ? nullptr : wait.data(), &event),
       "clEnqueueNDRangeKernel");
    ok(clFlush(queue), "clFlush");
    return event;
  }

  // A kernel of one buffer and one uint (ping, pong, fill, add), run over words words of mem.
  cl_event run1(cl_command_queue queue, cl_kernel kernel, cl_mem mem, uint32_t value, size_t words,
                std::vector<cl_event> wait = {}, size_t offset = 0) {
    ok(clSetKernelArg(kernel, 0, sizeof mem, &mem), "clSetKernelArg(0)");
    ok(clSetKernelArg(kernel, 1, sizeof value, &value), "clSetKernelArg(1)");
    return run(queue, kernel, words, std::move(wait), offset);
  }

  // A blocking read of words words of mem from word offset on queue, after the wait list.
  Words read(cl_command_queue queue, cl_mem mem, size_t words, std::vector<cl_event> wait = {}, size_t offset = 0) {
    Words out(words, 0xdeadbeefu);
    ok(clEnqueueReadBuffer(queue, mem, CL_TRUE, offset * 4, words * 4, out.data(), cl_uint(wait.size()),
                           wait.empty() ? nullptr : wait.data(), nullptr),
       "clEnqueueReadBuffer");
    return out;
  }

  // A blocking read that may fail: its status, the words in *out.
  cl_int try_read(cl_command_queue queue, cl_mem mem, size_t words, Words *out) {
    out->assign(words, 0xdeadbeefu);
    cl_int err = CL_SUCCESS;
    within(kHang, "a blocking clEnqueueReadBuffer", [&] {
      err = clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, words * 4, out->data(), 0, nullptr, nullptr);
    });
    return err;
  }

  void kill_only_holder_then_use(milliseconds settle);

  std::string logs() {
    std::string text;
    for (size_t k = 0; k < env.nodes(); k++) text += "--- node" + std::to_string(k) + " log:\n" + env.log(k);
    return text;
  }
};

}  // namespace

// One buffer handed back and forth between a kernel on node0 and one on node1, 100 times each way.
// Each kernel waits only for the event of the one before it, on the other node; one blocking read
// at the end.
TEST_F(Federation, PingPong) {
  require_nodes(2);
  const size_t n = (1 << 20) / 4;  // 1 MiB
  const uint32_t rounds = 100;
  Words host = filled(n, 12345);
  cl_mem mem = buffer(n, &host);
  cl_kernel k_ping = kernel("ping"), k_pong = kernel("pong");
  step("100 round trips node0 -> node1 -> node0, each kernel waiting for the other node's event");
  cl_event previous = nullptr;
  auto after = [&](cl_event event) {
    if (previous) clReleaseEvent(previous);
    previous = event;
  };
  for (uint32_t round = 0; round < rounds; round++) {
    std::vector<cl_event> wait;
    if (previous) wait.push_back(previous);
    after(run1(queues[0], k_ping, mem, round, n, wait));
    ping(host, round);
    after(run1(queues[1], k_pong, mem, round, n, {previous}));
    pong(host, round);
  }
  step("the blocking read at the end");
  Words out = read(queues[0], mem, n, {previous});
  EXPECT_EQ("", diff(host, out)) << "after " << rounds << " round trips";
  EXPECT_CL(CL_COMPLETE, wait_for_status(previous, kHang));
}

// Kernels on node0 -> node1 -> node2 -> node0 ..., linked by events alone (no clFinish or blocking
// call until the end), two independent pipelines interleaved on the same queues.
TEST_F(Federation, ThreeNodePipeline) {
  require_nodes(3);
  const size_t n = 1 << 16;
  const uint32_t iterations = 8;
  const int pipelines = 2;
  struct Pipeline {
    Words a, b, c;
    cl_mem ma, mb, mc;
    cl_event last = nullptr;
  } p[pipelines];
  cl_kernel k_mix[3] = {kernel("combine"), kernel("combine"), kernel("combine")};
  for (int j = 0; j < pipelines; j++) {
    p[j].a = filled(n, 100 + j);
    p[j].b = Words(n, 0);
    p[j].c = filled(n, 200 + j);
    p[j].ma = buffer(n, &p[j].a);
    p[j].mb = buffer(n);
    p[j].mc = buffer(n, &p[j].c);
  }
  // Stage s on node s: out = x * m + (y ^ k) + i.
  auto stage = [&](Pipeline &q, int s, uint32_t k) {
    cl_mem x[] = {q.ma, q.mb, q.mc}, y[] = {q.mc, q.ma, q.mb}, out[] = {q.mb, q.mc, q.ma};
    Words *hx[] = {&q.a, &q.b, &q.c}, *hy[] = {&q.c, &q.a, &q.b}, *hout[] = {&q.b, &q.c, &q.a};
    const uint32_t m[] = {5, 3, 7};
    cl_kernel kernel = k_mix[s];
    ok(clSetKernelArg(kernel, 0, sizeof(cl_mem), &x[s]), "clSetKernelArg");
    ok(clSetKernelArg(kernel, 1, sizeof(cl_mem), &y[s]), "clSetKernelArg");
    ok(clSetKernelArg(kernel, 2, sizeof(cl_mem), &out[s]), "clSetKernelArg");
    ok(clSetKernelArg(kernel, 3, sizeof k, &k), "clSetKernelArg");
    ok(clSetKernelArg(kernel, 4, sizeof m[s], &m[s]), "clSetKernelArg");
    std::vector<cl_event> wait;
    if (q.last) wait.push_back(q.last);
    cl_event event = run(queues[s], kernel, n, wait);
    if (q.last) clReleaseEvent(q.last);
    q.last = event;
    mix(*hx[s], *hy[s], *hout[s], k, m[s]);
  };
  step("enqueueing the pipelines");
  for (uint32_t it = 0; it < iterations; it++)
    for (int s = 0; s < 3; s++)
      for (int j = 0; j < pipelines; j++) stage(p[j], s, it * 10 + s + 1000 * j);
  step("reading the results");
  // The first pipeline is read on node1, the second on node0.
  for (int j = 0; j < pipelines; j++) {
    cl_command_queue queue = queues[j == 0 ? 1 : 0];
    EXPECT_EQ("", diff(p[j].a, read(queue, p[j].ma, n, {p[j].last}))) << "pipeline " << j << ", buffer a";
    EXPECT_EQ("", diff(p[j].b, read(queue, p[j].mb, n))) << "pipeline " << j << ", buffer b";
    EXPECT_EQ("", diff(p[j].c, read(queue, p[j].mc, n))) << "pipeline " << j << ", buffer c";
  }
}

// One buffer written in parts: by the host through node0's queue and by a kernel on node1; then used
// whole by a kernel on node0 and read on node1. Then sub-buffers of it, written on both nodes.
TEST_F(Federation, MixedWriters) {
  require_nodes(2);
  const size_t n = 1 << 18, half = n / 2;
  Words host(n, 0);
  cl_mem mem = buffer(n);
  step("the host writes one half on node0, a kernel on node1 the other");
  Words first_half = filled(half, 777);
  std::copy(first_half.begin(), first_half.end(), host.begin());
  cl_event written;
  ok(clEnqueueWriteBuffer(queues[0], mem, CL_FALSE, 0, half * 4, first_half.data(), 0, nullptr, &written),
     "clEnqueueWriteBuffer");
  ok(clFlush(queues[0]), "clFlush");
  cl_kernel k_fill = kernel("fill"), k_ping = kernel("ping"), k_pong = kernel("pong"), k_add = kernel("add");
  cl_event filled_second = run1(queues[1], k_fill, mem, 31, half, {written}, half);
  fill(host, 31, half, n);
  cl_event pinged = run1(queues[0], k_ping, mem, 5, n, {filled_second});
  ping(host, 5);
  ASSERT_EQ("", diff(host, read(queues[1], mem, n, {pinged}))) << "the whole buffer read on node1";

  step("sub-buffers written on both nodes");
  // Sub-buffers: [0, half) and [half, n). A sub-buffer's origin must be aligned for every device.
  cl_uint align_bits = 0;
  for (cl_device_id device : devices) {
    cl_uint bits = 0;
    ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, nullptr));
    align_bits = std::max(align_bits, bits);
  }
  ASSERT_EQ(0u, (half * 4) % (align_bits / 8)) << "half the buffer is not aligned for a sub-buffer";
  cl_mem sub[2];
  for (int h = 0; h < 2; h++) {
    cl_buffer_region region{h * half * 4, half * 4};
    cl_int err;
    sub[h] = clCreateSubBuffer(mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    ASSERT_CL_OK(err);
  }
  // On node1: a kernel over the upper sub-buffer (its indices start at 0), then the host writes 50
  // words into the lower one at word 100.
  cl_event added = run1(queues[1], k_add, sub[1], 1000, half);
  add(host, 1000, half, n);
  Words patch = filled(50, 4242);
  cl_event patched;
  ok(clEnqueueWriteBuffer(queues[1], sub[0], CL_FALSE, 100 * 4, patch.size() * 4, patch.data(), 0, nullptr, &patched),
     "clEnqueueWriteBuffer into a sub-buffer");
  ok(clFlush(queues[1]), "clFlush");
  std::copy(patch.begin(), patch.end(), host.begin() + 100);
  // On node0: pong over the lower sub-buffer, then ping over the whole buffer.
  cl_event ponged = run1(queues[0], k_pong, sub[0], 9, half, {added, patched});
  pong(host, 9, 0, half);
  cl_event pinged_again = run1(queues[0], k_ping, mem, 11, n, {ponged});
  ping(host, 11);
  // Read back: the parent on node1, each sub-buffer on the other node, a range of the parent on node0.
  EXPECT_EQ("", diff(host, read(queues[1], mem, n, {pinged_again}))) << "the parent read on node1";
  Words lower(host.begin(), host.begin() + half), upper(host.begin() + half, host.end());
  EXPECT_EQ("", diff(lower, read(queues[1], sub[0], half))) << "the lower sub-buffer read on node1";
  EXPECT_EQ("", diff(upper, read(queues[0], sub[1], half, {pinged_again}))) << "the upper sub-buffer read on node0";
  Words middle(host.begin() + half - 1000, host.begin() + half + 1000);
  EXPECT_EQ("", diff(middle, read(queues[0], mem, 2000, {}, half - 1000))) << "a range across both halves on node0";
}

// clEnqueueMigrateMemObjects to the node that runs the next kernel; with CONTENT_UNDEFINED before a
// kernel that overwrites everything; to the host; and of several objects at once.
TEST_F(Federation, MigrateMemObjects) {
  require_nodes(2);
  const size_t n = 1 << 18;
  Words host = filled(n, 99);
  cl_mem mem = buffer(n, &host);
  cl_kernel k_ping = kernel("ping"), k_pong = kernel("pong"), k_fill = kernel("fill");

  step("a migration to node1 after a kernel on node0");
  cl_event pinged = run1(queues[0], k_ping, mem, 1, n);
  ping(host, 1);
  cl_event migrated;
  ASSERT_CL_OK(clEnqueueMigrateMemObjects(queues[1], 1, &mem, 0, 1, &pinged, &migrated));
  ASSERT_CL_OK(clFlush(queues[1]));
  cl_event ponged = run1(queues[1], k_pong, mem, 2, n, {migrated});
  pong(host, 2);
  ASSERT_EQ("", diff(host, read(queues[0], mem, n, {ponged}))) << "migrated to node1, used there, read on node0";
  EXPECT_CL(CL_COMPLETE, wait_for_status(migrated, kHang));

  step("two objects migrated with CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED");
  // Two objects to node0 with undefined content, then kernels that overwrite all of both.
  Words other = filled(n, 5);
  cl_mem mem2 = buffer(n, &other);
  cl_mem both[] = {mem, mem2};
  cl_event undefined;
  ASSERT_CL_OK(clEnqueueMigrateMemObjects(queues[0], 2, both, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 0, nullptr, &undefined));
  cl_event fill1 = run1(queues[0], k_fill, mem, 77, n, {undefined});
  cl_event fill2 = run1(queues[0], k_fill, mem2, 78, n, {fill1});
  EXPECT_EQ("", diff(filled(n, 77), read(queues[1], mem, n, {fill2}))) << "overwritten after CONTENT_UNDEFINED";
  EXPECT_EQ("", diff(filled(n, 78), read(queues[1], mem2, n))) << "the second object";

  step("a migration to the host");
  // To the host, then a kernel on node1 and a read on node0.
  cl_event to_host;
  ASSERT_CL_OK(clEnqueueMigrateMemObjects(queues[1], 1, &mem2, CL_MIGRATE_MEM_OBJECT_HOST, 0, nullptr, &to_host));
  Words want = filled(n, 78);
  cl_event pinged2 = run1(queues[1], k_ping, mem2, 3, n, {to_host});
  ping(want, 3);
  EXPECT_EQ("", diff(want, read(queues[0], mem2, n, {pinged2}))) << "after a migration to the host";
}

// User events and failed events gating commands on two nodes; markers and barriers whose wait lists
// name events of the other node.
TEST_F(Federation, CrossNodeUserAndFailedEvents) {
  require_nodes(2);
  const size_t n = 1 << 16;
  cl_kernel k_ping = kernel("ping"), k_pong = kernel("pong"), k_add = kernel("add");

  // A kernel on node1 waits for a user event and for a kernel on node0.
  {
    step("a kernel on node1 behind a user event and a kernel on node0");
    Words host = filled(n, 1);
    cl_mem mem = buffer(n, &host);
    cl_event gate = user_event(context);
    cl_event on0 = run1(queues[0], k_ping, mem, 1, n);
    ping(host, 1);
    cl_event on1 = run1(queues[1], k_pong, mem, 2, n, {gate, on0});
    pong(host, 2);
    EXPECT_CL(CL_COMPLETE, wait_for_status(on0, kHang)) << "the kernel on node0";
    std::this_thread::sleep_for(milliseconds(200));
    EXPECT_GT(event_status(on1), CL_COMPLETE) << "the kernel on node1 ran before its user event was set";
    ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
    cl_int waited = CL_INVALID_VALUE;
    within(kHang, "clWaitForEvents on the gated kernel", [&] { waited = clWaitForEvents(1, &on1); });
    EXPECT_CL(CL_SUCCESS, waited);
    EXPECT_EQ("", diff(host, read(queues[0], mem, n))) << "gated by a user event and a kernel of the other node";
  }

  // A user event set to a negative status fails a kernel on node0, and through its event a kernel
  // and a marker on node1: they end with negative statuses, and waiting for them never hangs.
  {
    step("commands on both nodes behind a user event set to a negative status");
    // Each kernel its own buffer: what crosses the nodes here is the failure alone.
    cl_mem mem0 = buffer(n), mem1 = buffer(n);
    cl_event gate = user_event(context);
    cl_event on0 = run1(queues[0], k_ping, mem0, 5, n, {gate});
    cl_event on1 = run1(queues[1], k_pong, mem1, 6, n, {on0});
    cl_event marker;
    ASSERT_CL_OK(clEnqueueMarkerWithWaitList(queues[1], 1, &on0, &marker));
    ASSERT_CL_OK(clFlush(queues[1]));
    ASSERT_CL_OK(clSetUserEventStatus(gate, -1234));
    cl_int waited = CL_SUCCESS;
    within(kHang, "clWaitForEvents on a kernel behind a failed event of the other node",
           [&] { waited = clWaitForEvents(1, &on1); });
    EXPECT_CL(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, waited);
    EXPECT_LT(wait_for_status(on0, kHang), 0) << "the kernel on node0 behind the failed user event";
    EXPECT_LT(wait_for_status(on1, kHang), 0) << "the kernel on node1 behind the failed kernel of node0";
    EXPECT_LT(wait_for_status(marker, kHang), 0) << "the marker on node1 behind the failed kernel of node0";
  }

  // A marker on node1 waits for a gated kernel on node0; a kernel follows the marker; a barrier on
  // node0 waits for that kernel; a kernel follows the barrier. Nothing runs before the gate opens,
  // and no enqueue waits for it (fresh queues: the ones above hold failed commands).
  {
    cl_command_queue q0 = create_queue(context, devices[0]), q1 = create_queue(context, devices[1]);
    Words host = filled(n, 2);
    cl_mem mem = buffer(n, &host);
    cl_event gate = user_event(context);
    step("a kernel on node0 behind a user event");
    cl_event a = run1(q0, k_ping, mem, 3, n, {gate});
    ping(host, 3);
    step("a marker on node1 waiting for the gated kernel on node0");
    cl_event marker;
    ASSERT_CL_OK(clEnqueueMarkerWithWaitList(q1, 1, &a, &marker));
    step("enqueueing a kernel on node1 after that marker (an enqueue must not wait for the gate)");
    cl_event b = run1(q1, k_pong, mem, 4, n);  // in order after the marker
    pong(host, 4);
    step("a barrier on node0 waiting for the kernel on node1, and a kernel after it");
    cl_event barrier;
    ASSERT_CL_OK(clEnqueueBarrierWithWaitList(q0, 1, &b, &barrier));
    cl_event c = run1(q0, k_add, mem, 0x55, n);  // in order after the barrier
    add(host, 0x55);
    std::this_thread::sleep_for(milliseconds(200));
    EXPECT_GT(event_status(marker), CL_COMPLETE) << "the marker on node1 completed before the gated kernel on node0";
    EXPECT_GT(event_status(b), CL_COMPLETE) << "a kernel after the marker ran early";
    EXPECT_GT(event_status(c), CL_COMPLETE) << "a kernel after the barrier ran early";
    ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
    step("reading after the gate opened");
    EXPECT_EQ("", diff(host, read(q1, mem, n, {c}))) << "kernels ordered by a marker and a barrier across nodes";
    EXPECT_CL(CL_COMPLETE, event_status(marker));
    EXPECT_CL(CL_COMPLETE, wait_for_status(barrier, kHang));
  }
}

// Node1 alone holds a buffer's contents when its daemon is killed. A kernel on node0 that uses the
// buffer fails (CL_MEM_OBJECT_ALLOCATION_FAILURE at the enqueue, or a negative event status), no read
// returns stale or zero bytes as a success, the context's callback names the lost daemon, and work
// on node0 and node2 goes on: what was under way when node1 died, and new work moving between them.
// The kernel is enqueued `settle` after the kill, while this process may still be trying to resume
// its session with node1: node0 may then be asked to receive node1's bytes after it lost its own
// link to node1, and must give the receive up when this process relays that the sending side failed.
void Federation::kill_only_holder_then_use(milliseconds settle) {
  require_nodes(3);
  const size_t n = 1 << 18;
  cl_kernel k_ping = kernel("ping"), k_pong = kernel("pong"), k_fill = kernel("fill");
  step("a kernel on node1 writes a buffer");
  cl_mem lost = buffer(n);
  run1(queues[1], k_fill, lost, 9, n);
  ASSERT_CL_OK(clFinish(queues[1]));  // only node1 holds the contents now

  // Work on node0 and on node2 held back by a user event while node1 dies.
  step("work on node0 and node2 behind a user event");
  cl_command_queue other0 = create_queue(context, devices[0]);
  Words on0 = filled(n, 3), on2 = filled(n, 4);
  cl_mem mem0 = buffer(n, &on0), mem2 = buffer(n, &on2);
  cl_event gate = user_event(context);
  run1(other0, k_ping, mem0, 1, n, {gate});
  ping(on0, 1);
  cl_event ponged = run1(queues[2], k_pong, mem2, 2, n, {gate});
  pong(on2, 2);

  step("killing node1's daemon");
  ASSERT_EQ("", env.kill_daemon(1));
  std::this_thread::sleep_for(settle);

  step("a kernel on node0 using the buffer only node1 held");
  cl_event used = nullptr;
  cl_int enqueued = CL_SUCCESS;
  const uint32_t seven = 7;
  within(kHang, "clEnqueueNDRangeKernel on node0 of a buffer only the dead node1 held", [&] {
    clSetKernelArg(k_ping, 0, sizeof lost, &lost);
    clSetKernelArg(k_ping, 1, sizeof seven, &seven);
    enqueued = clEnqueueNDRangeKernel(queues[0], k_ping, 1, nullptr, &n, nullptr, 0, nullptr, &used);
    clFlush(queues[0]);
  });
  if (enqueued == CL_SUCCESS) {
    cl_int status = wait_for_status(used, kHang);
    EXPECT_LT(status, 0) << "the enqueue succeeded, so its event must fail; it ended as " << status;
  } else {
    EXPECT_CL(CL_MEM_OBJECT_ALLOCATION_FAILURE, enqueued) << "the enqueue failed, but not with the runtime's code";
  }
  // Whatever the enqueue did, the contents are gone: a read fails, on that queue and on a fresh one.
  step("reading the lost buffer on node0");
  Words want = filled(n, 9), got;
  for (cl_command_queue queue : {queues[0], create_queue(context, devices[0])}) {
    cl_int err = try_read(queue, lost, n, &got);
    EXPECT_NE(CL_SUCCESS, err) << "a read of the lost buffer succeeded; its bytes against node1's last contents: "
                               << (diff(want, got).empty() ? "identical (where from?)" : diff(want, got));
  }
  step("waiting for the context's notice");
  EXPECT_TRUE(notices.wait_for(env.hosts[1], seconds(30)))
      << "no context notice names the lost daemon " << env.hosts[1] << "; the notices:\n" << notices.all();

  // The held-back work on node0 and node2 completes.
  step("opening the gate of the work on node0 and node2");
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  Words out;
  EXPECT_CL(CL_SUCCESS, try_read(other0, mem0, n, &out));
  EXPECT_EQ("", diff(on0, out)) << "the work on node0 that was under way";
  EXPECT_CL(CL_SUCCESS, try_read(queues[2], mem2, n, &out));
  EXPECT_EQ("", diff(on2, out)) << "the work on node2 that was under way";
  EXPECT_CL(CL_COMPLETE, event_status(ponged));

  // And new work moving between node0 and node2, with a kernel created after the loss.
  step("a buffer moving node0 -> node2 -> node0 after the loss");
  cl_int err;
  cl_kernel late = clCreateKernel(program, "pong", &err);
  EXPECT_CL(CL_SUCCESS, err) << "clCreateKernel after node1's loss";
  if (err != CL_SUCCESS) late = k_pong;
  cl_mem fresh = buffer(n);
  Words host(n);
  cl_event f0 = run1(other0, k_fill, fresh, 21, n);
  fill(host, 21);
  cl_event f2 = run1(queues[2], late, fresh, 22, n, {f0});
  pong(host, 22);
  run1(other0, k_ping, fresh, 23, n, {f2});
  ping(host, 23);
  EXPECT_CL(CL_SUCCESS, try_read(other0, fresh, n, &out));
  EXPECT_EQ("", diff(host, out)) << "a buffer moved node0 -> node2 -> node0 after node1's loss";
}

TEST_F(Federation, DaemonKilledHoldingOnlyCopy) { kill_only_holder_then_use(milliseconds(0)); }

// Node0 has seen its peer link to node1 close by then; this process has not given node1 up yet.
TEST_F(Federation, DaemonKilledHoldingOnlyCopyUsedAfterItsPeersNoticed) { kill_only_holder_then_use(milliseconds(1000)); }

// A kernel on node1 needs node0's fresh 64 MiB buffer; node1's only link goes down while the data is
// on its way. The command fails (a negative status, in bounded time), a later blocking read on node1
// fails, node0's copy is never replaced by wrong bytes, and work between node0 and node2 goes on.
TEST_F(Federation, PeerLinkCut) {
  if (!env.netns_mode()) GTEST_SKIP() << "cutting a link needs network namespaces (FEDCL_TEST_MODE=" << env.mode << ")";
  require_nodes(3);
  const size_t n = (64 << 20) / 4;
  cl_kernel k_fill = kernel("fill"), k_add = kernel("add"), k_ping = kernel("ping"), k_pong = kernel("pong");
  cl_mem big = buffer(n);
  run1(queues[0], k_fill, big, 3, n);
  ASSERT_CL_OK(clFinish(queues[0]));

  // The cut comes from another thread shortly after the enqueue starts, so that it lands during the
  // transfer whether the runtime moves the data inside the enqueue or after it.
  std::string cut_problem;
  std::chrono::steady_clock::time_point cut_at;
  std::thread cutter([&] {
    std::this_thread::sleep_for(milliseconds(150));
    cut_at = std::chrono::steady_clock::now();
    cut_problem = env.cut_link(1);
  });
  step("a kernel on node1 using node0's 64 MiB buffer; node1's link goes down 150 ms into the enqueue");
  cl_event used = nullptr;
  cl_int enqueued = CL_SUCCESS;
  within(kHang, "clEnqueueNDRangeKernel on node1 while its link is cut", [&] {
    const uint32_t one = 1;
    clSetKernelArg(k_add, 0, sizeof big, &big);
    clSetKernelArg(k_add, 1, sizeof one, &one);
    enqueued = clEnqueueNDRangeKernel(queues[1], k_add, 1, nullptr, &n, nullptr, 0, nullptr, &used);
    clFlush(queues[1]);
  });
  cutter.join();
  ASSERT_EQ("", cut_problem);
  std::printf("the enqueue returned %.1f s after the cut\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - cut_at).count());
  bool kernel_ran = false;
  if (enqueued == CL_SUCCESS) {
    cl_int status = wait_for_status(used, kHang);
    EXPECT_LT(status, 0) << "the kernel on the cut-off node1 ended as " << status;
    kernel_ran = status == CL_COMPLETE;
  } else {
    std::printf("the enqueue itself failed: %s (%d)\n", status_name(enqueued), enqueued);
  }
  step("a blocking read on the cut-off node1");
  Words got;
  cl_int err = try_read(queues[1], big, 1024, &got);
  EXPECT_NE(CL_SUCCESS, err) << "a blocking read on the cut-off node1 succeeded";
  std::printf("node1's failure was seen %.1f s after the cut\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - cut_at).count());

  // Node0's copy: either still there, unchanged (the kernel's +1 if it did complete), or reported
  // lost; never other bytes.
  step("reading node0's copy");
  err = try_read(queues[0], big, n, &got);
  Words want = filled(n, 3);
  if (kernel_ran) add(want, 1);
  if (err == CL_SUCCESS) {
    EXPECT_EQ("", diff(want, got)) << "node0's copy after the kernel on node1";
  }

  step("a buffer moving between node0 and node2");
  const size_t m = 1 << 20;
  Words host(m);
  cl_mem mem = buffer(m);
  cl_event e0 = run1(queues[0], k_fill, mem, 41, m);
  fill(host, 41);
  cl_event e2 = run1(queues[2], k_ping, mem, 42, m, {e0});
  ping(host, 42);
  cl_event e3 = run1(queues[0], k_pong, mem, 43, m, {e2});
  pong(host, 43);
  Words out;
  ASSERT_CL_OK(try_read(queues[2], mem, m, &out));
  EXPECT_EQ("", diff(host, out)) << "a buffer moved node0 -> node2 -> node0 -> node2 after node1 was cut off";
  EXPECT_CL(CL_COMPLETE, wait_for_status(e3, kHang));
}

// A network blip: node1's only link goes down for 3 s while a program runs kernels, reads and
// migrations on both nodes (its client link and its peer link both cut), then comes back. Nothing
// is lost: every result is right, and no call fails. The cut is shorter than the heartbeat's limit
// (FEDCL_DAEMON_TIMEOUT, 10 s by default) and than TCP's (30 s): the connections stay up and TCP
// delivers what waited once the link is back.
TEST_F(Federation, NetworkBlip) {
  if (!env.netns_mode()) GTEST_SKIP() << "cutting a link needs network namespaces (FEDCL_TEST_MODE=" << env.mode << ")";
  require_nodes(2);
  const size_t n = 1 << 16;
  cl_kernel k_fill = kernel("fill"), k_ping = kernel("ping"), k_pong = kernel("pong");
  using clock = std::chrono::steady_clock;
  std::string cut_problem, restore_problem;
  clock::time_point start = clock::now(), cut_at, restored_at;
  std::thread cutter([&] {
    std::this_thread::sleep_for(milliseconds(1500));
    cut_at = clock::now();
    cut_problem = env.cut_link(1);
    std::this_thread::sleep_for(seconds(3));
    restored_at = clock::now();
    restore_problem = env.restore_link(1);
  });
  // Rounds until well after the link is back: a buffer filled on node0, moved to node1 for a kernel,
  // back to node0 for another, read on node1; and a write, kernel and read on node1 alone.
  int rounds = 0;
  double longest = 0;
  std::string failure;
  while (failure.empty() && (clock::now() - start < seconds(8) || rounds < 3)) {
    uint32_t seed = uint32_t(100 + rounds);
    step("round " + std::to_string(rounds));
    clock::time_point round_start = clock::now();
    try {
      Words host = filled(n, seed);
      cl_mem moving = buffer(n);
      cl_event e0 = run1(queues[0], k_fill, moving, seed, n);
      cl_event e1 = run1(queues[1], k_ping, moving, seed, n, {e0});
      ping(host, seed);
      run1(queues[0], k_pong, moving, seed, n, {e1});
      pong(host, seed);
      Words got;
      ok(try_read(queues[1], moving, n, &got), "reading the moved buffer on node1");
      if (!diff(host, got).empty()) failure = "round " + std::to_string(rounds) + ", moved buffer: " + diff(host, got);
      Words local = filled(n, seed + 1), out;
      cl_mem own = buffer(n, &local);
      run1(queues[1], k_ping, own, seed, n);
      ping(local, seed);
      ok(try_read(queues[1], own, n, &out), "reading node1's own buffer");
      if (failure.empty() && !diff(local, out).empty()) failure = "round " + std::to_string(rounds) + ", node1's buffer: " + diff(local, out);
      clReleaseMemObject(moving);
      clReleaseMemObject(own);
    } catch (const std::exception &e) {
      failure = "round " + std::to_string(rounds) + ": " + e.what();
    }
    longest = std::max(longest, std::chrono::duration<double>(clock::now() - round_start).count());
    rounds++;
  }
  cutter.join();
  ASSERT_EQ("", cut_problem);
  ASSERT_EQ("", restore_problem);
  std::printf("%d rounds; the longest took %.2f s (the link was down %.2f s)\n", rounds, longest,
              std::chrono::duration<double>(restored_at - cut_at).count());
  EXPECT_EQ("", failure) << logs();
  EXPECT_GT(longest, 2.0) << "no round waited for the link: the cut did not land in the program";
  EXPECT_EQ("  (none)\n", notices.all()) << "the context was told of errors";
}

// Like PeerLinkCut, but node1 loses only its peer network (netns-cluster.sh --peer-net, daemons
// started with --peer-address on it) and keeps its client link: a migration node0 -> node1 fails in
// bounded time, node1 still serves work that needs no peer, a later migration node0 -> node1 goes
// through the client, and node0 <-> node2 still works over their peer link.
TEST_F(Federation, PeerNetworkCut) {
  if (!env.netns_mode()) GTEST_SKIP() << "cutting a link needs network namespaces (FEDCL_TEST_MODE=" << env.mode << ")";
  require_nodes(3);
  ASSERT_EQ(env.nodes(), env.peer_ifaces.size()) << "no peer network: run netns-cluster.sh with --peer-net";
  const size_t n = (16 << 20) / 4;
  cl_kernel k_fill = kernel("fill"), k_add = kernel("add"), k_ping = kernel("ping"), k_pong = kernel("pong");
  cl_mem mem = buffer(n);
  run1(queues[0], k_fill, mem, 8, n);
  ASSERT_CL_OK(clFinish(queues[0]));
  step("cutting node1's peer network");
  StderrCapture warnings;
  ASSERT_EQ("", env.cut_peer_link(1));
  step("a kernel on node1 using node0's buffer");

  cl_event used = nullptr;
  cl_int enqueued = CL_SUCCESS;
  within(kHang, "clEnqueueNDRangeKernel on node1 without its peer network", [&] {
    const uint32_t one = 1;
    clSetKernelArg(k_add, 0, sizeof mem, &mem);
    clSetKernelArg(k_add, 1, sizeof one, &one);
    enqueued = clEnqueueNDRangeKernel(queues[1], k_add, 1, nullptr, &n, nullptr, 0, nullptr, &used);
    clFlush(queues[1]);
  });
  bool kernel_ran = false;
  if (enqueued == CL_SUCCESS) {
    cl_int status = wait_for_status(used, kHang);
    EXPECT_LT(status, 0) << "a migration over node1's cut peer network ended as " << status;
    kernel_ran = status == CL_COMPLETE;
  } else {
    std::printf("the enqueue itself failed: %s (%d)\n", status_name(enqueued), enqueued);
  }
  step("reading node0's copy");
  Words got, want = filled(n, 8);
  if (kernel_ran) add(want, 1);
  cl_int err = try_read(queues[0], mem, n, &got);
  if (err == CL_SUCCESS) {
    EXPECT_EQ("", diff(want, got)) << "node0's copy after the kernel on node1";
  }

  step("a later migration node0 -> node1, through the client");
  {
    const size_t m = 1 << 18;
    Words host = filled(m, 70);
    cl_mem later = buffer(m);
    cl_event filled_on_0 = run1(queues[0], k_fill, later, 70, m);
    cl_command_queue again1 = create_queue(context, devices[1]);
    run1(again1, k_ping, later, 71, m, {filled_on_0});
    ping(host, 71);
    Words out;
    EXPECT_CL(CL_SUCCESS, try_read(again1, later, m, &out));
    EXPECT_EQ("", diff(host, out)) << "a migration node0 -> node1 after their peer link failed";
    EXPECT_NE(std::string::npos, warnings.so_far().find("through this process"))
        << "the runtime did not say that node0 and node1 now go through it";
  }

  step("client-only work on node1");
  // Node1 still has its client link: work that needs no peer goes on there, on a fresh queue.
  cl_command_queue fresh1 = create_queue(context, devices[1]);
  const size_t m = 1 << 16;
  Words host = filled(m, 50);
  cl_mem local = buffer(m);
  ASSERT_CL_OK(clEnqueueWriteBuffer(fresh1, local, CL_FALSE, 0, m * 4, host.data(), 0, nullptr, nullptr));
  run1(fresh1, k_ping, local, 51, m);
  ping(host, 51);
  Words out;
  EXPECT_CL(CL_SUCCESS, try_read(fresh1, local, m, &out));
  EXPECT_EQ("", diff(host, out)) << "client-only work on node1 after its peer network was cut";

  step("a buffer moving between node0 and node2");
  host.assign(m, 0);
  cl_mem moving = buffer(m);
  cl_event e0 = run1(queues[0], k_fill, moving, 61, m);
  fill(host, 61);
  cl_event e2 = run1(queues[2], k_pong, moving, 62, m, {e0});
  pong(host, 62);
  ASSERT_CL_OK(try_read(queues[0], moving, m, &out));
  EXPECT_EQ("", diff(host, out)) << "a buffer moved node0 -> node2 -> node0";
  EXPECT_CL(CL_COMPLETE, wait_for_status(e2, kHang));
}

// gtest_main, but a filter that selects no test fails (a renamed TEST must not pass silently), and a
// run whose tests were all skipped exits 77, which ctest reports as skipped (SKIP_RETURN_CODE).
int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int result = RUN_ALL_TESTS();
  const ::testing::UnitTest *unit = ::testing::UnitTest::GetInstance();
  if (unit->test_to_run_count() == 0) {
    std::fprintf(stderr, "fedcl_federation_tests: no test matches the filter\n");
    return 1;
  }
  if (result == 0 && unit->skipped_test_count() == unit->test_to_run_count()) return 77;
  return result;
}
