// The collective commands (include/CL/cl_fedcl_transfer.h) over real daemons: every collective over
// 2, 3 and 4 daemons (3: not a power of two), below and above the tree threshold (trees, rings and
// chains), every reduction and element type, participants sharing a daemon, and a daemon dying in
// the middle of one. Results are checked against the same computation on the host.
#include <CL/cl_fedcl_transfer.h>

#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <thread>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

struct Functions {
  clEnqueueBroadcastBuffer_fn broadcast;
  clEnqueueScatterBuffer_fn scatter;
  clEnqueueGatherBuffer_fn gather;
  clEnqueueAllGatherBuffer_fn all_gather;
  clEnqueueReduceBuffer_fn reduce;
  clEnqueueAllReduceBuffer_fn all_reduce;
  clEnqueueAlltoAllBuffer_fn all_to_all;
};

template <typename F>
F function(cl_platform_id platform, const char *name) {
  auto address = reinterpret_cast<F>(clGetExtensionFunctionAddressForPlatform(platform, name));
  EXPECT_NE(nullptr, address) << name;
  return address;
}

struct Collectives : ::testing::Test {
  explicit Collectives(size_t daemons = 3, const std::vector<std::string> &daemon_args = {})
      : cluster(daemons, daemon_args) {}

  void SetUp() override {
    cl_platform_id p = cluster.platform;
    f = {function<clEnqueueBroadcastBuffer_fn>(p, "clEnqueueBroadcastBuffer"),
         function<clEnqueueScatterBuffer_fn>(p, "clEnqueueScatterBuffer"),
         function<clEnqueueGatherBuffer_fn>(p, "clEnqueueGatherBuffer"),
         function<clEnqueueAllGatherBuffer_fn>(p, "clEnqueueAllGatherBuffer"),
         function<clEnqueueReduceBuffer_fn>(p, "clEnqueueReduceBuffer"),
         function<clEnqueueAllReduceBuffer_fn>(p, "clEnqueueAllReduceBuffer"),
         function<clEnqueueAlltoAllBuffer_fn>(p, "clEnqueueAlltoAllBuffer")};
    cl_int err;
    context = clCreateContext(nullptr, cluster.devices.size(), cluster.devices.data(), nullptr, nullptr, &err);
    ASSERT_CL_OK(err);
    for (cl_device_id device : cluster.devices) queues.push_back(create_queue(context, device));
  }

  void TearDown() override {
    for (cl_mem mem : mems) clReleaseMemObject(mem);
    for (cl_command_queue queue : queues) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }

  // A buffer written through participant p's queue (so that its daemon holds it) with bytes.
  template <typename T>
  cl_mem buffer_on(size_t p, const std::vector<T> &values) {
    cl_mem mem = create_buffer(context, CL_MEM_READ_WRITE, values.size() * sizeof(T));
    mems.push_back(mem);
    EXPECT_CL(CL_SUCCESS, clEnqueueWriteBuffer(queue(p), mem, CL_TRUE, 0, values.size() * sizeof(T), values.data(), 0,
                                               nullptr, nullptr));
    return mem;
  }

  template <typename T>
  std::vector<T> read(size_t p, cl_mem mem, size_t count, size_t offset = 0) {
    std::vector<T> out(count);
    EXPECT_CL(CL_SUCCESS, clEnqueueReadBuffer(queue(p), mem, CL_TRUE, offset, count * sizeof(T), out.data(), 0,
                                              nullptr, nullptr));
    return out;
  }

  // The queue of participant p: participants beyond the daemons share them, round robin.
  cl_command_queue queue(size_t p) const { return queues[p % queues.size()]; }
  std::vector<cl_command_queue> participant_queues(size_t n) const {
    std::vector<cl_command_queue> out;
    for (size_t p = 0; p < n; p++) out.push_back(queue(p));
    return out;
  }

