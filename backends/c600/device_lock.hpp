#pragma once
// Exclusive ownership of a C600 across processes (review-findings.md #10):
// one lock file per device, held with an open-file-description lock
// (fcntl F_OFD_SETLK) for as long as a transport owns the device. The holder
// writes its pid and command line into the file, so a second process can say
// who holds the device.
//
// The lock belongs to the device, not to how it was named: the file's name
// comes from the device path made absolute and canonical (symlinks, "." and
// ".." resolved as far as the path exists), so /dev/ipu0, /dev/./ipu0 and a
// symlink to it share one lock.
//
// The lock directory is shared (by default the system temp directory), so
// the lock file is untrusted: it is opened with O_NOFOLLOW and must be a
// regular file with no other name (one link) before the holder text is
// written, and the lock is taken on that very descriptor. A planted symlink
// or hard link is refused, never truncated through.
//
// An OFD lock belongs to the open file, so it conflicts between processes
// and between two opens in one process alike; an in-process registry still
// refuses a second lock first, to say "held by this process". A crashed
// holder's lock dies with it; its stale text is read only when the lock is
// actually held by someone.

#include <filesystem>
#include <memory>
#include <string>

#include "support/error.hpp"

namespace tessera::backends::c600 {

// "device /dev/ipu0 is busy: held by pid 1234 (tessera run model.ipuexe)".
class DeviceBusyError : public Error {
 public:
  using Error::Error;
};

// The lock file of `device` in `directory`, named after the device's
// canonical path: /dev/ipu0 (or /dev/./ipu0) → tessera-dev-ipu0.lock.
std::filesystem::path lock_file_path(const std::string& device,
                                     const std::filesystem::path& directory);

class DeviceLock {
 public:
  // DeviceBusyError when another process (or this one) holds the device;
  // IoError when the lock file cannot be created or is not a lock file of
  // its own (a symlink, a hard link, not a regular file).
  static std::unique_ptr<DeviceLock> acquire(const std::string& device,
                                             const std::filesystem::path& directory);
  ~DeviceLock();
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  DeviceLock(std::filesystem::path path, int fd);

  std::filesystem::path path_;
  int fd_;
};

// "pid 1234 (tessera run model.ipuexe)" for this process.
std::string holder_description();

}  // namespace tessera::backends::c600
