// Which files of the node fedcld serves: only those under its --file-root.
#include "node_paths.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>

using fedcld::node_file_path;

namespace {

struct NodePaths : ::testing::Test {
  std::string base, root, outside;
  void SetUp() override {
    char resolved[PATH_MAX];
    ASSERT_NE(nullptr, realpath(::testing::TempDir().c_str(), resolved));
    base = std::string(resolved) + "/fedcl_node_paths_" + std::to_string(getpid());
    root = base + "/root";
    outside = base + "/outside";
    for (const std::string &dir : {base, root, root + "/sub", outside}) ASSERT_EQ(0, mkdir(dir.c_str(), 0755));
    std::ofstream(root + "/sub/data.bin") << "x";
    std::ofstream(outside + "/secret.bin") << "y";
    ASSERT_EQ(0, symlink((outside + "/secret.bin").c_str(), (root + "/to_secret").c_str()));
    ASSERT_EQ(0, symlink(outside.c_str(), (root + "/to_outside").c_str()));
    ASSERT_EQ(0, symlink((root + "/sub").c_str(), (root + "/to_sub").c_str()));
  }
  void TearDown() override { std::system(("rm -rf '" + base + "'").c_str()); }
  std::string resolve(const std::string &path, bool for_writing, std::string *error) {
    return node_file_path(root, path, for_writing, error);
  }
};

}  // namespace

TEST_F(NodePaths, PathsInsideTheRootAreServed) {
  std::string error;
  EXPECT_EQ(root + "/sub/data.bin", resolve("sub/data.bin", false, &error)) << error;
  EXPECT_EQ(root + "/sub/data.bin", resolve(root + "/sub/data.bin", false, &error)) << error;
  EXPECT_EQ(root + "/sub/new.bin", resolve("sub/new.bin", true, &error)) << error;
  // A link that stays inside the root is fine.
  EXPECT_EQ(root + "/sub/data.bin", resolve("to_sub/data.bin", false, &error)) << error;
}

TEST_F(NodePaths, PathsThatLeadOutAreRefusedWithAReason) {
  struct Case {
    std::string path;
    bool for_writing;
    const char *reason;
  } cases[] = {
      {"../outside/secret.bin", false, "'..'"},
      {"sub/../../outside/secret.bin", true, "'..'"},
      {outside + "/secret.bin", false, "outside the file root"},
      {"/etc/passwd", false, "outside the file root"},
      {root, false, "outside the file root"},
      {"to_secret", false, "symbolic link"},
      {"to_outside/secret.bin", false, "symbolic link"},
      {"to_outside/new.bin", true, "symbolic link"},
      {"sub/", true, "names a directory"},
      {"missing/file.bin", true, "no directory"},
      {"", false, "empty path"},
  };
  for (const Case &c : cases) {
    std::string error;
    EXPECT_EQ("", resolve(c.path, c.for_writing, &error)) << c.path;
    EXPECT_NE(std::string::npos, error.find(c.reason)) << c.path << ": " << error;
  }
}

TEST_F(NodePaths, WithoutARootNothingIsServed) {
  std::string error;
  EXPECT_EQ("", node_file_path("", root + "/sub/data.bin", false, &error));
  EXPECT_NE(std::string::npos, error.find("--file-root")) << error;
}
