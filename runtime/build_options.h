// What the client reads from the options an application builds a program with: the backend reports
// no such thing, yet a local driver checks launches against it.
#pragma once

namespace fedcl {

// Whether a program built with options needs uniform work-groups (the global size a multiple of
// the local size): OpenCL C before 2.0, the default without -cl-std, has no others, and
// -cl-uniform-work-group-size asks for them. C++ for OpenCL (-cl-std=CLC++...) follows OpenCL C 2.0
// and later. The last -cl-std counts, as for compilers.
bool build_needs_uniform_work_groups(const char *options);

}  // namespace fedcl