  // Waits for the participants' events and checks they completed.
  void expect_complete(std::vector<cl_event> &events) {
    EXPECT_CL(CL_SUCCESS, clWaitForEvents(cl_uint(events.size()), events.data()));
    for (cl_event event : events) {
      cl_int status = 1;
      EXPECT_CL(CL_SUCCESS, clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
      EXPECT_EQ(CL_COMPLETE, status);
      clReleaseEvent(event);
    }
    std::fill(events.begin(), events.end(), nullptr);
  }

  // Where two results first differ, for the failure messages ("none" if they do not).
  template <typename T>
  static std::string first_difference(const std::vector<T> &got, const std::vector<T> &want, size_t at = 0) {
    for (size_t i = 0; i < want.size(); i++)
      if (at + i >= got.size() || !(got[at + i] == want[i]))
        return "element " + std::to_string(i) + " of " + std::to_string(want.size()) + " differs";
    return "none";
  }

  std::vector<int32_t> values(size_t p, size_t count) {
    std::vector<int32_t> v(count);
    for (size_t i = 0; i < count; i++) v[i] = int32_t(1000003 * (p + 1) + 17 * i);
    return v;
  }

  // Every collective over n participants, each message or block `count` int32s.
  void check_every_collective(size_t n, size_t count);

  Cluster cluster;
  Functions f{};
  cl_context context = nullptr;
  std::vector<cl_command_queue> queues;
  std::vector<cl_mem> mems;
};

void Collectives::check_every_collective(size_t n, size_t count) {
  const size_t bytes = count * 4, root = n - 1;
  std::vector<cl_command_queue> qs = participant_queues(n);
  std::vector<cl_event> events(n);
  std::vector<cl_mem> src(n), dst(n), whole_src(n), whole_dst(n);
  std::vector<std::vector<int32_t>> input(n);
  for (size_t p = 0; p < n; p++) {
    input[p] = values(p, count);
    src[p] = buffer_on(p, input[p]);
    dst[p] = buffer_on(p, std::vector<int32_t>(count, -1));
    std::vector<int32_t> blocks;
    for (size_t q = 0; q < n; q++) {
      auto block = values(10 * p + q, count);
      blocks.insert(blocks.end(), block.begin(), block.end());
    }
    whole_src[p] = buffer_on(p, blocks);
    whole_dst[p] = buffer_on(p, std::vector<int32_t>(n * count, -1));
  }
  SCOPED_TRACE(std::to_string(n) + " participants, " + std::to_string(bytes) + " bytes");

  // Broadcast: the root's source buffer to every other participant's (in place).
  {
    std::vector<cl_mem> buffers = dst;
    buffers[root] = src[root];
    ASSERT_CL_OK(f.broadcast(n, qs.data(), root, buffers.data(), nullptr, bytes, 0, nullptr, events.data()));
    expect_complete(events);
    for (size_t p = 0; p < n; p++) {
      auto got = read<int32_t>(p, buffers[p], count);
      EXPECT_TRUE(got == input[root]) << "broadcast to " << p << ": " << first_difference(got, input[root]);
    }
  }
  // Scatter: block p of the root's whole source to participant p.
  {
    ASSERT_CL_OK(f.scatter(n, qs.data(), root, whole_src[root], 0, dst.data(), nullptr, bytes, 0, nullptr, events.data()));
    expect_complete(events);
    for (size_t p = 0; p < n; p++) EXPECT_TRUE(read<int32_t>(p, dst[p], count) == values(10 * root + p, count)) << "scatter to " << p;
  }
  // Gather: every source into the root's whole destination.
  {
    ASSERT_CL_OK(f.gather(n, qs.data(), root, src.data(), nullptr, whole_dst[root], 0, bytes, 0, nullptr, events.data()));
    expect_complete(events);
    auto got = read<int32_t>(root, whole_dst[root], n * count);
    for (size_t p = 0; p < n; p++)
      EXPECT_TRUE(std::equal(input[p].begin(), input[p].end(), got.begin() + p * count)) << "gathered from " << p;
  }
  // All-gather.
  {
    ASSERT_CL_OK(f.all_gather(n, qs.data(), src.data(), nullptr, whole_dst.data(), nullptr, bytes, 0, nullptr, events.data()));
    expect_complete(events);
    for (size_t p = 0; p < n; p++) {
      auto got = read<int32_t>(p, whole_dst[p], n * count);
      for (size_t q = 0; q < n; q++)
        EXPECT_TRUE(std::equal(input[q].begin(), input[q].end(), got.begin() + q * count))
            << "block " << q << " at " << p << ": " << first_difference(got, input[q], q * count);
    }
  }
  // All-to-all: block q of p's source to block p of q's destination.
  {
    ASSERT_CL_OK(f.all_to_all(n, qs.data(), whole_src.data(), nullptr, whole_dst.data(), nullptr, bytes, 0, nullptr,
                              events.data()));
    expect_complete(events);
    for (size_t q = 0; q < n; q++) {
      auto got = read<int32_t>(q, whole_dst[q], n * count);
      for (size_t p = 0; p < n; p++) {
        auto want = values(10 * p + q, count);
        EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin() + p * count)) << "from " << p << " to " << q;
      }
    }
  }
  // Reduce (sum) to the root, and all-reduce (max).
  {
    std::vector<int32_t> sum(count, 0), max(count, INT32_MIN);
    for (size_t p = 0; p < n; p++)
      for (size_t i = 0; i < count; i++) {
        sum[i] = int32_t(uint32_t(sum[i]) + uint32_t(input[p][i]));
        max[i] = std::max(max[i], input[p][i]);
      }
    ASSERT_CL_OK(f.reduce(n, qs.data(), root, src.data(), nullptr, dst[root], 0, bytes, CL_FEDCL_REDUCE_SUM,
                          CL_FEDCL_INT32, 0, nullptr, events.data()));
    expect_complete(events);
    EXPECT_TRUE(read<int32_t>(root, dst[root], count) == sum) << "reduce";
    ASSERT_CL_OK(f.all_reduce(n, qs.data(), src.data(), nullptr, dst.data(), nullptr, bytes, CL_FEDCL_REDUCE_MAX,
                              CL_FEDCL_INT32, 0, nullptr, events.data()));
    expect_complete(events);
    for (size_t p = 0; p < n; p++) EXPECT_TRUE(read<int32_t>(p, dst[p], count) == max) << "all-reduce at " << p;
    // The sources are untouched.
    for (size_t p = 0; p < n; p++) EXPECT_TRUE(read<int32_t>(p, src[p], count) == input[p]) << "source of " << p;
  }
}

