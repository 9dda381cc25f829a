// Images, samplers and rectangular buffer transfers: checked here as the specification says, sent
// without waiting unless the call blocks. Host-side pitches are applied here; the wire carries every
// region tightly packed.
#include <algorithm>
#include <array>
#include <cstring>

#include "api.h"
#include "coherence.h"
#include "device.h"
#include "image.h"
#include "image_layout.h"
#include "info.h"
#include "mem_flags.h"
#include "transfer.h"

using namespace fedcl;

namespace {

// ---------------------------------------------------------------------------------------------
// Device capabilities

bool context_supports_images(cl_context context) {
  return std::any_of(context->devices.begin(), context->devices.end(), device_supports_images);
}

// The largest image of type that device takes, as (width, height, depth, array size) limits.
std::array<size_t, 4> image_limits(cl_device_id device, cl_mem_object_type type) {
  auto get = [&](cl_device_info param) { return device_scalar<size_t>(device, param); };
  size_t layers = get(CL_DEVICE_IMAGE_MAX_ARRAY_SIZE);
  switch (type) {
    case CL_MEM_OBJECT_IMAGE1D_BUFFER: return {get(CL_DEVICE_IMAGE_MAX_BUFFER_SIZE), 1, 1, 1};
    case CL_MEM_OBJECT_IMAGE1D: return {get(CL_DEVICE_IMAGE2D_MAX_WIDTH), 1, 1, 1};
    case CL_MEM_OBJECT_IMAGE1D_ARRAY: return {get(CL_DEVICE_IMAGE2D_MAX_WIDTH), 1, 1, layers};
    case CL_MEM_OBJECT_IMAGE2D: return {get(CL_DEVICE_IMAGE2D_MAX_WIDTH), get(CL_DEVICE_IMAGE2D_MAX_HEIGHT), 1, 1};
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
      return {get(CL_DEVICE_IMAGE2D_MAX_WIDTH), get(CL_DEVICE_IMAGE2D_MAX_HEIGHT), 1, layers};
    default:
      return {get(CL_DEVICE_IMAGE3D_MAX_WIDTH), get(CL_DEVICE_IMAGE3D_MAX_HEIGHT), get(CL_DEVICE_IMAGE3D_MAX_DEPTH), 1};
  }
}

bool is_image_type(cl_mem_object_type type) {
  switch (type) {
    case CL_MEM_OBJECT_IMAGE1D:
    case CL_MEM_OBJECT_IMAGE1D_BUFFER:
    case CL_MEM_OBJECT_IMAGE1D_ARRAY:
    case CL_MEM_OBJECT_IMAGE2D:
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
    case CL_MEM_OBJECT_IMAGE3D: return true;
    default: return false;
  }
}

bool is_array(cl_mem_object_type type) {
  return type == CL_MEM_OBJECT_IMAGE1D_ARRAY || type == CL_MEM_OBJECT_IMAGE2D_ARRAY;
}

// Types whose memory has slices: a slice pitch means something for them.
bool has_slices(cl_mem_object_type type) { return type == CL_MEM_OBJECT_IMAGE3D || is_array(type); }

// ---------------------------------------------------------------------------------------------
// Supported formats: asked of each daemon once per context, flags and type. The application's
// question travels with its flags as given, so that it gets the backend's answer (NVIDIA refuses
// host-access and host-pointer flags there: CL_INVALID_VALUE); fedcl's own question, where to
// create an image, asks with the access flags alone, which every backend takes.

const cl_mem_flags kFormatFlags = kAccessFlags | CL_MEM_KERNEL_READ_AND_WRITE;

cl_mem_flags format_flags(cl_mem_flags flags) {
  flags &= kFormatFlags;
  return (flags & kAccessFlags) ? flags : flags | CL_MEM_READ_WRITE;
}

cl_int part_formats(cl_context context, const ContextPart &part, cl_mem_flags flags, cl_mem_object_type type,
                    std::vector<cl_image_format> *formats) {
  auto key = std::make_tuple(part.connection->index(), flags, type);
  {
    std::lock_guard<std::mutex> lock(context->mutex);
    auto it = context->image_formats.find(key);
    if (it != context->image_formats.end()) {
      *formats = it->second;
      return CL_SUCCESS;
    }
  }
  cl_int err = image_formats(part.connection, context, flags, type, formats);
  if (err != CL_SUCCESS) return err;
  std::lock_guard<std::mutex> lock(context->mutex);
  context->image_formats.emplace(key, *formats);
  return CL_SUCCESS;
}

bool same_format(const cl_image_format &a, const cl_image_format &b) {
  return a.image_channel_order == b.image_channel_order && a.image_channel_data_type == b.image_channel_data_type;
}

// The formats any device of the context supports (the specification's union), in daemon order.
cl_int context_formats(cl_context context, cl_mem_flags flags, cl_mem_object_type type,
                       std::vector<cl_image_format> *all) {
  all->clear();
  for (const ContextPart &part : context->parts) {
    std::vector<cl_image_format> formats;
    cl_int err = part_formats(context, part, flags, type, &formats);
    if (err != CL_SUCCESS) return err;
    for (const auto &format : formats)
      if (std::none_of(all->begin(), all->end(), [&](const auto &f) { return same_format(f, format); }))
        all->push_back(format);
  }
  return CL_SUCCESS;
}

// The first daemon of the context that supports format, or null.
const ContextPart *home_for(cl_context context, cl_mem_flags flags, cl_mem_object_type type,
                            const cl_image_format &format, cl_int *err) {
  for (const ContextPart &part : context->parts) {
    std::vector<cl_image_format> formats;
    *err = part_formats(context, part, format_flags(flags), type, &formats);
    if (*err != CL_SUCCESS) return nullptr;
    if (std::any_of(formats.begin(), formats.end(), [&](const auto &f) { return same_format(f, format); }))
      return &part;
  }
  *err = CL_IMAGE_FORMAT_NOT_SUPPORTED;
  return nullptr;
}

// Whether a daemon of the context lists format as supported (for a pair outside the
// specification's table, which only a backend's list makes valid).
bool listed(cl_context context, cl_mem_flags flags, cl_mem_object_type type, const cl_image_format &format) {
  cl_int err = CL_SUCCESS;
  return home_for(context, flags, type, format, &err) != nullptr;
}

// ---------------------------------------------------------------------------------------------
// Creation

// Checks the description of an image made from mem_object (a buffer, or an image for a 2D view
// of one) and works out the flags and pitches it gets.
cl_int check_wrapped(cl_context context, cl_mem_flags *flags, cl_image_desc *desc, size_t element) {
  cl_mem parent = desc->buffer;
  bool buffer_type = desc->image_type == CL_MEM_OBJECT_IMAGE1D_BUFFER;
  if (!as<_cl_mem>(parent) || parent->context != context) return CL_INVALID_IMAGE_DESCRIPTOR;
  if (buffer_type ? parent->is_image() : desc->image_type != CL_MEM_OBJECT_IMAGE2D) return CL_INVALID_IMAGE_DESCRIPTOR;
  if (*flags & kHostPtrFlags) return CL_INVALID_VALUE;
  if (check_inherited_flags(parent->flags, *flags) != CL_SUCCESS) return CL_INVALID_VALUE;
  *flags = inherit_flags(parent->flags, *flags);
  if (parent->is_image()) {
    // A 2D image over another 2D image: same size, its memory and pitch.
    if (parent->type != CL_MEM_OBJECT_IMAGE2D || parent->image_desc.image_width != desc->image_width ||
        parent->image_desc.image_height != desc->image_height || desc->image_row_pitch != 0 ||
        parent->element_size != element)
      return CL_INVALID_IMAGE_FORMAT_DESCRIPTOR;
    desc->image_row_pitch = parent->image_desc.image_row_pitch;
    return CL_SUCCESS;
  }
  size_t tight = desc->image_width * element;
  if (buffer_type) {
    if (desc->image_row_pitch != 0) return CL_INVALID_IMAGE_DESCRIPTOR;
    desc->image_row_pitch = tight;
    return tight > parent->size ? CL_INVALID_IMAGE_SIZE : CL_SUCCESS;
  }
  // A 2D image over a buffer (cl_khr_image2d_from_buffer): the row pitch follows the device's alignment.
  cl_uint alignment = 0;
  for (cl_device_id device : context->devices)
    alignment = std::max(alignment, device_scalar<cl_uint>(device, CL_DEVICE_IMAGE_PITCH_ALIGNMENT));
  if (alignment == 0) return CL_INVALID_OPERATION;
  if (desc->image_row_pitch == 0)
    desc->image_row_pitch = (tight + alignment * element - 1) / (alignment * element) * (alignment * element);
  if (desc->image_row_pitch < tight || desc->image_row_pitch % (alignment * element))
    return CL_INVALID_IMAGE_FORMAT_DESCRIPTOR;
  return desc->image_row_pitch * desc->image_height > parent->size ? CL_INVALID_IMAGE_SIZE : CL_SUCCESS;
}

// Checks the layout of host_ptr (CL_MEM_USE_HOST_PTR or CL_MEM_COPY_HOST_PTR) and fills in the pitches.
cl_int check_host_pitches(cl_image_desc *desc, size_t element) {
  size_t tight = desc->image_width * element;
  if (desc->image_row_pitch == 0) desc->image_row_pitch = tight;
  if (desc->image_row_pitch < tight || desc->image_row_pitch % element) return CL_INVALID_IMAGE_DESCRIPTOR;
  if (!has_slices(desc->image_type)) {
    desc->image_slice_pitch = 0;
    return CL_SUCCESS;
  }
  size_t rows = desc->image_type == CL_MEM_OBJECT_IMAGE1D_ARRAY ? 1 : desc->image_height;
  size_t least = desc->image_row_pitch * rows;
  if (desc->image_slice_pitch == 0) desc->image_slice_pitch = least;
  if (desc->image_slice_pitch < least || desc->image_slice_pitch % desc->image_row_pitch)
    return CL_INVALID_IMAGE_DESCRIPTOR;
  return CL_SUCCESS;
}

cl_int check_dimensions(cl_context context, const cl_image_desc &desc) {
  switch (desc.image_type) {
    case CL_MEM_OBJECT_IMAGE3D:
      if (desc.image_depth == 0) return CL_INVALID_IMAGE_DESCRIPTOR;
      [[fallthrough]];
    case CL_MEM_OBJECT_IMAGE2D:
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
      if (desc.image_height == 0) return CL_INVALID_IMAGE_DESCRIPTOR;
      break;
    default: break;
  }
  if (desc.image_width == 0 || (is_array(desc.image_type) && desc.image_array_size == 0))
    return CL_INVALID_IMAGE_DESCRIPTOR;
  if (desc.num_mip_levels != 0 || desc.num_samples != 0) return CL_INVALID_IMAGE_DESCRIPTOR;
  if (desc.buffer && desc.image_type != CL_MEM_OBJECT_IMAGE1D_BUFFER && desc.image_type != CL_MEM_OBJECT_IMAGE2D)
    return CL_INVALID_IMAGE_DESCRIPTOR;
  if (desc.image_type == CL_MEM_OBJECT_IMAGE1D_BUFFER && !desc.buffer) return CL_INVALID_IMAGE_DESCRIPTOR;
  auto full = fedcl::image_full_region(desc.image_type, desc.image_width, desc.image_height, desc.image_depth, 1);
  size_t layers = is_array(desc.image_type) ? desc.image_array_size : 1;
  for (cl_device_id device : context->devices) {
    if (!device_supports_images(device)) continue;
    auto limit = image_limits(device, desc.image_type);
    if (full[0] <= limit[0] && full[1] <= limit[1] && full[2] <= limit[2] && layers <= limit[3]) return CL_SUCCESS;
  }
  return CL_INVALID_IMAGE_SIZE;
}

// The pitches CL_IMAGE_ROW_PITCH and CL_IMAGE_SLICE_PITCH report, and CL_MEM_SIZE.
void settle_layout(cl_mem image) {
  cl_image_desc &desc = image->image_desc;
  size_t tight = desc.image_width * image->element_size;
  if (desc.image_row_pitch == 0) desc.image_row_pitch = tight;
  if (!has_slices(image->type)) {
    desc.image_slice_pitch = 0;
  } else if (desc.image_slice_pitch == 0) {
    desc.image_slice_pitch =
        image->type == CL_MEM_OBJECT_IMAGE1D_ARRAY ? desc.image_row_pitch : desc.image_row_pitch * desc.image_height;
  }
  auto full = image_full_region(image);
  image->size = has_slices(image->type) ? desc.image_slice_pitch * full[2] : desc.image_row_pitch * full[1];
  if (image->type == CL_MEM_OBJECT_IMAGE1D_ARRAY) image->size = desc.image_slice_pitch * full[1];
}

cl_mem create_image(cl_context context, cl_mem_flags flags, const cl_image_format *format, const cl_image_desc *desc_in,
                    void *host_ptr, cl_int *errcode_ret) {
  auto fail = [&](cl_int err) -> cl_mem { return set_error(errcode_ret, err), nullptr; };
  if (!as<_cl_context>(context)) return fail(CL_INVALID_CONTEXT);
  if (check_flags(flags) != CL_SUCCESS) return fail(CL_INVALID_VALUE);
  if (!format) return fail(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
  size_t element = image_element_size(*format);
  if (element == 0 && desc_in && is_image_type(desc_in->image_type) && listed(context, flags, desc_in->image_type, *format))
    element = image_element_size(*format, true);
  if (element == 0) return fail(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
  if (!desc_in || !is_image_type(desc_in->image_type)) return fail(CL_INVALID_IMAGE_DESCRIPTOR);
  cl_image_desc desc = *desc_in;
  if (!is_array(desc.image_type)) desc.image_array_size = 0;
  if (desc.image_type != CL_MEM_OBJECT_IMAGE3D) desc.image_depth = 0;
  if (desc.image_type == CL_MEM_OBJECT_IMAGE1D || desc.image_type == CL_MEM_OBJECT_IMAGE1D_ARRAY ||
      desc.image_type == CL_MEM_OBJECT_IMAGE1D_BUFFER)
    desc.image_height = 0;
  if (!context_supports_images(context)) return fail(CL_INVALID_OPERATION);
  cl_int err = check_dimensions(context, desc);
  if (err != CL_SUCCESS) return fail(err);
  bool wants_ptr = flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR);
  if (wants_ptr != (host_ptr != nullptr)) return fail(CL_INVALID_HOST_PTR);
  if (desc.buffer) {
    err = check_wrapped(context, &flags, &desc, element);
  } else if (host_ptr) {
    err = check_host_pitches(&desc, element);
  } else if (desc.image_row_pitch || desc.image_slice_pitch) {
    err = CL_INVALID_IMAGE_DESCRIPTOR;
  }
  if (err != CL_SUCCESS) return fail(err);
  const ContextPart *home = home_for(context, flags, desc.image_type, *format, &err);
  if (!home) return fail(err);

  auto *image = new _cl_mem();
  image->context = context;
  image->type = desc.image_type;
  image->flags = (flags & kAccessFlags) ? flags : flags | CL_MEM_READ_WRITE;
  image->image_format = *format;
  image->image_desc = desc;
  image->element_size = element;
  image->parent = desc.buffer;
  hold(context);
  if (image->parent) {
    image->host_ptr = image->parent->host_ptr;
    hold(image->parent);
  } else if (flags & CL_MEM_USE_HOST_PTR) {
    image->host_ptr = host_ptr;
  } else if (host_ptr) {
    // The image reports host_ptr's pitches only when it keeps host_ptr; a copy is tight.
    image->image_desc.image_row_pitch = image->image_desc.image_slice_pitch = 0;
  }
  settle_layout(image);
  auto full = image_full_region(image);
  HostRegion contents = image_host_region(image, host_ptr, full.data(), desc.image_row_pitch, desc.image_slice_pitch);
  err = image->parent ? mem_create_with_parent(image, false)
                      : mem_create_first(image, home->connection, host_ptr ? &contents : nullptr, false);
  return finish_create(image, err, errcode_ret);
}

// ---------------------------------------------------------------------------------------------
// Enqueued commands

// origin and region must lie inside the image, with 0 and 1 for the dimensions its type lacks.
cl_int check_region(cl_mem image, const size_t *origin, const size_t *region) {
  if (!origin || !region) return CL_INVALID_VALUE;
  auto full = image_full_region(image);
  for (int i = 0; i < 3; i++)
    if (region[i] == 0 || origin[i] > full[i] || region[i] > full[i] - origin[i]) return CL_INVALID_VALUE;
  return CL_SUCCESS;
}

bool whole_image(cl_mem image, const size_t *origin, const size_t *region) {
  auto full = image_full_region(image);
  return origin[0] == 0 && origin[1] == 0 && origin[2] == 0 && std::equal(full.begin(), full.end(), region);
}

// Host pitches of a read or write of region: zeros become tight values; too small ones and a slice
// pitch for an image without slices are CL_INVALID_VALUE.
cl_int host_pitches(cl_mem image, const size_t *region, size_t *row_pitch, size_t *slice_pitch) {
  size_t row = region[0] * image->element_size;
  if (*row_pitch == 0) *row_pitch = row;
  if (*row_pitch < row) return CL_INVALID_VALUE;
  if (!has_slices(image->type)) return *slice_pitch == 0 ? CL_SUCCESS : CL_INVALID_VALUE;
  size_t least = image->type == CL_MEM_OBJECT_IMAGE1D_ARRAY ? *row_pitch : *row_pitch * region[1];
  if (*slice_pitch == 0) *slice_pitch = least;
  return *slice_pitch < least ? CL_INVALID_VALUE : CL_SUCCESS;
}

bool host_may_read(cl_mem mem) { return !(mem->flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS)); }
bool host_may_write(cl_mem mem) { return !(mem->flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)); }

