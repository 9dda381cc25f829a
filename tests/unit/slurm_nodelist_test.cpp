// Slurm host lists (SLURM_JOB_NODELIST) and their use in hosts.conf and FEDCL_HOSTS.
#include <gtest/gtest.h>

#include <cstdlib>

#include "hosts.h"
#include "slurm_nodelist.h"

using fedcl::slurm_expand_nodelist;

namespace {

std::vector<std::string> expand(const std::string &text) {
  std::vector<std::string> hosts;
  std::string why = slurm_expand_nodelist(text, &hosts);
  EXPECT_EQ("", why) << text;
  return hosts;
}

std::string refusal(const std::string &text) {
  std::vector<std::string> hosts = {"kept"};
  std::string why = slurm_expand_nodelist(text, &hosts);
  EXPECT_EQ(std::vector<std::string>{"kept"}, hosts) << text;
  return why;
}

}  // namespace

TEST(SlurmNodelist, PlainNamesAndCommas) {
  EXPECT_EQ((std::vector<std::string>{"login1"}), expand("login1"));
  EXPECT_EQ((std::vector<std::string>{"a", "b.example.org", "c-1"}), expand("a,b.example.org,c-1"));
}

TEST(SlurmNodelist, RangesKeepTheirZeroPadding) {
  EXPECT_EQ((std::vector<std::string>{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07"}), expand("gpu[01-04,07]"));
  EXPECT_EQ((std::vector<std::string>{"n8", "n9", "n10"}), expand("n[8-10]"));
  EXPECT_EQ((std::vector<std::string>{"n098", "n099", "n100"}), expand("n[098-100]"));
  EXPECT_EQ((std::vector<std::string>{"x5"}), expand("x[5]"));
}

TEST(SlurmNodelist, SeveralItemsAndBracketsInOneName) {
  EXPECT_EQ((std::vector<std::string>{"gpu01", "gpu02", "cpu7", "login"}), expand("gpu[01-02],cpu[7],login"));
  EXPECT_EQ((std::vector<std::string>{"r1-n1", "r1-n2", "r2-n1", "r2-n2"}), expand("r[1-2]-n[1-2]"));
  EXPECT_EQ((std::vector<std::string>{"a1b", "a2b"}), expand("a[1-2]b"));
}

TEST(SlurmNodelist, MalformedListsAreRefusedWithAReason) {
  EXPECT_NE(std::string::npos, refusal("gpu[01-04").find("without its ']'"));
  EXPECT_NE(std::string::npos, refusal("gpu01]").find("without its '['"));
  EXPECT_NE(std::string::npos, refusal("gpu[]").find("empty []"));
  EXPECT_NE(std::string::npos, refusal("gpu[4-1]").find("runs backwards"));
  EXPECT_NE(std::string::npos, refusal("gpu[a-b]").find("is not N or N-M"));
  EXPECT_NE(std::string::npos, refusal("gpu[1-]").find("is not N or N-M"));
  EXPECT_NE(std::string::npos, refusal("gpu[1,,2]").find("is not N or N-M"));
  EXPECT_NE(std::string::npos, refusal("a,,b").find("empty host name"));
  EXPECT_NE(std::string::npos, refusal("n[0-99999999]").find("too long"));
  EXPECT_NE(std::string::npos, refusal("a[0-2000]b[0-2000]").find("more than"));
  EXPECT_NE(std::string::npos, refusal("gpu 01").find("blank"));
}

TEST(HostsSlurm, HostListEntriesInTheFileAndTheVariable) {
  auto list = fedcl::hosts_parse("gpu[01-02]:7071\nnode[8-9]\n", "hosts.conf");
  EXPECT_EQ((std::vector<std::string>{"gpu01:7071", "gpu02:7071", "node8:7070", "node9:7070"}), list.endpoints);
  EXPECT_TRUE(list.problems.empty());
  auto from_variable = fedcl::hosts_parse_list("gpu[01-02,05]:7000,login");
  EXPECT_EQ((std::vector<std::string>{"gpu01:7000", "gpu02:7000", "gpu05:7000", "login:7070"}), from_variable.endpoints);
}

// Each TEST runs in its own process, so the environment is the test's own.
TEST(HostsSlurm, SlurmJobEntryTakesTheJobsNodes) {
  setenv("SLURM_JOB_NODELIST", "gpu[01-03,07]", 1);
  auto list = fedcl::hosts_parse("# from the job\nslurm-job:7171\nextra\n", "hosts.conf");
  EXPECT_EQ((std::vector<std::string>{"gpu01:7171", "gpu02:7171", "gpu03:7171", "gpu07:7171", "extra:7070"}),
            list.endpoints);
  EXPECT_TRUE(list.problems.empty());
  EXPECT_EQ((std::vector<std::string>{"gpu01:7070", "gpu02:7070", "gpu03:7070", "gpu07:7070"}),
            fedcl::hosts_parse_list("slurm-job").endpoints);
}

TEST(HostsSlurm, SlurmJobOutsideAJobAddsNothingAndSaysSo) {
  unsetenv("SLURM_JOB_NODELIST");
  auto list = fedcl::hosts_parse("slurm-job\n", "hosts.conf");
  EXPECT_TRUE(list.endpoints.empty());
  EXPECT_TRUE(list.problems.empty());
  ASSERT_EQ(1u, list.notes.size());
  EXPECT_NE(std::string::npos, list.notes[0].find("not inside a Slurm job"));
}

TEST(HostsSlurm, ABadJobNodelistIsAProblemOfTheLine) {
  setenv("SLURM_JOB_NODELIST", "gpu[01-", 1);
  auto list = fedcl::hosts_parse("\nslurm-job\n", "hosts.conf");
  EXPECT_TRUE(list.endpoints.empty());
  ASSERT_EQ(1u, list.problems.size());
  EXPECT_EQ(0u, list.problems[0].find("hosts.conf:2: ")) << list.problems[0];
  EXPECT_NE(std::string::npos, list.problems[0].find("SLURM_JOB_NODELIST 'gpu[01-'")) << list.problems[0];
}
