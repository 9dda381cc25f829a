#include "image.h"

#include <algorithm>
#include <cstring>

#include "image_layout.h"

namespace fedcl {

std::array<size_t, 3> image_full_region(cl_mem image) {
  const cl_image_desc &desc = image->image_desc;
  return fedcl::image_full_region(image->type, desc.image_width, desc.image_height, desc.image_depth,
                                  desc.image_array_size);
}

void image_fill_create(wire::Request::CreateImage::Builder create, cl_mem image) {
  const cl_image_desc &desc = image->image_desc;
  create.setId(image->id);
  create.setContext(image->context->id);
  create.setFlags(backend_flags(image));
  auto format = create.initFormat();
  format.setChannelOrder(image->image_format.image_channel_order);
  format.setChannelType(image->image_format.image_channel_data_type);
  auto out = create.initDesc();
  out.setType(image->type);
  out.setWidth(desc.image_width);
  out.setHeight(desc.image_height);
  out.setDepth(desc.image_depth);
  out.setArraySize(desc.image_array_size);
  out.setNumMipLevels(desc.num_mip_levels);
  out.setNumSamples(desc.num_samples);
  if (image->parent) {
    // Only an image over a buffer has pitches of its own on the daemon; the others are tight there.
    out.setBuffer(image->parent->id);
    if (!image->parent->is_image()) {
      out.setRowPitch(desc.image_row_pitch);
      out.setSlicePitch(desc.image_slice_pitch);
    }
  }
}

cl_int image_formats(Connection *connection, cl_context context, cl_mem_flags flags, cl_mem_object_type type,
                     std::vector<cl_image_format> *formats) {
  RequestMessage request;
  auto get = request.root.initGetSupportedImageFormats();
  get.setContext(context->id);
  get.setFlags(flags);
  get.setType(type);
  auto pending = connection->call(request);
  if (pending->status != CL_SUCCESS) return pending->status;
  auto bytes = pending->reply().getInfo();
  formats->resize(bytes.size() / sizeof(cl_image_format));
  std::memcpy(formats->data(), bytes.begin(), formats->size() * sizeof(cl_image_format));
  return CL_SUCCESS;
}

BuildRequest image_copy(cl_mem src, cl_mem dst, const size_t *src_origin, const size_t *dst_origin,
                        const size_t *region) {
  auto from = triple(src_origin), to = triple(dst_origin), extent = triple(region);
  return copy_request(src, dst, &wire::Request::Builder::initCopyImage, [=](auto copy) {
    set_triple(copy.initSrcOrigin(3), from.data());
    set_triple(copy.initDstOrigin(3), to.data());
    set_triple(copy.initRegion(3), extent.data());
  });
}

BuildRequest image_fill(cl_mem image, const uint8_t *color, const size_t *origin, const size_t *region) {
  uint64_t id = image->id;
  std::array<uint8_t, 16> bytes;
  std::memcpy(bytes.data(), color, bytes.size());
  auto at = triple(origin), extent = triple(region);
  return [=](wire::Request::Builder request) {
    auto fill = request.initFillImage();
    fill.setImage(id);
    fill.setColor(kj::arrayPtr(bytes.data(), bytes.size()));
    set_triple(fill.initOrigin(3), at.data());
    set_triple(fill.initRegion(3), extent.data());
    return fill.getCommand();
  };
}

BuildRequest image_to_buffer_copy(cl_mem src, cl_mem dst, const size_t *src_origin, const size_t *region,
                                  size_t dst_offset) {
  auto from = triple(src_origin), extent = triple(region);
  return copy_request(src, dst, &wire::Request::Builder::initCopyImageToBuffer, [=](auto copy) {
    set_triple(copy.initSrcOrigin(3), from.data());
    set_triple(copy.initRegion(3), extent.data());
    copy.setDstOffset(dst_offset);
  });
}

BuildRequest buffer_to_image_copy(cl_mem src, cl_mem dst, size_t src_offset, const size_t *dst_origin,
                                  const size_t *region) {
  auto to = triple(dst_origin), extent = triple(region);
  return copy_request(src, dst, &wire::Request::Builder::initCopyBufferToImage, [=](auto copy) {
    copy.setSrcOffset(src_offset);
    set_triple(copy.initDstOrigin(3), to.data());
    set_triple(copy.initRegion(3), extent.data());
  });
}

cl_int sampler_create(cl_sampler sampler) {
  cl_context context = sampler->context;
  for (const ContextPart &part : context->parts) {
    RequestMessage request;
    auto create = request.root.initCreateSampler();
    create.setId(sampler->id);
    create.setContext(context->id);
    const uint64_t properties[] = {CL_SAMPLER_NORMALIZED_COORDS, sampler->normalized_coords,
                                   CL_SAMPLER_ADDRESSING_MODE,   sampler->addressing_mode,
                                   CL_SAMPLER_FILTER_MODE,       sampler->filter_mode};
    auto list = create.initProperties(6);
    for (unsigned i = 0; i < 6; i++) list.set(i, properties[i]);
    cl_int err = part.connection->post(request);
    if (err != CL_SUCCESS) return err;
  }
  return CL_SUCCESS;
}

BuildPiece image_transfer(cl_mem image, const size_t *origin, bool write) {
  std::array<size_t, 3> at{origin[0], origin[1], origin[2]};
  uint64_t id = image->id;
  size_t element = image->element_size;
  return [id, at, element, write](wire::Request::Builder request, const RegionPiece &piece) {
    const size_t piece_at[3] = {at[0] + piece.x / element, at[1] + piece.y, at[2] + piece.z};
    const size_t extent[3] = {piece.width / element, piece.rows, piece.slices};
    auto fill = [&](auto transfer) {
      transfer.setImage(id);
      auto origin_list = transfer.initOrigin(3);
      auto region_list = transfer.initRegion(3);
      for (unsigned i = 0; i < 3; i++) {
        origin_list.set(i, piece_at[i]);
        region_list.set(i, extent[i]);
      }
      return transfer.getCommand();
    };
    return write ? fill(request.initWriteImage()) : fill(request.initReadImage());
  };
}

std::pair<wire::Command::Builder, size_t> image_whole_transfer(wire::Request::Builder request, cl_mem image,
                                                               bool write) {
  auto full = image_full_region(image);
  const size_t origin[3] = {0, 0, 0};
  size_t row_bytes = image->element_size * full[0];
  return {image_transfer(image, origin, write)(request, {0, row_bytes, 0, full[1], 0, full[2]}),
          row_bytes * full[1] * full[2]};
}

HostRegion image_host_region(cl_mem image, void *base, const size_t *region, size_t row_pitch, size_t slice_pitch) {
  // A 1D array's layers are the region's rows: they lie slice_pitch apart.
  bool layers_as_rows = image->type == CL_MEM_OBJECT_IMAGE1D_ARRAY;
  return HostRegion{static_cast<uint8_t *>(base),
                    region[0] * image->element_size,
                    region[1],
                    region[2],
                    layers_as_rows ? slice_pitch : row_pitch,
                    slice_pitch};
}

size_t image_offset(cl_mem image, const size_t *origin, size_t row_pitch, size_t slice_pitch) {
  bool layers_as_rows = image->type == CL_MEM_OBJECT_IMAGE1D_ARRAY;
  return origin[0] * image->element_size + origin[1] * (layers_as_rows ? slice_pitch : row_pitch) +
         origin[2] * slice_pitch;
}

cl_int image_write_back(cl_command_queue queue, cl_mem image, const _cl_mem::Mapping &mapping, cl_uint num_events,
                        const cl_event *wait_list, cl_event *event) {
  auto full = image_full_region(image);
  bool whole = std::equal(full.begin(), full.end(), mapping.region);
  return host_write(queue, image, MemSpan::whole(whole),
                    image_host_region(image, mapping.pointer, mapping.region, mapping.row_pitch, mapping.slice_pitch),
                    image_transfer(image, mapping.origin, true), num_events, wait_list, event,
                    CL_COMMAND_UNMAP_MEM_OBJECT);
}

}  // namespace fedcl