// Rectangles in buffers: pitches default to tight, and the last byte must lie inside the buffer.
struct Rect {
  size_t offset, row_pitch, slice_pitch;
};

cl_int check_rect(const size_t *origin, const size_t *region, size_t row_pitch, size_t slice_pitch, size_t limit,
                  Rect *rect) {
  if (row_pitch == 0) row_pitch = region[0];
  if (row_pitch < region[0]) return CL_INVALID_VALUE;
  if (slice_pitch == 0) slice_pitch = region[1] * row_pitch;
  if (slice_pitch < region[1] * row_pitch || slice_pitch % row_pitch) return CL_INVALID_VALUE;
  size_t offset = origin[2] * slice_pitch + origin[1] * row_pitch + origin[0];
  size_t end = offset + (region[2] - 1) * slice_pitch + (region[1] - 1) * row_pitch + region[0];
  if (end > limit) return CL_INVALID_VALUE;
  *rect = {offset, row_pitch, slice_pitch};
  return CL_SUCCESS;
}

cl_int check_rect_args(const size_t *a, const size_t *b, const size_t *region) {
  if (!a || !b || !region || region[0] == 0 || region[1] == 0 || region[2] == 0) return CL_INVALID_VALUE;
  return CL_SUCCESS;
}

// What clEnqueueReadBufferRect and clEnqueueWriteBufferRect check alike; fills the buffer's
// rectangle and the host memory's region.
cl_int check_host_rect(cl_command_queue queue, cl_mem buffer, const size_t *buffer_origin, const size_t *host_origin,
                       const size_t *region, size_t buffer_row_pitch, size_t buffer_slice_pitch,
                       size_t host_row_pitch, size_t host_slice_pitch, const void *ptr, Rect *device_rect,
                       HostRegion *host) {
  cl_int err = check_queue_mem(queue, buffer, MemKind::buffer);
  if (err == CL_SUCCESS) err = check_rect_args(buffer_origin, host_origin, region);
  if (err == CL_SUCCESS && !ptr) err = CL_INVALID_VALUE;
  Rect host_rect{};
  if (err == CL_SUCCESS)
    err = check_rect(buffer_origin, region, buffer_row_pitch, buffer_slice_pitch, buffer->size, device_rect);
  if (err == CL_SUCCESS) err = check_rect(host_origin, region, host_row_pitch, host_slice_pitch, SIZE_MAX, &host_rect);
  if (err != CL_SUCCESS) return err;
  *host = {const_cast<uint8_t *>(static_cast<const uint8_t *>(ptr)) + host_rect.offset,
           region[0],
           region[1],
           region[2],
           host_rect.row_pitch,
           host_rect.slice_pitch};
  return CL_SUCCESS;
}

