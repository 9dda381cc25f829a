// Which files of the node fedcld serves, and how they are opened: beneath the session's folder,
// never through a symbolic link (openat2, and the component-by-component walk of kernels without
// it), new files 0600 and folders 0700 whatever the umask, a folder per safe user name.
#include "node_paths.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>

namespace {

using Opener = std::function<int(int, const std::string &, int, mode_t)>;

struct Resolver {
  const char *name;
  Opener open;
};

const Resolver kResolvers[] = {{"openat2", fedcld::node_open_beneath}, {"walk", fedcld::node_open_walk}};

std::string contents(int fd) {
  char bytes[64];
  ssize_t got = pread(fd, bytes, sizeof bytes, 0);
  return got > 0 ? std::string(bytes, size_t(got)) : std::string();
}

mode_t mode_of(const std::string &path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

// The umask, for the scope.
struct ScopedUmask {
  explicit ScopedUmask(mode_t mask) : before(umask(mask)) {}
  ~ScopedUmask() { umask(before); }
  mode_t before;
};

struct NodePaths : ::testing::Test {
  std::string base, root, outside;
  int root_fd = -1;
  void SetUp() override {
    char resolved[PATH_MAX];
    ASSERT_NE(nullptr, realpath(::testing::TempDir().c_str(), resolved));
    base = std::string(resolved) + "/fedcl_node_paths_" + std::to_string(getpid());
    root = base + "/root";
    outside = base + "/outside";
    for (const std::string &dir : {base, root, root + "/sub", outside}) ASSERT_EQ(0, mkdir(dir.c_str(), 0755));
    std::ofstream(root + "/sub/data.bin") << "inside";
    std::ofstream(outside + "/secret.bin") << "outside";
    ASSERT_EQ(0, symlink((outside + "/secret.bin").c_str(), (root + "/to_secret").c_str()));
    ASSERT_EQ(0, symlink(outside.c_str(), (root + "/to_outside").c_str()));
    ASSERT_EQ(0, symlink((root + "/sub").c_str(), (root + "/to_sub").c_str()));
    ASSERT_EQ(0, symlink("sub/data.bin", (root + "/relative_link").c_str()));
    root_fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(root_fd, 0);
  }
  void TearDown() override {
    close(root_fd);
    std::system(("rm -rf '" + base + "'").c_str());
  }
};

}  // namespace

TEST(NodePathCheck, RelativePathsWithoutDotDotPass) {
  std::string error;
  for (const char *path : {"data.bin", "sub/data.bin", "./sub//data.bin", "..data", "sub/..data/x", "a/.../b"})
    EXPECT_TRUE(fedcld::node_path_check(path, &error)) << path << ": " << error;
}

TEST(NodePathCheck, OtherPathsAreRefusedWithAReason) {
  struct Case {
    std::string path;
    const char *reason;
  } cases[] = {
      {"", "empty path"},
      {"/etc/passwd", "is absolute"},
      {"..", "'..'"},
      {"../x", "'..'"},
      {"sub/../../x", "'..'"},
      {"sub/..", "'..'"},
      {"sub/", "names a directory"},
      {std::string("a\0b", 3), "NUL"},
  };
  for (const Case &c : cases) {
    std::string error;
    EXPECT_FALSE(fedcld::node_path_check(c.path, &error)) << c.path;
    EXPECT_NE(std::string::npos, error.find(c.reason)) << c.path << ": " << error;
  }
}

TEST_F(NodePaths, BothResolversOpenWhatIsBeneathAndFollowNoLink) {
  struct Case {
    std::string path;
    int flags;
    int result;  // 0: opens; else -errno
  } cases[] = {
      {"sub/data.bin", O_RDONLY, 0},
      {"./sub//data.bin", O_RDONLY, 0},
      {"to_secret", O_RDONLY, -ELOOP},
      {"to_outside/secret.bin", O_RDONLY, -ELOOP},
      {"to_outside/new.bin", O_WRONLY | O_CREAT, -ELOOP},
      {"to_sub/data.bin", O_RDONLY, -ELOOP},  // a link that stays inside is not followed either
      {"relative_link", O_RDONLY, -ELOOP},
      {"relative_link", O_WRONLY | O_CREAT | O_EXCL, -EEXIST},
      {"missing/file.bin", O_RDONLY, -ENOENT},
      {"sub/data.bin/x", O_RDONLY, -ENOTDIR},
      {"../outside/secret.bin", O_RDONLY, -EXDEV},
      {outside + "/secret.bin", O_RDONLY, -EXDEV},
  };
  for (const Resolver &resolver : kResolvers) {
    for (const Case &c : cases) {
      int fd = resolver.open(root_fd, c.path, c.flags, 0600);
      if (c.result == 0) {
        EXPECT_GE(fd, 0) << resolver.name << " " << c.path << ": " << std::strerror(-fd);
        if (fd >= 0) {
          EXPECT_EQ("inside", contents(fd)) << resolver.name << " " << c.path;
        }
      } else {
        EXPECT_EQ(c.result, fd) << resolver.name << " " << c.path << ": " << (fd < 0 ? std::strerror(-fd) : "opened");
      }
      if (fd >= 0) close(fd);
    }
  }
  struct stat st;
  EXPECT_NE(0, stat((outside + "/new.bin").c_str(), &st)) << "a refused open created a file outside";
}

// The race, below the daemon: a thread exchanges the directory race with a link to a
// directory outside (renameat2 RENAME_EXCHANGE) while race/secret.bin is opened again and again.
// Each open gives the inside file or ELOOP; the outside one, never.
TEST_F(NodePaths, ALinkSwappedInMidOpenNeverLeadsOutside) {
  ASSERT_EQ(0, mkdir((root + "/race").c_str(), 0755));
  std::ofstream(root + "/race/secret.bin") << "inside";
  ASSERT_EQ(0, symlink(outside.c_str(), (root + "/swap").c_str()));
  std::atomic<bool> stop{false};
  std::atomic<long> swaps{0};
  std::thread swapper([&] {
    while (!stop.load(std::memory_order_relaxed))
      if (renameat2(root_fd, "race", root_fd, "swap", RENAME_EXCHANGE) == 0) swaps++;
  });
  while (swaps.load() == 0) std::this_thread::yield();
  for (const Resolver &resolver : kResolvers) {
    long inside = 0, refused = 0, outside_opened = 0, other = 0;
    for (int i = 0; i < 20000; i++) {
      int fd = resolver.open(root_fd, "race/secret.bin", O_RDONLY, 0);
      if (fd == -ELOOP) {
        refused++;
        continue;
      }
      if (fd < 0) {
        other++;
        continue;
      }
      std::string got = contents(fd);
      close(fd);
      (got == "inside" ? inside : got == "outside" ? outside_opened : other)++;
    }
    std::printf("%s: %ld inside, %ld refused, %ld outside, %ld other\n", resolver.name, inside, refused, outside_opened, other);
    EXPECT_EQ(0, outside_opened) << resolver.name;
    EXPECT_EQ(0, other) << resolver.name;
  }
  stop = true;
  swapper.join();
}

TEST_F(NodePaths, FilesAreOpenedForWritingAsTheyAreOrMade0600WhateverTheUmask) {
  std::string error;
  struct stat st {};
  for (mode_t mask : {mode_t(0), mode_t(022), mode_t(0277)}) {
    ScopedUmask scoped(mask);
    std::string name = "sub/new_" + std::to_string(mask) + ".bin";
    int fd = fedcld::node_file_open(root_fd, name, true, &st, &error);
    ASSERT_GE(fd, 0) << error;
    close(fd);
    EXPECT_EQ(0600, mode_of(root + "/" + name)) << "umask " << std::oct << mask;
  }
  // An existing file keeps its bytes (no truncation) and its mode.
  chmod((root + "/sub/data.bin").c_str(), 0640);
  int fd = fedcld::node_file_open(root_fd, "sub/data.bin", true, &st, &error);
  ASSERT_GE(fd, 0) << error;
  EXPECT_EQ(6, st.st_size);
  close(fd);
  EXPECT_EQ(0640, mode_of(root + "/sub/data.bin"));
}

TEST_F(NodePaths, OnlyRegularFilesAreServedAndAFifoDoesNotBlock) {
  ASSERT_EQ(0, mkfifo((root + "/fifo").c_str(), 0600));
  struct Case {
    const char *path;
    bool for_writing;
    const char *reason;
  } cases[] = {
      {"fifo", false, "not a regular file"},
      {"sub", false, "not a regular file"},
      {"sub", true, "Is a directory"},
      {"to_secret", false, "'to_secret' leads through a symbolic link"},
      {"to_outside/new.bin", true, "'to_outside/new.bin' leads through a symbolic link"},
      {"missing.bin", false, "No such file"},
      {"missing/new.bin", true, "No such file"},
      {"../outside/secret.bin", false, "'..'"},
  };
  for (const Case &c : cases) {
    std::string error;
    struct stat st {};
    int fd = fedcld::node_file_open(root_fd, c.path, c.for_writing, &st, &error);
    EXPECT_EQ(-1, fd) << c.path;
    if (fd >= 0) close(fd);
    EXPECT_NE(std::string::npos, error.find(c.reason)) << c.path << ": " << error;
  }
}

TEST(NodeUserFolders, SafeNamesAreTheirOwnFolderAndOthersAreRefused) {
  std::string error;
  EXPECT_EQ(fedcld::kAnonymousFolder, fedcld::node_user_folder_name("", &error));
  for (const std::string &name : {std::string("alice"), std::string("bob@lab.example"), std::string("j.smith+gpu"),
                                  std::string("7of9"), std::string("a_b-c"), std::string(NAME_MAX, 'x')})
    EXPECT_EQ(name, fedcld::node_user_folder_name(name, &error)) << name << ": " << error;
  for (const std::string &name :
       {std::string("."), std::string(".."), std::string("a/b"), std::string("/"), std::string(".hidden"), std::string("-rf"),
        std::string(fedcld::kAnonymousFolder), std::string("a\nb"), std::string("a b"), std::string("jos\xc3\xa9"),
        std::string("a\0b", 3), std::string(NAME_MAX + 1, 'x')}) {
    error.clear();
    EXPECT_EQ("", fedcld::node_user_folder_name(name, &error)) << name;
    EXPECT_NE(std::string::npos, error.find("cannot name a folder")) << name << ": " << error;
  }
}

TEST_F(NodePaths, AUsersFolderIsMade0700OrUsedAsItIsAndNeverALink) {
  std::string error;
  for (mode_t mask : {mode_t(0), mode_t(0277)}) {
    ScopedUmask scoped(mask);
    std::string name = "user" + std::to_string(mask);
    int fd = fedcld::node_user_folder_open(root_fd, name, {}, &error);
    ASSERT_GE(fd, 0) << error;
    close(fd);
    EXPECT_EQ(0700, mode_of(root + "/" + name)) << "umask " << std::oct << mask;
  }
  // One an administrator prepared stays as it is.
  ASSERT_EQ(0, chmod((root + "/sub").c_str(), 0750));
  int fd = fedcld::node_user_folder_open(root_fd, "sub", {}, &error);
  ASSERT_GE(fd, 0) << error;
  close(fd);
  EXPECT_EQ(0750, mode_of(root + "/sub"));
  for (const char *link : {"to_outside", "to_sub"}) {
    error.clear();
    EXPECT_EQ(-1, fedcld::node_user_folder_open(root_fd, link, {}, &error)) << link;
    EXPECT_NE(std::string::npos, error.find("symbolic link")) << link << ": " << error;
  }
}
