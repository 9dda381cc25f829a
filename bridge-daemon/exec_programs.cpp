// Programs from binaries and IL, separate compilation and linking; sub-devices.
#include "exec.h"

namespace fedcld {

namespace {
[[noreturn]] void not_yet() { fail(CL_INVALID_OPERATION, "this fedcld does not implement this program request yet"); }
}  // namespace

void exec_create_program_with_binary(Call &, wire::Request::CreateProgramWithBinary::Reader) { not_yet(); }
void exec_create_program_with_il(Call &, wire::Request::CreateProgramWithIL::Reader) { not_yet(); }
void exec_create_program_with_built_in_kernels(Call &, wire::Request::CreateProgramWithBuiltInKernels::Reader) { not_yet(); }
void exec_compile_program(Call &, wire::Request::CompileProgram::Reader) { not_yet(); }
void exec_link_program(Call &, wire::Request::LinkProgram::Reader) { not_yet(); }
void exec_set_specialization_constant(Call &, wire::Request::SetSpecializationConstant::Reader) { not_yet(); }
void exec_create_sub_devices(Call &, wire::Request::CreateSubDevices::Reader) { not_yet(); }

}  // namespace fedcld
