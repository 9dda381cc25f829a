#include "daemon_counters.h"

#include <capnp/schema.h>

#include <array>
#include <cstring>

#include "fedcl.capnp.h"

namespace fedcld {

void RequestTotals::add(const BoardRequestKind &kind) {
  count += kind.count.load(std::memory_order_relaxed);
  failed += kind.failed.load(std::memory_order_relaxed);
  nanos += kind.nanos.load(std::memory_order_relaxed);
  for (size_t b = 0; b < kBoardLatencyBuckets; b++) buckets[b] += kind.buckets[b].load(std::memory_order_relaxed);
}

const char *refusal_name(Refusal refusal) {
  switch (refusal) {
    case Refusal::denied: return "denied";
    case Refusal::capacity: return "capacity";
    case Refusal::unavailable: return "unavailable";
  }
  return "?";
}

const std::string &request_kind_name(unsigned which) {
  // From the schema, so that a new request kind is named without a list to keep up to date here.
  static const auto names = [] {
    std::array<std::string, kBoardRequestKinds> by_which{};
    for (auto field : capnp::Schema::from<fedcl::wire::Request>().getUnionFields()) {
      auto proto = field.getProto();
      if (proto.getDiscriminantValue() >= by_which.size()) continue;
      std::string snake;
      for (char c : std::string(proto.getName().cStr())) {
        if (c >= 'A' && c <= 'Z') {
          snake += '_';
          snake += char(c - 'A' + 'a');
        } else {
          snake += c;
        }
      }
      by_which[proto.getDiscriminantValue()] = snake;
    }
    return by_which;
  }();
  static const std::string none;
  return which < names.size() ? names[which] : none;
}

uint64_t DaemonTotals::requests_failed() const {
  uint64_t sum = 0;
  for (const RequestTotals &kind : requests) sum += kind.failed;
  return sum;
}

void DaemonCounters::refused(cl_int status) {
  Refusal refusal = status == CL_OUT_OF_RESOURCES ? Refusal::capacity
                    : status == CL_DEVICE_NOT_AVAILABLE ? Refusal::unavailable
                                                         : Refusal::denied;
  refused_[size_t(refusal)]++;
}

uint64_t DaemonCounters::refused_total() const {
  uint64_t sum = 0;
  for (uint64_t count : refused_) sum += count;
  return sum;
}

void add_board(DaemonTotals &totals, const WorkerBoard &board, bool live) {
  for (size_t k = 0; k < kBoardRequestKinds; k++) totals.requests[k].add(board.requests[k]);
  totals.client.received += board.client_bytes_received.load(std::memory_order_relaxed);
  totals.client.sent += board.client_bytes_sent.load(std::memory_order_relaxed);
  for (const BoardLink &link : board.links) {
    uint32_t state = link.state.load(std::memory_order_acquire);
    if (state == BoardLink::empty) break;  // slots are taken in order
    Traffic &traffic = totals.links[std::string(link.peer, strnlen(link.peer, sizeof link.peer))];
    traffic.sent += link.bytes_sent.load(std::memory_order_relaxed);
    traffic.received += link.bytes_received.load(std::memory_order_relaxed);
    if (live && state == BoardLink::up) totals.links_up++;
  }
  if (live) {
    totals.commands_in_flight += board.commands_in_flight.load(std::memory_order_relaxed);
    totals.memory_bytes += board.memory_bytes.load(std::memory_order_relaxed);
  }
}

void DaemonCounters::retire(const WorkerBoard &board) { add_board(retired_, board, false); }

DaemonTotals DaemonCounters::totals(const std::vector<const WorkerBoard *> &live) const {
  DaemonTotals totals = retired_;
  for (const WorkerBoard *board : live) add_board(totals, *board, true);
  return totals;
}

}  // namespace fedcld
