// clinfo, an unmodified OpenCL program, lists fedcl's devices from two daemons.
#include <sstream>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

struct Clinfo : ::testing::Test {
  DaemonProcess first{{"--name", "alpha"}};
  DaemonProcess second{{"--name", "beta"}};
  void SetUp() override { set_hosts(hosts_list({&first, &second})); }
};

// The values of the lines "<indent><key>   value" of a clinfo report, in order.
std::vector<std::string> values(const std::string &report, const std::string &indent, const std::string &key) {
  std::vector<std::string> found;
  std::istringstream lines(report);
  std::string line, prefix = indent + key + " ";
  while (std::getline(lines, line)) {
    if (line.compare(0, prefix.size(), prefix) != 0) continue;
    size_t start = line.find_first_not_of(' ', prefix.size());
    found.push_back(start == std::string::npos ? "" : line.substr(start));
  }
  return found;
}

bool ends_with(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

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
  std::vector<std::string> platforms = values(output, "  ", "Platform Name");
  ASSERT_FALSE(platforms.empty()) << output;
  for (const std::string &platform : platforms) EXPECT_EQ("fedcl", platform);
  EXPECT_EQ(std::vector<std::string>{"2"}, values(output, "", "Number of devices")) << output;
  std::vector<std::string> names = values(output, "  ", "Device Name");
  ASSERT_EQ(2u, names.size()) << output;
  EXPECT_TRUE(ends_with(names[0], " @ alpha")) << names[0];
  EXPECT_TRUE(ends_with(names[1], " @ beta")) << names[1];
  EXPECT_EQ(std::string::npos, output.find("fedcl: warning")) << output;
}
