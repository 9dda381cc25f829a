// The raw limits of the links fedcl uses: plain TCP over loopback between this process and a forked
// peer process, as the client and fedcld are two processes; and a Unix socket between them, as a
// program and a daemon of one host talk (docs/design-decisions.md, "Same node"; its bulk bytes go
// through shared memory, whose floor is the backend's own copy).
#pragma once

#include <cstddef>

namespace bench {

struct LinkResult {
  double rtt_median_us = 0, rtt_p99_us = 0;  // 8-byte ping-pong, TCP_NODELAY
  double upload_mib_s = 0;                   // this process -> peer, as clEnqueueWriteBuffer's bytes go
  double download_mib_s = 0;                 // peer -> this process, as clEnqueueReadBuffer's bytes come
};

struct LinkPlan {
  int pings = 20000;
  size_t stream_bytes = size_t(256) << 20;
  int stream_reps = 5;
  bool local = false;  // a Unix socket pair instead of TCP over loopback
};

// Forks the peer, measures, and reaps it. Call before any OpenCL call: the child must not inherit
// driver threads. Throws std::runtime_error on failure.
LinkResult measure_link(const LinkPlan &plan);

}  // namespace bench
