// A seed of the fuzz targets that take one connection's bytes: the byte that picks the case (the
// session target: a daemon with a key or without; the handshake target: a client with a key or
// without), then frames.
#pragma once

#include <capnp/message.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "frame.h"

namespace fedcl_fuzz {

struct Seed {
  std::vector<uint8_t> bytes;
  explicit Seed(bool keyed) : bytes{uint8_t(keyed)} {}
  void add(capnp::MallocMessageBuilder &message, fedcl::wire::FrameKind kind = fedcl::wire::FrameKind::REQUEST,
           const std::vector<uint8_t> &payload = {}) {
    fedcl::frame_append(bytes, kind, message, payload.size());
    bytes.insert(bytes.end(), payload.begin(), payload.end());
    bytes.resize(bytes.size() + fedcl::frame_padding(payload.size()));
  }
  void save(const std::string &path) const {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  }
};

}  // namespace fedcl_fuzz
