#include "device_commands.h"

namespace fedcld {

namespace {

Triple triple(capnp::List<uint64_t>::Reader list, size_t missing) {
  if (list.size() > 3) fail(CL_INVALID_VALUE, "an origin or region has more than three values");
  Triple t{{missing, missing, missing}};
  for (unsigned i = 0; i < list.size(); i++) t.v[i] = list[i];
  return t;
}

}  // namespace

Triple origin(capnp::List<uint64_t>::Reader list) { return triple(list, 0); }
Triple region(capnp::List<uint64_t>::Reader list) { return triple(list, 1); }

DeviceCommand describe_device_command(ObjectTable &objects, wire::Request::Reader request) {
  auto mem = [&](uint64_t id) { return objects.handle<cl_mem>(id, ObjectKind::mem); };
  switch (request.which()) {
    case wire::Request::COPY_BUFFER: {
      auto copy = request.getCopyBuffer();
      cl_mem src = mem(copy.getSrc()), dst = mem(copy.getDst());
      size_t src_offset = copy.getSrcOffset(), dst_offset = copy.getDstOffset(), size = copy.getSize();
      return {"clEnqueueCopyBuffer", {src, dst}, [=](cl_command_queue q, cl_uint n, const cl_event *w, cl_event *e) {
                return clEnqueueCopyBuffer(q, src, dst, src_offset, dst_offset, size, n, w, e);
              }};
    }
    case wire::Request::FILL_BUFFER: {
      auto fill = request.getFillBuffer();
      cl_mem buffer = mem(fill.getBuffer());
      auto bytes = fill.getPattern();
      std::vector<uint8_t> pattern(bytes.begin(), bytes.end());
      size_t offset = fill.getOffset(), size = fill.getSize();
      return {"clEnqueueFillBuffer", {buffer}, [=](cl_command_queue q, cl_uint n, const cl_event *w, cl_event *e) {
                return clEnqueueFillBuffer(q, buffer, pattern.data(), pattern.size(), offset, size, n, w, e);
              }};
    }
    case wire::Request::COPY_BUFFER_RECT: {
      auto copy = request.getCopyBufferRect();
      cl_mem src = mem(copy.getSrc()), dst = mem(copy.getDst());
      Triple src_at = origin(copy.getSrcOrigin()), dst_at = origin(copy.getDstOrigin()), extent = region(copy.getRegion());
      size_t pitches[4] = {copy.getSrcRowPitch(), copy.getSrcSlicePitch(), copy.getDstRowPitch(), copy.getDstSlicePitch()};
      return {"clEnqueueCopyBufferRect", {src, dst}, [=](cl_command_queue q, cl_uint n, const cl_event *w, cl_event *e) {
                return clEnqueueCopyBufferRect(q, src, dst, src_at.v, dst_at.v, extent.v, pitches[0], pitches[1],
                                               pitches[2], pitches[3], n, w, e);
              }};
    }
    case wire::Request::COPY_IMAGE: {
      auto copy = request.getCopyImage();
      cl_mem src = mem(copy.getSrc()), dst = mem(copy.getDst());
      Triple src_at = origin(copy.getSrcOrigin()), dst_at = origin(copy.getDstOrigin()), extent = region(copy.getRegion());
      return {"clEnqueueCopyImage", {src, dst}, [=](cl_command_queue q, cl_uint n, const cl_event *w, cl_event *e) {
                return clEnqueueCopyImage(q, src, dst, src_at.v, dst_at.v, extent.v, n, w, e);
              }};
    }
    case wire::Request::FILL_IMAGE: {
      auto fill = request.getFillImage();
      cl_mem image = mem(fill.getImage());
      auto bytes = fill.getColor();
      if (bytes.size() != 16) fail(CL_INVALID_VALUE, "a fill color is 16 bytes");
      std::array<uint8_t, 16> color;
      std::copy(bytes.begin(), bytes.end(), color.begin());
      Triple at = origin(fill.getOrigin()), extent = region(fill.getRegion());
      return {"clEnqueueFillImage", {image}, [=](cl_command_queue q, cl_uint n, const cl_event *w, cl_event *e) {
                return clEnqueueFillImage(q, image, color.data(), at.v, extent.v, n, w, e);
              }};
    }
    case wire::Request::COPY_IMAGE_TO_BUFFER: {
      auto copy = request.getCopyImageToBuffer();
      cl_mem src = mem(copy.getSrc()), dst = mem(copy.getDst());
      Triple at = origin(copy.getSrcOrigin()), extent = region(copy.getRegion());
      size_t dst_offset = copy.getDstOffset();
      return {"clEnqueueCopyImageToBuffer", {src, dst}, [=](cl_command_queue q, cl_uint n, const cl_event *w, cl_event *e) {
                return clEnqueueCopyImageToBuffer(q, src, dst, at.v, extent.v, dst_offset, n, w, e);
              }};
    }
    case wire::Request::COPY_BUFFER_TO_IMAGE: {
      auto copy = request.getCopyBufferToImage();
      cl_mem src = mem(copy.getSrc()), dst = mem(copy.getDst());
      Triple at = origin(copy.getDstOrigin()), extent = region(copy.getRegion());
      size_t src_offset = copy.getSrcOffset();
      return {"clEnqueueCopyBufferToImage", {src, dst}, [=](cl_command_queue q, cl_uint n, const cl_event *w, cl_event *e) {
                return clEnqueueCopyBufferToImage(q, src, dst, src_offset, at.v, extent.v, n, w, e);
              }};
    }
    default: fail(CL_INVALID_OPERATION, "not a copy or fill command");
  }
}

void exec_device_command(Call &call, wire::Command::Reader command, wire::Request::Reader request) {
  Resolved r = resolve(call, command);
  DeviceCommand device_command = describe_device_command(call.session.objects(), request);
  check(device_command.enqueue(r.queue, r.wait_count(), r.wait_ptr(), event_out(call, r)), device_command.call);
  track(call, r);
}

}  // namespace fedcld
