// What fedcld counts for `fedcl status` and `--metrics` (docs/status.md): the main process's own
// events (sessions started, handshakes refused, session workers lost) and the sums of its session
// workers' boards (worker_board.h), the boards of workers that are gone included, so that a counter
// never goes down when a session ends.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "worker_board.h"

namespace fedcld {

struct RequestTotals {
  uint64_t count = 0, failed = 0, nanos = 0;
  uint64_t buckets[kBoardLatencyBuckets] = {};  // not cumulative
  void add(const BoardRequestKind &kind);
};

struct Traffic {
  uint64_t sent = 0, received = 0;
};

// Why a handshake was refused, from the status its refusal carries.
enum class Refusal { denied, capacity, unavailable };
constexpr size_t kRefusalKinds = 3;
const char *refusal_name(Refusal refusal);  // "denied", "capacity", "unavailable"

// The name of request kind which (wire::Request's union member, in snake case: "enqueue_kernel"),
// or "" for a number that names none.
const std::string &request_kind_name(unsigned which);

struct DaemonTotals {
  RequestTotals requests[kBoardRequestKinds];
  Traffic client;
  std::map<std::string, Traffic> links;  // by the other end of the link
  uint64_t links_up = 0;
  uint64_t commands_in_flight = 0;  // live sessions only
  uint64_t memory_bytes = 0;        // live sessions only
  uint64_t requests_failed() const;
};

class DaemonCounters {
 public:
  void session_started() { sessions_started_++; }
  void refused(cl_int status);
  // A stranger's connection closed to make room for a newer one (handshake_limits.h).
  void pushed_out() { pushed_out_++; }
  void worker_failed(bool hung) { (hung ? worker_hangs_ : worker_crashes_)++; }
  // A session worker is gone: what its board counted stays in the totals.
  void retire(const WorkerBoard &board);
  // The retired counts plus those of the live boards.
  DaemonTotals totals(const std::vector<const WorkerBoard *> &live) const;

  uint64_t sessions_started() const { return sessions_started_; }
  uint64_t refused(Refusal refusal) const { return refused_[size_t(refusal)]; }
  uint64_t refused_total() const;
  uint64_t pushed_out_total() const { return pushed_out_; }
  uint64_t worker_crashes() const { return worker_crashes_; }
  uint64_t worker_hangs() const { return worker_hangs_; }

 private:
  uint64_t sessions_started_ = 0;
  uint64_t refused_[kRefusalKinds] = {};
  uint64_t pushed_out_ = 0;
  uint64_t worker_crashes_ = 0, worker_hangs_ = 0;
  DaemonTotals retired_;
};

// Adds a board's counts to totals (live: its gauges too).
void add_board(DaemonTotals &totals, const WorkerBoard &board, bool live);

}  // namespace fedcld
