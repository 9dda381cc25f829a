// Image layout: which channel order and channel type pairs the OpenCL specification defines, the
// bytes one element of each takes, and the region a whole image spans. Both ends need it: the client
// to check and pack images, fedcld to check an image's initial contents before the backend reads them.
#pragma once

#include <CL/cl.h>

#include <array>
#include <cstddef>

namespace fedcl {

namespace image_format_detail {

// One bit per family of channel types; a channel order lists the families it combines with.
enum Family : unsigned {
  kUnorm8 = 1 << 0, kSnorm8 = 1 << 1, kInt8 = 1 << 2,     // INT8: signed and unsigned
  kUnorm16 = 1 << 3, kSnorm16 = 1 << 4, kInt16 = 1 << 5,
  kInt32 = 1 << 6, kHalf = 1 << 7, kFloat = 1 << 8,
  kPacked = 1 << 9,   // UNORM_SHORT_565, UNORM_SHORT_555, UNORM_INT_101010
  kPacked2 = 1 << 10, // UNORM_INT_101010_2
  kInt24 = 1 << 11,   // UNORM_INT24
  k8 = kUnorm8 | kSnorm8 | kInt8,
  kAny = k8 | kUnorm16 | kSnorm16 | kInt16 | kInt32 | kHalf | kFloat,
  kNormOrFloat = kUnorm8 | kSnorm8 | kUnorm16 | kSnorm16 | kHalf | kFloat,
};

struct ChannelType {
  cl_channel_type type;
  unsigned family;
  size_t bytes;  // per channel, or per element for packed types
  bool packed;
};

constexpr ChannelType kChannelTypes[] = {
    {CL_SNORM_INT8, kSnorm8, 1, false},      {CL_SNORM_INT16, kSnorm16, 2, false},
    {CL_UNORM_INT8, kUnorm8, 1, false},      {CL_UNORM_INT16, kUnorm16, 2, false},
    {CL_UNORM_SHORT_565, kPacked, 2, true},  {CL_UNORM_SHORT_555, kPacked, 2, true},
    {CL_UNORM_INT_101010, kPacked, 4, true}, {CL_SIGNED_INT8, kInt8, 1, false},
    {CL_SIGNED_INT16, kInt16, 2, false},     {CL_SIGNED_INT32, kInt32, 4, false},
    {CL_UNSIGNED_INT8, kInt8, 1, false},     {CL_UNSIGNED_INT16, kInt16, 2, false},
    {CL_UNSIGNED_INT32, kInt32, 4, false},   {CL_HALF_FLOAT, kHalf, 2, false},
    {CL_FLOAT, kFloat, 4, false},            {CL_UNORM_INT24, kInt24, 4, true},
    {CL_UNORM_INT_101010_2, kPacked2, 4, true},
};

struct ChannelOrder {
  cl_channel_order order;
  size_t channels;
  unsigned families;
};

constexpr ChannelOrder kChannelOrders[] = {
    {CL_R, 1, kAny},   {CL_A, 1, kAny},           {CL_RG, 2, kAny},
    {CL_RA, 2, kAny},  {CL_RGB, 3, kPacked},      {CL_RGBA, 4, kAny | kPacked2},
    {CL_BGRA, 4, k8},  {CL_ARGB, 4, k8},          {CL_ABGR, 4, k8},
    {CL_INTENSITY, 1, kNormOrFloat},              {CL_LUMINANCE, 1, kNormOrFloat},
    {CL_Rx, 1, kAny},  {CL_RGx, 2, kAny},         {CL_RGBx, 3, kPacked},
    {CL_DEPTH, 1, kUnorm16 | kFloat},             {CL_DEPTH_STENCIL, 1, kInt24 | kFloat},
    {CL_sRGB, 3, kUnorm8}, {CL_sRGBx, 4, kUnorm8}, {CL_sRGBA, 4, kUnorm8},
    {CL_sBGRA, 4, kUnorm8},
};

}  // namespace image_format_detail

// Bytes per element of format, or 0 if the specification does not define that pair. With
// beyond_table, also for a pair outside the specification's table whose size is still plain (a
// channel count times a type that is not packed): a backend may list more pairs as supported than the
// table (NVIDIA: CL_BGRA and CL_ARGB with 16-bit types), and those are the backend's to make.
inline size_t image_element_size(const cl_image_format &format, bool beyond_table = false) {
  using namespace image_format_detail;
  for (const auto &order : kChannelOrders) {
    if (order.order != format.image_channel_order) continue;
    for (const auto &type : kChannelTypes) {
      if (type.type != format.image_channel_data_type) continue;
      if (!(order.families & type.family) && (!beyond_table || type.packed)) return 0;
      return type.packed ? type.bytes : order.channels * type.bytes;
    }
  }
  return 0;
}

// The region (in the origin/region convention of the image commands) that a whole image of type
// covers: a 1D array's layers count as rows, a 2D array's as slices. Zeros for an unknown type.
inline std::array<size_t, 3> image_full_region(cl_mem_object_type type, size_t width, size_t height, size_t depth,
                                               size_t array_size) {
  switch (type) {
    case CL_MEM_OBJECT_IMAGE1D:
    case CL_MEM_OBJECT_IMAGE1D_BUFFER: return {width, 1, 1};
    case CL_MEM_OBJECT_IMAGE1D_ARRAY: return {width, array_size, 1};
    case CL_MEM_OBJECT_IMAGE2D: return {width, height, 1};
    case CL_MEM_OBJECT_IMAGE2D_ARRAY: return {width, height, array_size};
    case CL_MEM_OBJECT_IMAGE3D: return {width, height, depth};
    default: return {0, 0, 0};
  }
}

}  // namespace fedcl
