// The reductions of combining receives (ReceiveFromPeer.combine): each element of the destination
// becomes op(element, the one received), on fedcld's CPU as the chunks arrive.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fedcl.capnp.h"

namespace fedcld {

using Combine = fedcl::wire::Request::Combine;
using ElementType = fedcl::wire::Request::ElementType;

// Bytes per element of type; 0 for a value this build does not know.
size_t element_bytes(ElementType type);

// into[i] = op(into[i], from[i]) for the bytes / element_bytes(type) elements of both (aligned to the
// element); bytes past the last whole element are left alone. Combine::NONE copies every byte.
void combine_elements(Combine op, ElementType type, uint8_t *into, const uint8_t *from, size_t bytes);

}  // namespace fedcld
