// What fedcld's main process spends on strangers (bridge-daemon/handshake_limits.h, stranger_log.h):
// the caps on connections that have not proved themselves, which close the oldest to make room,
// and the log's one line per address and interval.
#include <gtest/gtest.h>

#include "handshake_limits.h"
#include "server.h"
#include "stranger_log.h"

using fedcld::HandshakeLimits;
using fedcld::StrangerEnd;
using fedcld::StrangerLog;

TEST(HandshakeLimits, PastAnAddressesCapItsOldestGoesAndPastTheTotalTheOldestOfAll) {
  HandshakeLimits limits({4, 2, 0});
  EXPECT_TRUE(limits.admit(1, "10.0.0.1").empty());
  EXPECT_TRUE(limits.admit(2, "10.0.0.2").empty());
  EXPECT_TRUE(limits.admit(3, "10.0.0.1").empty());
  // A third from 10.0.0.1: its own oldest goes, not 10.0.0.2's older one.
  EXPECT_EQ(std::vector<uint64_t>{1}, limits.admit(4, "10.0.0.1"));
  EXPECT_EQ(3u, limits.count());
  EXPECT_TRUE(limits.admit(5, "10.0.0.3").empty());
  // Full: the oldest of all goes (10.0.0.2's), never the one just come.
  EXPECT_EQ(std::vector<uint64_t>{2}, limits.admit(6, "10.0.0.4"));
  EXPECT_EQ(4u, limits.count());
  // One that proved itself (or closed) leaves room, and is never named again.
  limits.leave(3);
  limits.leave(3);
  limits.leave(99);
  EXPECT_TRUE(limits.admit(7, "10.0.0.5").empty());
  EXPECT_EQ(std::vector<uint64_t>{4}, limits.admit(8, "10.0.0.6"));
  for (uint64_t n : {5, 6, 7, 8}) limits.leave(n);
  EXPECT_EQ(0u, limits.count());
  EXPECT_EQ(0u, limits.addresses());
}

// An idle flood's connections never speak; an honest client's Hello comes within a round trip.
TEST(HandshakeLimits, ThoseThatSpokeAreClosedOnlyAfterEveryOneThatDidNot) {
  HandshakeLimits limits({3, 3, 0});
  EXPECT_TRUE(limits.admit(1, "10.0.0.1").empty());  // an honest client, which speaks
  EXPECT_TRUE(limits.admit(2, "10.0.0.2").empty());
  limits.spoke(1);
  limits.spoke(1);
  EXPECT_TRUE(limits.admit(3, "10.0.0.2").empty());
  EXPECT_EQ(std::vector<uint64_t>{2}, limits.admit(4, "10.0.0.2"));
  EXPECT_EQ(std::vector<uint64_t>{3}, limits.admit(5, "10.0.0.2"));
  limits.spoke(4);
  limits.spoke(5);
  // Everyone spoke: the oldest that did goes.
  EXPECT_EQ(std::vector<uint64_t>{1}, limits.admit(6, "10.0.0.2"));
  EXPECT_EQ(std::vector<uint64_t>{6}, limits.admit(7, "10.0.0.2"));  // 6 never spoke
  limits.leave(4);
  limits.leave(5);
  limits.leave(7);
  EXPECT_EQ(0u, limits.count());
  EXPECT_EQ(0u, limits.addresses());
}

