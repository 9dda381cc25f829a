// The collectives' plans (runtime/collective_plan.h), run on host memory: every kind, 1 to 7
// participants (powers of two and not), every root, messages below and above the tree threshold and
// with fewer elements than participants. Each plan runs in program order and in random orders that
// keep only its recorded dependencies, a transfer's read and its write apart, as the daemons run
// them: a dependency missing from a plan shows up as a wrong result in some order.
#include "collective_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

using fedcl::CollectiveKind;
using fedcl::CollectivePlan;
using fedcl::CollectiveShape;
using fedcl::Region;

namespace {

using Memory = std::vector<std::vector<int64_t>>;  // per participant

struct World {
  Memory source, destination, scratch;
  bool in_place = false;  // a participant with a destination reads its source there (a reduction in place)
  std::vector<int64_t> &region(size_t p, Region r) {
    if (r == Region::source && in_place && !destination[p].empty()) return destination[p];
    return r == Region::source ? source[p] : r == Region::destination ? destination[p] : scratch[p];
  }
};

constexpr int64_t kUnset = -777;

// Source and destination sizes (elements) of participant p, and the initial values.
World initial(const CollectiveShape &shape, const CollectivePlan &plan, bool in_place = false) {
  size_t n = shape.participants;
  World w;
  for (size_t p = 0; p < n; p++) {
    size_t src = fedcl::collective_source_bytes(shape, p) / 8, dst = fedcl::collective_destination_bytes(shape, p) / 8;
    bool root = p == shape.root;
    w.source.emplace_back(src);
    for (size_t i = 0; i < src; i++) w.source[p][i] = int64_t(1000003 * p + 7 * i + 1);
    w.destination.emplace_back(dst, kUnset);
    if (shape.kind == CollectiveKind::broadcast && root)
      for (size_t i = 0; i < dst; i++) w.destination[p][i] = int64_t(31 * i + 5);
    w.scratch.emplace_back(plan.uses_scratch[p] ? plan.scratch_bytes / 8 : 0, kUnset);
    if (in_place && dst) w.destination[p] = w.source[p];
  }
  w.in_place = in_place;
  return w;
}

// What the destinations must hold afterwards.
Memory expected(const CollectiveShape &shape, const World &start) {
  size_t n = shape.participants, count = shape.bytes / 8, root = shape.root;
  Memory want = start.destination;
  for (size_t p = 0; p < n; p++)
    for (size_t i = 0; i < want[p].size(); i++) {
      int64_t &v = want[p][i];
      switch (shape.kind) {
        case CollectiveKind::broadcast: v = start.destination[root][i]; break;
        case CollectiveKind::scatter: v = start.source[root][p * count + i]; break;
        case CollectiveKind::gather: v = start.source[i / count][i % count]; break;
        case CollectiveKind::all_gather: v = start.source[i / count][i % count]; break;
        case CollectiveKind::reduce:
        case CollectiveKind::all_reduce:
          v = 0;
          for (size_t q = 0; q < n; q++) v += start.source[q][i];
          break;
        case CollectiveKind::all_to_all: v = start.source[i / count][p * count + i % count]; break;
      }
    }
  return want;
}

void apply(World &w, const fedcl::CollectiveStep &s, const std::vector<int64_t> &bytes) {
  auto &to = w.region(s.to.participant, s.to.region);
  ASSERT_LE(s.to.offset + s.bytes, to.size() * 8) << "a step writes past its region";
  int64_t *into = to.data() + s.to.offset / 8;
  for (size_t i = 0; i < s.bytes / 8; i++) into[i] = s.combine ? into[i] + bytes[i] : bytes[i];
}

std::vector<int64_t> read(World &w, const fedcl::CollectiveStep &s) {
  auto &from = w.region(s.from.participant, s.from.region);
  EXPECT_LE(s.from.offset + s.bytes, from.size() * 8) << "a step reads past its region";
  if (s.from.offset + s.bytes > from.size() * 8) return std::vector<int64_t>(s.bytes / 8);
  return std::vector<int64_t>(from.begin() + s.from.offset / 8, from.begin() + (s.from.offset + s.bytes) / 8);
}

// Runs the plan: seed 0 in program order; otherwise each transfer's read and write are separate
// events, picked at random among those whose dependencies are done.
Memory run(const CollectiveShape &shape, const CollectivePlan &plan, World w, unsigned seed) {
  size_t count = plan.steps.size();
  std::vector<bool> read_done(count), write_done(count);
  std::vector<std::vector<int64_t>> in_flight(count);
  auto side_done = [&](const fedcl::StepSide &side) {
    const auto &s = plan.steps[side.step];
    return s.local() || side.to ? write_done[side.step] : read_done[side.step];
  };
  auto ready = [&](const std::vector<fedcl::StepSide> &after) {
    for (const auto &side : after)
      if (!side_done(side)) return false;
    return true;
  };
  std::mt19937 random(seed);
  size_t left = 2 * count;
  while (left > 0) {
    std::vector<std::pair<size_t, bool>> can;  // (step, is write)
    for (size_t i = 0; i < count; i++) {
      const auto &s = plan.steps[i];
      if (!read_done[i] && ready(s.from_after) && (!s.local() || ready(s.to_after))) can.push_back({i, false});
      if (read_done[i] && !write_done[i] && ready(s.to_after)) can.push_back({i, true});
      if (seed == 0 && !can.empty()) break;
    }
    if (can.empty()) {
      ADD_FAILURE() << "the plan's dependencies deadlock";
      return {};
    }
    auto [i, write] = can[seed == 0 ? 0 : random() % can.size()];
    const auto &s = plan.steps[i];
    if (!write) {
      in_flight[i] = read(w, s);
      read_done[i] = true;
      left--;
      if (!s.local()) continue;
    }
    apply(w, s, in_flight[i]);
    write_done[i] = true;
    left--;
  }
  return w.destination;
}

const char *name(CollectiveKind kind) {
  static const char *names[] = {"broadcast", "scatter", "gather", "all_gather", "reduce", "all_reduce", "all_to_all"};
  return names[size_t(kind)];
}

void check_all(CollectiveKind kind, size_t bytes, bool in_place = false, size_t segment_bytes = fedcl::kSegmentBytes,
               size_t first_n = 1, size_t last_n = 7) {
  for (size_t n = first_n; n <= last_n; n++)
    for (size_t root = 0; root < n; root++) {
      CollectiveShape shape{kind, n, root, bytes, 8, segment_bytes};
      CollectivePlan plan = fedcl::plan_collective(shape);
      World start = initial(shape, plan, in_place);
      Memory want = expected(shape, start);
      for (unsigned seed = 0; seed < 4; seed++) {
        Memory got = run(shape, plan, start, seed);
        ASSERT_TRUE(got == want) << name(kind) << (in_place ? " in place" : "") << " of " << bytes << " bytes over "
                                 << n << " from " << root << ", order " << seed;
      }
    }
}

const CollectiveKind kKinds[] = {CollectiveKind::broadcast, CollectiveKind::scatter,   CollectiveKind::gather,
                                 CollectiveKind::all_gather, CollectiveKind::reduce,   CollectiveKind::all_reduce,
                                 CollectiveKind::all_to_all};

TEST(CollectivePlan, SmallMessagesTakeTrees) {
  for (CollectiveKind kind : kKinds) check_all(kind, 8 * 1000);
}

TEST(CollectivePlan, SmallReduceOverManyTakesATreeWithScratch) {
  // Up to kLinearReduceMax participants a small reduce is linear; beyond, a binomial tree whose
  // inner participants gather in scratch buffers.
  CollectivePlan linear = fedcl::plan_collective({CollectiveKind::reduce, fedcl::kLinearReduceMax, 0, 8000, 8});
  EXPECT_EQ(std::vector<bool>(fedcl::kLinearReduceMax, false), linear.uses_scratch);
  check_all(CollectiveKind::reduce, 8 * 1000, false, fedcl::kSegmentBytes, fedcl::kLinearReduceMax + 1,
            fedcl::kLinearReduceMax + 3);
  check_all(CollectiveKind::reduce, 8 * 1000, true, fedcl::kSegmentBytes, fedcl::kLinearReduceMax + 1,
            fedcl::kLinearReduceMax + 3);
  CollectivePlan tree = fedcl::plan_collective({CollectiveKind::reduce, fedcl::kLinearReduceMax + 3, 0, 8000, 8});
  EXPECT_TRUE(std::find(tree.uses_scratch.begin(), tree.uses_scratch.end(), true) != tree.uses_scratch.end());
}

TEST(CollectivePlan, FewerElementsThanParticipants) {
  for (CollectiveKind kind : kKinds) check_all(kind, 8 * 3);
}

TEST(CollectivePlan, LargeMessagesTakeRingsAndChains) {
  for (CollectiveKind kind : {CollectiveKind::broadcast, CollectiveKind::reduce, CollectiveKind::all_reduce})
    check_all(kind, fedcl::kTreeBelowBytes + 8 * 13);
}

TEST(CollectivePlan, ReductionsInPlace) {
  // The source is the destination's memory: nothing may overwrite a value still to be sent.
  for (CollectiveKind kind : {CollectiveKind::reduce, CollectiveKind::all_reduce})
    for (size_t bytes : {size_t(8 * 1000), fedcl::kTreeBelowBytes + 8 * 13}) check_all(kind, bytes, true);
}

TEST(CollectivePlan, RingsArePipelinedInSegments) {
  // Segments of 16 KiB instead of 4 MiB, so that blocks have several (4 to 8, the last one short):
  // each round passes every segment, and the whole stays right, in place too.
  // Up to 5 participants: the rings' steps grow as n² times the segments, and the random orders'
  // cost as their square (with 4 KiB segments, a minute under the sanitizers beside other tests).
  const size_t segment = 16 << 10, bytes = fedcl::kTreeBelowBytes + 8 * 7;
  for (CollectiveKind kind : {CollectiveKind::reduce, CollectiveKind::all_reduce})
    for (bool in_place : {false, true}) check_all(kind, bytes, in_place, segment, 1, 5);
  check_all(CollectiveKind::all_gather, 3 * segment + 8 * 5, false, segment, 1, 5);
  CollectivePlan plan = fedcl::plan_collective({CollectiveKind::all_reduce, 3, 0, 3 * 2 * fedcl::kSegmentBytes, 8});
  size_t transfers = 0;
  for (const auto &s : plan.steps) transfers += !s.local();
  EXPECT_EQ(2u * 2 * 3 * 2, transfers);  // 2 rings of 2 rounds, 3 participants, 2 segments each
}

TEST(CollectivePlan, LargeBroadcastIsPipelinedInSegments) {
  CollectiveShape shape{CollectiveKind::broadcast, 4, 1, 3 * fedcl::kSegmentBytes + 8, 8};
  CollectivePlan plan = fedcl::plan_collective(shape);
  EXPECT_EQ(3u * 3u, plan.steps.size());  // 3 segments over 3 links
  World start = initial(shape, plan);
  for (unsigned seed = 0; seed < 3; seed++) EXPECT_TRUE(run(shape, plan, start, seed) == expected(shape, start));
}

TEST(CollectivePlan, RingMovesTheLinkBoundBytes) {
  // A ring all-reduce sends 2 (n - 1) / n of the message from each participant, the bound.
  size_t n = 4, bytes = 64 << 20;
  CollectivePlan plan = fedcl::plan_collective({CollectiveKind::all_reduce, n, 0, bytes, 4});
  std::vector<size_t> sent(n);
  for (const auto &s : plan.steps)
    if (!s.local()) sent[s.from.participant] += s.bytes;
  for (size_t p = 0; p < n; p++) EXPECT_EQ(2 * (n - 1) * bytes / n, sent[p]);
}

}  // namespace
