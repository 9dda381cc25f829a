// Images, samplers and rectangular buffer transfers through fedcl: contents checked against what the
// host computes, errors against the codes the specification names.
#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>

#include "cl_harness.h"

using namespace fedcl_test;

namespace {

using Size3 = std::array<size_t, 3>;

// No pitches (the image's own), no mip levels or samples, no buffer.
cl_image_desc image_desc(cl_mem_object_type type, size_t width, size_t height = 0, size_t depth = 0,
                         size_t array_size = 0) {
  return {type, width, height, depth, array_size, 0, 0, 0, 0, {nullptr}};
}

// Bytes in host memory laid out with pitches, as the image and rectangle commands describe them.
struct Layout {
  size_t row_pitch, slice_pitch;
  // Where row y of slice z of a box at origin (origin[0] in bytes) starts.
  size_t at(const Size3 &origin, size_t y, size_t z) const {
    return (origin[2] + z) * slice_pitch + (origin[1] + y) * row_pitch + origin[0];
  }
};

// Copies region (region[0] in bytes) from src to dst, each at its origin with its own layout:
// the host model every rectangle and pitched-image check compares against.
void copy_rect(uint8_t *dst, const Size3 &dst_origin, const Layout &dst_layout, const uint8_t *src,
               const Size3 &src_origin, const Layout &src_layout, const Size3 &region) {
  for (size_t z = 0; z < region[2]; z++)
    for (size_t y = 0; y < region[1]; y++)
      std::memcpy(dst + dst_layout.at(dst_origin, y, z), src + src_layout.at(src_origin, y, z), region[0]);
}

std::vector<uint8_t> pattern(size_t size, unsigned seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; i++) bytes[i] = static_cast<uint8_t>(i * 131 + seed * 17 + (i >> 8));
  return bytes;
}

struct ImageTest : OneDeviceFixture {
  cl_mem image(cl_mem_flags flags, cl_image_format format, const cl_image_desc &desc, void *host = nullptr) {
    cl_int err = CL_INVALID_VALUE;
    cl_mem mem = clCreateImage(context, flags, &format, &desc, host, &err);
    EXPECT_CL(CL_SUCCESS, err);
    return mem;
  }

  template <typename T>
  T image_info(cl_mem mem, cl_image_info param) {
    T value{};
    EXPECT_CL(CL_SUCCESS, clGetImageInfo(mem, param, sizeof value, &value, nullptr));
    return value;
  }

  cl_int create_error(cl_mem_flags flags, const cl_image_format *format, const cl_image_desc *desc, void *host) {
    cl_int err = CL_SUCCESS;
    cl_mem mem = clCreateImage(context, flags, format, desc, host, &err);
    if (mem) clReleaseMemObject(mem);
    return err;
  }
};

const cl_image_format kRgba8{CL_RGBA, CL_UNSIGNED_INT8};
const cl_image_format kRgba16{CL_RGBA, CL_UNSIGNED_INT16};
const cl_image_format kRFloat{CL_R, CL_FLOAT};

}  // namespace

TEST_F(ImageTest, DeviceOffersImagesAndFormats) {
  cl_bool images = CL_FALSE;
  ASSERT_CL_OK(clGetDeviceInfo(device, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, nullptr));
  EXPECT_EQ(cl_bool(CL_TRUE), images);

  cl_uint count = 0;
  ASSERT_CL_OK(clGetSupportedImageFormats(context, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, nullptr, &count));
  ASSERT_GT(count, 0u);
  std::vector<cl_image_format> formats(count);
  cl_uint again = 0;
  ASSERT_CL_OK(
      clGetSupportedImageFormats(context, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, count, formats.data(), &again));
  EXPECT_EQ(count, again);
  // Every device that supports images must support these (the specification's minimum list).
  for (cl_image_format required : {kRgba8, kRFloat, cl_image_format{CL_RGBA, CL_FLOAT}}) {
    EXPECT_TRUE(std::any_of(formats.begin(), formats.end(),
                            [&](const cl_image_format &f) {
                              return f.image_channel_order == required.image_channel_order &&
                                     f.image_channel_data_type == required.image_channel_data_type;
                            }))
        << "order " << required.image_channel_order << " type " << required.image_channel_data_type;
  }
  // Fewer entries than formats: the first ones, and the full count.
  cl_image_format first{};
  ASSERT_CL_OK(clGetSupportedImageFormats(context, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 1, &first, &again));
  EXPECT_EQ(count, again);
  EXPECT_EQ(formats[0].image_channel_order, first.image_channel_order);

  EXPECT_CL(CL_INVALID_CONTEXT,
            clGetSupportedImageFormats(nullptr, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, nullptr, &count));
  EXPECT_CL(CL_INVALID_VALUE,
            clGetSupportedImageFormats(context, CL_MEM_READ_WRITE, CL_MEM_OBJECT_BUFFER, 0, nullptr, &count));
  EXPECT_CL(CL_INVALID_VALUE, clGetSupportedImageFormats(context, CL_MEM_READ_WRITE | CL_MEM_READ_ONLY,
                                                         CL_MEM_OBJECT_IMAGE2D, 0, nullptr, &count));
  EXPECT_CL(CL_INVALID_VALUE,
            clGetSupportedImageFormats(context, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, &first, nullptr));
}

TEST_F(ImageTest, InfoDescribesEachImageType) {
  struct Case {
    cl_mem_object_type type;
    size_t width, height, depth, layers;
    size_t row_pitch, slice_pitch, size;  // RGBA float elements are 16 bytes
  } cases[] = {
      {CL_MEM_OBJECT_IMAGE1D, 10, 0, 0, 0, 160, 0, 160},    {CL_MEM_OBJECT_IMAGE1D_ARRAY, 10, 0, 0, 4, 160, 160, 640},
      {CL_MEM_OBJECT_IMAGE2D, 10, 3, 0, 0, 160, 0, 480},    {CL_MEM_OBJECT_IMAGE2D_ARRAY, 10, 3, 0, 4, 160, 480, 1920},
      {CL_MEM_OBJECT_IMAGE3D, 10, 3, 5, 0, 160, 480, 2400},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.type);
    cl_mem mem =
        image(CL_MEM_READ_WRITE, {CL_RGBA, CL_FLOAT}, image_desc(c.type, c.width, c.height, c.depth, c.layers));
    ASSERT_NE(nullptr, mem);
    EXPECT_EQ(16u, image_info<size_t>(mem, CL_IMAGE_ELEMENT_SIZE));
    EXPECT_EQ(c.width, image_info<size_t>(mem, CL_IMAGE_WIDTH));
    EXPECT_EQ(c.height, image_info<size_t>(mem, CL_IMAGE_HEIGHT));
    EXPECT_EQ(c.depth, image_info<size_t>(mem, CL_IMAGE_DEPTH));
    EXPECT_EQ(c.layers, image_info<size_t>(mem, CL_IMAGE_ARRAY_SIZE));
    EXPECT_EQ(c.row_pitch, image_info<size_t>(mem, CL_IMAGE_ROW_PITCH));
    EXPECT_EQ(c.slice_pitch, image_info<size_t>(mem, CL_IMAGE_SLICE_PITCH));
    EXPECT_EQ(nullptr, image_info<cl_mem>(mem, CL_IMAGE_BUFFER));
    EXPECT_EQ(0u, image_info<cl_uint>(mem, CL_IMAGE_NUM_MIP_LEVELS));
    cl_image_format format = image_info<cl_image_format>(mem, CL_IMAGE_FORMAT);
    EXPECT_EQ(cl_channel_type(CL_FLOAT), format.image_channel_data_type);
    cl_mem_object_type type = 0;
    size_t size = 0;
    ASSERT_CL_OK(clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof type, &type, nullptr));
    ASSERT_CL_OK(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, nullptr));
    EXPECT_EQ(c.type, type);
    EXPECT_EQ(c.size, size);
    EXPECT_CL(CL_INVALID_VALUE, clGetImageInfo(mem, 0x7777, sizeof size, &size, nullptr));
    clReleaseMemObject(mem);
  }
  cl_mem buffer = create_buffer(context, CL_MEM_READ_WRITE, 64);
  size_t width = 0;
  EXPECT_CL(CL_INVALID_MEM_OBJECT, clGetImageInfo(buffer, CL_IMAGE_WIDTH, sizeof width, &width, nullptr));
  clReleaseMemObject(buffer);
}

