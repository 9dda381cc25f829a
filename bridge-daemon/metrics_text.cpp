#include "metrics_text.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "fedcl.capnp.h"
#include "listener.h"

namespace fedcld {

namespace {

// Writes one metric family: its HELP and TYPE lines, then its samples.
class Exposition {
 public:
  void family(const char *name, const char *type, const char *help) {
    text_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const std::string &name, const std::string &labels, double value) {
    char number[40];
    std::snprintf(number, sizeof number, "%.9g", value);
    text_ += name + (labels.empty() ? "" : "{" + labels + "}") + " " + number + "\n";
  }
  void sample(const std::string &name, const std::string &labels, uint64_t value) {
    text_ += name + (labels.empty() ? "" : "{" + labels + "}") + " " + std::to_string(value) + "\n";
  }
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
};

std::string label(const char *name, const std::string &value) { return std::string(name) + "=\"" + metrics_label(value) + "\""; }

// Resident memory of a process, in bytes (0 when it is gone).
uint64_t resident_bytes(const std::string &pid) {
  std::ifstream statm("/proc/" + pid + "/statm");
  uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * uint64_t(sysconf(_SC_PAGESIZE));
}

void histogram(Exposition &out, const std::string &kind_label, const RequestTotals &totals) {
  uint64_t cumulative = 0;
  for (size_t b = 0; b < kBoardLatencyBuckets; b++) {
    cumulative += totals.buckets[b];
    char le[32];
    if (b + 1 < kBoardLatencyBuckets) std::snprintf(le, sizeof le, "%g", double(kBoardLatencyBoundsNs[b]) / 1e9);
    else std::snprintf(le, sizeof le, "+Inf");
    out.sample("fedcld_request_duration_seconds_bucket", kind_label + "," + label("le", le), cumulative);
  }
  out.sample("fedcld_request_duration_seconds_sum", kind_label, double(totals.nanos) / 1e9);
  out.sample("fedcld_request_duration_seconds_count", kind_label, totals.count);
}

}  // namespace

std::string metrics_label(const std::string &value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string metrics_exposition(Listener &listener) {
  const ServerOptions &options = listener.options();
  const DaemonCounters &counters = listener.counters();
  std::vector<const WorkerBoard *> boards;
  uint64_t worker_memory = 0;
  auto sessions = listener.workers().sessions();
  for (const Worker *worker : sessions) {
    if (worker->board) boards.push_back(worker->board);
    worker_memory += resident_bytes(std::to_string(worker->pid));
  }
  DaemonTotals totals = counters.totals(boards);
  Exposition out;

  out.family("fedcld_info", "gauge", "The daemon's release, node and wire protocol (always 1).");
  out.sample("fedcld_info", label("version", FEDCL_VERSION) + "," + label("node", options.node) + "," +
                                label("protocol", std::to_string(fedcl::wire::PROTOCOL_VERSION)), uint64_t(1));
  out.family("fedcld_uptime_seconds", "gauge", "Seconds since the daemon started.");
  out.sample("fedcld_uptime_seconds", "",
             double(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - listener.started()).count()) / 1e3);
  out.family("fedcld_sessions", "gauge", "Client sessions open now.");
  out.sample("fedcld_sessions", "", uint64_t(sessions.size()));
  out.family("fedcld_sessions_limit", "gauge", "Client sessions the daemon takes at once (--max-sessions).");
  out.sample("fedcld_sessions_limit", "", uint64_t(options.max_sessions));
  out.family("fedcld_sessions_started_total", "counter", "Client sessions started.");
  out.sample("fedcld_sessions_started_total", "", counters.sessions_started());
  out.family("fedcld_handshakes_refused_total", "counter",
             "Clients and peer daemons turned away: denied (key, protocol, TLS), capacity, unavailable.");
  for (Refusal refusal : {Refusal::denied, Refusal::capacity, Refusal::unavailable})
    out.sample("fedcld_handshakes_refused_total", label("reason", refusal_name(refusal)), counters.refused(refusal));
  out.family("fedcld_handshakes", "gauge", "Connections whose other side has not proved itself yet, open now.");
  out.sample("fedcld_handshakes", "", uint64_t(listener.handshakes().count()));
  out.family("fedcld_handshakes_limit", "gauge", "Such connections the daemon holds at once (--max-handshakes).");
  out.sample("fedcld_handshakes_limit", "", uint64_t(listener.handshakes().caps().total));
  out.family("fedcld_handshakes_pushed_out_total", "counter",
             "Such connections closed to make room for newer ones (past --max-handshakes or its per-address cap).");
  out.sample("fedcld_handshakes_pushed_out_total", "", counters.pushed_out_total());
  out.family("fedcld_worker_failures_total", "counter",
             "Session workers lost: crashed (a signal, in the driver or fedcld) or ended for standing still.");
  out.sample("fedcld_worker_failures_total", label("cause", "crash"), counters.worker_crashes());
  out.sample("fedcld_worker_failures_total", label("cause", "hang"), counters.worker_hangs());
  out.family("fedcld_session_memory_bytes", "gauge", "Device memory the open sessions hold in buffers and images.");
  out.sample("fedcld_session_memory_bytes", "", totals.memory_bytes);
  out.family("fedcld_commands_in_flight", "gauge", "Commands handed to the backend whose completion is not seen yet.");
  out.sample("fedcld_commands_in_flight", "", totals.commands_in_flight);
  out.family("fedcld_client_bytes_total", "counter", "Bytes of the client sessions' streams.");
  out.sample("fedcld_client_bytes_total", label("direction", "received"), totals.client.received);
  out.sample("fedcld_client_bytes_total", label("direction", "sent"), totals.client.sent);
  out.family("fedcld_peer_links", "gauge", "Peer links to other daemons up now.");
  out.sample("fedcld_peer_links", "", totals.links_up);
  out.family("fedcld_peer_link_bytes_total", "counter", "Bytes of peer links, by the other end of the link.");
  for (const auto &[peer, traffic] : totals.links) {
    out.sample("fedcld_peer_link_bytes_total", label("peer", peer) + "," + label("direction", "received"), traffic.received);
    out.sample("fedcld_peer_link_bytes_total", label("peer", peer) + "," + label("direction", "sent"), traffic.sent);
  }
  out.family("fedcld_requests_total", "counter", "Client requests executed, by kind (the wire's request names).");
  for (size_t k = 0; k < kBoardRequestKinds; k++)
    if (totals.requests[k].count) out.sample("fedcld_requests_total", label("kind", request_kind_name(unsigned(k))), totals.requests[k].count);
  out.family("fedcld_request_errors_total", "counter", "Client requests and commands that ended in an error, by kind.");
  for (size_t k = 0; k < kBoardRequestKinds; k++)
    if (totals.requests[k].count)
      out.sample("fedcld_request_errors_total", label("kind", request_kind_name(unsigned(k))), totals.requests[k].failed);
  out.family("fedcld_request_duration_seconds", "histogram",
             "From a request's arrival to its reply or, for a command, to the backend's completion.");
  for (size_t k = 0; k < kBoardRequestKinds; k++)
    if (totals.requests[k].count) histogram(out, label("kind", request_kind_name(unsigned(k))), totals.requests[k]);
  out.family("fedcld_resident_memory_bytes", "gauge", "Resident memory of the main process and of the session workers together.");
  out.sample("fedcld_resident_memory_bytes", label("process", "main"), resident_bytes("self"));
  out.sample("fedcld_resident_memory_bytes", label("process", "workers"), worker_memory);
  return out.take();
}

}  // namespace fedcld
