#include "collective_plan.h"

#include <algorithm>

namespace fedcl {

namespace {

struct Range {
  size_t offset, bytes;
};

// Block i of n of a message of bytes, cut at whole elements: the first (count % n) blocks one
// element longer.
Range block(size_t i, size_t n, size_t bytes, size_t element) {
  size_t count = bytes / element, base = count / n, extra = count % n;
  return {(i * base + std::min(i, extra)) * element, (base + (i < extra ? 1 : 0)) * element};
}

bool overlaps(const Place &a, size_t a_bytes, const Place &b, size_t b_bytes) {
  return a.participant == b.participant && a.region == b.region && a.offset < b.offset + b_bytes &&
         b.offset < a.offset + a_bytes;
}

class Planner {
 public:
  explicit Planner(const CollectiveShape &shape) : shape_(shape), n_(shape.participants) {
    plan_.uses_scratch.assign(n_, false);
  }

  // A step, after every earlier step it conflicts with: its sending side reads from, so it waits
  // for earlier writes there; its receiving side writes to (and reads it, combining), so it waits
  // for earlier reads and writes there.
  void step(Place from, Place to, size_t bytes, bool combine) {
    if (bytes == 0) return;
    CollectiveStep next{from, to, bytes, combine, {}, {}};
    for (size_t i = 0; i < plan_.steps.size(); i++) {
      const CollectiveStep &earlier = plan_.steps[i];
      if (overlaps(earlier.to, earlier.bytes, from, bytes)) add(&next.from_after, {i, true});
      if (overlaps(earlier.to, earlier.bytes, to, bytes)) add(&next.to_after, {i, true});
      if (overlaps(earlier.from, earlier.bytes, to, bytes)) add(&next.to_after, {i, false});
    }
    for (const Place &place : {from, to})
      if (place.region == Region::scratch) plan_.uses_scratch[place.participant] = true;
    plan_.steps.push_back(std::move(next));
  }

  CollectivePlan finish() {
    if (std::find(plan_.uses_scratch.begin(), plan_.uses_scratch.end(), true) != plan_.uses_scratch.end())
      plan_.scratch_bytes = shape_.bytes;
    return std::move(plan_);
  }

  size_t n() const { return n_; }
  size_t bytes() const { return shape_.bytes; }
  // The participant of rank v counted from the root.
  size_t from_root(size_t v) const { return (v + shape_.root) % n_; }
  Range block(size_t i) const { return fedcl::block(i, n_, shape_.bytes, shape_.element); }

  // A binomial tree's broadcast of at[participant] (the same region and range everywhere) from rank 0.
  void tree_broadcast(Region region, size_t root) {
    for (size_t mask = 1; mask < n_; mask <<= 1)
      for (size_t v = 0; v < mask && v + mask < n_; v++)
        step({(v + root) % n_, region, 0}, {(v + mask + root) % n_, region, 0}, bytes(), false);
  }

  // A binomial tree's reduction into acc(rank 0) (the root). acc(v): where rank v gathers its
  // children's contributions, already holding its own; a rank without children sends its source.
  template <typename Acc>
  void tree_reduce(size_t root, Acc acc) {
    auto has_children = [&](size_t v) { return v % 2 == 0 && v + 1 < n_; };
    for (size_t mask = 1; mask < n_; mask <<= 1)
      for (size_t v = mask; v < n_; v += 2 * mask) {
        Place from = has_children(v) ? acc(v) : Place{(v + root) % n_, Region::source, 0};
        step(from, acc(v - mask), bytes(), true);
      }
  }

