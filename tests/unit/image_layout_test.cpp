// protocol/image_layout.h: the bytes of an image element, within the specification's table of
// channel orders and types and beyond it, where a backend lists more pairs than the table.
#include "image_layout.h"

#include <gtest/gtest.h>

namespace {

size_t size_of(cl_channel_order order, cl_channel_type type, bool beyond_table = false) {
  return fedcl::image_element_size(cl_image_format{order, type}, beyond_table);
}

TEST(ImageLayout, ElementSizesOfTheSpecificationsTable) {
  EXPECT_EQ(16u, size_of(CL_RGBA, CL_FLOAT));
  EXPECT_EQ(4u, size_of(CL_BGRA, CL_UNORM_INT8));
  EXPECT_EQ(2u, size_of(CL_RGB, CL_UNORM_SHORT_565));
  EXPECT_EQ(4u, size_of(CL_RGBA, CL_UNORM_INT_101010_2));
  EXPECT_EQ(0u, size_of(CL_BGRA, CL_SNORM_INT16));  // the table pairs CL_BGRA with 8-bit types only
  EXPECT_EQ(0u, size_of(0x1234, CL_FLOAT));
  EXPECT_EQ(0u, size_of(CL_RGBA, 0x1234));
}

// NVIDIA lists CL_BGRA and CL_ARGB with CL_SNORM_INT16 among its supported formats, and the CTS's
// image copy tests create images of every listed format: their size is plain, 4 x 2 bytes.
TEST(ImageLayout, PairsBeyondTheTableHaveAPlainSizeUnlessPacked) {
  EXPECT_EQ(8u, size_of(CL_BGRA, CL_SNORM_INT16, true));
  EXPECT_EQ(8u, size_of(CL_ARGB, CL_SNORM_INT16, true));
  EXPECT_EQ(16u, size_of(CL_ABGR, CL_FLOAT, true));
  EXPECT_EQ(4u, size_of(CL_BGRA, CL_UNORM_INT8, true));       // within the table, the same
  EXPECT_EQ(0u, size_of(CL_BGRA, CL_UNORM_SHORT_565, true));  // a packed type fits its own orders only
  EXPECT_EQ(0u, size_of(0x1234, CL_FLOAT, true));
}

}  // namespace
