#include "shared_region.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>

namespace fedcl {

namespace {

std::string why(const char *what) { return std::string(what) + ": " + std::strerror(errno); }

// Shared (not private) futex calls: the two ends are different processes.
void futex_wake_all(std::atomic<uint32_t> *word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void futex_wait(std::atomic<uint32_t> *word, uint32_t seen, int timeout_ms) {
  timespec limit{timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT, seen, &limit, nullptr, 0);
}

}  // namespace

SharedRegion::~SharedRegion() {
  if (base_) munmap(base_, bytes());
  if (fd_ >= 0) close(fd_);
}

std::string SharedRegion::map() {
  void *at = mmap(nullptr, bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (at == MAP_FAILED) return why("mmap of the shared memory");
  base_ = static_cast<uint8_t *>(at);
  return {};
}

std::string SharedRegion::create(uint64_t slot_bytes, uint32_t slots) {
  slot_bytes_ = slot_bytes;
  slots_ = slots;
  fd_ = memfd_create("fedcl-session", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd_ < 0) return why("memfd_create");
  if (ftruncate(fd_, off_t(bytes())) != 0) return why("ftruncate of the shared memory");
  if (fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) return why("sealing the shared memory");
  return map();
}

std::string SharedRegion::adopt(int fd, uint64_t bytes, uint64_t slot_bytes, uint32_t slots) {
  fd_ = fd;
  if (slots == 0 || slots > kSharedMaxSlots) return "a shared memory of " + std::to_string(slots) + " slots (1 to " +
                                                      std::to_string(kSharedMaxSlots) + ")";
  if (slot_bytes == 0 || slot_bytes % 4096 || slot_bytes > (uint64_t(1) << 30))
    return "shared memory slots of " + std::to_string(slot_bytes) + " bytes (whole pages, at most 1 GiB)";
  slot_bytes_ = slot_bytes;
  slots_ = slots;
  if (bytes != this->bytes()) return "a shared memory of " + std::to_string(bytes) + " bytes for its slots' " +
                                     std::to_string(this->bytes());
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) return "the descriptor passed is not a memfd that takes seals";
  if (!(seals & F_SEAL_SHRINK)) return "the shared memory is not sealed against shrinking";
  struct stat st {};
  if (fstat(fd, &st) != 0) return why("fstat of the shared memory");
  if (uint64_t(st.st_size) < bytes) return "the shared memory is " + std::to_string(st.st_size) + " bytes, not " +
                                           std::to_string(bytes);
  return map();
}

long SharedRegion::slot_of(const void *address) const {
  auto *at = static_cast<const uint8_t *>(address);
  if (!base_ || at < slot(0) || at >= slot(0) + slot_bytes_ * slots_) return -1;
  return long((at - slot(0)) / slot_bytes_);
}

long SharedRegion::try_take() {
  for (uint32_t k = 0; k < slots_; k++) {
    uint32_t free = 0;
    if (header()->taken[k].load(std::memory_order_relaxed) == 0 &&
        header()->taken[k].compare_exchange_strong(free, 1, std::memory_order_acquire))
      return long(k);
  }
  return -1;
}

void SharedRegion::release(uint32_t k) {
  header()->taken[k].store(0, std::memory_order_release);
  header()->released.fetch_add(1, std::memory_order_acq_rel);
  if (header()->sleepers.load(std::memory_order_acquire)) futex_wake_all(&header()->released);
}

void SharedRegion::wait_released(uint32_t seen, int timeout_ms) {
  header()->sleepers.fetch_add(1, std::memory_order_acq_rel);
  futex_wait(&header()->released, seen, timeout_ms);
  header()->sleepers.fetch_sub(1, std::memory_order_acq_rel);
}

}  // namespace fedcl