TEST_F(Collectives, EveryCollectiveOverThreeDaemonsSmall) { check_every_collective(3, 1000); }

TEST_F(Collectives, EveryCollectiveOverThreeDaemonsLarge) { check_every_collective(3, (1 * MiB + 12) / 4); }

TEST_F(Collectives, ParticipantsSharingADaemon) {
  // Five participants over three daemons: two daemons hold two each, and move bytes to themselves.
  check_every_collective(5, 3000);
  check_every_collective(5, (512 * KiB + 20) / 4);
}

struct TwoDaemonCollectives : Collectives {
  TwoDaemonCollectives() : Collectives(2) {}
};
TEST_F(TwoDaemonCollectives, EveryCollective) {
  check_every_collective(2, 100);
  check_every_collective(2, (300 * KiB) / 4);
  check_every_collective(2, (17 * MiB + 8) / 4);  // blocks of more than one ring segment (4 MiB)
}

struct FourDaemonCollectives : Collectives {
  FourDaemonCollectives() : Collectives(4) {}
};
TEST_F(FourDaemonCollectives, EveryCollective) {
  check_every_collective(4, 1);  // fewer elements than participants: some blocks are empty
  check_every_collective(4, 4096);
  check_every_collective(4, (2 * MiB) / 4);
}

// Daemons that stage part of a buffer through their own memory instead of mapping it, as on NVIDIA
// (fedcld --stage-buffer-ranges): a combining receive reads the range into the staging first.
struct StagedCollectives : Collectives {
  StagedCollectives() : Collectives(3, {"--stage-buffer-ranges", "yes"}) {}
};
TEST_F(StagedCollectives, EveryCollective) {
  check_every_collective(3, 777);
  check_every_collective(3, (1 * MiB + 36) / 4);
}