  // A pipelined ring: in round k (of n - 1) participant p passes the block range(p, k) to p + 1,
  // segment by segment, reading it at from(p, k, block) and writing (or combining) it at
  // to(p + 1, block); a segment moves on in the next round as soon as it arrived, not when its whole
  // block did.
  template <typename RangeOf, typename From, typename To>
  void ring(bool combine, RangeOf range, From from, To to) {
    for (size_t k = 0; k + 1 < n_; k++)
      for (size_t p = 0; p < n_; p++) {
        Range b = range(p, k);
        Place source = from(p, k, b), target = to((p + 1) % n_, b);
        size_t count = std::clamp<size_t>(b.bytes / shape_.segment_bytes, 1, kMaxSegments);
        for (size_t i = 0; i < count; i++) {
          Range seg = fedcl::block(i, count, b.bytes, shape_.element);
          step({source.participant, source.region, source.offset + seg.offset},
               {target.participant, target.region, target.offset + seg.offset}, seg.bytes, combine);
        }
      }
  }

  // A ring reduce-scatter into acc (each participant's whole message there): afterwards participant
  // p holds block (p + 1) % n fully reduced. A participant's first block goes from its source, the
  // others are copied to acc first (meanwhile), so that the first round starts at once.
  void ring_reduce_scatter(const std::vector<Region> &acc) {
    if (n_ == 1) return step({0, Region::source, 0}, {0, acc[0], 0}, shape_.bytes, false);
    for (size_t p = 0; p < n_; p++)
      for (size_t b = 0; b < n_; b++)
        if (b != p) step({p, Region::source, block(b).offset}, {p, acc[p], block(b).offset}, block(b).bytes, false);
    ring(true, [&](size_t p, size_t k) { return block((p + n_ - k) % n_); },
         [&](size_t p, size_t k, Range b) { return Place{p, k == 0 ? Region::source : acc[p], b.offset}; },
         [&](size_t q, Range b) { return Place{q, acc[q], b.offset}; });
  }

 private:
  static void add(std::vector<StepSide> *list, StepSide side) {
    if (std::find(list->begin(), list->end(), side) == list->end()) list->push_back(side);
  }

