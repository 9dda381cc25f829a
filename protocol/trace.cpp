#include "trace.h"

#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace fedcl::trace {

namespace {

struct Mark {
  uint64_t seq;
  uint64_t ns;
  uint32_t stream;
  Point point;
};

constexpr size_t kCapacity = 1 << 21;  // 64 MiB: a benchmark's worth of calls

std::atomic<Mark *> g_marks{nullptr};
std::atomic<size_t> g_next{0};
std::string g_path;

uint64_t now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

void write_marks() {
  Mark *marks = g_marks.exchange(nullptr);
  if (!marks) return;
  FILE *file = std::fopen(g_path.c_str(), "w");
  if (!file) {
    std::fprintf(stderr, "fedcl: cannot write the trace to %s\n", g_path.c_str());
    return;
  }
  size_t taken = g_next.load();
  size_t kept = taken < kCapacity ? taken : kCapacity;
  if (taken > kept) std::fprintf(file, "# %zu marks dropped: the trace holds %zu\n", taken - kept, kCapacity);
  for (size_t i = 0; i < kept; i++)
    std::fprintf(file, "%s %u %llu %llu\n", name(marks[i].point), marks[i].stream,
                 (unsigned long long)marks[i].seq, (unsigned long long)marks[i].ns);
  std::fclose(file);
}

}  // namespace

const char *name(Point point) {
  static const char *const names[] = {"client_sent",      "client_reply_read",      "client_resumed",
                                      "daemon_read",      "daemon_executed",        "daemon_completion_seen",
                                      "daemon_completion_run", "daemon_reply_sent",     "daemon_flush_started",
                                      "daemon_flush_ended", "client_flushed",         "daemon_peer_sent",
                                      "daemon_peer_read",   "daemon_stand_in_set",    "daemon_receive_landed"};
  static_assert(sizeof names / sizeof names[0] == size_t(Point::count));
  return names[size_t(point)];
}

std::string start(const std::string &path) {
  if (g_marks.load()) return "the trace is already recording";
  // Never freed while recording: marks may land from any thread until the process ends.
  auto *marks = new (std::nothrow) Mark[kCapacity];
  if (!marks) return "cannot allocate the trace's memory";
  g_path = path;
  g_marks.store(marks);
  std::atexit(write_marks);
  return {};
}

void write_now() { write_marks(); }

bool on() { return g_marks.load(std::memory_order_relaxed) != nullptr; }

void mark(Point point, uint32_t stream, uint64_t seq) {
  Mark *marks = g_marks.load(std::memory_order_relaxed);
  if (!marks) return;
  size_t i = g_next.fetch_add(1, std::memory_order_relaxed);
  if (i < kCapacity) marks[i] = {seq, now_ns(), stream, point};
}

}  // namespace fedcl::trace
