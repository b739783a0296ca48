#pragma once
// Exclusive ownership of a C600 across processes (review-findings.md #10):
// one lock file per device, held with a Boost.Interprocess file_lock for as
// long as a transport owns the device. The holder writes its pid and command
// line into the file, so a second process can say who holds the device.
//
// file_lock is a POSIX record lock (fcntl): it belongs to the process, and
// closing *any* descriptor of the file in the holding process releases it.
// So the holder keeps one descriptor open for its whole tenure and nothing
// else in the process may open the lock file; a second lock in the same
// process would also succeed silently, so an in-process registry refuses it.
// A crashed holder's lock dies with it; its stale text is read only when the
// lock is actually held by someone.

#include <filesystem>
#include <memory>
#include <string>

#include <boost/interprocess/sync/file_lock.hpp>

#include "support/error.hpp"

namespace tessera::backends::c600 {

// "device /dev/ipu0 is busy: held by pid 1234 (tessera run model.ipuexe)".
class DeviceBusyError : public Error {
 public:
  using Error::Error;
};

// The lock file of `device` in `directory`: /dev/ipu0 → tessera-dev-ipu0.lock.
std::filesystem::path lock_file_path(const std::string& device,
                                     const std::filesystem::path& directory);

class DeviceLock {
 public:
  // DeviceBusyError when another process (or this one) holds the device;
  // IoError when the lock file cannot be created.
  static std::unique_ptr<DeviceLock> acquire(const std::string& device,
                                             const std::filesystem::path& directory);
  ~DeviceLock();
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  DeviceLock(std::filesystem::path path, int fd, boost::interprocess::file_lock lock);

  std::filesystem::path path_;
  int fd_;
  boost::interprocess::file_lock lock_;
};

// "pid 1234 (tessera run model.ipuexe)" for this process.
std::string holder_description();

}  // namespace tessera::backends::c600
