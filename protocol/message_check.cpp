#include "message_check.h"

namespace fedcl {

namespace {

void walk(const capnp::DynamicValue::Reader &value);

void walk_struct(const capnp::DynamicStruct::Reader &message) {
  for (auto field : message.getSchema().getFields())
    if (message.has(field)) walk(message.get(field));  // get() follows the pointer as the field's type says
}

void walk(const capnp::DynamicValue::Reader &value) {
  switch (value.getType()) {
    case capnp::DynamicValue::STRUCT: walk_struct(value.as<capnp::DynamicStruct>()); break;
    case capnp::DynamicValue::LIST:
      for (auto element : value.as<capnp::DynamicList>()) walk(element);
      break;
    default: break;  // numbers, enums, text and data: checked by get()
  }
}

}  // namespace

std::string message_check(capnp::DynamicStruct::Reader message) {
  try {
    walk_struct(message);
    return {};
  } catch (const kj::Exception &e) {
    return e.getDescription().cStr();
  }
}

std::unique_ptr<capnp::FlatArrayMessageReader> kept_message_reader(kj::ArrayPtr<const capnp::word> words) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = kj::maxValue;
  return std::make_unique<capnp::FlatArrayMessageReader>(words, options);
}

}  // namespace fedcl