// Daemons that learn of completions from threads that wait for them as well as from callbacks, as
// on NVIDIA (fedcld --completion wait): fedcl's out-of-order transfer queue is polled in any order.
struct WaitingCollectives : Collectives {
  WaitingCollectives() : Collectives(3, {"--completion", "wait"}) {}
};
TEST_F(WaitingCollectives, EveryCollective) {
  check_every_collective(3, 555);
  check_every_collective(3, (1 * MiB + 44) / 4);
}

// Every reduction and element type, through a tree and through a ring, in place.
template <typename T>
void check_reductions(Collectives &t, cl_fedcl_element_type type, size_t count) {
  const size_t n = t.queues.size();
  std::vector<cl_command_queue> qs = t.participant_queues(n);
  std::mt19937 random(7);
  struct Op {
    cl_fedcl_reduce_op op;
    std::function<T(T, T)> apply;
  };
  const Op ops[] = {{CL_FEDCL_REDUCE_SUM, [](T a, T b) { return T(a + b); }},
                    {CL_FEDCL_REDUCE_MIN, [](T a, T b) { return std::min(a, b); }},
                    {CL_FEDCL_REDUCE_MAX, [](T a, T b) { return std::max(a, b); }},
                    {CL_FEDCL_REDUCE_PRODUCT, [](T a, T b) { return T(a * b); }}};
  for (const Op &op : ops) {
    // Small integers (and halves, for products): every order of combining gives the same result.
    std::vector<std::vector<T>> input(n, std::vector<T>(count));
    std::vector<cl_mem> buffers(n);
    std::vector<T> want(count);
    for (size_t p = 0; p < n; p++) {
      for (size_t i = 0; i < count; i++) {
        int r = int(random() % 7) - 3;
        input[p][i] = op.op == CL_FEDCL_REDUCE_PRODUCT ? (r == 0 ? T(2) : std::is_integral<T>::value ? T(r) : T(r) / T(2)) : T(r * 1000 + int(i % 100));
        want[i] = p == 0 ? input[p][i] : op.apply(want[i], input[p][i]);
      }
      buffers[p] = t.buffer_on(p, input[p]);
    }
    std::vector<cl_event> events(n);
    ASSERT_CL_OK(t.f.all_reduce(n, qs.data(), buffers.data(), nullptr, buffers.data(), nullptr, count * sizeof(T),
                                op.op, type, 0, nullptr, events.data()));
    t.expect_complete(events);
    for (size_t p = 0; p < n; p++)
      EXPECT_TRUE(t.read<T>(p, buffers[p], count) == want) << "op " << std::hex << op.op << " type " << type << " at " << p;
  }
}

TEST_F(Collectives, EveryReductionAndElementTypeInPlace) {
  for (size_t count : {size_t(999), size_t(300 * KiB / 4)}) {
    check_reductions<int32_t>(*this, CL_FEDCL_INT32, count);
    check_reductions<int64_t>(*this, CL_FEDCL_INT64, count / 2);
    check_reductions<float>(*this, CL_FEDCL_FLOAT, count);
    check_reductions<double>(*this, CL_FEDCL_DOUBLE, count / 2);
  }
}

