// The TLS client's socket side (runtime/tls_pipe.h) on a socket pair: reads ahead only as far as
// allowed and in order, passes silence and shutdown on, and sends handed-off pieces in order.
#include "tls_pipe.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>

namespace {

using fedcl::SocketReader;
using fedcl::SocketWriter;

struct SocketPair {
  int ends[2];
  SocketPair() { EXPECT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, ends)); }
  ~SocketPair() {
    close(ends[0]);
    close(ends[1]);
  }
};

std::vector<uint8_t> pattern(size_t size) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; i++) bytes[i] = uint8_t(i * 7 + (i >> 12));
  return bytes;
}

void send_all(int fd, const std::vector<uint8_t> &bytes) {
  for (size_t done = 0; done < bytes.size();) {
    ssize_t sent = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    ASSERT_GT(sent, 0);
    done += sent;
  }
}

void limit_silence(int fd, int ms) {
  timeval limit{0, ms * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
}

}  // namespace

TEST(TlsPipe, ReadAheadStopsWhereAllowedAndKeepsTheOrder) {
  SocketPair pair;
  const size_t allowed = 3 * 1024 * 1024 + 17, rest = 100;
  auto bytes = pattern(allowed + rest);
  std::thread peer([&] { send_all(pair.ends[1], bytes); });
  SocketReader reader(pair.ends[0]);
  reader.read_ahead(allowed);
  std::vector<uint8_t> got;
  while (got.size() < allowed) {
    const uint8_t *at;
    ssize_t n = reader.next(&at, true);
    ASSERT_GT(n, 0);
    got.insert(got.end(), at, at + n);
  }
  EXPECT_EQ(allowed, got.size());  // no read went past the allowed bytes
  EXPECT_EQ(allowed, reader.given());
  const uint8_t *at;
  ssize_t n = reader.next(&at, true);  // the rest, read directly
  ASSERT_EQ(ssize_t(rest), n);
  got.insert(got.end(), at, at + n);
  EXPECT_TRUE(got == bytes);
  peer.join();
}

TEST(TlsPipe, ReadAheadPassesSilenceOnThenReadsDirectly) {
  SocketPair pair;
  limit_silence(pair.ends[0], 100);
  auto bytes = pattern(1000);
  send_all(pair.ends[1], bytes);
  SocketReader reader(pair.ends[0]);
  reader.read_ahead(1 << 20);
  const uint8_t *at;
  ASSERT_EQ(1000, reader.next(&at, true));
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), at));
  EXPECT_EQ(-1, reader.next(&at, false));  // nothing yet: at once
  EXPECT_EQ(EAGAIN, errno);
  EXPECT_EQ(-1, reader.next(&at, true));  // the silence limit, from the reading thread
  EXPECT_EQ(EAGAIN, errno);
  send_all(pair.ends[1], bytes);
  ASSERT_EQ(1000, reader.next(&at, true));  // directly: the thread stopped at the silence
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), at));
}

TEST(TlsPipe, ShutdownEndsAReadAheadWait) {
  SocketPair pair;
  SocketReader reader(pair.ends[0]);
  reader.read_ahead(1 << 20);
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    shutdown(pair.ends[0], SHUT_RDWR);
  });
  const uint8_t *at;
  EXPECT_EQ(0, reader.next(&at, true));
  closer.join();
}

TEST(TlsPipe, WriterSendsHandedPiecesInOrderAndReportsAFailure) {
  SocketPair pair;
  auto bytes = pattern(5 * 300 * 1024 + 3);
  std::vector<uint8_t> got(bytes.size());
  std::thread peer([&] {
    for (size_t done = 0; done < got.size();) {
      ssize_t n = recv(pair.ends[1], got.data() + done, got.size() - done, 0);
      ASSERT_GT(n, 0);
      done += n;
    }
  });
  SocketWriter writer(pair.ends[0]);
  for (size_t done = 0; done < bytes.size();) {
    size_t piece = std::min<size_t>(300 * 1024, bytes.size() - done);
    writer.pending().assign(bytes.begin() + done, bytes.begin() + done + piece);
    EXPECT_EQ("", writer.post(true));
    done += piece;
  }
  EXPECT_EQ("", writer.finish());
  peer.join();
  EXPECT_TRUE(got == bytes);
  shutdown(pair.ends[1], SHUT_RDWR);
  std::string why;
  for (int i = 0; i < 8 && why.empty(); i++) {
    writer.pending().assign(bytes.begin(), bytes.begin() + 300 * 1024);
    why = writer.post(true);
  }
  EXPECT_NE("", writer.finish() + why);
  EXPECT_EQ("", writer.finish());  // told once
}
