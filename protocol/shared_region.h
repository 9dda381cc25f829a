// A local session's shared memory (SharedMemory in fedcl.capnp; docs/design-decisions.md, "Same
// node"): a memfd the client makes and passes once, mapped by both ends. A header page, then slots.
// The client takes a free slot (only the client takes slots), puts a request's payload there or
// asks for a reply's payload there; whoever is done with the slot's bytes frees it: the daemon once
// the backend has copied a write's payload, the client once it copied a read's bytes out. A freed
// slot wakes the client's threads that wait for one (a futex on the shared page).
//
// The daemon trusts nothing in the memory: it takes the layout from the request (checked against
// the memfd's size and seals, so that the client cannot shrink it under the daemon's feet), reads
// and writes only the slots a request names, and of the header only stores a freed slot's state.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace fedcl {

constexpr uint64_t kSharedHeaderBytes = 4096;
constexpr uint32_t kSharedMaxSlots = 512;

struct SharedHeader {
  std::atomic<uint32_t> released;  // bumped at every free: what waiting threads sleep on
  std::atomic<uint32_t> sleepers;  // client threads asleep on released
  std::atomic<uint32_t> taken[kSharedMaxSlots];  // 1: the slot's bytes are in use; 0: free
};
static_assert(sizeof(SharedHeader) <= kSharedHeaderBytes, "the header fits its page");

// A mapping of a session's shared memory, of `slots` slots of slot_bytes after the header.
class SharedRegion {
 public:
  SharedRegion() = default;
  ~SharedRegion();
  SharedRegion(const SharedRegion &) = delete;
  SharedRegion &operator=(const SharedRegion &) = delete;

  // The client: makes the memfd (sealed against shrinking and growing) and maps it. "" or why not.
  std::string create(uint64_t slot_bytes, uint32_t slots);
  // The daemon: maps fd (which it keeps) after checking it against the layout the client stated:
  // a memfd of at least that size, sealed against shrinking. "" or why not.
  std::string adopt(int fd, uint64_t bytes, uint64_t slot_bytes, uint32_t slots);

  int fd() const { return fd_; }
  uint64_t bytes() const { return kSharedHeaderBytes + slot_bytes_ * slots_; }
  uint64_t slot_bytes() const { return slot_bytes_; }
  uint32_t slots() const { return slots_; }
  uint8_t *slot(uint32_t k) const { return base_ + kSharedHeaderBytes + k * slot_bytes_; }
  // Which slot address lies in, or -1.
  long slot_of(const void *address) const;

  // The client: a free slot, marked taken; -1 if none is free now.
  long try_take();
  // Marks slot k free and wakes the threads that wait for one.
  void release(uint32_t k);
  // The client: sleeps until a slot may have been freed since `seen` (released's value before the
  // last try_take), at most timeout_ms.
  void wait_released(uint32_t seen, int timeout_ms);
  uint32_t released() const { return header()->released.load(std::memory_order_acquire); }

 private:
  SharedHeader *header() const { return reinterpret_cast<SharedHeader *>(base_); }
  std::string map();

  int fd_ = -1;
  uint8_t *base_ = nullptr;
  uint64_t slot_bytes_ = 0;
  uint32_t slots_ = 0;
};

}  // namespace fedcl
