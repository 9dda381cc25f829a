// clinfo, an unmodified OpenCL program, lists fedcl's devices from two daemons.
#include "cl_harness.h"

using namespace fedcl_test;

namespace {

struct Clinfo : ::testing::Test {
  DaemonProcess first{{"--name", "alpha"}};
  DaemonProcess second{{"--name", "beta"}};
  void SetUp() override { set_hosts(hosts_list({&first, &second})); }
};

}  // namespace

TEST_F(Clinfo, ListsBothDevicesWithTheirNodes) {
  std::string output;
  ASSERT_EQ(0, run_command("clinfo -l", &output)) << output;
  EXPECT_NE(std::string::npos, output.find("Platform #0: fedcl")) << output;
  EXPECT_EQ(std::string::npos, output.find("Platform #1")) << "only fedcl should be visible:\n" << output;
  EXPECT_NE(std::string::npos, output.find("Device #0: ")) << output;
  EXPECT_NE(std::string::npos, output.find("Device #1: ")) << output;
  EXPECT_EQ(std::string::npos, output.find("Device #2")) << output;
  EXPECT_EQ(1u, count_occurrences(output, " @ alpha")) << output;
  EXPECT_EQ(1u, count_occurrences(output, " @ beta")) << output;
}

TEST_F(Clinfo, FullReportQueriesEveryDevice) {
  // The full report asks each device for every parameter clinfo knows; none may break it.
  std::string output;
  ASSERT_EQ(0, run_command("clinfo", &output)) << output;
  EXPECT_NE(std::string::npos, output.find("fedcl")) << output;
  EXPECT_EQ(2u, count_occurrences(output, "Device Name")) << output;
  EXPECT_NE(std::string::npos, output.find(" @ alpha")) << output;
  EXPECT_NE(std::string::npos, output.find(" @ beta")) << output;
  EXPECT_EQ(std::string::npos, output.find("fedcl: warning")) << output;
}