  CollectiveShape shape_;
  size_t n_;
  CollectivePlan plan_;
};

void plan_broadcast(Planner &plan, const CollectiveShape &shape) {
  size_t n = plan.n();
  if (shape.bytes < kTreeBelowBytes) return plan.tree_broadcast(Region::destination, shape.root);
  size_t segments = std::clamp<size_t>(shape.bytes / shape.segment_bytes, 1, kMaxSegments);
  for (size_t s = 0; s < segments; s++) {
    Range seg = block(s, segments, shape.bytes, shape.element);
    for (size_t v = 0; v + 1 < n; v++)
      plan.step({plan.from_root(v), Region::destination, seg.offset},
                {plan.from_root(v + 1), Region::destination, seg.offset}, seg.bytes, false);
  }
}

void plan_reduce(Planner &plan, const CollectiveShape &shape) {
  size_t n = plan.n(), root = shape.root;
  if (shape.bytes < kTreeBelowBytes && n <= kLinearReduceMax) {
    plan.step({root, Region::source, 0}, {root, Region::destination, 0}, shape.bytes, false);
    for (size_t v = 1; v < n; v++)
      plan.step({(v + root) % n, Region::source, 0}, {root, Region::destination, 0}, shape.bytes, true);
    return;
  }
  if (shape.bytes < kTreeBelowBytes) {
    auto acc = [&](size_t v) { return Place{(v + root) % n, v == 0 ? Region::destination : Region::scratch, 0}; };
    for (size_t v = 0; v < n; v++)
      if (v == 0 || (v % 2 == 0 && v + 1 < n)) plan.step({(v + root) % n, Region::source, 0}, acc(v), shape.bytes, false);
    return plan.tree_reduce(root, acc);
  }
  std::vector<Region> acc(n, Region::scratch);
  acc[root] = Region::destination;
  plan.ring_reduce_scatter(acc);
  for (size_t p = 0; p < n; p++) {
    if (p == root) continue;
    Range b = plan.block((p + 1) % n);
    plan.step({p, acc[p], b.offset}, {root, Region::destination, b.offset}, b.bytes, false);
  }
}

void plan_all_reduce(Planner &plan, const CollectiveShape &shape) {
  size_t n = plan.n();
  if (shape.bytes < kTreeBelowBytes) {
    for (size_t p = 0; p < n; p++) plan.step({p, Region::source, 0}, {p, Region::destination, 0}, shape.bytes, false);
    plan.tree_reduce(0, [](size_t v) { return Place{v, Region::destination, 0}; });
    return plan.tree_broadcast(Region::destination, 0);
  }
  plan.ring_reduce_scatter(std::vector<Region>(n, Region::destination));
  auto at = [](size_t q, Range b) { return Place{q, Region::destination, b.offset}; };
  plan.ring(false, [&](size_t p, size_t k) { return plan.block((p + 1 + n - k) % n); },
            [&](size_t p, size_t, Range b) { return at(p, b); }, at);
}

void plan_all_gather(Planner &plan, const CollectiveShape &shape) {
  size_t n = plan.n(), bytes = shape.bytes;
  // A participant's own block goes out from its source in the first round while it is copied.
  for (size_t p = 0; p < n; p++) plan.step({p, Region::source, 0}, {p, Region::destination, p * bytes}, bytes, false);
  plan.ring(false, [&](size_t p, size_t k) { return Range{((p + n - k) % n) * bytes, bytes}; },
            [](size_t p, size_t k, Range b) { return k == 0 ? Place{p, Region::source, 0} : Place{p, Region::destination, b.offset}; },
            [](size_t q, Range b) { return Place{q, Region::destination, b.offset}; });
}

}  // namespace

CollectivePlan plan_collective(const CollectiveShape &shape) {
  Planner plan(shape);
  size_t n = shape.participants, bytes = shape.bytes, root = shape.root;
  switch (shape.kind) {
    case CollectiveKind::broadcast:
      plan_broadcast(plan, shape);
      break;
    case CollectiveKind::scatter:
      for (size_t p = 0; p < n; p++) plan.step({root, Region::source, p * bytes}, {p, Region::destination, 0}, bytes, false);
      break;
    case CollectiveKind::gather:
      for (size_t p = 0; p < n; p++) plan.step({p, Region::source, 0}, {root, Region::destination, p * bytes}, bytes, false);
      break;
    case CollectiveKind::all_gather:
      plan_all_gather(plan, shape);
      break;
    case CollectiveKind::reduce:
      plan_reduce(plan, shape);
      break;
    case CollectiveKind::all_reduce:
      plan_all_reduce(plan, shape);
      break;
    case CollectiveKind::all_to_all:
      // Shifted, so that each round every participant sends to a different one.
      for (size_t shift = 0; shift < n; shift++)
        for (size_t p = 0; p < n; p++) {
          size_t q = (p + shift) % n;
          plan.step({p, Region::source, q * bytes}, {q, Region::destination, p * bytes}, bytes, false);
        }
      break;
  }
  return plan.finish();
}

size_t collective_source_bytes(const CollectiveShape &shape, size_t participant) {
  size_t all = shape.participants * shape.bytes;
  bool root = participant == shape.root;
  switch (shape.kind) {
    case CollectiveKind::broadcast: return 0;
    case CollectiveKind::scatter: return root ? all : 0;
    case CollectiveKind::all_to_all: return all;
    default: return shape.bytes;
  }
}

size_t collective_destination_bytes(const CollectiveShape &shape, size_t participant) {
  size_t all = shape.participants * shape.bytes;
  bool root = participant == shape.root;
  switch (shape.kind) {
    case CollectiveKind::gather: return root ? all : 0;
    case CollectiveKind::reduce: return root ? shape.bytes : 0;
    case CollectiveKind::all_gather:
    case CollectiveKind::all_to_all: return all;
    default: return shape.bytes;
  }
}

}  // namespace fedcl
