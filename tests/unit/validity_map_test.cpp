// Which daemons are current on which bytes (runtime/validity_map.h): writes, copies and failed
// copies change only the bytes they name, and segments of one mask merge.
#include "validity_map.h"

#include <gtest/gtest.h>

using fedcl::ConnectionMask;
using fedcl::ValidityMap;

namespace {

constexpr ConnectionMask A = 1, B = 2, C = 4;

// The map as "begin-end:holders ..." over all its bytes.
std::string layout(const ValidityMap &map) {
  std::string out;
  for (const auto &s : map.segments(0, map.size()))
    out += (out.empty() ? "" : " ") + std::to_string(s.begin) + "-" + std::to_string(s.end) + ":" +
           std::to_string(s.holders);
  return out;
}

TEST(ValidityMap, StartsAsOneSegment) {
  ValidityMap map;
  map.reset(100, A);
  EXPECT_EQ("0-100:1", layout(map));
  map.reset(0, A);
  EXPECT_EQ("", layout(map));
}

TEST(ValidityMap, AWriteMakesItsRangeCurrentOnTheWriterAlone) {
  ValidityMap map;
  map.reset(100, A | B);
  map.assign(10, 20, C);
  EXPECT_EQ("0-10:3 10-20:4 20-100:3", layout(map));
  map.assign(0, 10, C);
  EXPECT_EQ("0-20:4 20-100:3", layout(map));
  map.assign(20, 500, C);  // clipped to the object
  EXPECT_EQ("0-100:4", layout(map));
}

TEST(ValidityMap, ACopyAddsItsTargetOverItsRangeOnly) {
  ValidityMap map;
  map.reset(100, 0);
  map.assign(0, 50, A);
  map.assign(50, 100, B);
  map.add(40, 60, C);
  EXPECT_EQ("0-40:1 40-50:5 50-60:6 60-100:2", layout(map));
  map.add(0, 40, C);
  EXPECT_EQ("0-50:5 50-60:6 60-100:2", layout(map));
}

TEST(ValidityMap, SegmentsAreCutAtTheRangeAsked) {
  ValidityMap map;
  map.reset(100, A);
  map.assign(30, 60, B);
  auto segments = map.segments(20, 40);
  ASSERT_EQ(2u, segments.size());
  EXPECT_EQ(20u, segments[0].begin);
  EXPECT_EQ(30u, segments[0].end);
  EXPECT_EQ(A, segments[0].holders);
  EXPECT_EQ(30u, segments[1].begin);
  EXPECT_EQ(40u, segments[1].end);
  EXPECT_EQ(B, segments[1].holders);
  EXPECT_TRUE(map.segments(40, 40).empty());
  EXPECT_TRUE(map.segments(100, 120).empty());
}

TEST(ValidityMap, AFailedCopyKeepsWhatItsTargetAloneHolds) {
  ValidityMap map;
  map.reset(100, A | C);
  map.assign(0, 30, C);
  map.assign(30, 40, A);
  map.drop_where_shared(C);
  EXPECT_EQ("0-30:4 30-100:1", layout(map));
}

TEST(ValidityMap, ManyHalosStayFewSegments) {
  // Three slabs, each written by its daemon, then each daemon's halos copied to its neighbours,
  // a hundred times: the map never grows past the slabs and the halos.
  ValidityMap map;
  map.reset(3000, 0);
  for (int step = 0; step < 100; step++) {
    map.assign(0, 1000, A);
    map.assign(1000, 2000, B);
    map.assign(2000, 3000, C);
    map.add(990, 1000, B);
    map.add(1000, 1010, A);
    map.add(1990, 2000, C);
    map.add(2000, 2010, B);
  }
  EXPECT_EQ("0-990:1 990-1010:3 1010-1990:2 1990-2010:6 2010-3000:4", layout(map));
}

}  // namespace
