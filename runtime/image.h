// Images as the runtime sees them: how one is created on a daemon, moved whole between daemons,
// and laid out in host memory; the device commands on them; and samplers.
#pragma once

#include <array>
#include <utility>
#include <vector>

#include "handles.h"
#include "transfer.h"

namespace fedcl {

// The region a whole image spans (width, then height or layers, then depth or layers).
std::array<size_t, 3> image_full_region(cl_mem image);

// The createImage request for image, without initial contents.
void image_fill_create(wire::Request::CreateImage::Builder create, cl_mem image);

// The image formats connection's daemon supports for context, flags and type (clGetSupportedImageFormats).
cl_int image_formats(Connection *connection, cl_context context, cl_mem_flags flags, cl_mem_object_type type,
                     std::vector<cl_image_format> *formats);

// The device commands on images, for device_command; color: a fill's 16 bytes.
BuildRequest image_copy(cl_mem src, cl_mem dst, const size_t *src_origin, const size_t *dst_origin,
                        const size_t *region);
BuildRequest image_fill(cl_mem image, const uint8_t *color, const size_t *origin, const size_t *region);
BuildRequest image_to_buffer_copy(cl_mem src, cl_mem dst, const size_t *src_origin, const size_t *region,
                                  size_t dst_offset);
BuildRequest buffer_to_image_copy(cl_mem src, cl_mem dst, size_t src_offset, const size_t *dst_origin,
                                  const size_t *region);

// Creates sampler on every daemon of its context; returns the first failure.
cl_int sampler_create(cl_sampler sampler);

// The pieces of a region of image at origin as reads (write false) or writes.
BuildPiece image_transfer(cl_mem image, const size_t *origin, bool write);

// The request that reads (write false) or writes all of image, and the bytes that travel with it.
std::pair<wire::Command::Builder, size_t> image_whole_transfer(wire::Request::Builder request, cl_mem image,
                                                               bool write);

// Host memory holding region of image with the given pitches, in the convention of the image
// commands: row_pitch between rows, slice_pitch between 2D slices or between the layers of a
// 1D or 2D array.
HostRegion image_host_region(cl_mem image, void *base, const size_t *region, size_t row_pitch, size_t slice_pitch);

// The offset of origin in memory laid out with those pitches.
size_t image_offset(cl_mem image, const size_t *origin, size_t row_pitch, size_t slice_pitch);

// The unmap of a write map of image: the mapped region goes back to the daemon.
cl_int image_write_back(cl_command_queue queue, cl_mem image, const _cl_mem::Mapping &mapping, cl_uint num_events,
                        const cl_event *wait_list, cl_event *event);

}  // namespace fedcl
