// DaemonStatus: what this daemon serves and who uses it, for `fedcl status`. It is a connection's
// first request instead of Hello (checked, and on a daemon with a key proved, as a Hello is:
// exec_handshake.cpp) and opens no session on the devices: the reply is built from what the server
// already knows, and the connection closes once it is written.
#include <capnp/message.h>

#include <chrono>
#include <cstring>

#include "auth.h"
#include "exec.h"
#include "server.h"

namespace fedcld {

namespace {

const InfoValue *find_info(const std::vector<InfoValue> &info, cl_uint param) {
  for (const InfoValue &value : info)
    if (value.param == param) return &value;
  return nullptr;
}

std::string info_text(const std::vector<InfoValue> &info, cl_uint param) {
  const InfoValue *value = find_info(info, param);
  if (!value) return {};
  const char *text = reinterpret_cast<const char *>(value->value.data());
  return std::string(text, strnlen(text, value->value.size()));
}

uint64_t info_ulong(const std::vector<InfoValue> &info, cl_uint param) {
  const InfoValue *value = find_info(info, param);
  cl_ulong number = 0;
  if (value && value->value.size() == sizeof number) std::memcpy(&number, value->value.data(), sizeof number);
  return number;
}

uint64_t seconds_since(std::chrono::steady_clock::time_point then) {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - then).count();
}

void fill_platforms(wire::DaemonStatus::Builder out, const std::vector<BackendPlatform> &platforms) {
  auto list = out.initPlatforms(platforms.size());
  for (size_t p = 0; p < platforms.size(); p++) {
    list[p].setName(info_text(platforms[p].info, CL_PLATFORM_NAME));
    auto devices = list[p].initDevices(platforms[p].devices.size());
    for (size_t d = 0; d < platforms[p].devices.size(); d++) {
      const auto &info = platforms[p].devices[d].info;
      devices[d].setName(info_text(info, CL_DEVICE_NAME));
      devices[d].setGlobalMemory(info_ulong(info, CL_DEVICE_GLOBAL_MEM_SIZE));
    }
  }
}

void fill_sessions(wire::DaemonStatus::Builder out, Server &server) {
  auto sessions = server.client_sessions();
  auto list = out.initSessions(sessions.size());
  for (size_t i = 0; i < sessions.size(); i++) {
    Session &session = *sessions[i];
    list[i].setClient(session.client);
    list[i].setPlatform(session.platform_index());
    list[i].setMemoryBytes(session.objects().memory_used());
    list[i].setObjects(session.objects().size());
    list[i].setSeconds((uv_now(server.loop()) - session.opened_at) / 1000);
  }
}

}  // namespace

void send_daemon_status(Call &call, const fedcl::Proof *proof) {
  Session &session = call.session;
  Server &server = session.server();
  const ServerOptions &options = server.options();
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setSeq(call.seq);
  auto out = reply.initDaemonStatus();
  out.setProtocolVersion(wire::PROTOCOL_VERSION);
  out.setNode(options.node);
  out.setInstance(server.peers().instance());
  out.setUptimeSeconds(seconds_since(server.started()));
  out.setMaxSessions(options.max_sessions);
  out.setMaxSessionMemory(options.max_session_memory);
  fill_platforms(out, server.platforms());
  out.setSessionsShown(options.status_sessions);
  if (options.status_sessions) fill_sessions(out, server);
  if (proof) out.setProof(fedcl::as_data(*proof));
  session.send_reply(message);
  session.close_after_writes("status answered");
}

}  // namespace fedcld
