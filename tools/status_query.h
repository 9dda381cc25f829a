// Asks one daemon for its DaemonStatus (protocol/fedcl.capnp) within a deadline: what `fedcl status`
// prints for it. A daemon that cannot be reached, refuses, or does not answer in time (a frozen
// process still has its socket accepted by the kernel) is reported with why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "client_auth.h"

namespace fedcl {

struct DaemonReport {
  struct Device {
    std::string name;
    uint64_t global_memory = 0;
  };
  struct Platform {
    std::string name;
    std::vector<Device> devices;
  };
  struct Link {
    std::string peer;   // the other end of the link's connection
    bool up = false;
    uint64_t bytes_sent = 0, bytes_received = 0;
    std::string transport;  // tcp, tls, local or local+shm (DaemonStatus.LinkSummary.transport)
  };
  struct Session {
    std::string client;
    uint32_t platform = 0;
    uint64_t memory = 0;
    uint64_t objects = 0;
    uint64_t seconds = 0;
    uint32_t pid = 0;   // the session's worker process on the daemon's node
    std::string user;   // whose key the client proved ("" on a daemon without keys)
    std::string address;  // the client's connection as the daemon sees it
    std::string transport;  // how it travels: tcp, tls, local (a Unix socket), local+shm
    uint64_t commands_in_flight = 0;
    uint64_t requests = 0, requests_failed = 0;
    uint64_t bytes_received = 0, bytes_sent = 0;  // the daemon's view: from and to the client
    std::vector<Link> links;
  };

  std::string endpoint;
  bool answered = false;
  std::string error;          // why not, when !answered
  double answer_ms = 0;       // connect to reply
  uint32_t protocol = 0;
  std::string node;
  uint64_t uptime_seconds = 0;
  uint64_t max_sessions = 0;
  uint64_t max_session_memory = 0;  // 0: no limit
  std::vector<Platform> platforms;
  bool sessions_shown = false;
  std::vector<Session> sessions;
  std::string version;             // fedcld's release ("" from a fedcld before 0.1.0's status)
  bool admin = false;              // the asker sees every session
  uint64_t sessions_hidden = 0;    // other users' sessions, not listed
  uint64_t sessions_started = 0;
  uint64_t handshakes_refused = 0;
  uint64_t requests_failed = 0;
  uint64_t worker_failures = 0;

  uint64_t memory_in_use() const;
};

// On a daemon with a key, proves credentials as a session's handshake does (the key never crosses
// the wire), and takes the answer only if the daemon proves it holds the key too.
DaemonReport query_daemon_status(const std::string &endpoint, const Credentials &credentials, int timeout_ms);

}  // namespace fedcl
