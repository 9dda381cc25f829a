// Images, samplers and rectangular buffer transfers. Host-side pitches are the client's business:
// every payload here is tightly packed, and reads answer tightly packed.
#include "device_commands.h"
#include "exec.h"
#include "image_layout.h"
#include "off_loop.h"

namespace fedcld {

namespace {

// The bytes of region x element_size, refused past limit (what the object holds): the backend
// checks the bounds, but fedcld allocates before it asks.
uint64_t packed_bytes(const Triple &region, uint64_t element_size, uint64_t limit) {
  uint64_t bytes = element_size;
  for (size_t extent : region.v)
    if (__builtin_mul_overflow(bytes, uint64_t(extent), &bytes)) bytes = UINT64_MAX;
  if (bytes > limit) fail(CL_INVALID_VALUE, "the region is larger than the memory object");
  return bytes;
}

template <typename T>
T image_info(cl_mem image, cl_image_info param) {
  T value{};
  check(clGetImageInfo(image, param, sizeof value, &value, nullptr), "clGetImageInfo");
  return value;
}

// What a whole image holds, tightly packed, and the size of one element.
struct ImageSize {
  uint64_t element_size, bytes;
};

ImageSize image_size(cl_mem image) {
  cl_mem_object_type type = 0;
  check(clGetMemObjectInfo(image, CL_MEM_TYPE, sizeof type, &type, nullptr), "clGetMemObjectInfo");
  if (type == CL_MEM_OBJECT_BUFFER || type == CL_MEM_OBJECT_PIPE) fail(CL_INVALID_MEM_OBJECT, "not an image");
  auto full = fedcl::image_full_region(
      type, image_info<size_t>(image, CL_IMAGE_WIDTH), image_info<size_t>(image, CL_IMAGE_HEIGHT),
      image_info<size_t>(image, CL_IMAGE_DEPTH), image_info<size_t>(image, CL_IMAGE_ARRAY_SIZE));
  uint64_t element = image_info<size_t>(image, CL_IMAGE_ELEMENT_SIZE);
  return {element, packed_bytes(Triple{{full[0], full[1], full[2]}}, element, UINT64_MAX)};
}

uint64_t buffer_size(cl_mem buffer) {
  size_t size = 0;
  check(clGetMemObjectInfo(buffer, CL_MEM_SIZE, sizeof size, &size, nullptr), "clGetMemObjectInfo");
  return size;
}

cl_mem mem(Call &call, uint64_t id) { return call.session.objects().handle<cl_mem>(id, ObjectKind::mem); }

// A write's payload, kept alive until the backend has copied it.
std::shared_ptr<uint8_t[]> write_payload(Frame &frame, uint64_t expected) {
  return take_payload(frame, expected, "the payload does not match the region");
}

}  // namespace

void exec_create_image(Call &call, wire::Request::CreateImage::Reader request, Frame &frame) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  auto context = objects.handle<cl_context>(request.getContext(), ObjectKind::context);
  cl_image_format format{request.getFormat().getChannelOrder(), request.getFormat().getChannelType()};
  auto wire_desc = request.getDesc();
  cl_image_desc desc{};
  desc.image_type = wire_desc.getType();
  desc.image_width = wire_desc.getWidth();
  desc.image_height = wire_desc.getHeight();
  desc.image_depth = wire_desc.getDepth();
  desc.image_array_size = wire_desc.getArraySize();
  desc.image_row_pitch = wire_desc.getRowPitch();
  desc.image_slice_pitch = wire_desc.getSlicePitch();
  desc.num_mip_levels = wire_desc.getNumMipLevels();
  desc.num_samples = wire_desc.getNumSamples();
  if (wire_desc.getBuffer()) desc.buffer = mem(call, wire_desc.getBuffer());
  cl_mem_flags flags = request.getFlags() & ~cl_mem_flags(CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR);
  std::shared_ptr<uint8_t[]> contents;
  uint64_t bytes = 0;
  if (request.getInitialContents()) {
    if (desc.buffer || desc.image_row_pitch || desc.image_slice_pitch)
      fail(CL_INVALID_VALUE, "initial contents are tightly packed and need an image of its own");
    auto full = fedcl::image_full_region(desc.image_type, desc.image_width, desc.image_height, desc.image_depth,
                                         desc.image_array_size);
    size_t element = fedcl::image_element_size(format, true);  // the backend judges the pair
    if (element == 0) fail(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, "unknown image format");
    bytes = packed_bytes(Triple{{full[0], full[1], full[2]}}, element, UINT64_MAX);
    contents = take_payload(frame, bytes, "the image's contents do not match its size");
    flags |= CL_MEM_COPY_HOST_PTR;
  }
  make_mem_object(call, request.getId(), context, bytes, 0, std::move(contents), "clCreateImage",
                  [context, flags, format, desc](void *host, cl_int *err) {
                    return clCreateImage(context, flags, &format, &desc, host, err);
                  });
}

