// The copy-out rule every clGet*Info shares.
#pragma once

#include <CL/cl.h>

#include <cstring>
#include <string>
#include <vector>

namespace fedcl {

inline cl_int info_bytes(size_t size, void *value, size_t *size_ret, const void *data, size_t data_size) {
  if (value && size < data_size) return CL_INVALID_VALUE;
  if (value && data_size) std::memcpy(value, data, data_size);
  if (size_ret) *size_ret = data_size;
  return CL_SUCCESS;
}

template <typename T>
cl_int info_value(size_t size, void *value, size_t *size_ret, const T &data) {
  return info_bytes(size, value, size_ret, &data, sizeof data);
}

inline cl_int info_string(size_t size, void *value, size_t *size_ret, const std::string &text) {
  return info_bytes(size, value, size_ret, text.c_str(), text.size() + 1);
}

template <typename T>
cl_int info_vector(size_t size, void *value, size_t *size_ret, const std::vector<T> &data) {
  return info_bytes(size, value, size_ret, data.data(), data.size() * sizeof(T));
}

}  // namespace fedcl
