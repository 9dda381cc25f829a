// What the client reads from build options: whether launches need uniform work-groups.
#include <gtest/gtest.h>

#include "build_options.h"

using fedcl::build_needs_uniform_work_groups;

TEST(BuildOptions, UniformWorkGroupsByLanguageVersionAndOption) {
  const struct {
    const char *options;
    bool uniform;
  } cases[] = {
      {nullptr, true},
      {"", true},
      {"-DN=4 -cl-fast-relaxed-math", true},
      {"-cl-std=CL1.1", true},
      {"-cl-std=CL1.2", true},
      {"-cl-std=CL2.0", false},
      {"-cl-std=CL3.0", false},
      {"  -cl-std=CL3.0  -DX=1", false},
      {"-cl-std=CLC++", false},
      {"-cl-std=CLC++2021", false},
      {"-cl-std=CL3.0 -cl-uniform-work-group-size", true},
      {"-cl-uniform-work-group-size -cl-std=CL2.0", true},
      {"-cl-std=CL3.0 -cl-std=CL1.2", true},
      {"-cl-std=CL1.2 -cl-std=CL2.0", false},
      {"-DCL_STD=-cl-std=CL2.0", true},
  };
  for (const auto &c : cases)
    EXPECT_EQ(c.uniform, build_needs_uniform_work_groups(c.options)) << (c.options ? c.options : "(null)");
}
