#include "stream_transport.h"

#include "session.h"

namespace fedcld {

std::string PlainStream::start(Session &, std::function<void()> ready) {
  if (ready) ready();
  return {};
}

void PlainStream::alloc(Session &session, uv_buf_t *buf) { *buf = session.plaintext_buffer(); }

std::string PlainStream::received(Session &session, const uv_buf_t &buf, size_t size) {
  session.plaintext_landed(buf, size);
  return {};
}

}  // namespace fedcld
