// Whole-buffer socket I/O for the raw link measurements (bench_link.cpp, linkprobe.cpp).
#pragma once

#include <cstddef>

namespace bench {

// Sends or receives exactly size bytes; false if the connection ends or fails first.
bool send_all(int fd, const void *data, size_t size);
bool recv_all(int fd, void *data, size_t size);
// TCP_NODELAY: small messages leave at once.
void set_nodelay(int fd);

}  // namespace bench
