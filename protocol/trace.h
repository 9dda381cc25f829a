// Hand-off timestamps: where a synchronising call's time goes, hop by hop, on both ends of a session.
//
// Off unless asked for: the client records with FEDCL_TRACE=FILE, fedcld with --trace FILE. Each end
// keeps its marks in memory (a fixed number; later ones are dropped and counted) and writes them at
// exit, one line per mark: "<point> <stream> <seq> <ns>": stream is the client's TCP port (which
// names one connection at both ends), ns from CLOCK_MONOTONIC, which both ends share on one host.
// Marks that belong to no request (a completion learnt on a backend thread) carry stream and seq 0.
// bench/trace_report.py joins a client's and a daemon's file and prints each hop's median.
#pragma once

#include <cstdint>
#include <string>

namespace fedcl::trace {

enum class Point : uint8_t {
  client_sent,             // a call's request is about to leave (before sendmsg)
  client_reply_read,       // the receiver thread has the reply's frame (payload not yet read)
  client_resumed,          // the calling thread is back from its wait
  daemon_read,             // fedcld starts running the request (its whole frame is in)
  daemon_executed,         // the request ran on the loop (backend called; reply may come later)
  daemon_completion_seen,  // a backend thread learnt a command completed (seq 0)
  daemon_completion_run,   // the loop runs that completion's work (seq 0)
  daemon_reply_sent,       // the reply was handed to the socket
  daemon_flush_started,    // after a batch, clFlush of the queues it touched begins (seq: how many)
  daemon_flush_ended,      // ... and has ended
  client_flushed,          // requests without a reply were handed to the socket (a flush; seq 0)
  daemon_peer_sent,        // a message to a peer daemon was handed to the socket (seq: its PeerMessage kind)
  daemon_peer_read,        // a message of a peer daemon arrived whole (seq: its kind)
  daemon_stand_in_set,     // a stand-in user event got its status (seq 0)
  daemon_receive_landed,   // a receive's bytes are in the buffer: its event completes (seq 0)
  count
};

const char *name(Point point);

// Starts recording into memory, written to path at exit. Returns "" or why not.
std::string start(const std::string &path);
// Writes what was recorded now (a process about to end without its exit handlers); then nothing more.
void write_now();
bool on();
void mark(Point point, uint32_t stream, uint64_t seq);

}  // namespace fedcl::trace
