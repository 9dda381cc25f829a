// What clSetKernelArg checks locally: argument classes and by-value sizes from type names.
#include <gtest/gtest.h>

#include "kernel_args.h"

using fedcl::ArgClass;
using fedcl::kernel_arg_class;
using fedcl::kernel_arg_type_size;
using fedcl::KernelArgDesc;

TEST(KernelArgTypeSize, ScalarsAndVectors) {
  const struct {
    const char *type;
    size_t size;
  } cases[] = {
      {"char", 1},   {"uchar", 1},   {"unsigned char", 1}, {"short", 2},   {"ushort", 2},    {"half", 2},
      {"int", 4},    {"uint", 4},    {"unsigned int", 4},  {"unsigned", 4}, {"float", 4},    {"long", 8},
      {"ulong", 8},  {"double", 8},  {"float2", 8},        {"float4", 16}, {"float8", 32},   {"float16", 64},
      {"int3", 16},  {"char3", 4},   {"double3", 32},      {"uchar16", 16}, {"short8", 16},  {"ulong2", 16},
      {"const int", 4}, {"volatile float4", 16}, {"const volatile uint", 4}, {"int ", 4},
  };
  for (const auto &c : cases) EXPECT_EQ(c.size, kernel_arg_type_size(c.type, 64)) << c.type;
}

TEST(KernelArgTypeSize, PointerSizedTypesFollowAddressBits) {
  for (const char *type : {"size_t", "ptrdiff_t", "intptr_t", "uintptr_t", "float*", "int *"}) {
    EXPECT_EQ(8u, kernel_arg_type_size(type, 64)) << type;
    EXPECT_EQ(4u, kernel_arg_type_size(type, 32)) << type;
  }
}

TEST(KernelArgTypeSize, UnknownTypesAreZero) {
  for (const char *type : {"", "struct point", "my_struct_t", "float5", "int32", "floaty", "union u"})
    EXPECT_EQ(0u, kernel_arg_type_size(type, 64)) << "'" << type << "'";
}

namespace {
KernelArgDesc arg(cl_kernel_arg_address_qualifier address, const char *type) {
  return KernelArgDesc{address, CL_KERNEL_ARG_ACCESS_NONE, 0, type, "x"};
}
}  // namespace

TEST(KernelArgClass, FromAddressQualifierAndType) {
  EXPECT_EQ(ArgClass::memory, kernel_arg_class(arg(CL_KERNEL_ARG_ADDRESS_GLOBAL, "float*")));
  EXPECT_EQ(ArgClass::memory, kernel_arg_class(arg(CL_KERNEL_ARG_ADDRESS_CONSTANT, "int*")));
  EXPECT_EQ(ArgClass::local, kernel_arg_class(arg(CL_KERNEL_ARG_ADDRESS_LOCAL, "float*")));
  EXPECT_EQ(ArgClass::value, kernel_arg_class(arg(CL_KERNEL_ARG_ADDRESS_PRIVATE, "uint")));
  EXPECT_EQ(ArgClass::value, kernel_arg_class(arg(CL_KERNEL_ARG_ADDRESS_PRIVATE, "struct s")));
  EXPECT_EQ(ArgClass::sampler, kernel_arg_class(arg(CL_KERNEL_ARG_ADDRESS_PRIVATE, "sampler_t")));
  EXPECT_EQ(ArgClass::sampler, kernel_arg_class(arg(CL_KERNEL_ARG_ADDRESS_PRIVATE, "const sampler_t")));
  EXPECT_EQ(ArgClass::memory, kernel_arg_class(arg(CL_KERNEL_ARG_ADDRESS_PRIVATE, "image2d_t")));
  EXPECT_EQ(ArgClass::memory, kernel_arg_class(arg(CL_KERNEL_ARG_ADDRESS_PRIVATE, "pipe")));
}

TEST(KernelArgClass, UnknownWithoutMetadata) {
  EXPECT_EQ(ArgClass::unknown, kernel_arg_class(arg(0, "")));
  EXPECT_EQ(ArgClass::unknown, kernel_arg_class(arg(0x1234, "float")));
}

TEST(KernelArgCheck, ValueSizeOnlyForByValueArguments) {
  auto value = fedcl::kernel_arg_check(arg(CL_KERNEL_ARG_ADDRESS_PRIVATE, "float4"), 64);
  EXPECT_EQ(ArgClass::value, value.kind);
  EXPECT_EQ(16u, value.value_size);
  auto pointer_sized = fedcl::kernel_arg_check(arg(CL_KERNEL_ARG_ADDRESS_PRIVATE, "size_t"), 32);
  EXPECT_EQ(4u, pointer_sized.value_size);
  auto buffer = fedcl::kernel_arg_check(arg(CL_KERNEL_ARG_ADDRESS_GLOBAL, "float*"), 64);
  EXPECT_EQ(ArgClass::memory, buffer.kind);
  EXPECT_EQ(0u, buffer.value_size);
  auto local = fedcl::kernel_arg_check(arg(CL_KERNEL_ARG_ADDRESS_LOCAL, "int*"), 64);
  EXPECT_EQ(ArgClass::local, local.kind);
  EXPECT_EQ(0u, local.value_size);
  auto structure = fedcl::kernel_arg_check(arg(CL_KERNEL_ARG_ADDRESS_PRIVATE, "struct params"), 64);
  EXPECT_EQ(ArgClass::value, structure.kind);
  EXPECT_EQ(0u, structure.value_size);  // unknown: any size is accepted
}

TEST(KernelArgCheck, TheBinarysValueSizeComesFirst) {
  // From NVIDIA's PTX: no type name, the bytes the kernel takes (a packed 5-byte struct here).
  KernelArgDesc from_binary = arg(CL_KERNEL_ARG_ADDRESS_PRIVATE, "");
  from_binary.value_size = 5;
  auto check = fedcl::kernel_arg_check(from_binary, 64);
  EXPECT_EQ(ArgClass::value, check.kind);
  EXPECT_EQ(5u, check.value_size);
  KernelArgDesc image = arg(CL_KERNEL_ARG_ADDRESS_GLOBAL, "");
  EXPECT_EQ(ArgClass::memory, fedcl::kernel_arg_check(image, 64).kind);
}

TEST(KernelArgCheck, ImageArgumentsAreMarked) {
  EXPECT_TRUE(fedcl::kernel_arg_check(arg(CL_KERNEL_ARG_ADDRESS_PRIVATE, "image2d_t"), 64).image);
  EXPECT_TRUE(fedcl::kernel_arg_check(arg(CL_KERNEL_ARG_ADDRESS_GLOBAL, "image1d_array_t"), 64).image);
  EXPECT_TRUE(fedcl::kernel_arg_check(arg(CL_KERNEL_ARG_ADDRESS_PRIVATE, "const image3d_t"), 64).image);
  EXPECT_TRUE(fedcl::kernel_arg_check(arg(CL_KERNEL_ARG_ADDRESS_GLOBAL, "image"), 64).image);  // fedcld's, from PTX
  EXPECT_FALSE(fedcl::kernel_arg_check(arg(CL_KERNEL_ARG_ADDRESS_GLOBAL, "float*"), 64).image);
  EXPECT_FALSE(fedcl::kernel_arg_check(arg(CL_KERNEL_ARG_ADDRESS_PRIVATE, "pipe"), 64).image);
  EXPECT_FALSE(fedcl::kernel_arg_check(arg(CL_KERNEL_ARG_ADDRESS_GLOBAL, ""), 64).image);  // no type name
}