// What clEnqueueReadImage and clEnqueueWriteImage check alike; the host pitches come back resolved.
cl_int check_host_image(cl_command_queue queue, cl_mem image, const size_t *origin, const size_t *region,
                        const void *ptr, size_t *row_pitch, size_t *slice_pitch) {
  cl_int err = check_queue_mem(queue, image, MemKind::image);
  if (err == CL_SUCCESS) err = check_region(image, origin, region);
  if (err == CL_SUCCESS && !ptr) err = CL_INVALID_VALUE;
  if (err == CL_SUCCESS) err = host_pitches(image, region, row_pitch, slice_pitch);
  return err;
}

// The bytes from a rectangle's first to its last; a write replaces them all when its rows and
// slices leave no gaps.
MemSpan rect_span(const Rect &rect, const size_t *region, bool write) {
  size_t size = (region[2] - 1) * rect.slice_pitch + (region[1] - 1) * rect.row_pitch + region[0];
  return {rect.offset, size, write && size == region[0] * region[1] * region[2]};
}

// An image moves whole between daemons: a write replaces it only where it covers all of it.
MemSpan image_span(cl_mem image, const size_t *origin, const size_t *region, bool write) {
  return MemSpan::whole(write && whole_image(image, origin, region));
}

// Whether two rectangles with the same pitches in one buffer overlap, as the specification defines
// it (check_copy_overlap, in the appendix on rectangle copies): their byte spans meet, and neither
// the rows of one fit in the gaps between the rows of the other, nor its slices in the gaps between
// the other's slices.
bool rects_overlap(const Rect &a, const Rect &b, const size_t *region) {
  size_t slice_bytes = (region[1] - 1) * a.row_pitch + region[0];
  size_t span = (region[2] - 1) * a.slice_pitch + slice_bytes;
  if (a.offset + span <= b.offset || b.offset + span <= a.offset) return false;
  // One block of extent bytes, repeating every pitch, fits beside the other: at offset x and y within the period.
  auto beside = [](size_t x, size_t y, size_t extent, size_t pitch) {
    return (y >= x + extent && y + extent <= x + pitch) || (x >= y + extent && x + extent <= y + pitch);
  };
  if (beside(a.offset % a.row_pitch, b.offset % a.row_pitch, region[0], a.row_pitch)) return false;
  return !beside(a.offset % a.slice_pitch, b.offset % a.slice_pitch, slice_bytes, a.slice_pitch);
}