TEST(HandshakeLimits, DefaultsLeaveRoomForTheSessionsWithinTheOpenFileLimit) {
  fedcld::ServerOptions options;
  options.max_sessions = 8;
  options.spare_workers = 1;
  fedcld::HandshakeCaps caps = fedcld::handshake_caps(options, 512);
  EXPECT_GT(caps.reserved, 2 * options.max_sessions);
  EXPECT_EQ(512 - caps.reserved, caps.total);
  EXPECT_EQ(64u, caps.per_address);
  // A large limit: what 64 MiB holds (a TLS stranger costs more); per address, the sessions.
  options.max_sessions = 256;
  caps = fedcld::handshake_caps(options, 524288);
  EXPECT_EQ(16384u, caps.total);
  EXPECT_EQ(256u, caps.per_address);
  options.tls = true;
  EXPECT_EQ(1024u, fedcld::handshake_caps(options, 524288).total);
  // A limit too low for the sessions still takes a few handshakes; the options win over all of it.
  EXPECT_EQ(fedcld::kMinHandshakes, fedcld::handshake_caps(options, 256).total);
  options.max_handshakes = 100;
  options.max_handshakes_per_address = 7;
  caps = fedcld::handshake_caps(options, 256);
  EXPECT_EQ(100u, caps.total);
  EXPECT_EQ(7u, caps.per_address);
}

TEST(HandshakeLimits, AnIpv6AddressCountsByItsSlash64) {
  EXPECT_EQ("2001:db8:1:2::/64", fedcld::address_key("[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:5000"));
  EXPECT_EQ(fedcld::address_key("[2001:db8:1:2::1]:1"), fedcld::address_key("[2001:db8:1:2:ffff::9]:2"));
  EXPECT_EQ("192.0.2.7", fedcld::address_key("192.0.2.7:4242"));
}

TEST(StrangerLog, OneLineInFullPerAddressAndIntervalThenACountByKind) {
  StrangerLog log;
  uint64_t now = 1000000;
  EXPECT_TRUE(log.note("10.0.0.1", StrangerEnd::tls, now));
  for (int i = 0; i < 500; i++) EXPECT_FALSE(log.note("10.0.0.1", StrangerEnd::tls, now + i));
  EXPECT_FALSE(log.note("10.0.0.1", StrangerEnd::over_cap, now + 600));
  EXPECT_TRUE(log.note("10.0.0.2", StrangerEnd::gone, now + 700));  // another address: its own line
  EXPECT_TRUE(log.ended(now + StrangerLog::kIntervalMs - 1).empty());
  auto lines = log.ended(now + StrangerLog::kIntervalMs);
  ASSERT_EQ(1u, lines.size()) << "10.0.0.2 had nothing beyond its first line";
  EXPECT_EQ(fedcld::LogLevel::warn, lines[0].level);
  EXPECT_NE(std::string::npos, lines[0].text.find("10.0.0.1: 501 more connections ended without a session")) << lines[0].text;
  EXPECT_NE(std::string::npos, lines[0].text.find("500 TLS handshakes failed, 1 closed to make room")) << lines[0].text;
  // The next interval starts with a line in full again; what is left is said when all end.
  EXPECT_TRUE(log.note("10.0.0.1", StrangerEnd::deadline, now + StrangerLog::kIntervalMs + 1));
  EXPECT_FALSE(log.note("10.0.0.1", StrangerEnd::deadline, now + StrangerLog::kIntervalMs + 2));
  lines = log.ended(now + StrangerLog::kIntervalMs + 3, true);
  ASSERT_EQ(1u, lines.size());
  EXPECT_EQ(fedcld::LogLevel::info, lines[0].level);
  EXPECT_EQ(0u, log.addresses());
}

TEST(StrangerLog, AFloodFromManyAddressesIsCountedTogetherPastTheFollowedOnes) {
  StrangerLog log;
  uint64_t now = 5000;
  size_t full = 0;
  for (size_t i = 0; i < StrangerLog::kMaxAddresses + 1000; i++)
    full += log.note("10." + std::to_string(i >> 16) + "." + std::to_string((i >> 8) & 255) + "." + std::to_string(i & 255),
                     StrangerEnd::frame, now);
  EXPECT_EQ(StrangerLog::kMaxAddresses, full);
  EXPECT_LE(log.addresses(), StrangerLog::kMaxAddresses + 1);
  auto lines = log.ended(now + StrangerLog::kIntervalMs);
  ASSERT_EQ(1u, lines.size());
  EXPECT_NE(std::string::npos, lines[0].text.find("other addresses: 1000 more")) << lines[0].text;
}