void exec_create_sampler(Call &call, wire::Request::CreateSampler::Reader request) {
  call.object = request.getId();
  ObjectTable &objects = call.session.objects();
  auto context = objects.handle<cl_context>(request.getContext(), ObjectKind::context);
  std::vector<cl_sampler_properties> properties;
  for (uint64_t value : request.getProperties()) properties.push_back(value);
  properties.push_back(0);
  cl_int err = CL_SUCCESS;
  cl_sampler sampler = clCreateSamplerWithProperties(context, properties.data(), &err);
  check(err, "clCreateSamplerWithProperties");
  objects.add(request.getId(), ObjectKind::sampler, sampler, context);
}

void exec_get_supported_image_formats(Call &call, wire::Request::GetSupportedImageFormats::Reader request) {
  call.object = request.getContext();
  auto context = call.session.objects().handle<cl_context>(request.getContext(), ObjectKind::context);
  cl_uint count = 0;
  check(clGetSupportedImageFormats(context, request.getFlags(), request.getType(), 0, nullptr, &count),
        "clGetSupportedImageFormats");
  std::vector<cl_image_format> formats(count);
  if (count)
    check(clGetSupportedImageFormats(context, request.getFlags(), request.getType(), count, formats.data(), nullptr),
          "clGetSupportedImageFormats");
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Reply>();
  reply.setSeq(call.seq);
  reply.setInfo(
      kj::arrayPtr(reinterpret_cast<const kj::byte *>(formats.data()), formats.size() * sizeof(cl_image_format)));
  call.session.send_reply(message);
  call.replied = true;
}

void exec_read_image(Call &call, wire::Request::ReadImage::Reader request) {
  Resolved r = resolve(call, request.getCommand());
  cl_mem image = mem(call, request.getImage());
  Triple at = origin(request.getOrigin()), extent = region(request.getRegion());
  ImageSize size = image_size(image);
  uint64_t bytes = packed_bytes(extent, size.element_size, size.bytes);
  auto data = read_buffer_for(call, bytes);
  check(clEnqueueReadImage(r.queue, image, CL_FALSE, at.v, extent.v, 0, 0, data.get(), r.wait_count(), r.wait_ptr(),
                           &r.event),
        "clEnqueueReadImage");
  track_read(call, r, data, bytes);
}

void exec_write_image(Call &call, wire::Request::WriteImage::Reader request, Frame &frame) {
  Resolved r = resolve(call, request.getCommand());
  cl_mem image = mem(call, request.getImage());
  Triple at = origin(request.getOrigin()), extent = region(request.getRegion());
  ImageSize size = image_size(image);
  auto data = write_payload(frame, packed_bytes(extent, size.element_size, size.bytes));
  check(clEnqueueWriteImage(r.queue, image, CL_FALSE, at.v, extent.v, 0, 0, data.get(), r.wait_count(), r.wait_ptr(),
                            &r.event),
        "clEnqueueWriteImage");
  track(call, r, [data](Session &, cl_int, const uint64_t *) {});
}

// Rectangles: the host side is tight (row pitch region[0], slice pitch region[0] * region[1]),
// which the backend computes from zero pitches.
void exec_read_buffer_rect(Call &call, wire::Request::ReadBufferRect::Reader request) {
  Resolved r = resolve(call, request.getCommand());
  cl_mem buffer = mem(call, request.getBuffer());
  Triple at = origin(request.getBufferOrigin()), extent = region(request.getRegion());
  const size_t host_origin[3] = {0, 0, 0};
  uint64_t bytes = packed_bytes(extent, 1, buffer_size(buffer));
  auto data = read_buffer_for(call, bytes);
  check(
      clEnqueueReadBufferRect(r.queue, buffer, CL_FALSE, at.v, host_origin, extent.v, request.getBufferRowPitch(),
                              request.getBufferSlicePitch(), 0, 0, data.get(), r.wait_count(), r.wait_ptr(), &r.event),
      "clEnqueueReadBufferRect");
  track_read(call, r, data, bytes);
}

void exec_write_buffer_rect(Call &call, wire::Request::WriteBufferRect::Reader request, Frame &frame) {
  Resolved r = resolve(call, request.getCommand());
  cl_mem buffer = mem(call, request.getBuffer());
  Triple at = origin(request.getBufferOrigin()), extent = region(request.getRegion());
  const size_t host_origin[3] = {0, 0, 0};
  auto data = write_payload(frame, packed_bytes(extent, 1, buffer_size(buffer)));
  check(
      clEnqueueWriteBufferRect(r.queue, buffer, CL_FALSE, at.v, host_origin, extent.v, request.getBufferRowPitch(),
                               request.getBufferSlicePitch(), 0, 0, data.get(), r.wait_count(), r.wait_ptr(), &r.event),
      "clEnqueueWriteBufferRect");
  track(call, r, [data](Session &, cl_int, const uint64_t *) {});
}

}  // namespace fedcld
