// Images, samplers and rectangular buffer transfers.
#include "exec.h"

namespace fedcld {

namespace {
[[noreturn]] void not_yet() { fail(CL_INVALID_OPERATION, "this fedcld does not implement images yet"); }
}  // namespace

void exec_create_image(Call &, wire::Request::CreateImage::Reader, Frame &) { not_yet(); }
void exec_create_sampler(Call &, wire::Request::CreateSampler::Reader) { not_yet(); }
void exec_get_supported_image_formats(Call &, wire::Request::GetSupportedImageFormats::Reader) { not_yet(); }
void exec_read_image(Call &, wire::Request::ReadImage::Reader) { not_yet(); }
void exec_write_image(Call &, wire::Request::WriteImage::Reader, Frame &) { not_yet(); }
void exec_copy_image(Call &, wire::Request::CopyImage::Reader) { not_yet(); }
void exec_fill_image(Call &, wire::Request::FillImage::Reader) { not_yet(); }
void exec_copy_image_to_buffer(Call &, wire::Request::CopyImageToBuffer::Reader) { not_yet(); }
void exec_copy_buffer_to_image(Call &, wire::Request::CopyBufferToImage::Reader) { not_yet(); }
void exec_read_buffer_rect(Call &, wire::Request::ReadBufferRect::Reader) { not_yet(); }
void exec_write_buffer_rect(Call &, wire::Request::WriteBufferRect::Reader, Frame &) { not_yet(); }
void exec_copy_buffer_rect(Call &, wire::Request::CopyBufferRect::Reader) { not_yet(); }

}  // namespace fedcld
