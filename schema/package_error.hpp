#pragma once
// The error every package reader, writer and validator throws: an InputError
// whose context starts with the field path (`tiles[12].segments[3].blobOffset`).

#include <string>
#include <string_view>

#include "support/error.hpp"

namespace tessera::schema {

class PackageError : public InputError {
 public:
  using InputError::InputError;
};

}  // namespace tessera::schema
