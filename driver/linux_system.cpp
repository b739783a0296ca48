#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "driver/system.hpp"

namespace tessera::driver {
namespace {

class LinuxSystem final : public DeviceSystem {
 public:
  int open(const char* path, int flags) override { return ::open(path, flags); }
  int ioctl(int fd, unsigned long request, std::uintptr_t argument) override {
    return ::ioctl(fd, request, argument);
  }
  void* mmap(std::size_t length, int protection, int flags, int fd, off_t offset) override {
    return ::mmap(nullptr, length, protection, flags, fd, offset);
  }
  int munmap(void* address, std::size_t length) override { return ::munmap(address, length); }
  int close(int fd) override { return ::close(fd); }
};

}  // namespace

DeviceSystem& linux_system() {
  static LinuxSystem system;
  return system;
}

}  // namespace tessera::driver
