// How a collective command moves its bytes: the algorithm an MPI library would use for it, as steps,
// each a copy inside one participant or a transfer from one participant to another (replacing, or
// combined element by element with what is there), and for each step the earlier steps it must wait
// for. Pure logic: runtime/collective.cpp turns the steps into daemon commands, and the unit tests
// run plans on host memory, in any order their dependencies allow.
//
// The algorithms (as described by Thakur, Rabenseifner and Gropp, "Optimization of Collective
// Communication Operations in MPICH", 2005):
// - broadcast: a binomial tree below kTreeBelowBytes; above, a chain from the root, cut into
//   segments so that every link carries a segment while the next one is on its way (pipelined);
// - reduce and all-reduce: a binomial tree below kTreeBelowBytes (all-reduce: to participant 0,
//   then a binomial broadcast); above, a ring reduce-scatter (each participant ends with one block
//   fully reduced), then the blocks gathered at the root, or passed around the ring (all-reduce).
//   A small reduce over at most kLinearReduceMax participants sends every source straight to the
//   root (Open MPI's linear reduce): a tree's inner participants need a scratch buffer for their
//   partial results, created for the collective, and over 4 H100s the tree's 4 KiB reduce took
//   2.0 ms where the all-reduce, a tree too but without scratch, took 0.48 ms;
// - all-gather: a ring; scatter, gather and all-to-all: every block sent straight to where it goes
//   (the root's link carries every block once either way).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fedcl {

enum class CollectiveKind { broadcast, scatter, gather, all_gather, reduce, all_reduce, all_to_all };

// Below this many bytes per participant, trees (fewer steps); from it on, rings and chains (each
// link carries the least).
constexpr size_t kTreeBelowBytes = 256 << 10;
// Up to this many participants, a small reduce is linear (see above).
constexpr size_t kLinearReduceMax = 8;
// The segments of a pipelined broadcast or ring: about this size, at most kMaxSegments. A chain
// fills in n - 2 segments: 16 segments of 16 MiB left a 256 MiB broadcast to 4 daemons at 0.80x of
// a shaped 1 Gbit/s link's bound, 64 of 4 MiB at 0.96x (bench/run_collectives.sh --shape).
constexpr size_t kSegmentBytes = 4 << 20;
constexpr size_t kMaxSegments = 64;

struct CollectiveShape {
  CollectiveKind kind;
  size_t participants;
  size_t root;     // broadcast, scatter, gather, reduce
  size_t bytes;    // per participant: the message (broadcast, reduce, all-reduce) or one block
  size_t element;  // bytes per element of a reduction (blocks are cut at elements); 1 otherwise
  size_t segment_bytes = kSegmentBytes;  // another size only in tests
};

// The memory of a participant a step uses: its source or destination range (offsets from the
// range's start), or fedcl's scratch buffer there (reductions' partial results at a non-root).
enum class Region : uint8_t { source, destination, scratch };

struct Place {
  size_t participant;
  Region region;
  size_t offset;
};

// A side of an earlier step: the command of that step on the participant of the side.
struct StepSide {
  size_t step;
  bool to;  // the receiving side (else the sending one); a copy's sides are one command
  bool operator==(const StepSide &other) const { return step == other.step && to == other.to; }
};

struct CollectiveStep {
  Place from, to;
  size_t bytes;
  bool combine;                    // to becomes op(to, from), element by element; else from replaces it
  std::vector<StepSide> from_after;  // what the sending side waits for (on from's participant)
  std::vector<StepSide> to_after;    // what the receiving side waits for (on to's participant)
  bool local() const { return from.participant == to.participant; }
};

struct CollectivePlan {
  std::vector<CollectiveStep> steps;
  std::vector<bool> uses_scratch;  // per participant
  size_t scratch_bytes = 0;
};

CollectivePlan plan_collective(const CollectiveShape &shape);

// How many bytes of source and of destination a participant names (0: none): a message, or a block
// per participant (the root's source of a scatter, every source of an all-to-all, ...).
size_t collective_source_bytes(const CollectiveShape &shape, size_t participant);
size_t collective_destination_bytes(const CollectiveShape &shape, size_t participant);

}  // namespace fedcl