TEST_F(ImageTest, PitchedWritesAndReadsOf3DImage) {
  const Size3 full{9, 7, 5};
  const size_t element = 8;  // RGBA, 16-bit channels
  const Layout tight{full[0] * element, full[0] * full[1] * element};
  std::vector<uint8_t> contents = pattern(tight.slice_pitch * full[2], 1);
  cl_mem mem = image(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, kRgba16,
                     image_desc(CL_MEM_OBJECT_IMAGE3D, full[0], full[1], full[2]), contents.data());
  ASSERT_NE(nullptr, mem);
  EXPECT_EQ(tight.row_pitch, image_info<size_t>(mem, CL_IMAGE_ROW_PITCH));

  // A sub-region read into padded host memory: the region lands at its pitches, the padding stays.
  const Size3 origin{2, 1, 1}, region{5, 4, 3};
  const Layout host{64, 64 * 6};
  std::vector<uint8_t> got(host.slice_pitch * region[2] + 3, 0xEE), want = got;
  ASSERT_CL_OK(clEnqueueReadImage(queue, mem, CL_TRUE, origin.data(), region.data(), host.row_pitch, host.slice_pitch,
                                  got.data() + 3, 0, nullptr, nullptr));
  copy_rect(want.data() + 3, {0, 0, 0}, host, contents.data(), {origin[0] * element, origin[1], origin[2]}, tight,
            {region[0] * element, region[1], region[2]});
  EXPECT_EQ(want, got);

  // A pitched write of new bytes into that region, then the whole image read back tightly.
  std::vector<uint8_t> update = pattern(got.size(), 2);
  ASSERT_CL_OK(clEnqueueWriteImage(queue, mem, CL_FALSE, origin.data(), region.data(), host.row_pitch, host.slice_pitch,
                                   update.data() + 3, 0, nullptr, nullptr));
  std::vector<uint8_t> whole(contents.size());
  const Size3 zero{0, 0, 0};
  ASSERT_CL_OK(
      clEnqueueReadImage(queue, mem, CL_TRUE, zero.data(), full.data(), 0, 0, whole.data(), 0, nullptr, nullptr));
  copy_rect(contents.data(), {origin[0] * element, origin[1], origin[2]}, tight, update.data() + 3, {0, 0, 0}, host,
            {region[0] * element, region[1], region[2]});
  EXPECT_EQ(contents, whole);
  clReleaseMemObject(mem);
}

