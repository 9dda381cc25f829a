// What the client sends of an application's -I folders (runtime/build_includes.h): the headers the
// source includes, found as a compiler finds them, and the options without those -I.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "build_includes.h"
#include "include_lines.h"

namespace {

struct Folder {
  std::string path;
  explicit Folder(const std::string &name) : path(::testing::TempDir() + name + "-" + std::to_string(getpid())) {
    mkdir(path.c_str(), 0700);
  }
  ~Folder() { std::system(("rm -rf '" + path + "'").c_str()); }
  void write(const std::string &name, const std::string &text) const {
    if (name.find('/') != std::string::npos) mkdir((path + "/" + name.substr(0, name.rfind('/'))).c_str(), 0700);
    std::ofstream(path + "/" + name) << text;
  }
};

std::string contents_of(const std::vector<fedcl::IncludeFile> &files, const std::string &path) {
  for (const auto &file : files)
    if (file.path == path) return file.contents;
  return "(not sent)";
}

}  // namespace

TEST(BuildIncludes, SendsWhatTheSourceIncludesFromEachFolderAndWhatThoseInclude) {
  Folder first("fedcl-inc-a"), second("fedcl-inc-b");
  first.write("top.h", "#include \"sub/inner.h\"\n#include <shared.h>\n");
  first.write("sub/inner.h", "  #  include \"sibling.h\"\n#define INNER 1\n");
  first.write("sub/sibling.h", "#define SIBLING 2\n");
  first.write("unused.h", "#define UNUSED 3\n");
  second.write("shared.h", "#define SHARED 4\n");
  second.write("top.h", "shadowed by the first folder's\n");
  auto includes = fedcl::build_includes("-DX=1 -I " + first.path + " -cl-std=CL1.2 -I" + second.path + " -I /nonexistent/inc",
                                        "#include <top.h>\n#include \"missing.h\"\nkernel void k() {}\n");
  EXPECT_EQ("-DX=1 -cl-std=CL1.2 -I /nonexistent/inc", includes.options);
  ASSERT_EQ(2u, includes.folders.size());
  EXPECT_EQ(3u, includes.folders[0].size());
  EXPECT_EQ("#define SIBLING 2\n", contents_of(includes.folders[0], "sub/sibling.h"));
  EXPECT_EQ("(not sent)", contents_of(includes.folders[0], "unused.h"));
  ASSERT_EQ(1u, includes.folders[1].size());
  EXPECT_EQ("#define SHARED 4\n", contents_of(includes.folders[1], "shared.h"));
}

TEST(BuildIncludes, NoFolderHereLeavesTheOptionsAsTheyAre) {
  auto includes = fedcl::build_includes("-I /nonexistent/a -DX=1", "#include <a.h>\n");
  EXPECT_EQ("-I /nonexistent/a -DX=1", includes.options);
  EXPECT_TRUE(includes.folders.empty());
  EXPECT_EQ("", fedcl::build_includes("", "#include <a.h>\n").options);
}

TEST(BuildIncludes, NamesThatClimbOutOfTheirFolderAreNotSent) {
  Folder folder("fedcl-inc-c");
  folder.write("a.h", "#include \"../outside.h\"\n");
  auto includes = fedcl::build_includes("-I" + folder.path, "#include \"a.h\"\n#include </etc/passwd>\n");
  ASSERT_EQ(1u, includes.folders.size());
  ASSERT_EQ(1u, includes.folders[0].size());
  EXPECT_EQ("a.h", includes.folders[0][0].path);
}

TEST(BuildIncludes, AbsoluteIncludesAreSentWithWhatTheyIncludeBesideThem) {
  Folder folder("fedcl-inc-d");
  folder.write("lib/top.h", "#include \"inner.h\"\n#include <angled.h>\n#include \"" + folder.path + "/other/abs.h\"\n");
  folder.write("lib/inner.h", "#define INNER 1\n");
  folder.write("other/abs.h", "#define ABS 2\n");
  auto headers = fedcl::absolute_includes("#include \"" + folder.path + "/lib/./top.h\"\n#include \"relative.h\"\n"
                                          "#include \"/nonexistent/x.h\"\nkernel void k() {}\n");
  ASSERT_EQ(3u, headers.size());
  EXPECT_EQ("#define INNER 1\n", contents_of(headers, folder.path + "/lib/inner.h"));
  EXPECT_EQ("#define ABS 2\n", contents_of(headers, folder.path + "/other/abs.h"));
  EXPECT_NE("(not sent)", contents_of(headers, folder.path + "/lib/top.h"));  // folded: no "/./"
  EXPECT_TRUE(fedcl::absolute_includes("#include <" + folder.path + "/lib/inner.h>\n").empty());
}

TEST(IncludeLines, FindsEachIncludeWhereItsNameStartsAndFoldsPaths) {
  std::string text = "#include \"a.h\"\n  # include <b/c.h>\nint x; // #include \"no.h\"\n#include NAME\n#define Y\n";
  auto lines = fedcl::include_lines(text);
  ASSERT_EQ(2u, lines.size());
  EXPECT_EQ("a.h", lines[0].name);
  EXPECT_TRUE(lines[0].quoted);
  EXPECT_EQ("a.h", text.substr(lines[0].at, 3));
  EXPECT_EQ("b/c.h", lines[1].name);
  EXPECT_FALSE(lines[1].quoted);
  EXPECT_EQ("b/c.h", text.substr(lines[1].at, 5));
  EXPECT_EQ("/a/c.h", fedcl::include_path_folded("/a/./b/../c.h"));
  EXPECT_EQ("a/c.h", fedcl::include_path_folded("a//b/../c.h"));
  EXPECT_EQ("", fedcl::include_path_folded("/../etc/passwd"));
  EXPECT_EQ("", fedcl::include_path_folded("/"));
}
