// The bytes of a memory object that a command reads or writes, so that only those move between
// daemons (runtime/coherence.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fedcl {

struct MemSpan {
  size_t offset = 0;            // from the start of the object the command names (a sub-buffer's own)
  size_t size = SIZE_MAX;       // to its end
  bool overwrites = false;      // the command replaces every byte of the span: its old contents never move

  static MemSpan whole(bool overwrites = false) { return {0, SIZE_MAX, overwrites}; }
  static MemSpan read(size_t offset, size_t size) { return {offset, size, false}; }
  static MemSpan written(size_t offset, size_t size) { return {offset, size, true}; }
};

}  // namespace fedcl
