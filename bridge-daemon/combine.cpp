#include "combine.h"

#include <algorithm>
#include <cstring>

namespace fedcld {

namespace {

template <typename T>
void combine_typed(Combine op, T *into, const T *from, size_t count) {
  switch (op) {
    case Combine::SUM:
      for (size_t i = 0; i < count; i++) into[i] += from[i];
      return;
    case Combine::PRODUCT:
      for (size_t i = 0; i < count; i++) into[i] *= from[i];
      return;
    case Combine::MIN:
      for (size_t i = 0; i < count; i++) into[i] = std::min(into[i], from[i]);
      return;
    case Combine::MAX:
      for (size_t i = 0; i < count; i++) into[i] = std::max(into[i], from[i]);
      return;
    case Combine::NONE:  // copied whole by combine_elements
      return;
  }
}

}  // namespace

size_t element_bytes(ElementType type) {
  switch (type) {
    case ElementType::INT32:
    case ElementType::FLOAT32:
      return 4;
    case ElementType::INT64:
    case ElementType::FLOAT64:
      return 8;
  }
  return 0;
}

void combine_elements(Combine op, ElementType type, uint8_t *into, const uint8_t *from, size_t bytes) {
  if (op == Combine::NONE) {  // a plain receive: every byte, whole elements or not
    std::memcpy(into, from, bytes);
    return;
  }
  // Signed integers wrap, as the devices' own arithmetic does: done in unsigned arithmetic for
  // sum and product, where overflow of a signed type would be undefined here.
  switch (type) {
    case ElementType::INT32:
      if (op == Combine::SUM || op == Combine::PRODUCT)
        return combine_typed(op, reinterpret_cast<uint32_t *>(into), reinterpret_cast<const uint32_t *>(from), bytes / 4);
      return combine_typed(op, reinterpret_cast<int32_t *>(into), reinterpret_cast<const int32_t *>(from), bytes / 4);
    case ElementType::INT64:
      if (op == Combine::SUM || op == Combine::PRODUCT)
        return combine_typed(op, reinterpret_cast<uint64_t *>(into), reinterpret_cast<const uint64_t *>(from), bytes / 8);
      return combine_typed(op, reinterpret_cast<int64_t *>(into), reinterpret_cast<const int64_t *>(from), bytes / 8);
    case ElementType::FLOAT32:
      return combine_typed(op, reinterpret_cast<float *>(into), reinterpret_cast<const float *>(from), bytes / 4);
    case ElementType::FLOAT64:
      return combine_typed(op, reinterpret_cast<double *>(into), reinterpret_cast<const double *>(from), bytes / 8);
  }
}

}  // namespace fedcld
