#pragma once
// Errors of the C600 driver layer. Each names the device and what it was
// doing; register errors also name the offset.

#include <string>

#include "support/error.hpp"

namespace tessera::driver {

// The device or its kernel driver broke the protocol: a mailbox reply with
// the wrong signature, a mark that does not read back 0 after it was cleared,
// a debug injection that reports an error.
class DeviceError : public Error {
 public:
  using Error::Error;
};

// The device did not reach a state in time (HSP mark, autoloader, TDI).
class DeviceTimeout : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

// The kernel refused a call (open, mmap, ioctl). Carries the errno.
class DriverIoError : public IoError {
 public:
  DriverIoError(std::string message, int error_number)
      : IoError(std::move(message)), error_number_(error_number) {}
  int error_number() const noexcept { return error_number_; }

 private:
  int error_number_;
};

// An .ipucfg configuration capture or a bootloader ELF is malformed. The
// field path names the entry or header field.
class ConfigurationFileError : public InputError {
 public:
  using InputError::InputError;
};
class BootloaderError : public InputError {
 public:
  using InputError::InputError;
};

// A tile image cannot be loaded (wrong base, too many frames, a tile count
// that is not whole loader batches).
class ImageError : public InputError {
 public:
  using InputError::InputError;
};

}  // namespace tessera::driver
