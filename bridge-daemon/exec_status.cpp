// DaemonStatus: what this daemon serves and who uses it, for `fedcl status`. It is a connection's
// first request instead of Hello (checked, and on a daemon with a key proved, as a Hello is:
// exec_handshake.cpp) and opens no session: the main process answers from what it knows (the
// platforms its workers described, and each session worker's board), and the connection closes
// once the answer is written.
#include <capnp/message.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "auth.h"
#include "listener.h"
#include "worker_board.h"

namespace fedcld {

namespace wire = fedcl::wire;

namespace {

uint64_t seconds_since(std::chrono::steady_clock::time_point then) {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - then).count();
}

void fill_platforms(wire::DaemonStatus::Builder out, const std::vector<BackendPlatform> &platforms) {
  auto list = out.initPlatforms(platforms.size());
  for (size_t p = 0; p < platforms.size(); p++) {
    list[p].setName(info_string(platforms[p].info, CL_PLATFORM_NAME));
    auto devices = list[p].initDevices(platforms[p].devices.size());
    for (size_t d = 0; d < platforms[p].devices.size(); d++) {
      const auto &info = platforms[p].devices[d].info;
      devices[d].setName(info_string(info, CL_DEVICE_NAME));
      devices[d].setGlobalMemory(info_ulong(info, CL_DEVICE_GLOBAL_MEM_SIZE));
    }
  }
}

// Who sees which sessions (docs/status.md): on a daemon without keys, and to the cluster key's
// holder and --status-admin, every session; to a user of the key list, their own.
bool sees_every_session(const Listener &listener, const std::string &asker) {
  const ServerOptions &options = listener.options();
  return !options.requires_key() || asker.empty() || (!options.status_admin.empty() && asker == options.status_admin);
}

void fill_session(wire::DaemonStatus::SessionSummary::Builder out, const Worker &worker, uint64_t now_ms) {
  out.setClient(worker.client);
  out.setAddress(worker.address);
  out.setPlatform(worker.platform);
  out.setUser(worker.user);
  out.setPid(uint32_t(worker.pid));
  out.setSeconds((now_ms - worker.since_ms) / 1000);
  if (!worker.board) return;
  const WorkerBoard &board = *worker.board;
  out.setMemoryBytes(board.memory_bytes.load());
  out.setObjects(board.objects.load());
  out.setCommandsInFlight(board.commands_in_flight.load());
  out.setBytesReceived(board.client_bytes_received.load());
  out.setBytesSent(board.client_bytes_sent.load());
  out.setTransport(board_transport_name(board.client_transport.load()));
  RequestTotals requests;
  for (const BoardRequestKind &kind : board.requests) requests.add(kind);
  out.setRequests(requests.count);
  out.setRequestsFailed(requests.failed);
  size_t links = 0;
  while (links < kBoardLinks && board.links[links].state.load(std::memory_order_acquire) != BoardLink::empty) links++;
  auto list = out.initLinks(links);
  for (size_t l = 0; l < links; l++) {
    const BoardLink &link = board.links[l];
    list[l].setPeer(std::string(link.peer, strnlen(link.peer, sizeof link.peer)));
    list[l].setUp(link.state.load(std::memory_order_acquire) == BoardLink::up);
    list[l].setBytesSent(link.bytes_sent.load());
    list[l].setBytesReceived(link.bytes_received.load());
    list[l].setTransport(board_transport_name(link.transport.load()));
  }
}

void fill_sessions(wire::DaemonStatus::Builder out, Listener &listener, const std::string &asker) {
  auto workers = listener.workers().sessions();
  bool every = sees_every_session(listener, asker);
  std::vector<const Worker *> shown;
  for (const Worker *worker : workers)
    if (every || worker->user == asker) shown.push_back(worker);
  out.setAdmin(every);
  out.setSessionsHidden(workers.size() - shown.size());
  auto list = out.initSessions(shown.size());
  uint64_t now = uv_now(listener.loop());
  for (size_t i = 0; i < shown.size(); i++) fill_session(list[i], *shown[i], now);
}

}  // namespace

void Listener::send_status(Session &session, uint64_t seq, const fedcl::Proof *proof) {
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setSeq(seq);
  auto out = reply.initDaemonStatus();
  out.setProtocolVersion(wire::PROTOCOL_VERSION);
  out.setNode(options_.node);
  out.setInstance(instance());
  out.setUptimeSeconds(seconds_since(started()));
  out.setMaxSessions(options_.max_sessions);
  out.setMaxSessionMemory(options_.max_session_memory);
  out.setVersion(FEDCL_VERSION);
  fill_platforms(out, platforms_);
  std::vector<const WorkerBoard *> boards;
  for (const Worker *worker : workers_.sessions())
    if (worker->board) boards.push_back(worker->board);
  DaemonTotals totals = counters_.totals(boards);
  out.setSessionsStarted(counters_.sessions_started());
  out.setHandshakesRefused(counters_.refused_total());
  out.setRequestsFailed(totals.requests_failed());
  out.setWorkerFailures(counters_.worker_crashes() + counters_.worker_hangs());
  out.setSessionsShown(options_.status_sessions);
  if (options_.status_sessions) fill_sessions(out, *this, session.handshake.identity);
  else out.setSessionsHidden(workers_.session_count());
  if (proof) out.setProof(fedcl::as_data(*proof));
  session.send_reply(message);
  session.close_after_writes("status answered");
}

}  // namespace fedcld