TEST_F(Collectives, RangesInsideLargerBuffersAndSubBuffers) {
  // An all-reduce over ranges at offsets, one of them inside a sub-buffer.
  const size_t n = 3, count = 4096, bytes = count * 4;  // sub-buffer origins of 16 KiB are aligned
  std::vector<cl_command_queue> qs = participant_queues(n);
  std::vector<cl_mem> src(n), dst(n);
  std::vector<size_t> src_offsets(n), dst_offsets(n);
  std::vector<int32_t> want(count, 0);
  for (size_t p = 0; p < n; p++) {
    auto v = values(p, 3 * count);
    src[p] = buffer_on(p, v);
    src_offsets[p] = bytes * p;
    for (size_t i = 0; i < count; i++) want[i] += v[p * count + i];
    dst[p] = buffer_on(p, std::vector<int32_t>(3 * count, 5));
    dst_offsets[p] = 4 * (p + 1);
  }
  cl_buffer_region region{bytes, 2 * bytes};
  cl_int err;
  cl_mem sub = clCreateSubBuffer(dst[1], 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  ASSERT_CL_OK(err);
  mems.push_back(sub);
  std::vector<cl_mem> dst_or_sub = dst;
  dst_or_sub[1] = sub;
  std::vector<cl_event> events(n);
  ASSERT_CL_OK(f.all_reduce(n, qs.data(), src.data(), src_offsets.data(), dst_or_sub.data(), dst_offsets.data(), bytes,
                            CL_FEDCL_REDUCE_SUM, CL_FEDCL_INT32, 0, nullptr, events.data()));
  expect_complete(events);
  for (size_t p = 0; p < n; p++) {
    auto got = read<int32_t>(p, dst[p], 3 * count);
    size_t at = (dst_offsets[p] + (p == 1 ? bytes : 0)) / 4;
    EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin() + at)) << "at " << p;
    EXPECT_EQ(5, got[at - 1]) << "the byte before the range is untouched at " << p;
    EXPECT_EQ(5, got[at + count]) << "the byte after the range is untouched at " << p;
  }
  // Another daemon reads participant 0's result: range coherence brings it over.
  auto moved = read<int32_t>(2, dst[0], count, dst_offsets[0]);
  EXPECT_TRUE(moved == want);
}

