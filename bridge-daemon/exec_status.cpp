// DaemonStatus: what this daemon serves and who uses it, for `fedcl status`. It is a connection's
// first request instead of Hello (checked, and on a daemon with a key proved, as a Hello is:
// exec_handshake.cpp) and opens no session: the main process answers from what it knows (the
// platforms its workers described, and each session worker's board), and the connection closes
// once the answer is written.
#include <capnp/message.h>

#include <chrono>
#include <cstring>

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

void fill_sessions(wire::DaemonStatus::Builder out, Listener &listener) {
  auto workers = listener.workers().sessions();
  auto list = out.initSessions(workers.size());
  uint64_t now = uv_now(listener.loop());
  for (size_t i = 0; i < workers.size(); i++) {
    const Worker &worker = *workers[i];
    list[i].setClient(worker.client);
    list[i].setPlatform(worker.platform);
    list[i].setUser(worker.user);
    list[i].setPid(uint32_t(worker.pid));
    if (worker.board) {
      list[i].setMemoryBytes(worker.board->memory_bytes.load());
      list[i].setObjects(worker.board->objects.load());
    }
    list[i].setSeconds((now - worker.since_ms) / 1000);
  }
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
  fill_platforms(out, platforms_);
  out.setSessionsShown(options_.status_sessions);
  if (options_.status_sessions) fill_sessions(out, *this);
  if (proof) out.setProof(fedcl::as_data(*proof));
  session.send_reply(message);
  session.close_after_writes("status answered");
}

}  // namespace fedcld