TEST_F(ImageTest, NonBlockingPitchedReadLandsBeforeItsEventCompletes) {
  const Size3 full{33, 17, 1};
  std::vector<uint8_t> contents = pattern(full[0] * full[1] * 4, 3);
  cl_mem mem = image(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, kRgba8,
                     image_desc(CL_MEM_OBJECT_IMAGE2D, full[0], full[1]), contents.data());
  cl_int err;
  cl_event gate = clCreateUserEvent(context, &err);
  ASSERT_CL_OK(err);
  const Size3 origin{3, 2, 0}, region{29, 14, 1};
  const Layout host{300, 0};
  std::vector<uint8_t> got(host.row_pitch * region[1], 0xEE), want = got;
  cl_event done = nullptr;
  ASSERT_CL_OK(clEnqueueReadImage(queue, mem, CL_FALSE, origin.data(), region.data(), host.row_pitch, 0, got.data(), 1,
                                  &gate, &done));
  cl_int status = CL_COMPLETE;
  ASSERT_CL_OK(clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
  EXPECT_GT(status, CL_COMPLETE);
  EXPECT_EQ(0xEE, got[0]);
  ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
  ASSERT_CL_OK(clWaitForEvents(1, &done));
  copy_rect(want.data(), {0, 0, 0}, host, contents.data(), {origin[0] * 4, origin[1], 0}, {full[0] * 4, 0},
            {region[0] * 4, region[1], 1});
  EXPECT_EQ(want, got);
  clReleaseEvent(done);
  clReleaseEvent(gate);
  clReleaseMemObject(mem);
}

// Transfers larger than a chunk travel as several commands (whole slices, whole rows): with
// pitched host memory and a sub-region, every piece lands where it belongs, and a non-blocking read
// held back by a wait list completes its event only once all its pieces have landed.
TEST_F(ImageTest, LargeTransfersLandWholeInPieces) {
  struct Case {
    cl_mem_object_type type;
    Size3 full, origin, region;
    cl_image_format format;
    size_t element;
  } cases[] = {
      {CL_MEM_OBJECT_IMAGE3D, {128, 64, 67}, {1, 2, 0}, {127, 62, 67}, kRgba8, 4},               // 2 MiB: slices
      {CL_MEM_OBJECT_IMAGE2D, {1024, 600, 1}, {3, 5, 0}, {1020, 590, 1}, {CL_RGBA, CL_FLOAT}, 16},  // rows
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.type);
    const Layout tight{c.full[0] * c.element, c.full[0] * c.full[1] * c.element};
    std::vector<uint8_t> contents = pattern(tight.slice_pitch * c.full[2], 7);
    cl_mem mem = image(CL_MEM_READ_WRITE, c.format, image_desc(c.type, c.full[0], c.full[1], c.full[2]));
    ASSERT_NE(nullptr, mem);
    const Size3 zero{0, 0, 0};
    ASSERT_CL_OK(
        clEnqueueWriteImage(queue, mem, CL_FALSE, zero.data(), c.full.data(), 0, 0, contents.data(), 0, nullptr, nullptr));

    // A pitched write of new bytes into the sub-region, gated by a user event.
    // A 2D image's slice pitch is 0 by the specification.
    const size_t row_pitch = c.region[0] * c.element + 24, slice_bytes = row_pitch * c.region[1] + 40;
    const Layout host{row_pitch, c.type == CL_MEM_OBJECT_IMAGE3D ? slice_bytes : 0};
    std::vector<uint8_t> update = pattern(slice_bytes * c.region[2], 8);
    cl_int err;
    cl_event gate = clCreateUserEvent(context, &err);
    ASSERT_CL_OK(err);
    ASSERT_CL_OK(clEnqueueWriteImage(queue, mem, CL_FALSE, c.origin.data(), c.region.data(), host.row_pitch,
                                     host.slice_pitch, update.data(), 1, &gate, nullptr));
    std::vector<uint8_t> got(contents.size(), 0xEE);
    cl_event done = nullptr;
    ASSERT_CL_OK(
        clEnqueueReadImage(queue, mem, CL_FALSE, zero.data(), c.full.data(), 0, 0, got.data(), 0, nullptr, &done));
    cl_int status = CL_COMPLETE;
    ASSERT_CL_OK(clGetEventInfo(done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
    EXPECT_GT(status, CL_COMPLETE);
    ASSERT_CL_OK(clSetUserEventStatus(gate, CL_COMPLETE));
    ASSERT_CL_OK(clWaitForEvents(1, &done));
    copy_rect(contents.data(), {c.origin[0] * c.element, c.origin[1], c.origin[2]}, tight, update.data(), zero, host,
              {c.region[0] * c.element, c.region[1], c.region[2]});
    EXPECT_TRUE(contents == got) << "the whole image after the pitched write differs";

    // The sub-region read back into pitched host memory: the padding stays untouched.
    std::vector<uint8_t> back(update.size(), 0xEE), want = back;
    ASSERT_CL_OK(clEnqueueReadImage(queue, mem, CL_TRUE, c.origin.data(), c.region.data(), host.row_pitch,
                                    host.slice_pitch, back.data(), 0, nullptr, nullptr));
    copy_rect(want.data(), zero, host, contents.data(), {c.origin[0] * c.element, c.origin[1], c.origin[2]}, tight,
              {c.region[0] * c.element, c.region[1], c.region[2]});
    EXPECT_TRUE(want == back) << "the pitched read of the sub-region differs";
    clReleaseEvent(done);
    clReleaseEvent(gate);
    clReleaseMemObject(mem);
  }
}

TEST_F(ImageTest, FillCopyAndTransfersWithBuffers) {
  const Size3 full{6, 4, 3}, zero{0, 0, 0};
  cl_mem array =
      image(CL_MEM_READ_WRITE, kRFloat, image_desc(CL_MEM_OBJECT_IMAGE2D_ARRAY, full[0], full[1], 0, full[2]));
  cl_mem volume = image(CL_MEM_READ_WRITE, kRFloat, image_desc(CL_MEM_OBJECT_IMAGE3D, full[0], full[1], full[2]));
  const float background[4] = {2.5f, 0, 0, 0}, spot[4] = {7.0f, 0, 0, 0};
  const Size3 spot_origin{1, 1, 1}, spot_region{2, 2, 2};
  ASSERT_CL_OK(clEnqueueFillImage(queue, array, background, zero.data(), full.data(), 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueFillImage(queue, array, spot, spot_origin.data(), spot_region.data(), 0, nullptr, nullptr));
  ASSERT_CL_OK(clEnqueueCopyImage(queue, array, volume, zero.data(), zero.data(), full.data(), 0, nullptr, nullptr));

  auto expected = [&](size_t x, size_t y, size_t z) {
    bool in_spot = x >= 1 && x < 3 && y >= 1 && y < 3 && z >= 1 && z < 3;
    return in_spot ? 7.0f : 2.5f;
  };
  // Image to buffer at an offset, buffer back to a fresh image.
  const size_t count = full[0] * full[1] * full[2], offset = 16;
  cl_mem buffer = create_buffer(context, CL_MEM_READ_WRITE, offset + count * sizeof(float));
  ASSERT_CL_OK(
      clEnqueueCopyImageToBuffer(queue, volume, buffer, zero.data(), full.data(), offset, 0, nullptr, nullptr));
  std::vector<float> values(count);
  ASSERT_CL_OK(
      clEnqueueReadBuffer(queue, buffer, CL_TRUE, offset, count * sizeof(float), values.data(), 0, nullptr, nullptr));
  for (size_t z = 0; z < full[2]; z++)
    for (size_t y = 0; y < full[1]; y++)
      for (size_t x = 0; x < full[0]; x++)
        ASSERT_EQ(expected(x, y, z), values[(z * full[1] + y) * full[0] + x]) << x << "," << y << "," << z;

  cl_mem plane = image(CL_MEM_READ_WRITE, kRFloat, image_desc(CL_MEM_OBJECT_IMAGE2D, full[0], full[1]));
  const Size3 plane_region{full[0], full[1], 1};
  // The third slice of the buffer's copy becomes the plane.
  ASSERT_CL_OK(clEnqueueCopyBufferToImage(queue, buffer, plane, offset + 2 * full[0] * full[1] * sizeof(float),
                                          zero.data(), plane_region.data(), 0, nullptr, nullptr));
  std::vector<float> row(full[0] * full[1]);
  ASSERT_CL_OK(clEnqueueReadImage(queue, plane, CL_TRUE, zero.data(), plane_region.data(), 0, 0, row.data(), 0, nullptr,
                                  nullptr));
  for (size_t y = 0; y < full[1]; y++)
    for (size_t x = 0; x < full[0]; x++) EXPECT_EQ(expected(x, y, 2), row[y * full[0] + x]);

  for (cl_mem mem : {array, volume, buffer, plane}) clReleaseMemObject(mem);
}

TEST_F(ImageTest, UseHostPtrImageMapsIntoTheApplicationsMemory) {
  const size_t width = 7, height = 10, row_pitch = 256;
  std::vector<uint8_t> host = pattern(row_pitch * height, 4);
  cl_mem mem = image(
      CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, kRgba8,
      [&] {
        cl_image_desc desc = image_desc(CL_MEM_OBJECT_IMAGE2D, width, height);
        desc.image_row_pitch = row_pitch;
        return desc;
      }(),
      host.data());
  ASSERT_NE(nullptr, mem);
  EXPECT_EQ(row_pitch, image_info<size_t>(mem, CL_IMAGE_ROW_PITCH));
  void *host_ptr = nullptr;
  ASSERT_CL_OK(clGetMemObjectInfo(mem, CL_MEM_HOST_PTR, sizeof host_ptr, &host_ptr, nullptr));
  EXPECT_EQ(host.data(), host_ptr);

  const Size3 origin{1, 2, 0}, region{3, 4, 1};
  size_t mapped_pitch = 0;
  cl_int err;
  auto *view =
      static_cast<uint8_t *>(clEnqueueMapImage(queue, mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, origin.data(),
                                               region.data(), &mapped_pitch, nullptr, 0, nullptr, nullptr, &err));
  ASSERT_CL_OK(err);
  EXPECT_EQ(host.data() + 2 * row_pitch + 4, view);
  EXPECT_EQ(row_pitch, mapped_pitch);
  view[0] = 99;
  view[mapped_pitch + 4] = 98;
  ASSERT_CL_OK(clEnqueueUnmapMemObject(queue, mem, view, 0, nullptr, nullptr));

  std::vector<uint8_t> back(width * height * 4);
  const Size3 zero{0, 0, 0}, full{width, height, 1};
  ASSERT_CL_OK(
      clEnqueueReadImage(queue, mem, CL_TRUE, zero.data(), full.data(), 0, 0, back.data(), 0, nullptr, nullptr));
  for (size_t y = 0; y < height; y++)
    for (size_t x = 0; x < width * 4; x++) ASSERT_EQ(host[y * row_pitch + x], back[y * width * 4 + x]) << x << "," << y;
  EXPECT_EQ(99, back[2 * width * 4 + 4]);
  EXPECT_EQ(98, back[3 * width * 4 + 8]);
  clReleaseMemObject(mem);
}

TEST_F(ImageTest, MapsOfAnImageArrayUseItsLayerPitch) {
  // A 1D array from host memory whose layers lie 96 bytes apart, though each holds 40 bytes.
  const size_t width = 10, layers = 5, row_pitch = 48, slice_pitch = 96;
  std::vector<float> host(layers * slice_pitch / sizeof(float));
  std::iota(host.begin(), host.end(), 0.0f);
  cl_image_desc desc = image_desc(CL_MEM_OBJECT_IMAGE1D_ARRAY, width, 0, 0, layers);
  desc.image_row_pitch = row_pitch;
  desc.image_slice_pitch = slice_pitch;
  cl_mem copy = image(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, kRFloat, desc, host.data());
  const Size3 zero{0, 0, 0}, full{width, layers, 1};
  std::vector<float> packed(width * layers);
  ASSERT_CL_OK(
      clEnqueueReadImage(queue, copy, CL_TRUE, zero.data(), full.data(), 0, 0, packed.data(), 0, nullptr, nullptr));
  for (size_t layer = 0; layer < layers; layer++)
    for (size_t x = 0; x < width; x++) ASSERT_EQ(host[layer * 24 + x], packed[layer * width + x]);

  // A read map of a plain image: tight pitches, the layer step as the slice pitch.
  const Size3 origin{2, 1, 0}, region{3, 3, 1};
  size_t row = 0, slice = 0;
  cl_int err;
  auto *view = static_cast<float *>(clEnqueueMapImage(queue, copy, CL_TRUE, CL_MAP_READ, origin.data(), region.data(),
                                                      &row, &slice, 0, nullptr, nullptr, &err));
  ASSERT_CL_OK(err);
  EXPECT_EQ(width * sizeof(float), row);
  EXPECT_EQ(width * sizeof(float), slice);
  for (size_t layer = 0; layer < region[1]; layer++)
    for (size_t x = 0; x < region[0]; x++)
      EXPECT_EQ(host[(origin[1] + layer) * 24 + origin[0] + x],
                reinterpret_cast<float *>(reinterpret_cast<uint8_t *>(view) + layer * slice)[x]);
  ASSERT_CL_OK(clEnqueueUnmapMemObject(queue, copy, view, 0, nullptr, nullptr));
  clReleaseMemObject(copy);
}

TEST_F(ImageTest, WriteMapsOfAPlainImageReachTheDevice) {
  const Size3 full{8, 4, 3}, zero{0, 0, 0};
  cl_mem mem = image(CL_MEM_READ_WRITE, kRFloat, image_desc(CL_MEM_OBJECT_IMAGE3D, full[0], full[1], full[2]));
  const float zero_color[4] = {};
  ASSERT_CL_OK(clEnqueueFillImage(queue, mem, zero_color, zero.data(), full.data(), 0, nullptr, nullptr));
  const Size3 origin{1, 1, 1}, region{3, 2, 2};
  size_t row = 0, slice = 0;
  cl_int err;
  auto *view = static_cast<uint8_t *>(clEnqueueMapImage(queue, mem, CL_TRUE, CL_MAP_WRITE, origin.data(), region.data(),
                                                        &row, &slice, 0, nullptr, nullptr, &err));
  ASSERT_CL_OK(err);
  cl_uint maps = 0;
  ASSERT_CL_OK(clGetMemObjectInfo(mem, CL_MEM_MAP_COUNT, sizeof maps, &maps, nullptr));
  EXPECT_EQ(1u, maps);
  for (size_t z = 0; z < region[2]; z++)
    for (size_t y = 0; y < region[1]; y++)
      for (size_t x = 0; x < region[0]; x++)
        reinterpret_cast<float *>(view + z * slice + y * row)[x] = float(100 * z + 10 * y + x + 1);
  ASSERT_CL_OK(clEnqueueUnmapMemObject(queue, mem, view, 0, nullptr, nullptr));

  std::vector<float> values(full[0] * full[1] * full[2]);
  ASSERT_CL_OK(
      clEnqueueReadImage(queue, mem, CL_TRUE, zero.data(), full.data(), 0, 0, values.data(), 0, nullptr, nullptr));
  for (size_t z = 0; z < full[2]; z++)
    for (size_t y = 0; y < full[1]; y++)
      for (size_t x = 0; x < full[0]; x++) {
        bool inside = x >= 1 && x < 4 && y >= 1 && y < 3 && z >= 1 && z < 3;
        float want = inside ? float(100 * (z - 1) + 10 * (y - 1) + (x - 1) + 1) : 0.0f;
        ASSERT_EQ(want, values[(z * full[1] + y) * full[0] + x]) << x << "," << y << "," << z;
      }
  ASSERT_CL_OK(clGetMemObjectInfo(mem, CL_MEM_MAP_COUNT, sizeof maps, &maps, nullptr));
  EXPECT_EQ(0u, maps);
  clReleaseMemObject(mem);
}

TEST_F(ImageTest, ImageOverABufferSharesItsMemory) {
  const size_t width = 64;
  std::vector<cl_uint> init(width);
  std::iota(init.begin(), init.end(), 0u);
  cl_mem buffer = create_buffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, width * sizeof(cl_uint), init.data());
  cl_image_desc desc = image_desc(CL_MEM_OBJECT_IMAGE1D_BUFFER, width);
  desc.buffer = buffer;
  cl_mem mem = image(0, {CL_R, CL_UNSIGNED_INT32}, desc);
  ASSERT_NE(nullptr, mem);
  EXPECT_EQ(buffer, image_info<cl_mem>(mem, CL_IMAGE_BUFFER));
  cl_mem associated = nullptr;
  cl_mem_flags flags = 0;
  ASSERT_CL_OK(clGetMemObjectInfo(mem, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof associated, &associated, nullptr));
  ASSERT_CL_OK(clGetMemObjectInfo(mem, CL_MEM_FLAGS, sizeof flags, &flags, nullptr));
  EXPECT_EQ(buffer, associated);
  EXPECT_EQ(cl_mem_flags(CL_MEM_READ_ONLY), flags & (CL_MEM_READ_ONLY | CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY));

  cl_program program = build_program(context, R"(
    __kernel void twice(read_only image1d_buffer_t in, __global uint *out) {
      int i = get_global_id(0);
      out[i] = read_imageui(in, i).x * 2;
    })");
  cl_kernel kernel = create_kernel(program, "twice");
  cl_mem out = create_buffer(context, CL_MEM_WRITE_ONLY, width * sizeof(cl_uint));
  set_arg(kernel, 0, mem);
  set_arg(kernel, 1, out);
  const size_t global = width;
  auto run_and_check = [&](cl_uint add) {
    ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
    std::vector<cl_uint> doubled(width);
    ASSERT_CL_OK(
        clEnqueueReadBuffer(queue, out, CL_TRUE, 0, width * sizeof(cl_uint), doubled.data(), 0, nullptr, nullptr));
    for (size_t i = 0; i < width; i++) ASSERT_EQ(2 * (i + add), doubled[i]) << i;
  };
  run_and_check(0);
  // A write to the buffer shows through the image, and a map of the image reads the buffer.
  std::vector<cl_uint> bumped(width);
  std::iota(bumped.begin(), bumped.end(), 1000u);
  ASSERT_CL_OK(
      clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, width * sizeof(cl_uint), bumped.data(), 0, nullptr, nullptr));
  run_and_check(1000);
  const Size3 origin{4, 0, 0}, region{8, 1, 1};
  size_t row = 0;
  cl_int err;
  auto *view = static_cast<cl_uint *>(clEnqueueMapImage(queue, mem, CL_TRUE, CL_MAP_READ, origin.data(), region.data(),
                                                        &row, nullptr, 0, nullptr, nullptr, &err));
  ASSERT_CL_OK(err);
  EXPECT_EQ(1004u, view[0]);
  EXPECT_EQ(1011u, view[7]);
  ASSERT_CL_OK(clEnqueueUnmapMemObject(queue, mem, view, 0, nullptr, nullptr));

  // Creation rules for images over buffers.
  cl_image_format format{CL_R, CL_UNSIGNED_INT32};
  EXPECT_CL(CL_INVALID_VALUE, create_error(CL_MEM_WRITE_ONLY, &format, &desc, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, create_error(CL_MEM_COPY_HOST_PTR, &format, &desc, init.data()));
  cl_image_desc too_wide = desc;
  too_wide.image_width = width + 1;
  EXPECT_CL(CL_INVALID_IMAGE_SIZE, create_error(0, &format, &too_wide, nullptr));
  cl_image_desc no_buffer = desc;
  no_buffer.buffer = nullptr;
  EXPECT_CL(CL_INVALID_IMAGE_DESCRIPTOR, create_error(0, &format, &no_buffer, nullptr));

  clReleaseKernel(kernel);
  clReleaseProgram(program);
  for (cl_mem m : {mem, buffer, out}) clReleaseMemObject(m);
}

TEST_F(ImageTest, KernelSamplesThroughASampler) {
  const size_t width = 8, height = 2;
  std::vector<float> texels(width * height);
  for (size_t y = 0; y < height; y++)
    for (size_t x = 0; x < width; x++) texels[y * width + x] = float(10 * x + y);
  cl_mem img = image(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, kRFloat, image_desc(CL_MEM_OBJECT_IMAGE2D, width, height),
                     texels.data());
  cl_int err;
  cl_sampler sampler = clCreateSampler(context, CL_FALSE, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_LINEAR, &err);
  ASSERT_CL_OK(err);
  cl_program program = build_program(context, R"(
    __kernel void sample(read_only image2d_t img, sampler_t s, __global float *out) {
      int i = get_global_id(0);
      out[i] = read_imagef(img, s, (float2)(0.5f + 0.25f * i, 0.5f)).x;
    })");
  cl_kernel kernel = create_kernel(program, "sample");
  const size_t count = 36;
  cl_mem out = create_buffer(context, CL_MEM_WRITE_ONLY, count * sizeof(float));
  set_arg(kernel, 0, img);
  set_arg(kernel, 1, sampler);
  set_arg(kernel, 2, out);
  EXPECT_CL(CL_INVALID_SAMPLER, clSetKernelArg(kernel, 1, sizeof out, &out));
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &count, nullptr, 0, nullptr, nullptr));
  std::vector<float> got(count);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, out, CL_TRUE, 0, count * sizeof(float), got.data(), 0, nullptr, nullptr));
  for (size_t i = 0; i < count; i++) {
    // Linear filtering between texel centers on row 0, clamped to the last texel.
    float position = std::min(0.25f * i, float(width - 1));
    EXPECT_NEAR(10.0f * position, got[i], 0.1f) << "sample " << i;
  }
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseSampler(sampler);
  clReleaseMemObject(out);
  clReleaseMemObject(img);
}