TEST_F(Collectives, InPlaceThroughASubBufferAndItsParent) {
  // Each source is a sub-buffer, each destination its parent at the sub-buffer's origin: the same bytes.
  const size_t n = 3, count = 4096, origin = 16384;
  std::vector<cl_command_queue> qs = participant_queues(n);
  std::vector<cl_mem> parents(n), subs(n);
  std::vector<size_t> offsets(n, origin);
  std::vector<int32_t> want(count, 0);
  for (size_t p = 0; p < n; p++) {
    auto v = values(p, origin / 4 + count);
    parents[p] = buffer_on(p, v);
    for (size_t i = 0; i < count; i++) want[i] += v[origin / 4 + i];
    cl_buffer_region region{origin, count * 4};
    cl_int err;
    subs[p] = clCreateSubBuffer(parents[p], 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    ASSERT_CL_OK(err);
    mems.push_back(subs[p]);
  }
  std::vector<cl_event> events(n);
  ASSERT_CL_OK(f.all_reduce(n, qs.data(), subs.data(), nullptr, parents.data(), offsets.data(), count * 4,
                            CL_FEDCL_REDUCE_SUM, CL_FEDCL_INT32, 0, nullptr, events.data()));
  expect_complete(events);
  for (size_t p = 0; p < n; p++) {
    auto got = read<int32_t>(p, parents[p], count, origin);
    EXPECT_TRUE(got == want) << "at " << p << ": " << first_difference(got, want);
  }
}

TEST_F(Collectives, WaitsForItsWaitListAndOrdersItsQueues) {
  const size_t n = 3, count = 4096;
  std::vector<cl_command_queue> qs = participant_queues(n);
  std::vector<cl_mem> buffers(n);
  for (size_t p = 0; p < n; p++) buffers[p] = buffer_on(p, std::vector<int32_t>(count, 0));
  cl_int err;
  cl_event before = clCreateUserEvent(context, &err), gate = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  // Before it on the root's in-order queue: a write held back by a user event.
  std::vector<int32_t> nines(count, 9), later(count, 42);
  ASSERT_CL_OK(clEnqueueWriteBuffer(queues[0], buffers[0], CL_FALSE, 0, count * 4, nines.data(), 1, &before, nullptr));
  std::vector<cl_event> events(n);
  ASSERT_CL_OK(f.broadcast(n, qs.data(), 0, buffers.data(), nullptr, count * 4, 1, &gate, events.data()));
  // After it on another participant's queue: a write of that participant's buffer.
  ASSERT_CL_OK(clEnqueueWriteBuffer(queues[1], buffers[1], CL_FALSE, 0, count * 4, later.data(), 0, nullptr, nullptr));
  cl_command_type type = 0;
  ASSERT_CL_OK(clGetEventInfo(events[1], CL_EVENT_COMMAND_TYPE, sizeof type, &type, nullptr));
  EXPECT_EQ(cl_command_type(CL_COMMAND_BROADCAST_BUFFER_FEDCL), type);
  // Held by its wait list, then by the write before it.
  for (cl_event opened : {gate, before}) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (cl_event event : events) {
      cl_int status = 0;
      ASSERT_CL_OK(clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
      EXPECT_GT(status, CL_COMPLETE);
    }
    ASSERT_CL_OK(clSetUserEventStatus(opened, CL_COMPLETE));
  }
  expect_complete(events);
  EXPECT_TRUE(read<int32_t>(2, buffers[2], count) == nines);
  EXPECT_TRUE(read<int32_t>(1, buffers[1], count) == later) << "the write after the broadcast came first";
  clReleaseEvent(gate);
  clReleaseEvent(before);
}

TEST_F(Collectives, RefusesBadArguments) {
  const size_t n = 3, count = 64;
  std::vector<cl_command_queue> qs = participant_queues(n);
  std::vector<cl_mem> buffers(n);
  for (size_t p = 0; p < n; p++) buffers[p] = buffer_on(p, std::vector<int32_t>(count, 1));
  EXPECT_CL(CL_INVALID_VALUE, f.broadcast(0, qs.data(), 0, buffers.data(), nullptr, 64, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, f.broadcast(n, qs.data(), 3, buffers.data(), nullptr, 64, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, f.broadcast(n, qs.data(), 0, buffers.data(), nullptr, 0, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, f.broadcast(n, qs.data(), 0, buffers.data(), nullptr, count * 4 + 1, 0, nullptr, nullptr));
  size_t past[] = {0, count * 4, 0};
  EXPECT_CL(CL_INVALID_VALUE, f.broadcast(n, qs.data(), 0, buffers.data(), past, 4, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, f.all_reduce(n, qs.data(), buffers.data(), nullptr, buffers.data(), nullptr, 6,
                                           CL_FEDCL_REDUCE_SUM, CL_FEDCL_INT32, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, f.all_reduce(n, qs.data(), buffers.data(), nullptr, buffers.data(), nullptr, 64,
                                           CL_FEDCL_REDUCE_SUM + 100, CL_FEDCL_INT32, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, f.all_reduce(n, qs.data(), buffers.data(), nullptr, buffers.data(), nullptr, 64,
                                           CL_FEDCL_REDUCE_SUM, 0, 0, nullptr, nullptr));
  // Two participants writing the same bytes; a destination over another's source.
  std::vector<cl_mem> same(n, buffers[0]);
  EXPECT_CL(CL_MEM_COPY_OVERLAP, f.broadcast(n, qs.data(), 0, same.data(), nullptr, 64, 0, nullptr, nullptr));
  std::vector<cl_mem> shifted = {buffers[1], buffers[2], buffers[0]};
  EXPECT_CL(CL_MEM_COPY_OVERLAP, f.all_reduce(n, qs.data(), buffers.data(), nullptr, shifted.data(), nullptr, 64,
                                              CL_FEDCL_REDUCE_SUM, CL_FEDCL_INT32, 0, nullptr, nullptr));
  std::vector<cl_command_queue> bad = qs;
  bad[1] = nullptr;
  EXPECT_CL(CL_INVALID_COMMAND_QUEUE, f.broadcast(n, bad.data(), 0, buffers.data(), nullptr, 64, 0, nullptr, nullptr));
  std::vector<cl_mem> missing = buffers;
  missing[2] = nullptr;
  EXPECT_CL(CL_INVALID_MEM_OBJECT, f.broadcast(n, qs.data(), 0, missing.data(), nullptr, 64, 0, nullptr, nullptr));
  // Another context's buffer.
  cl_int err;
  cl_context other = clCreateContext(nullptr, 1, &cluster.devices[0], nullptr, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_mem foreign = create_buffer(other, CL_MEM_READ_WRITE, 64);
  std::vector<cl_mem> mixed = buffers;
  mixed[1] = foreign;
  EXPECT_CL(CL_INVALID_CONTEXT, f.broadcast(n, qs.data(), 0, mixed.data(), nullptr, 64, 0, nullptr, nullptr));
  clReleaseMemObject(foreign);
  clReleaseContext(other);
  // Nothing refused ran: the buffers are as written.
  for (size_t p = 0; p < n; p++) EXPECT_TRUE(read<int32_t>(p, buffers[p], count) == std::vector<int32_t>(count, 1));
}

TEST_F(Collectives, ADaemonLostMidCollectiveFailsItAndNothingHangs) {
  const size_t n = 3, count = 4 * MiB / 4;
  std::vector<cl_command_queue> qs = participant_queues(n);
  std::vector<cl_mem> buffers(n);
  for (size_t p = 0; p < n; p++) buffers[p] = buffer_on(p, values(p, count));
  cl_int err;
  cl_event gate = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  std::vector<cl_event> events(n);
  ASSERT_CL_OK(f.all_reduce(n, qs.data(), buffers.data(), nullptr, buffers.data(), nullptr, count * 4,
                            CL_FEDCL_REDUCE_SUM, CL_FEDCL_INT32, 1, &gate, events.data()));
  for (cl_command_queue queue : queues) ASSERT_CL_OK(clFlush(queue));
  cluster.daemons[2]->kill();
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  // Every participant needs bytes that passed through the lost daemon: every event fails.
  EXPECT_NE(CL_SUCCESS, clWaitForEvents(cl_uint(n), events.data()));
  for (size_t p = 0; p < n; p++) {
    EXPECT_NE(CL_SUCCESS, clWaitForEvents(1, &events[p])) << "participant " << p;
    cl_int status = 0;
    EXPECT_CL(CL_SUCCESS, clGetEventInfo(events[p], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
    EXPECT_LT(status, 0) << "participant " << p;
    clReleaseEvent(events[p]);
  }
  clReleaseEvent(gate);
  // The surviving daemons still work, together.
  std::vector<cl_command_queue> two = {queues[0], queues[1]};
  std::vector<cl_mem> fresh = {buffer_on(0, values(0, 1000)), buffer_on(1, values(1, 1000))};
  std::vector<cl_event> after(2);
  ASSERT_CL_OK(f.all_reduce(2, two.data(), fresh.data(), nullptr, fresh.data(), nullptr, 4000, CL_FEDCL_REDUCE_SUM,
                            CL_FEDCL_INT32, 0, nullptr, after.data()));
  expect_complete(after);
  auto sum = values(0, 1000);
  auto other = values(1, 1000);
  for (size_t i = 0; i < sum.size(); i++) sum[i] += other[i];
  EXPECT_TRUE(read<int32_t>(1, fresh[1], 1000) == sum);
}

}  // namespace
