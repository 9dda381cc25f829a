#include "kernel_names.h"

#include <gtest/gtest.h>

using fedcld::longest_identifier;
using fedcld::scan_kernel_names;

TEST(KernelNames, EveryWayOfDeclaringAKernel) {
  const char *source = R"CLC(
// kernel void in_a_comment(int x) {}
/* __kernel void in_a_block_comment() {} */
constant char text[] = "kernel void in_a_string()";
int helper(int x) { return x; }
kernel void plain(global int *x) { x[0] = helper(1); }
__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void attributed(global float *y) {}
void kernel qualifier_after_type() {}
__kernel void __attribute__((vec_type_hint(float4))) attribute_after_type(int v) {}
kernel void prototype_only(int v);
)CLC";
  std::vector<std::string> expected = {"plain", "attributed", "qualifier_after_type", "attribute_after_type"};
  EXPECT_EQ(expected, scan_kernel_names(source));
}

TEST(KernelNames, LongestIdentifierIgnoresCommentsAndStrings) {
  std::string long_name(300, 'n');
  EXPECT_EQ(300u, longest_identifier("kernel void " + long_name + "() {}"));
  EXPECT_EQ(6u, longest_identifier("// " + long_name + "\nkernel void short1() { printf(\"" + long_name + "\"); }"));
  EXPECT_EQ(0u, longest_identifier("/* unterminated " + long_name));
}

TEST(KernelNames, WhichPointerParametersPointToConstData) {
  const char *source = R"CLC(
kernel void k(global const float *in, const global float *in2, global float *const out, constant int *table,
              __global float *plain, const int n, read_only image2d_t image, local const float *scratch) {}
kernel void none(void) {}
)CLC";
  std::vector<fedcld::KernelText> kernels = fedcld::scan_kernels(source);
  ASSERT_EQ(2u, kernels.size());
  EXPECT_EQ("k", kernels[0].name);
  EXPECT_EQ((std::vector<bool>{true, true, false, true, false, false, false, true}), kernels[0].const_targets);
  EXPECT_TRUE(kernels[1].const_targets.empty());
}