TEST_F(ImageTest, SamplerInfoAndErrors) {
  cl_int err;
  cl_sampler sampler = clCreateSampler(context, CL_TRUE, CL_ADDRESS_REPEAT, CL_FILTER_LINEAR, &err);
  ASSERT_CL_OK(err);
  auto info = [&](cl_sampler s, cl_sampler_info param) {
    cl_ulong value = 0;  // wide enough for every scalar sampler query
    EXPECT_CL(CL_SUCCESS, clGetSamplerInfo(s, param, sizeof value, &value, nullptr));
    return value;
  };
  EXPECT_EQ(1u, info(sampler, CL_SAMPLER_REFERENCE_COUNT));
  EXPECT_EQ(cl_ulong(CL_TRUE), info(sampler, CL_SAMPLER_NORMALIZED_COORDS));
  EXPECT_EQ(cl_ulong(CL_ADDRESS_REPEAT), info(sampler, CL_SAMPLER_ADDRESSING_MODE));
  EXPECT_EQ(cl_ulong(CL_FILTER_LINEAR), info(sampler, CL_SAMPLER_FILTER_MODE));
  cl_context owner = nullptr;
  ASSERT_CL_OK(clGetSamplerInfo(sampler, CL_SAMPLER_CONTEXT, sizeof owner, &owner, nullptr));
  EXPECT_EQ(context, owner);
  size_t size = 99;
  ASSERT_CL_OK(clGetSamplerInfo(sampler, CL_SAMPLER_PROPERTIES, 0, nullptr, &size));
  EXPECT_EQ(0u, size);
  ASSERT_CL_OK(clRetainSampler(sampler));
  EXPECT_EQ(2u, info(sampler, CL_SAMPLER_REFERENCE_COUNT));
  ASSERT_CL_OK(clReleaseSampler(sampler));
  EXPECT_CL(CL_INVALID_VALUE, clGetSamplerInfo(sampler, 0x7777, sizeof size, &size, nullptr));
  ASSERT_CL_OK(clReleaseSampler(sampler));

  const cl_sampler_properties properties[] = {CL_SAMPLER_FILTER_MODE, CL_FILTER_LINEAR, CL_SAMPLER_NORMALIZED_COORDS,
                                              CL_FALSE, 0};
  cl_sampler with = clCreateSamplerWithProperties(context, properties, &err);
  ASSERT_CL_OK(err);
  EXPECT_EQ(cl_ulong(CL_ADDRESS_CLAMP), info(with, CL_SAMPLER_ADDRESSING_MODE));
  EXPECT_EQ(cl_ulong(CL_FALSE), info(with, CL_SAMPLER_NORMALIZED_COORDS));
  cl_sampler_properties given[5] = {};
  ASSERT_CL_OK(clGetSamplerInfo(with, CL_SAMPLER_PROPERTIES, sizeof given, given, &size));
  EXPECT_EQ(sizeof properties, size);
  EXPECT_TRUE(std::equal(std::begin(properties), std::end(properties), given));
  clReleaseSampler(with);
  cl_sampler defaults = clCreateSamplerWithProperties(context, nullptr, &err);
  ASSERT_CL_OK(err);
  EXPECT_EQ(cl_ulong(CL_TRUE), info(defaults, CL_SAMPLER_NORMALIZED_COORDS));
  EXPECT_EQ(cl_ulong(CL_FILTER_NEAREST), info(defaults, CL_SAMPLER_FILTER_MODE));
  clReleaseSampler(defaults);

  auto create_error = [&](cl_bool normalized, cl_addressing_mode addressing, cl_filter_mode filter) {
    cl_int status = CL_SUCCESS;
    cl_sampler s = clCreateSampler(context, normalized, addressing, filter, &status);
    if (s) clReleaseSampler(s);
    return status;
  };
  EXPECT_CL(CL_INVALID_VALUE, create_error(CL_TRUE, 0x1234, CL_FILTER_LINEAR));
  EXPECT_CL(CL_INVALID_VALUE, create_error(CL_TRUE, CL_ADDRESS_CLAMP, 0x1234));
  EXPECT_CL(CL_INVALID_VALUE, create_error(7, CL_ADDRESS_CLAMP, CL_FILTER_LINEAR));
  EXPECT_CL(CL_INVALID_VALUE, create_error(CL_FALSE, CL_ADDRESS_REPEAT, CL_FILTER_NEAREST));
  const cl_sampler_properties twice[] = {CL_SAMPLER_FILTER_MODE, CL_FILTER_LINEAR, CL_SAMPLER_FILTER_MODE,
                                         CL_FILTER_NEAREST, 0};
  EXPECT_EQ(nullptr, clCreateSamplerWithProperties(context, twice, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  const cl_sampler_properties unknown[] = {0x7777, 1, 0};
  EXPECT_EQ(nullptr, clCreateSamplerWithProperties(context, unknown, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  EXPECT_EQ(nullptr, clCreateSampler(nullptr, CL_TRUE, CL_ADDRESS_CLAMP, CL_FILTER_LINEAR, &err));
  EXPECT_CL(CL_INVALID_CONTEXT, err);
  EXPECT_CL(CL_INVALID_SAMPLER, clRetainSampler(nullptr));
  EXPECT_CL(CL_INVALID_SAMPLER, clReleaseSampler(nullptr));
}

TEST_F(ImageTest, CreateImageErrors) {
  cl_image_desc plain = image_desc(CL_MEM_OBJECT_IMAGE2D, 16, 8);
  std::vector<uint8_t> host(16 * 8 * 4 * 4);
  auto with = [&](auto change) {
    cl_image_desc desc = plain;
    change(desc);
    return desc;
  };
  const cl_image_format rgb_int{CL_RGB, CL_UNSIGNED_INT8}, unknown{0x1234, CL_FLOAT};
  struct Case {
    const char *what;
    cl_int expected;
    cl_mem_flags flags;
    const cl_image_format *format;
    cl_image_desc desc;
    void *host;
  } cases[] = {
      {"no format", CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, 0, nullptr, plain, nullptr},
      {"RGB with 8-bit integers", CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, 0, &rgb_int, plain, nullptr},
      {"unknown channel order", CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, 0, &unknown, plain, nullptr},
      {"two access flags", CL_INVALID_VALUE, CL_MEM_READ_WRITE | CL_MEM_READ_ONLY, &kRgba8, plain, nullptr},
      {"zero width", CL_INVALID_IMAGE_DESCRIPTOR, 0, &kRgba8, with([](cl_image_desc &d) { d.image_width = 0; }),
       nullptr},
      {"zero height", CL_INVALID_IMAGE_DESCRIPTOR, 0, &kRgba8, with([](cl_image_desc &d) { d.image_height = 0; }),
       nullptr},
      {"too wide", CL_INVALID_IMAGE_SIZE, 0, &kRgba8, with([](cl_image_desc &d) { d.image_width = size_t(1) << 30; }),
       nullptr},
      {"unknown type", CL_INVALID_IMAGE_DESCRIPTOR, 0, &kRgba8, with([](cl_image_desc &d) { d.image_type = 0x4242; }),
       nullptr},
      {"mip levels", CL_INVALID_IMAGE_DESCRIPTOR, 0, &kRgba8, with([](cl_image_desc &d) { d.num_mip_levels = 2; }),
       nullptr},
      {"samples", CL_INVALID_IMAGE_DESCRIPTOR, 0, &kRgba8, with([](cl_image_desc &d) { d.num_samples = 2; }), nullptr},
      {"pitch without host memory", CL_INVALID_IMAGE_DESCRIPTOR, 0, &kRgba8,
       with([](cl_image_desc &d) { d.image_row_pitch = 128; }), nullptr},
      {"host memory without flag", CL_INVALID_HOST_PTR, 0, &kRgba8, plain, host.data()},
      {"flag without host memory", CL_INVALID_HOST_PTR, CL_MEM_COPY_HOST_PTR, &kRgba8, plain, nullptr},
      {"pitch below a row", CL_INVALID_IMAGE_DESCRIPTOR, CL_MEM_COPY_HOST_PTR, &kRgba8,
       with([](cl_image_desc &d) { d.image_row_pitch = 32; }), host.data()},
      {"pitch not whole elements", CL_INVALID_IMAGE_DESCRIPTOR, CL_MEM_COPY_HOST_PTR, &kRgba8,
       with([](cl_image_desc &d) { d.image_row_pitch = 66; }), host.data()},
      {"slice pitch below a slice", CL_INVALID_IMAGE_DESCRIPTOR, CL_MEM_COPY_HOST_PTR, &kRgba8,
       with([](cl_image_desc &d) {
         d.image_type = CL_MEM_OBJECT_IMAGE3D;
         d.image_depth = 2;
         d.image_slice_pitch = 100;
       }),
       host.data()},
      {"empty array", CL_INVALID_IMAGE_DESCRIPTOR, 0, &kRgba8,
       with([](cl_image_desc &d) { d.image_type = CL_MEM_OBJECT_IMAGE2D_ARRAY; }), nullptr},
      {"image buffer without buffer", CL_INVALID_IMAGE_DESCRIPTOR, 0, &kRgba8,
       with([](cl_image_desc &d) { d.image_type = CL_MEM_OBJECT_IMAGE1D_BUFFER; }), nullptr},
  };
  for (const Case &c : cases) EXPECT_CL(c.expected, create_error(c.flags, c.format, &c.desc, c.host)) << c.what;

  cl_int err;
  EXPECT_EQ(nullptr, clCreateImage(nullptr, 0, &kRgba8, &plain, nullptr, &err));
  EXPECT_CL(CL_INVALID_CONTEXT, err);
  const cl_mem_properties bad[] = {1, 2, 0}, empty[] = {0};
  EXPECT_EQ(nullptr, clCreateImageWithProperties(context, bad, 0, &kRgba8, &plain, nullptr, &err));
  EXPECT_CL(CL_INVALID_PROPERTY, err);
  cl_mem made = clCreateImageWithProperties(context, empty, 0, &kRgba8, &plain, nullptr, &err);
  EXPECT_CL(CL_SUCCESS, err);
  clReleaseMemObject(made);
  // The OpenCL 1.1 entry points.
  made = clCreateImage2D(context, CL_MEM_READ_WRITE, &kRgba8, 16, 8, 0, nullptr, &err);
  EXPECT_CL(CL_SUCCESS, err);
  cl_mem_object_type type = 0;
  EXPECT_CL(CL_SUCCESS, clGetMemObjectInfo(made, CL_MEM_TYPE, sizeof type, &type, nullptr));
  EXPECT_EQ(cl_mem_object_type(CL_MEM_OBJECT_IMAGE2D), type);
  clReleaseMemObject(made);
  made = clCreateImage3D(context, CL_MEM_READ_WRITE, &kRgba8, 4, 4, 2, 0, 0, nullptr, &err);
  EXPECT_CL(CL_SUCCESS, err);
  clReleaseMemObject(made);
  EXPECT_EQ(nullptr, clCreateImage2D(context, 0, &kRgba8, 0, 8, 0, nullptr, &err));
  EXPECT_CL(CL_INVALID_IMAGE_SIZE, err);
  EXPECT_EQ(nullptr, clCreateImage3D(context, 0, &kRgba8, 4, 4, 1, 0, 0, nullptr, &err));
  EXPECT_CL(CL_INVALID_IMAGE_SIZE, err);
}

TEST_F(ImageTest, EnqueueImageErrors) {
  const Size3 full{9, 7, 5}, zero{0, 0, 0};
  cl_mem volume = image(CL_MEM_READ_WRITE, kRgba16, image_desc(CL_MEM_OBJECT_IMAGE3D, full[0], full[1], full[2]));
  cl_mem plane = image(CL_MEM_READ_WRITE, kRgba16, image_desc(CL_MEM_OBJECT_IMAGE2D, full[0], full[1]));
  cl_mem bytes = image(CL_MEM_READ_WRITE, kRgba8, image_desc(CL_MEM_OBJECT_IMAGE3D, full[0], full[1], full[2]));
  cl_mem hidden = image(CL_MEM_READ_WRITE | CL_MEM_HOST_NO_ACCESS, kRgba16, image_desc(CL_MEM_OBJECT_IMAGE2D, 4, 4));
  cl_mem buffer = create_buffer(context, CL_MEM_READ_WRITE, 64);
  std::vector<uint8_t> host(full[0] * full[1] * full[2] * 8);
  auto read = [&](cl_mem mem, const Size3 &origin, const Size3 &region, size_t row = 0, size_t slice = 0,
                  void *ptr = nullptr) {
    return clEnqueueReadImage(queue, mem, CL_TRUE, origin.data(), region.data(), row, slice, ptr ? ptr : host.data(), 0,
                              nullptr, nullptr);
  };
  const Size3 plane_region{full[0], full[1], 1};
  EXPECT_CL(CL_SUCCESS, read(volume, zero, full));
  EXPECT_CL(CL_INVALID_VALUE, read(volume, zero, {full[0], full[1], full[2] + 1}));
  EXPECT_CL(CL_INVALID_VALUE, read(volume, {1, 0, 0}, full));
  EXPECT_CL(CL_INVALID_VALUE, read(volume, zero, {0, 1, 1}));
  EXPECT_CL(CL_INVALID_VALUE, read(volume, zero, full, 8));               // row pitch below a row
  EXPECT_CL(CL_INVALID_VALUE, read(volume, zero, full, 0, 8));            // slice pitch below a slice
  EXPECT_CL(CL_INVALID_VALUE, read(plane, zero, plane_region, 0, 4096));  // 2D images have no slices
  EXPECT_CL(CL_INVALID_VALUE, read(plane, {0, 0, 1}, plane_region));
  EXPECT_CL(CL_INVALID_VALUE,
            clEnqueueReadImage(queue, volume, CL_TRUE, zero.data(), full.data(), 0, 0, nullptr, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE,
            clEnqueueReadImage(queue, volume, CL_TRUE, nullptr, full.data(), 0, 0, host.data(), 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_MEM_OBJECT, read(buffer, zero, {1, 1, 1}));
  EXPECT_CL(CL_INVALID_COMMAND_QUEUE, clEnqueueReadImage(nullptr, volume, CL_TRUE, zero.data(), full.data(), 0, 0,
                                                         host.data(), 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_OPERATION, read(hidden, zero, {4, 4, 1}));
  EXPECT_CL(CL_INVALID_OPERATION, clEnqueueWriteImage(queue, hidden, CL_TRUE, zero.data(), Size3{4, 4, 1}.data(), 0, 0,
                                                      host.data(), 0, nullptr, nullptr));

  EXPECT_CL(CL_IMAGE_FORMAT_MISMATCH,
            clEnqueueCopyImage(queue, volume, bytes, zero.data(), zero.data(), full.data(), 0, nullptr, nullptr));
  const Size3 near{1, 1, 1};
  EXPECT_CL(CL_MEM_COPY_OVERLAP, clEnqueueCopyImage(queue, volume, volume, zero.data(), near.data(),
                                                    Size3{4, 4, 4}.data(), 0, nullptr, nullptr));
  EXPECT_CL(CL_SUCCESS, clEnqueueCopyImage(queue, volume, volume, zero.data(), Size3{4, 0, 0}.data(),
                                           Size3{4, 4, 4}.data(), 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE,
            clEnqueueFillImage(queue, volume, nullptr, zero.data(), full.data(), 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE,
            clEnqueueCopyImageToBuffer(queue, volume, buffer, zero.data(), full.data(), 0, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_MEM_OBJECT,
            clEnqueueCopyImageToBuffer(queue, buffer, buffer, zero.data(), full.data(), 0, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_MEM_OBJECT,
            clEnqueueCopyBufferToImage(queue, volume, volume, 0, zero.data(), full.data(), 0, nullptr, nullptr));
  size_t row = 0;
  cl_int err;
  EXPECT_EQ(nullptr, clEnqueueMapImage(queue, volume, CL_TRUE, CL_MAP_READ, zero.data(), full.data(), &row, nullptr, 0,
                                       nullptr, nullptr, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);  // a 3D map needs somewhere to put its slice pitch
  EXPECT_EQ(nullptr, clEnqueueMapImage(queue, volume, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE_INVALIDATE_REGION,
                                       zero.data(), full.data(), &row, &row, 0, nullptr, nullptr, &err));
  EXPECT_CL(CL_INVALID_VALUE, err);
  ASSERT_CL_OK(clFinish(queue));
  for (cl_mem mem : {volume, plane, bytes, hidden, buffer}) clReleaseMemObject(mem);
}

TEST_F(ImageTest, RectangleTransfersFollowTheirPitches) {
  const size_t size = 2048;
  std::vector<uint8_t> device_model(size, 0);
  cl_mem buffer = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, size, device_model.data());
  std::vector<uint8_t> host = pattern(4096, 5);

  // Write a 7x3x2 box from host (pitches 16/80, at (5,1,2)) into the buffer (pitches 20/100, at (3,2,1)).
  const Size3 buffer_origin{3, 2, 1}, host_origin{5, 1, 2}, region{7, 3, 2};
  const Layout buffer_layout{20, 100}, host_layout{16, 80};
  ASSERT_CL_OK(clEnqueueWriteBufferRect(queue, buffer, CL_TRUE, buffer_origin.data(), host_origin.data(), region.data(),
                                        buffer_layout.row_pitch, buffer_layout.slice_pitch, host_layout.row_pitch,
                                        host_layout.slice_pitch, host.data(), 0, nullptr, nullptr));
  copy_rect(device_model.data(), buffer_origin, buffer_layout, host.data(), host_origin, host_layout, region);
  std::vector<uint8_t> whole(size);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, size, whole.data(), 0, nullptr, nullptr));
  EXPECT_EQ(device_model, whole);

  // Read it back, non-blocking, into other host pitches (33 per row, 198 per slice).
  const Layout read_layout{33, 198};
  const Size3 read_origin{1, 1, 1};
  std::vector<uint8_t> got(2048, 0), want(2048, 0);
  ASSERT_CL_OK(clEnqueueReadBufferRect(queue, buffer, CL_FALSE, buffer_origin.data(), read_origin.data(), region.data(),
                                       buffer_layout.row_pitch, buffer_layout.slice_pitch, read_layout.row_pitch,
                                       read_layout.slice_pitch, got.data(), 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(queue));
  copy_rect(want.data(), read_origin, read_layout, device_model.data(), buffer_origin, buffer_layout, region);
  EXPECT_EQ(want, got);

  // Copy the box to another buffer with other pitches; zero pitches mean tight ones.
  std::vector<uint8_t> other_model(size, 0);
  cl_mem other = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, size, other_model.data());
  const Size3 dst_origin{2, 0, 3};
  ASSERT_CL_OK(clEnqueueCopyBufferRect(queue, buffer, other, buffer_origin.data(), dst_origin.data(), region.data(),
                                       buffer_layout.row_pitch, buffer_layout.slice_pitch, 0, 0, 0, nullptr, nullptr));
  copy_rect(other_model.data(), dst_origin, {region[0], region[0] * region[1]}, device_model.data(), buffer_origin,
            buffer_layout, region);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, other, CL_TRUE, 0, size, whole.data(), 0, nullptr, nullptr));
  EXPECT_EQ(other_model, whole);

  auto read_rect = [&](const Size3 &origin, const Size3 &extent, size_t row, size_t slice, size_t host_row = 0,
                       size_t host_slice = 0, void *ptr = nullptr) {
    const Size3 at_zero{0, 0, 0};
    return clEnqueueReadBufferRect(queue, buffer, CL_TRUE, origin.data(), at_zero.data(), extent.data(), row, slice,
                                   host_row, host_slice, ptr ? ptr : got.data(), 0, nullptr, nullptr);
  };
  EXPECT_CL(CL_INVALID_VALUE, read_rect(buffer_origin, region, 20, 1000));  // past the end
  EXPECT_CL(CL_INVALID_VALUE, read_rect(buffer_origin, region, 5, 0));      // row pitch below a row
  EXPECT_CL(CL_INVALID_VALUE, read_rect(buffer_origin, region, 20, 70));    // slice not whole rows
  EXPECT_CL(CL_INVALID_VALUE, read_rect(buffer_origin, region, 20, 100, 10, 10));
  EXPECT_CL(CL_INVALID_VALUE, read_rect(buffer_origin, {0, 1, 1}, 20, 100));
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueReadBufferRect(queue, buffer, CL_TRUE, nullptr, read_origin.data(),
                                                      region.data(), 20, 100, 0, 0, got.data(), 0, nullptr, nullptr));
  const Size3 overlapping{3, 2, 1}, apart{0, 0, 10};
  EXPECT_CL(CL_MEM_COPY_OVERLAP, clEnqueueCopyBufferRect(queue, buffer, buffer, read_origin.data(), overlapping.data(),
                                                         region.data(), 20, 100, 20, 100, 0, nullptr, nullptr));
  EXPECT_CL(CL_SUCCESS, clEnqueueCopyBufferRect(queue, buffer, buffer, read_origin.data(), apart.data(), region.data(),
                                                20, 100, 20, 100, 0, nullptr, nullptr));
  EXPECT_CL(CL_INVALID_VALUE, clEnqueueCopyBufferRect(queue, buffer, buffer, read_origin.data(), apart.data(),
                                                      region.data(), 20, 100, 30, 100, 0, nullptr, nullptr));
  cl_mem hidden = create_buffer(context, CL_MEM_HOST_NO_ACCESS, size);
  const Size3 at_zero{0, 0, 0};
  EXPECT_CL(CL_INVALID_OPERATION, clEnqueueReadBufferRect(queue, hidden, CL_TRUE, at_zero.data(), at_zero.data(),
                                                          region.data(), 0, 0, 0, 0, got.data(), 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(queue));
  for (cl_mem mem : {buffer, other, hidden}) clReleaseMemObject(mem);
}

// Rectangle rows longer than a chunk travel in parts of rows, each landing at its pitches.
TEST_F(ImageTest, LongRectangleRowsTravelInParts) {
  const size_t row = (3 << 20) + 5, size = 10 << 20;
  const Size3 buffer_origin{7, 1, 0}, host_origin{3, 0, 0}, region{row, 2, 1};
  const Layout buffer_layout{row + 100, 0}, host_layout{row + 17, 0};
  std::vector<uint8_t> device_model = pattern(size, 9), host = pattern(host_layout.row_pitch * 2 + 3, 10);
  cl_mem buffer = create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, size, device_model.data());
  ASSERT_CL_OK(clEnqueueWriteBufferRect(queue, buffer, CL_FALSE, buffer_origin.data(), host_origin.data(), region.data(),
                                        buffer_layout.row_pitch, 0, host_layout.row_pitch, 0, host.data(), 0, nullptr,
                                        nullptr));
  copy_rect(device_model.data(), buffer_origin, buffer_layout, host.data(), host_origin, host_layout, region);
  std::vector<uint8_t> whole(size);
  ASSERT_CL_OK(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, size, whole.data(), 0, nullptr, nullptr));
  EXPECT_TRUE(device_model == whole) << "the buffer after the rectangle write differs";

  const Layout read_layout{row + 33, 0};
  std::vector<uint8_t> got(read_layout.row_pitch * 2, 0xEE), want = got;
  const Size3 zero{0, 0, 0};
  ASSERT_CL_OK(clEnqueueReadBufferRect(queue, buffer, CL_TRUE, buffer_origin.data(), zero.data(), region.data(),
                                       buffer_layout.row_pitch, 0, read_layout.row_pitch, 0, got.data(), 0, nullptr,
                                       nullptr));
  copy_rect(want.data(), zero, read_layout, device_model.data(), buffer_origin, buffer_layout, region);
  EXPECT_TRUE(want == got) << "the rectangle read back differs";
  clReleaseMemObject(buffer);
}

namespace {

struct ImagesOnTwoDaemons : ::testing::Test {
  Cluster cluster{2};
  cl_context context = nullptr;
  cl_command_queue queue[2] = {};

  void SetUp() override {
    ASSERT_EQ(2u, cluster.devices.size());
    cl_int err;
    context = clCreateContext(nullptr, 2, cluster.devices.data(), nullptr, nullptr, &err);
    ASSERT_CL_OK(err);
    for (int d = 0; d < 2; d++) queue[d] = create_queue(context, cluster.devices[d]);
  }
};

}  // namespace

TEST_F(ImagesOnTwoDaemons, ImagesFollowTheWorkBetweenDaemons) {
  const size_t width = 16, height = 4;
  cl_int err;
  const cl_image_desc desc2d = image_desc(CL_MEM_OBJECT_IMAGE2D, width, height);
  cl_mem img = clCreateImage(context, CL_MEM_READ_WRITE, &kRFloat, &desc2d, nullptr, &err);
  ASSERT_CL_OK(err);
  std::vector<float> texels(width * height);
  std::iota(texels.begin(), texels.end(), 0.0f);
  const Size3 zero{0, 0, 0}, full{width, height, 1};
  // Written through daemon 0, doubled by a kernel on daemon 1, read back through daemon 0.
  ASSERT_CL_OK(
      clEnqueueWriteImage(queue[0], img, CL_TRUE, zero.data(), full.data(), 0, 0, texels.data(), 0, nullptr, nullptr));
  cl_program program = build_program(context, R"(
    __kernel void twice(read_only image2d_t in, write_only image2d_t out, sampler_t s) {
      int2 p = (int2)(get_global_id(0), get_global_id(1));
      write_imagef(out, p, read_imagef(in, s, p) * 2.0f);
    }
    __kernel void read_view(read_only image1d_buffer_t in, __global float *out) {
      int i = get_global_id(0);
      out[i] = read_imagef(in, i).x;
    })");
  cl_kernel kernel = create_kernel(program, "twice");
  cl_mem doubled = clCreateImage2D(context, CL_MEM_READ_WRITE, &kRFloat, width, height, 0, nullptr, &err);
  ASSERT_CL_OK(err);
  cl_sampler sampler = clCreateSampler(context, CL_FALSE, CL_ADDRESS_NONE, CL_FILTER_NEAREST, &err);
  ASSERT_CL_OK(err);
  set_arg(kernel, 0, img);
  set_arg(kernel, 1, doubled);
  set_arg(kernel, 2, sampler);
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[1], kernel, 2, nullptr, full.data(), nullptr, 0, nullptr, nullptr));
  ASSERT_CL_OK(clFinish(queue[1]));
  std::vector<float> got(width * height);
  ASSERT_CL_OK(
      clEnqueueReadImage(queue[0], doubled, CL_TRUE, zero.data(), full.data(), 0, 0, got.data(), 0, nullptr, nullptr));
  for (size_t i = 0; i < got.size(); i++) ASSERT_EQ(2.0f * texels[i], got[i]) << i;

  // An image over a buffer written on daemon 0, read by a kernel on daemon 1 (PoCL 3.1 cannot copy
  // from an image over a buffer with clEnqueueCopyImageToBuffer: it crashes).
  cl_mem buffer =
      create_buffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, width * sizeof(float), texels.data());
  cl_image_desc desc = image_desc(CL_MEM_OBJECT_IMAGE1D_BUFFER, width);
  desc.buffer = buffer;
  cl_mem view = clCreateImage(context, 0, &kRFloat, &desc, nullptr, &err);
  ASSERT_CL_OK(err);
  std::vector<float> fresh(width, 42.0f);
  ASSERT_CL_OK(
      clEnqueueWriteBuffer(queue[0], buffer, CL_TRUE, 0, width * sizeof(float), fresh.data(), 0, nullptr, nullptr));
  cl_mem copy = create_buffer(context, CL_MEM_READ_WRITE, width * sizeof(float));
  cl_kernel reader = create_kernel(program, "read_view");
  set_arg(reader, 0, view);
  set_arg(reader, 1, copy);
  ASSERT_CL_OK(clEnqueueNDRangeKernel(queue[1], reader, 1, nullptr, &width, nullptr, 0, nullptr, nullptr));
  std::vector<float> copied(width);
  ASSERT_CL_OK(
      clEnqueueReadBuffer(queue[1], copy, CL_TRUE, 0, width * sizeof(float), copied.data(), 0, nullptr, nullptr));
  EXPECT_EQ(fresh, copied);

  clReleaseKernel(reader);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseSampler(sampler);
  for (cl_mem mem : {img, doubled, buffer, view, copy}) clReleaseMemObject(mem);
}