// ---------------------------------------------------------------------------------------------
// Samplers

bool valid_addressing(cl_addressing_mode mode) {
  return mode == CL_ADDRESS_NONE || mode == CL_ADDRESS_CLAMP_TO_EDGE || mode == CL_ADDRESS_CLAMP ||
         mode == CL_ADDRESS_REPEAT || mode == CL_ADDRESS_MIRRORED_REPEAT;
}

bool valid_filter(cl_filter_mode mode) { return mode == CL_FILTER_NEAREST || mode == CL_FILTER_LINEAR; }

// Repeating addressing modes need normalized coordinates (OpenCL C's sampler rules; local drivers
// refuse the pair at creation).
bool valid_sampler(cl_bool normalized, cl_addressing_mode addressing, cl_filter_mode filter) {
  bool repeats = addressing == CL_ADDRESS_REPEAT || addressing == CL_ADDRESS_MIRRORED_REPEAT;
  return (normalized == CL_TRUE || (normalized == CL_FALSE && !repeats)) && valid_addressing(addressing) &&
         valid_filter(filter);
}

cl_sampler create_sampler(cl_context context, cl_bool normalized, cl_addressing_mode addressing, cl_filter_mode filter,
                          std::vector<cl_sampler_properties> given, cl_int *errcode_ret) {
  auto *sampler = new _cl_sampler();
  sampler->context = context;
  sampler->normalized_coords = normalized;
  sampler->addressing_mode = addressing;
  sampler->filter_mode = filter;
  sampler->properties = std::move(given);
  hold(context);
  cl_int err = sampler_create(sampler);
  return finish_create(sampler, err, errcode_ret);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Images

cl_int fedcl::api::clGetSupportedImageFormats(cl_context context, cl_mem_flags flags, cl_mem_object_type type,
                                              cl_uint num_entries, cl_image_format *formats, cl_uint *num_formats) {
  if (!as<_cl_context>(context)) return CL_INVALID_CONTEXT;
  if (check_flags(flags) != CL_SUCCESS || !is_image_type(type) || (num_entries == 0 && formats))
    return CL_INVALID_VALUE;
  std::vector<cl_image_format> all;
  cl_int err = context_formats(context, flags, type, &all);
  if (err != CL_SUCCESS) return err;
  if (formats) std::copy_n(all.begin(), std::min<size_t>(num_entries, all.size()), formats);
  if (num_formats) *num_formats = static_cast<cl_uint>(all.size());
  return CL_SUCCESS;
}

cl_mem fedcl::api::clCreateImage(cl_context context, cl_mem_flags flags, const cl_image_format *format,
                                 const cl_image_desc *desc, void *host_ptr, cl_int *errcode_ret) {
  return create_image(context, flags, format, desc, host_ptr, errcode_ret);
}

cl_mem fedcl::api::clCreateImageWithProperties(cl_context context, const cl_mem_properties *properties,
                                               cl_mem_flags flags, const cl_image_format *format,
                                               const cl_image_desc *desc, void *host_ptr, cl_int *errcode_ret) {
  if (!as<_cl_context>(context)) return set_error(errcode_ret, CL_INVALID_CONTEXT), nullptr;
  if (properties && properties[0] != 0) return set_error(errcode_ret, CL_INVALID_PROPERTY), nullptr;
  cl_mem image = create_image(context, flags, format, desc, host_ptr, errcode_ret);
  keep_properties(image, properties);
  return image;
}

cl_mem fedcl::api::clCreateImage2D(cl_context context, cl_mem_flags flags, const cl_image_format *format, size_t width,
                                   size_t height, size_t row_pitch, void *host_ptr, cl_int *errcode_ret) {
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = width;
  desc.image_height = height;
  desc.image_row_pitch = row_pitch;
  // OpenCL 1.1 names a zero size CL_INVALID_IMAGE_SIZE, where a description calls it invalid.
  if (as<_cl_context>(context) && (width == 0 || height == 0))
    return set_error(errcode_ret, CL_INVALID_IMAGE_SIZE), nullptr;
  return create_image(context, flags, format, &desc, host_ptr, errcode_ret);
}

cl_mem fedcl::api::clCreateImage3D(cl_context context, cl_mem_flags flags, const cl_image_format *format, size_t width,
                                   size_t height, size_t depth, size_t row_pitch, size_t slice_pitch, void *host_ptr,
                                   cl_int *errcode_ret) {
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE3D;
  desc.image_width = width;
  desc.image_height = height;
  desc.image_depth = depth;
  desc.image_row_pitch = row_pitch;
  desc.image_slice_pitch = slice_pitch;
  // OpenCL 1.1: a 3D image has a depth of at least 2.
  if (as<_cl_context>(context) && (width == 0 || height == 0 || depth <= 1))
    return set_error(errcode_ret, CL_INVALID_IMAGE_SIZE), nullptr;
  return create_image(context, flags, format, &desc, host_ptr, errcode_ret);
}

cl_int fedcl::api::clGetImageInfo(cl_mem image, cl_image_info param, size_t size, void *value, size_t *size_ret) {
  if (!as<_cl_mem>(image) || !image->is_image()) return CL_INVALID_MEM_OBJECT;
  const cl_image_desc &desc = image->image_desc;
  switch (param) {
    case CL_IMAGE_FORMAT: return info_value(size, value, size_ret, image->image_format);
    case CL_IMAGE_ELEMENT_SIZE: return info_value(size, value, size_ret, image->element_size);
    case CL_IMAGE_ROW_PITCH: return info_value(size, value, size_ret, desc.image_row_pitch);
    case CL_IMAGE_SLICE_PITCH: return info_value(size, value, size_ret, desc.image_slice_pitch);
    case CL_IMAGE_WIDTH: return info_value(size, value, size_ret, desc.image_width);
    case CL_IMAGE_HEIGHT: return info_value(size, value, size_ret, desc.image_height);
    case CL_IMAGE_DEPTH: return info_value(size, value, size_ret, desc.image_depth);
    case CL_IMAGE_ARRAY_SIZE: return info_value(size, value, size_ret, desc.image_array_size);
    case CL_IMAGE_BUFFER:
      return info_value(size, value, size_ret, image->parent && !image->parent->is_image() ? image->parent : nullptr);
    case CL_IMAGE_NUM_MIP_LEVELS: return info_value(size, value, size_ret, desc.num_mip_levels);
    case CL_IMAGE_NUM_SAMPLES: return info_value(size, value, size_ret, desc.num_samples);
    default: return CL_INVALID_VALUE;
  }
}

cl_int fedcl::api::clEnqueueReadImage(cl_command_queue queue, cl_mem image, cl_bool blocking, const size_t *origin,
                                      const size_t *region, size_t row_pitch, size_t slice_pitch, void *ptr,
                                      cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  cl_int err = check_host_image(queue, image, origin, region, ptr, &row_pitch, &slice_pitch);
  if (err != CL_SUCCESS) return err;
  if (!host_may_read(image)) return CL_INVALID_OPERATION;
  return host_read(queue, image, MemSpan::whole(), blocking, image_host_region(image, ptr, region, row_pitch, slice_pitch),
                   image_transfer(image, origin, false), num_events, wait_list, event, CL_COMMAND_READ_IMAGE);
}

cl_int fedcl::api::clEnqueueWriteImage(cl_command_queue queue, cl_mem image, cl_bool blocking, const size_t *origin,
                                       const size_t *region, size_t row_pitch, size_t slice_pitch, const void *ptr,
                                       cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  cl_int err = check_host_image(queue, image, origin, region, ptr, &row_pitch, &slice_pitch);
  if (err != CL_SUCCESS) return err;
  if (!host_may_write(image)) return CL_INVALID_OPERATION;
  // The bytes leave this process before the call returns, so even a non-blocking write may reuse ptr.
  return host_write(queue, image, image_span(image, origin, region, true),
                    image_host_region(image, const_cast<void *>(ptr), region, row_pitch, slice_pitch),
                    image_transfer(image, origin, true), num_events, wait_list, event, CL_COMMAND_WRITE_IMAGE);
}

cl_int fedcl::copy_image_op(cl_command_queue queue, cl_mem src, cl_mem dst, const size_t *src_origin,
                            const size_t *dst_origin, const size_t *region, DeviceOp *op) {
  cl_int err = check_queue_mem(queue, src, MemKind::image);
  if (err == CL_SUCCESS) err = check_queue_mem(queue, dst, MemKind::image);
  if (err != CL_SUCCESS) return err;
  if (!same_format(src->image_format, dst->image_format)) return CL_IMAGE_FORMAT_MISMATCH;
  err = check_region(src, src_origin, region);
  if (err == CL_SUCCESS) err = check_region(dst, dst_origin, region);
  if (err != CL_SUCCESS) return err;
  if (src == dst) {
    bool apart = false;
    for (int i = 0; i < 3; i++)
      if (src_origin[i] >= dst_origin[i] + region[i] || dst_origin[i] >= src_origin[i] + region[i]) apart = true;
    if (!apart) return CL_MEM_COPY_OVERLAP;
  }
  *op = {CL_COMMAND_COPY_IMAGE, src, MemSpan::whole(), dst, image_span(dst, dst_origin, region, true),
         image_copy(src, dst, src_origin, dst_origin, region)};
  return CL_SUCCESS;
}

cl_int fedcl::api::clEnqueueCopyImage(cl_command_queue queue, cl_mem src, cl_mem dst, const size_t *src_origin,
                                      const size_t *dst_origin, const size_t *region, cl_uint num_events,
                                      const cl_event *wait_list, cl_event *event) {
  DeviceOp op;
  cl_int err = copy_image_op(queue, src, dst, src_origin, dst_origin, region, &op);
  return err != CL_SUCCESS ? err : device_command(queue, op, num_events, wait_list, event);
}

cl_int fedcl::fill_image_op(cl_command_queue queue, cl_mem image, const void *fill_color, const size_t *origin,
                            const size_t *region, DeviceOp *op) {
  cl_int err = check_queue_mem(queue, image, MemKind::image);
  if (err == CL_SUCCESS) err = check_region(image, origin, region);
  if (err == CL_SUCCESS && !fill_color) err = CL_INVALID_VALUE;
  if (err != CL_SUCCESS) return err;
  // A float4, int4 or uint4; a depth image's color is a single float.
  uint8_t color[16] = {};
  std::memcpy(color, fill_color, image->image_format.image_channel_order == CL_DEPTH ? 4 : 16);
  *op = {CL_COMMAND_FILL_IMAGE, nullptr, {}, image, image_span(image, origin, region, true),
         image_fill(image, color, origin, region)};
  return CL_SUCCESS;
}

cl_int fedcl::api::clEnqueueFillImage(cl_command_queue queue, cl_mem image, const void *fill_color,
                                      const size_t *origin, const size_t *region, cl_uint num_events,
                                      const cl_event *wait_list, cl_event *event) {
  DeviceOp op;
  cl_int err = fill_image_op(queue, image, fill_color, origin, region, &op);
  return err != CL_SUCCESS ? err : device_command(queue, op, num_events, wait_list, event);
}

cl_int fedcl::copy_image_to_buffer_op(cl_command_queue queue, cl_mem src, cl_mem dst, const size_t *src_origin,
                                      const size_t *region, size_t dst_offset, DeviceOp *op) {
  cl_int err = check_queue_mem(queue, src, MemKind::image);
  if (err == CL_SUCCESS) err = check_queue_mem(queue, dst, MemKind::buffer);
  if (err == CL_SUCCESS) err = check_region(src, src_origin, region);
  if (err != CL_SUCCESS) return err;
  size_t bytes = region[0] * region[1] * region[2] * src->element_size;
  if (dst_offset > dst->size || bytes > dst->size - dst_offset) return CL_INVALID_VALUE;
  *op = {CL_COMMAND_COPY_IMAGE_TO_BUFFER, src, MemSpan::whole(), dst, MemSpan::written(dst_offset, bytes),
         image_to_buffer_copy(src, dst, src_origin, region, dst_offset)};
  return CL_SUCCESS;
}

cl_int fedcl::api::clEnqueueCopyImageToBuffer(cl_command_queue queue, cl_mem src, cl_mem dst, const size_t *src_origin,
                                              const size_t *region, size_t dst_offset, cl_uint num_events,
                                              const cl_event *wait_list, cl_event *event) {
  DeviceOp op;
  cl_int err = copy_image_to_buffer_op(queue, src, dst, src_origin, region, dst_offset, &op);
  return err != CL_SUCCESS ? err : device_command(queue, op, num_events, wait_list, event);
}

cl_int fedcl::copy_buffer_to_image_op(cl_command_queue queue, cl_mem src, cl_mem dst, size_t src_offset,
                                      const size_t *dst_origin, const size_t *region, DeviceOp *op) {
  cl_int err = check_queue_mem(queue, src, MemKind::buffer);
  if (err == CL_SUCCESS) err = check_queue_mem(queue, dst, MemKind::image);
  if (err == CL_SUCCESS) err = check_region(dst, dst_origin, region);
  if (err != CL_SUCCESS) return err;
  size_t bytes = region[0] * region[1] * region[2] * dst->element_size;
  if (src_offset > src->size || bytes > src->size - src_offset) return CL_INVALID_VALUE;
  *op = {CL_COMMAND_COPY_BUFFER_TO_IMAGE, src, MemSpan::read(src_offset, bytes), dst, image_span(dst, dst_origin, region, true),
         buffer_to_image_copy(src, dst, src_offset, dst_origin, region)};
  return CL_SUCCESS;
}

cl_int fedcl::api::clEnqueueCopyBufferToImage(cl_command_queue queue, cl_mem src, cl_mem dst, size_t src_offset,
                                              const size_t *dst_origin, const size_t *region, cl_uint num_events,
                                              const cl_event *wait_list, cl_event *event) {
  DeviceOp op;
  cl_int err = copy_buffer_to_image_op(queue, src, dst, src_offset, dst_origin, region, &op);
  return err != CL_SUCCESS ? err : device_command(queue, op, num_events, wait_list, event);
}

// Maps point into the host copy of the image's memory (the application's, for CL_MEM_USE_HOST_PTR),
// laid out with the pitches the image reports: a map reads the region there, an unmap of a write
// map writes it back.
void *fedcl::api::clEnqueueMapImage(cl_command_queue queue, cl_mem image, cl_bool blocking, cl_map_flags flags,
                                    const size_t *origin, const size_t *region, size_t *row_pitch_ret,
                                    size_t *slice_pitch_ret, cl_uint num_events, const cl_event *wait_list,
                                    cl_event *event, cl_int *errcode_ret) {
  cl_int err = check_queue_mem(queue, image, MemKind::image);
  if (err == CL_SUCCESS) err = check_region(image, origin, region);
  if (err == CL_SUCCESS && (!row_pitch_ret || (has_slices(image->type) && !slice_pitch_ret))) err = CL_INVALID_VALUE;
  if (err == CL_SUCCESS) err = check_map_flags(image, flags);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  bool reads = !(flags & CL_MAP_WRITE_INVALIDATE_REGION);  // as for buffers

  size_t row_pitch = image->image_desc.image_row_pitch, slice_pitch = image->image_desc.image_slice_pitch;
  cl_mem root = image->parent ? image->parent : image;
  uint8_t *base;
  {
    std::lock_guard<std::mutex> lock(root->mutex);
    base = image->host_ptr ? static_cast<uint8_t *>(image->host_ptr) : host_mirror(root);
  }
  if (!base) return set_error(errcode_ret, CL_MAP_FAILURE), nullptr;
  uint8_t *pointer = base + image_offset(image, origin, row_pitch, slice_pitch);
  err = reads ? host_read(queue, image, MemSpan::whole(), blocking,
                          image_host_region(image, pointer, region, row_pitch, slice_pitch),
                          image_transfer(image, origin, false), num_events, wait_list, event,
                          CL_COMMAND_MAP_IMAGE)
              : enqueue_marker(queue, CL_COMMAND_MAP_IMAGE, false, num_events, wait_list, event);
  if (err != CL_SUCCESS) return set_error(errcode_ret, err), nullptr;
  *row_pitch_ret = row_pitch;
  if (slice_pitch_ret) *slice_pitch_ret = slice_pitch;
  {
    std::lock_guard<std::mutex> lock(image->mutex);
    _cl_mem::Mapping mapping{
        pointer,   0,          0, flags, {origin[0], origin[1], origin[2]}, {region[0], region[1], region[2]},
        row_pitch, slice_pitch};
    image->mappings.push_back(mapping);
  }
  set_error(errcode_ret, CL_SUCCESS);
  return pointer;
}

// ---------------------------------------------------------------------------------------------
// Rectangular buffer transfers

cl_int fedcl::api::clEnqueueReadBufferRect(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                                           const size_t *buffer_origin, const size_t *host_origin, const size_t *region,
                                           size_t buffer_row_pitch, size_t buffer_slice_pitch, size_t host_row_pitch,
                                           size_t host_slice_pitch, void *ptr, cl_uint num_events,
                                           const cl_event *wait_list, cl_event *event) {
  Rect device_rect{};
  HostRegion host{};
  cl_int err = check_host_rect(queue, buffer, buffer_origin, host_origin, region, buffer_row_pitch, buffer_slice_pitch,
                               host_row_pitch, host_slice_pitch, ptr, &device_rect, &host);
  if (err != CL_SUCCESS) return err;
  if (!host_may_read(buffer)) return CL_INVALID_OPERATION;
  return host_read(
      queue, buffer, rect_span(device_rect, region, false), blocking, host,
      buffer_rect_transfer(buffer, buffer_origin, device_rect.row_pitch, device_rect.slice_pitch, false),
      num_events, wait_list, event, CL_COMMAND_READ_BUFFER_RECT);
}

cl_int fedcl::api::clEnqueueWriteBufferRect(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                                            const size_t *buffer_origin, const size_t *host_origin,
                                            const size_t *region, size_t buffer_row_pitch, size_t buffer_slice_pitch,
                                            size_t host_row_pitch, size_t host_slice_pitch, const void *ptr,
                                            cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  Rect device_rect{};
  HostRegion host{};
  cl_int err = check_host_rect(queue, buffer, buffer_origin, host_origin, region, buffer_row_pitch, buffer_slice_pitch,
                               host_row_pitch, host_slice_pitch, ptr, &device_rect, &host);
  if (err != CL_SUCCESS) return err;
  if (!host_may_write(buffer)) return CL_INVALID_OPERATION;
  return host_write(
      queue, buffer, rect_span(device_rect, region, true), host,
      buffer_rect_transfer(buffer, buffer_origin, device_rect.row_pitch, device_rect.slice_pitch, true),
      num_events, wait_list, event, CL_COMMAND_WRITE_BUFFER_RECT);
}

cl_int fedcl::copy_buffer_rect_op(cl_command_queue queue, cl_mem src, cl_mem dst, const size_t *src_origin,
                                  const size_t *dst_origin, const size_t *region, size_t src_row_pitch,
                                  size_t src_slice_pitch, size_t dst_row_pitch, size_t dst_slice_pitch, DeviceOp *op) {
  cl_int err = check_queue_mem(queue, src, MemKind::buffer);
  if (err == CL_SUCCESS) err = check_queue_mem(queue, dst, MemKind::buffer);
  if (err == CL_SUCCESS) err = check_rect_args(src_origin, dst_origin, region);
  Rect from{}, to{};
  if (err == CL_SUCCESS) err = check_rect(src_origin, region, src_row_pitch, src_slice_pitch, src->size, &from);
  if (err == CL_SUCCESS) err = check_rect(dst_origin, region, dst_row_pitch, dst_slice_pitch, dst->size, &to);
  if (err != CL_SUCCESS) return err;
  if (src == dst) {
    if (from.row_pitch != to.row_pitch || from.slice_pitch != to.slice_pitch) return CL_INVALID_VALUE;
    if (rects_overlap(from, to, region)) return CL_MEM_COPY_OVERLAP;
  }
  *op = {CL_COMMAND_COPY_BUFFER_RECT, src, rect_span(from, region, false), dst, rect_span(to, region, true),
         buffer_rect_copy(src, dst, src_origin, dst_origin, region, from.row_pitch, from.slice_pitch, to.row_pitch,
                          to.slice_pitch)};
  return CL_SUCCESS;
}

cl_int fedcl::api::clEnqueueCopyBufferRect(cl_command_queue queue, cl_mem src, cl_mem dst, const size_t *src_origin,
                                           const size_t *dst_origin, const size_t *region, size_t src_row_pitch,
                                           size_t src_slice_pitch, size_t dst_row_pitch, size_t dst_slice_pitch,
                                           cl_uint num_events, const cl_event *wait_list, cl_event *event) {
  DeviceOp op;
  cl_int err = copy_buffer_rect_op(queue, src, dst, src_origin, dst_origin, region, src_row_pitch, src_slice_pitch,
                                   dst_row_pitch, dst_slice_pitch, &op);
  return err != CL_SUCCESS ? err : device_command(queue, op, num_events, wait_list, event);
}

// ---------------------------------------------------------------------------------------------
// Samplers

cl_sampler fedcl::api::clCreateSampler(cl_context context, cl_bool normalized_coords, cl_addressing_mode addressing,
                                       cl_filter_mode filter, cl_int *errcode_ret) {
  if (!as<_cl_context>(context)) return set_error(errcode_ret, CL_INVALID_CONTEXT), nullptr;
  if (!valid_sampler(normalized_coords, addressing, filter)) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  if (!context_supports_images(context)) return set_error(errcode_ret, CL_INVALID_OPERATION), nullptr;
  return create_sampler(context, normalized_coords, addressing, filter, {}, errcode_ret);
}

cl_sampler fedcl::api::clCreateSamplerWithProperties(cl_context context, const cl_sampler_properties *properties,
                                                     cl_int *errcode_ret) {
  if (!as<_cl_context>(context)) return set_error(errcode_ret, CL_INVALID_CONTEXT), nullptr;
  cl_bool normalized = CL_TRUE;
  cl_addressing_mode addressing = CL_ADDRESS_CLAMP;
  cl_filter_mode filter = CL_FILTER_NEAREST;
  std::vector<cl_sampler_properties> given;
  cl_uint seen = 0;  // a bit per property already given: repeating one is an error
  for (const cl_sampler_properties *p = properties; p && *p; p += 2) {
    cl_uint name = static_cast<cl_uint>(p[0]);
    cl_uint bit = name == CL_SAMPLER_NORMALIZED_COORDS ? 1
                  : name == CL_SAMPLER_ADDRESSING_MODE ? 2
                  : name == CL_SAMPLER_FILTER_MODE     ? 4
                                                       : 0;
    if (bit == 0 || (seen & bit)) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
    seen |= bit;
    if (bit == 1) normalized = static_cast<cl_bool>(p[1]);
    if (bit == 2) addressing = static_cast<cl_addressing_mode>(p[1]);
    if (bit == 4) filter = static_cast<cl_filter_mode>(p[1]);
    given.insert(given.end(), p, p + 2);
  }
  if (properties) given.push_back(0);
  if (!valid_sampler(normalized, addressing, filter)) return set_error(errcode_ret, CL_INVALID_VALUE), nullptr;
  if (!context_supports_images(context)) return set_error(errcode_ret, CL_INVALID_OPERATION), nullptr;
  return create_sampler(context, normalized, addressing, filter, std::move(given), errcode_ret);
}

cl_int fedcl::api::clGetSamplerInfo(cl_sampler sampler, cl_sampler_info param, size_t size, void *value,
                                    size_t *size_ret) {
  if (!as<_cl_sampler>(sampler)) return CL_INVALID_SAMPLER;
  switch (param) {
    case CL_SAMPLER_REFERENCE_COUNT: return info_value(size, value, size_ret, sampler->refcount.load());
    case CL_SAMPLER_CONTEXT: return info_value(size, value, size_ret, sampler->context);
    case CL_SAMPLER_NORMALIZED_COORDS: return info_value(size, value, size_ret, sampler->normalized_coords);
    case CL_SAMPLER_ADDRESSING_MODE: return info_value(size, value, size_ret, sampler->addressing_mode);
    case CL_SAMPLER_FILTER_MODE: return info_value(size, value, size_ret, sampler->filter_mode);
    case CL_SAMPLER_PROPERTIES: return info_vector(size, value, size_ret, sampler->properties);
    default: return CL_INVALID_VALUE;
  }
}
