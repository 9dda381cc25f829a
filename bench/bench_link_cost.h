// What the raw link adds at least to a metric when its work is done across the link: one round trip
// and, for a transfer, its bytes at the raw stream's rate. bench_floor.h turns it into the metric's
// floor.
#pragma once

#include <cstddef>

namespace bench {

struct LinkCost {
  enum Stream { kNoStream, kUpload, kDownload };
  bool crosses = false;  // false: the metric has no floor (throughputs, the parts of an NBody step)
  bool tail = false;     // a p99: the link's p99 round trip rather than its median
  Stream stream = kNoStream;
  size_t bytes = 0;      // carried by the stream
};

inline LinkCost round_trip(bool tail = false) { return {true, tail, LinkCost::kNoStream, 0}; }
inline LinkCost transfer(LinkCost::Stream stream, size_t bytes) { return {true, false, stream, bytes}; }

}  // namespace bench
