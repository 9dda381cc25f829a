#include "kernel_args.h"

#include <cstdlib>

namespace fedcl {

namespace {

bool starts_with(const std::string &text, const char *prefix) { return text.rfind(prefix, 0) == 0; }

std::string strip(std::string type) {
  for (const char *qualifier : {"const ", "volatile ", "restrict "})
    while (starts_with(type, qualifier)) type = type.substr(std::string(qualifier).size());
  while (!type.empty() && type.back() == ' ') type.pop_back();
  return type;
}

}  // namespace

ArgClass kernel_arg_class(const KernelArgDesc &desc) {
  switch (desc.address) {
    case CL_KERNEL_ARG_ADDRESS_GLOBAL:
    case CL_KERNEL_ARG_ADDRESS_CONSTANT: return ArgClass::memory;
    case CL_KERNEL_ARG_ADDRESS_LOCAL: return ArgClass::local;
    case CL_KERNEL_ARG_ADDRESS_PRIVATE: break;
    default: return ArgClass::unknown;
  }
  std::string type = strip(desc.type_name);
  if (type == "sampler_t") return ArgClass::sampler;
  if (starts_with(type, "image") || type == "pipe") return ArgClass::memory;
  return ArgClass::value;
}

size_t kernel_arg_type_size(const std::string &type_name, cl_uint address_bits) {
  std::string type = strip(type_name);
  if (type.empty() || type.back() == '*') return type.empty() ? 0 : address_bits / 8;
  static const struct {
    const char *name;
    size_t size;
  } scalars[] = {{"char", 1},  {"uchar", 1},  {"unsigned char", 1},  {"short", 2}, {"ushort", 2},
                 {"unsigned short", 2}, {"half", 2}, {"int", 4}, {"uint", 4}, {"unsigned int", 4},
                 {"unsigned", 4}, {"float", 4}, {"long", 8}, {"ulong", 8}, {"unsigned long", 8},
                 {"double", 8}};
  for (const auto &scalar : scalars) {
    if (!starts_with(type, scalar.name)) continue;
    std::string rest = type.substr(std::string(scalar.name).size());
    if (rest.empty()) return scalar.size;
    if (rest.find_first_not_of("0123456789") != std::string::npos) continue;
    int width = std::atoi(rest.c_str());
    if (width == 2 || width == 4 || width == 8 || width == 16) return scalar.size * width;
    if (width == 3) return scalar.size * 4;  // 3-component vectors are stored as 4
  }
  if (type == "size_t" || type == "ptrdiff_t" || type == "intptr_t" || type == "uintptr_t") return address_bits / 8;
  return 0;
}

ArgCheck kernel_arg_check(const KernelArgDesc &desc, cl_uint address_bits) {
  ArgClass kind = kernel_arg_class(desc);
  if (kind == ArgClass::memory) return {kind, 0, starts_with(strip(desc.type_name), "image")};
  if (kind != ArgClass::value) return {kind, 0};
  return {kind, desc.value_size ? desc.value_size : kernel_arg_type_size(desc.type_name, address_bits)};
}

}  // namespace fedcl
