#include "tests/driver/fake_device.hpp"

#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <variant>

#include <fmt/format.h>

#include "driver/ioctl.hpp"
#include "driver/loader.hpp"
#include "driver/registers.hpp"
#include "support/little_endian.hpp"
#include "target/config_space.hpp"
#include "target/isa.hpp"
#include "target/memory_map.hpp"

namespace tessera::testing {

namespace reg = driver::reg;
namespace isa = target::isa;

namespace {
constexpr int kFakeFd = 42;
constexpr std::uint32_t kPage = 4096;
}  // namespace

FakeDevice::FakeDevice(std::string path)
    : path_(std::move(path)), regs_(target::kConfigSpaceSize / 4, 0) {}

FakeDevice::~FakeDevice() = default;

// A stalled device sees the same defect on every poll; it is listed once.
void FakeDevice::violation(std::string text) {
  if (violations_.empty() || violations_.back() != text) violations_.push_back(std::move(text));
}

// ---- System calls -----------------------------------------------------------

int FakeDevice::open(const char* path, int flags) {
  calls_.push_back({CallKind::kOpen});
  if (fail_open || path_ != path) {
    errno = ENOENT;
    return -1;
  }
  if (flags != (O_RDWR | O_CLOEXEC)) violation(fmt::format("open flags {:#x}", flags));
  if (fd_ >= 0) {
    errno = EBUSY;
    return -1;
  }
  fd_ = kFakeFd;
  return fd_;
}

int FakeDevice::close(int fd) {
  calls_.push_back({CallKind::kClose});
  if (fd != fd_) {
    errno = EBADF;
    return -1;
  }
  if (mapped_) violation("close before munmap");
  fd_ = -1;
  attached_.clear();  // the kernel driver drops a closed file's buffers
  return 0;
}

void* FakeDevice::mmap(std::size_t length, int protection, int flags, int fd, off_t offset) {
  calls_.push_back({CallKind::kMmap});
  if (fd != fd_ || length != target::kConfigSpaceSize || protection != (PROT_READ | PROT_WRITE) ||
      flags != MAP_SHARED || offset != 0) {
    violation(fmt::format("mmap({:#x}, {:#x}, {:#x}, fd {}, {})", length, protection, flags, fd,
                          offset));
    errno = EINVAL;
    return MAP_FAILED;
  }
  mapped_ = true;
  return regs_.data();
}

int FakeDevice::munmap(void* address, std::size_t length) {
  calls_.push_back({CallKind::kMunmap});
  if (address != regs_.data() || length != target::kConfigSpaceSize || !mapped_) {
    violation("munmap of something not mapped");
    errno = EINVAL;
    return -1;
  }
  mapped_ = false;
  return 0;
}

int FakeDevice::ioctl(int fd, unsigned long request, std::uintptr_t argument) {
  calls_.push_back({CallKind::kIoctl, request, argument});
  if (fd != fd_) {
    errno = EBADF;
    return -1;
  }
  if (const auto error = ioctl_errors.find(request); error != ioctl_errors.end()) {
    errno = error->second;
    return -1;
  }
  namespace io = driver::ioctl;
  const auto value_zero = [&](const char* name) {
    if (argument != 0) violation(fmt::format("{} with argument {:#x}, not 0", name, argument));
  };
  if (request == io::kUserAttach.number) {
    value_zero("USER_ATTACH");
  } else if (request == io::kSetIpuId.number) {
    value_zero("SET_IPU_ID");
  } else if (request == io::kStopMonitoring.number || request == io::kStartMonitoring.number ||
             request == io::kAccumulateErrors.number ||
             request == io::kSetHexoptIdentityTable.number) {
    value_zero(io::command_name(request));
  } else if (request == io::kResetDevice.number) {
    value_zero("RESET_DEVICE");
    reset_tiles();
  } else if (request == io::kSetSecondaryIpuId.number) {
    io::SecondaryIpuId id = 0;
    std::memcpy(&id, reinterpret_cast<const void*>(argument), sizeof id);
    secondary_ids_.push_back(id);
  } else if (request == io::kMailboxWriteRead.number) {
    io::MailboxArgument mailbox{};
    std::memcpy(&mailbox, reinterpret_cast<const void*>(argument), sizeof mailbox);
    std::array<std::uint32_t, 5> sent{};
    std::memcpy(sent.data(), mailbox.sent->words, sizeof sent);
    mailbox_.push_back(sent);
    io::MailboxMessage reply{{mailbox_reply_word0, 0, 0, 0, 0}};
    std::memcpy(mailbox.received, &reply, sizeof reply);
  } else if (request == io::kBufferAttach.number) {
    io::AttachBufferData data{};
    std::memcpy(&data, reinterpret_cast<const void*>(argument), sizeof data);
    if (data.size == 0 || data.user_vaddr % kPage != 0) {
      violation(fmt::format("BUFFER_ATTACH {} of {} bytes at {:#x}", data.index, data.size,
                            data.user_vaddr));
      errno = EINVAL;
      return -1;
    }
    if (attached_.count(data.index) != 0) {
      errno = EBUSY;
      return -1;
    }
    const Attachment attachment{data.index, data.size, data.user_vaddr};
    attached_[data.index] = attachment;
    attach_history_.push_back(attachment);
  } else if (request == io::kBufferDetach.number) {
    if (attached_.erase(static_cast<std::uint32_t>(argument)) == 0) {
      errno = ENOENT;
      return -1;
    }
  } else if (request == io::kBufferDetachAll.number) {
    value_zero("BUFFER_DETACH_ALL");
    attached_.clear();
  } else {
    errno = ENOTTY;
    return -1;
  }
  return 0;
}

std::vector<unsigned long> FakeDevice::ioctl_requests() const {
  std::vector<unsigned long> requests;
  for (const auto& call : calls_) {
    if (call.kind == CallKind::kIoctl) requests.push_back(call.request);
  }
  return requests;
}

void FakeDevice::clear_records() {
  calls_.clear();
  accesses_.clear();
}

std::vector<std::uint32_t> FakeDevice::writes_to(std::uint32_t offset) const {
  std::vector<std::uint32_t> values;
  for (const auto& access : accesses_) {
    if (access.write && access.offset == offset) values.push_back(access.value);
  }
  return values;
}

// ---- MMIO ---------------------------------------------------------------------

std::uint32_t FakeDevice::offset_of(const volatile std::uint32_t* reg, bool write) {
  const auto address = reinterpret_cast<std::uintptr_t>(reg);
  const auto base = reinterpret_cast<std::uintptr_t>(regs_.data());
  if (!mapped_ || address < base || address >= base + target::kConfigSpaceSize ||
      (address - base) % 4 != 0) {
    violation(fmt::format("MMIO {} outside the mapped BAR", write ? "write" : "read"));
    return 0xFFFFFFFF;
  }
  return static_cast<std::uint32_t>(address - base);
}

std::uint32_t FakeDevice::read32(const volatile std::uint32_t* reg) {
  const std::uint32_t offset = offset_of(reg, false);
  if (offset == 0xFFFFFFFF) return 0xDEADBEEF;
  const std::uint32_t value = read_register(offset);
  accesses_.push_back({false, offset, value});
  return value;
}

void FakeDevice::write32(volatile std::uint32_t* reg, std::uint32_t value) {
  const std::uint32_t offset = offset_of(reg, true);
  if (offset == 0xFFFFFFFF) return;
  accesses_.push_back({true, offset, value});
  write_register(offset, value);
}

void FakeDevice::write_register(std::uint32_t offset, std::uint32_t value) {
  const std::uint32_t tdi_end = target::kTdiBase + target::kTileCount * target::kTdiTileStride;
  if (offset >= target::kTdiBase && offset < tdi_end) {
    const std::uint32_t relative = offset - target::kTdiBase;
    tdi_write(static_cast<std::uint16_t>(relative / target::kTdiTileStride),
              relative % target::kTdiTileStride / 4, value);
    regs_[offset / 4] = value;
    return;
  }
  switch (offset) {
    case reg::kAutoloadData: fifo_.push_back(value); return;
    case reg::kAutoloadCsr:
      regs_[offset / 4] = value;
      if (value == 0) fifo_.clear();
      if ((value & reg::kAutoloadGo) != 0) autoloader_go(value);
      return;
    case reg::kHspGs1:
    case reg::kHspGs2:
      if (value > reg::kHspMarkMask) violation(fmt::format("HSP write {:#x}", value));
      regs_[offset / 4] = value & reg::kHspMarkMask;
      reads_since_write_[offset] = 0;
      return;
    default: regs_[offset / 4] = value; return;
  }
}

std::uint32_t FakeDevice::read_register(std::uint32_t offset) {
  const std::uint32_t tdi_end = target::kTdiBase + target::kTileCount * target::kTdiTileStride;
  if (offset >= target::kTdiBase && offset < tdi_end) {
    const std::uint32_t relative = offset - target::kTdiBase;
    const std::uint32_t reg = relative % target::kTdiTileStride / 4;
    const auto tile = static_cast<std::uint16_t>(relative / target::kTdiTileStride);
    if (reg == reg::tdi::kContextStatus || reg == reg::tdi::kStatus || reg == reg::tdi::kData ||
        reg == reg::tdi::kRunBreak) {
      return tdi_read(tile, reg);
    }
    return regs_[offset / 4];
  }
  switch (offset) {
    case reg::kAutoloadCsr: {
      const std::uint32_t csr = regs_[offset / 4];
      if (busy_reads_left_ > 0) {
        --busy_reads_left_;
        return csr | reg::kAutoloadGo;
      }
      return csr & ~reg::kAutoloadGo;
    }
    case reg::kHspGs1:
    case reg::kHspGs2:
      // The device runs on its own: a read that meets the latency lets it take
      // whatever credits its next syncs need, on either mark.
      if (++reads_since_write_[offset] >= hsp_latency_reads) {
        unsigned before = 0;
        do {
          before = consumed_[reg::kHspGs1] + consumed_[reg::kHspGs2];
          process_credits(reg::kHspGs1);
          process_credits(reg::kHspGs2);
        } while (consumed_[reg::kHspGs1] + consumed_[reg::kHspGs2] != before);
      }
      return regs_[offset / 4];
    default: return regs_[offset / 4];
  }
}

// ---- Autoloader ------------------------------------------------------------------

void FakeDevice::autoloader_go(std::uint32_t csr) {
  busy_reads_left_ = autoloader_busy_reads;
  const std::uint32_t target_word = regs_[reg::kAutoloadTarget / 4];
  const std::uint32_t lp = csr & reg::kAutoloadLoadPointerMask;
  if ((csr & reg::kAutoloadDataPresent) != 0) {
    const std::size_t words = fifo_.size();
    if (words == 0 || words % 256 != 0) {
      violation(fmt::format("autoloader staged {} words, not whole KiB", words));
      return;
    }
    const auto kib = static_cast<std::uint32_t>(words / 256);
    if (target_word != (reg::kAutoloadZone | kib << reg::kAutoloadAddressShift)) {
      violation(fmt::format("staging AUTOLD_TARGET {:#x}", target_word));
      return;
    }
    if (lp != ((words - 1) & reg::kAutoloadLoadPointerMask)) {
      violation(fmt::format("staging load pointer {}", lp));
    }
    bootloader_ = words_to_bytes(fifo_);
    fifo_.clear();
    return;
  }
  const auto kib = static_cast<std::uint32_t>(bootloader_.size() / 1024);
  if (bootloader_.empty() ||
      target_word != (reg::kAutoloadZone | reg::kAutoloadTileSramKib << reg::kAutoloadAddressShift |
                      kib)) {
    violation(fmt::format("install with AUTOLD_TARGET {:#x} and {} staged bytes", target_word,
                          bootloader_.size()));
    return;
  }
  installed_tiles_ = ((csr >> reg::kAutoloadTileShift) & reg::kAutoloadTileMask) + 1;
  phase_ = Phase::kBatches;
  batches_ = 0;
  sentinel_ = false;
}

// ---- HSP credits and the bootloader ------------------------------------------------

unsigned FakeDevice::credits_consumed(std::uint32_t mark) const {
  const auto it = consumed_.find(mark);
  return it == consumed_.end() ? 0 : it->second;
}

void FakeDevice::process_credits(std::uint32_t mark) {
  std::uint32_t& count = regs_[mark / 4];
  while (count > 0) {
    switch (phase_) {
      case Phase::kIdle:
      case Phase::kHalted: return;  // nothing runs that could sync
      case Phase::kBatches:
        if (mark != reg::kHspGs1 || attached_.count(driver::kTransportBufferIndex) == 0) return;
        if (transport_is_sentinel()) {
          sentinel_ = true;
          phase_ = Phase::kFinal;
        } else if (!load_batch()) {
          return;
        }
        --count;
        ++consumed_[mark];
        break;
      case Phase::kFinal:
        if (mark != reg::kHspGs1) return;
        final_mark_ = count;  // the application's initial sync takes them all
        consumed_[mark] += count;
        count = 0;
        start_supervisors();
        return;
      case Phase::kRunning: {
        if (script_.empty() || script_.front().mark != mark) return;
        Sync sync = std::move(script_.front());
        script_.pop_front();
        if (sync.action) sync.action(*this);
        --count;
        ++consumed_[mark];
        ++syncs_done_;
        if (script_.empty() && halt_when_script_done) halt_all();
        break;
      }
    }
  }
}

bool FakeDevice::transport_is_sentinel() const {
  const Attachment& transport = attached_.at(driver::kTransportBufferIndex);
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(transport.vaddr);
  return std::all_of(bytes, bytes + transport.size,
                     [](std::uint8_t b) { return b == driver::kExecuteSentinelByte; });
}

bool FakeDevice::load_batch() {
  const Attachment& transport = attached_.at(driver::kTransportBufferIndex);
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(transport.vaddr);
  const std::size_t size = transport.size;
  const std::uint32_t table_bytes = driver::kTilesPerBatch * driver::kDescriptorBytes;
  if (!std::all_of(bytes + table_bytes, bytes + driver::kDescriptorAreaBytes,
                   [](std::uint8_t b) { return b == 0; })) {
    violation("descriptor area beyond the table is not zero");
    return false;
  }
  struct Frame {
    std::uint16_t tile;
    std::uint32_t index;
    const std::uint8_t* payload;
  };
  std::vector<Frame> frames;
  std::set<std::uint16_t> batch_tiles;
  for (unsigned slot = 0; slot < driver::kTilesPerBatch; ++slot) {
    const std::uint32_t offset = load_u32_le(bytes + slot * 8);
    const std::uint32_t count = load_u32_le(bytes + slot * 8 + 4);
    if (count < 17 || count > target::kLoaderMaxFrames) {
      violation(fmt::format("slot {}: {} frames (17..643 accepted)", slot, count));
      return false;
    }
    if (offset < driver::kDescriptorAreaBytes ||
        std::uint64_t{offset} + std::uint64_t{count} * target::kLoaderFrameBytes > size) {
      violation(fmt::format("slot {}: frames at {:#x} leave the transport", slot, offset));
      return false;
    }
    std::uint32_t tile = 0;
    for (std::uint32_t f = 0; f < count; ++f) {
      const std::uint8_t* frame = bytes + offset + std::size_t{f} * target::kLoaderFrameBytes;
      const std::uint32_t index = load_u32_le(frame);
      const std::uint32_t frame_tile = load_u32_le(frame + 4);
      const std::uint32_t flags = load_u32_le(frame + 8);
      const std::uint32_t reserved = load_u32_le(frame + 12);
      if (f == 0) tile = frame_tile;
      const std::uint32_t expected_flags = f + 1 == count ? driver::kLastFrameFlag : 0;
      if (index != f || frame_tile != tile || flags != expected_flags || reserved != 0) {
        violation(fmt::format("slot {} frame {}: header {:#x} {:#x} {:#x} {:#x}", slot, f, index,
                              frame_tile, flags, reserved));
        return false;
      }
      if (!std::all_of(frame + 1008, frame + 1024, [](std::uint8_t b) { return b == 0xFF; })) {
        violation(fmt::format("slot {} frame {}: trailer is not 16 bytes of 0xFF", slot, f));
        return false;
      }
      frames.push_back({static_cast<std::uint16_t>(tile), f, frame + 16});
    }
    if (tile >= installed_tiles_) {
      violation(fmt::format("slot {}: tile {} has no bootloader", slot, tile));
      return false;
    }
    if (!batch_tiles.insert(static_cast<std::uint16_t>(tile)).second) {
      violation(fmt::format("slot {}: tile {} twice in one batch", slot, tile));
      return false;
    }
    frames_[static_cast<std::uint16_t>(tile)] = count;
  }
  for (const Frame& frame : frames) {
    write_sram(frame.tile, target::kLoadBase + frame.index * target::kLoaderFramePayload,
               std::span<const std::uint8_t>(frame.payload, target::kLoaderFramePayload));
    loaded_.insert(frame.tile);
  }
  ++batches_;
  return true;
}

std::uint32_t FakeDevice::frames_loaded(std::uint16_t tile) const {
  const auto it = frames_.find(tile);
  return it == frames_.end() ? 0 : it->second;
}

void FakeDevice::start_supervisors() {
  phase_ = Phase::kRunning;
  for (const std::uint16_t tile : loaded_) {
    TileDebug& d = debug(tile);
    d.state = {};
    d.state[0] = 1;
    d.pc[0] = target::kEntryPoint;
  }
  if (script_.empty() && halt_when_script_done) halt_all();
}

void FakeDevice::halt_all() {
  phase_ = Phase::kHalted;
  for (auto& [tile, d] : debug_) {
    for (unsigned c = 0; c < 7; ++c) {
      if (d.state[c] == 1) {
        d.state[c] = 0;
        d.pc[c] = 0;
      }
    }
  }
}

void FakeDevice::reset_tiles() {
  sram_.clear();
  debug_.clear();
  loaded_.clear();
  frames_.clear();
  installed_tiles_ = 0;
  phase_ = Phase::kIdle;
  batches_ = 0;
  sentinel_ = false;
  final_mark_ = 0;
}

void FakeDevice::expect_sync(std::uint32_t mark, std::string name, Action action) {
  script_.push_back({mark, std::move(name), std::move(action)});
}

// ---- SRAM and host memory -------------------------------------------------------------

std::vector<std::uint8_t> FakeDevice::sram(std::uint16_t tile, std::uint32_t address,
                                           std::size_t size) const {
  std::vector<std::uint8_t> bytes(size, 0);
  const auto t = sram_.find(tile);
  if (t == sram_.end()) return bytes;
  for (std::size_t i = 0; i < size; ++i) {
    const std::uint32_t a = static_cast<std::uint32_t>(address + i);
    const auto page = t->second.find(a / kPage);
    if (page != t->second.end()) bytes[i] = page->second[a % kPage];
  }
  return bytes;
}

void FakeDevice::write_sram(std::uint16_t tile, std::uint32_t address,
                            std::span<const std::uint8_t> bytes) {
  auto& pages = sram_[tile];
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const std::uint32_t a = static_cast<std::uint32_t>(address + i);
    auto& page = pages[a / kPage];
    if (page.empty()) page.assign(kPage, 0);
    page[a % kPage] = bytes[i];
  }
}

std::uint32_t FakeDevice::sram_word(std::uint16_t tile, std::uint32_t address) const {
  const auto bytes = sram(tile, address, 4);
  return load_u32_le(bytes.data());
}

std::uint8_t* FakeDevice::host_pointer(std::uint64_t host_offset, std::size_t size) const {
  std::uint64_t base = 0;
  for (const auto& [index, attachment] : attached_) {
    const std::uint64_t span = (std::uint64_t{attachment.size} + kPage - 1) / kPage * kPage;
    if (host_offset >= base && host_offset + size <= base + attachment.size) {
      return reinterpret_cast<std::uint8_t*>(attachment.vaddr) + (host_offset - base);
    }
    base += span;
  }
  throw std::out_of_range(fmt::format("host range [{:#x}, +{:#x}) is not in one attached buffer",
                                      host_offset, size));
}

void FakeDevice::host_read(std::uint64_t host_offset, std::span<std::uint8_t> bytes) const {
  std::memcpy(bytes.data(), host_pointer(host_offset, bytes.size()), bytes.size());
}

void FakeDevice::host_write(std::uint64_t host_offset, std::span<const std::uint8_t> bytes) {
  std::memcpy(host_pointer(host_offset, bytes.size()), bytes.data(), bytes.size());
}

void FakeDevice::h2d(std::uint16_t tile, std::uint32_t address, std::uint64_t host_offset,
                     std::size_t size) {
  std::vector<std::uint8_t> bytes(size);
  host_read(host_offset, bytes);
  write_sram(tile, address, bytes);
}

void FakeDevice::d2h(std::uint16_t tile, std::uint32_t address, std::uint64_t host_offset,
                     std::size_t size) {
  host_write(host_offset, sram(tile, address, size));
}

// ---- TDI --------------------------------------------------------------------------------

FakeDevice::TileDebug& FakeDevice::debug(std::uint16_t tile) { return debug_[tile]; }

unsigned FakeDevice::context_state(std::uint16_t tile, unsigned context) const {
  const auto it = debug_.find(tile);
  return it == debug_.end() ? 0 : it->second.state.at(context);
}
void FakeDevice::set_context_state(std::uint16_t tile, unsigned context, unsigned state) {
  debug(tile).state.at(context) = state;
}
void FakeDevice::set_status_csr(std::uint16_t tile, unsigned context, std::uint32_t value) {
  debug(tile).status_csr.at(context) = value;
}
void FakeDevice::set_pc(std::uint16_t tile, unsigned context, std::uint32_t value) {
  debug(tile).pc.at(context) = value;
}
void FakeDevice::set_m(std::uint16_t tile, unsigned context, unsigned m, std::uint32_t value) {
  if (m != 15) debug(tile).m.at(context).at(m) = value;
}
std::uint32_t FakeDevice::m(std::uint16_t tile, unsigned context, unsigned m) const {
  const auto it = debug_.find(tile);
  return it == debug_.end() ? 0 : it->second.m.at(context).at(m);
}
void FakeDevice::set_ererr(std::uint16_t tile, std::uint32_t ererr) { debug(tile).ererr = ererr; }

std::uint32_t FakeDevice::tdi_read(std::uint16_t tile, std::uint32_t reg) {
  TileDebug& d = debug(tile);
  switch (reg) {
    case reg::tdi::kContextStatus: {
      std::uint32_t status = (d.ererr & reg::tdi::kErerrMask) << reg::tdi::kErerrShift;
      for (unsigned c = 0; c < 7; ++c) status |= (d.state[c] & 3u) << (2 * c);
      return status;
    }
    case reg::tdi::kStatus: return d.tdi_status;
    case reg::tdi::kData: return d.debug_data;
    case reg::tdi::kRunBreak: return d.run_break;
    default: return 0;
  }
}

void FakeDevice::tdi_write(std::uint16_t tile, std::uint32_t reg, std::uint32_t value) {
  TileDebug& d = debug(tile);
  switch (reg) {
    case reg::tdi::kRunBreak:
      d.run_break = value;
      for (unsigned c = 0; c < 7; ++c) {
        if ((value >> c & 1u) != 0 && d.state[c] == 1) {
          d.resume[c] = 1;
          d.state[c] = 2;
          d.status_csr[c] = (d.status_csr[c] & ~0xF0u) | 1u << 4;  // TEXCPT_RBRK
        }
      }
      return;
    case reg::tdi::kExceptionClear:
      for (unsigned c = 0; c < 7; ++c) {
        if ((value >> c & 1u) == 0 || d.state[c] != 2) continue;
        if (((d.status_csr[c] >> 4) & 0xF) != 1) continue;  // only run breaks resume here
        if ((d.run_break >> c & 1u) != 0) continue;          // the break still holds
        d.state[c] = d.resume[c];
        d.status_csr[c] &= ~0xF0u;
      }
      return;
    case reg::tdi::kInstructionOwner: d.owner = value; return;
    case reg::tdi::kInstruction: inject(tile, value); return;
    case reg::tdi::kData: d.debug_data = value; return;
    case reg::tdi::kStatusClear: d.tdi_status = 0; return;
    default: return;
  }
}

void FakeDevice::inject(std::uint16_t tile, std::uint32_t word) {
  TileDebug& d = debug(tile);
  if (d.owner >= 7) {
    d.tdi_status |= 1;
    return;
  }
  const unsigned c = d.owner;
  if (d.state[c] == 1) {  // a running context does not take injected instructions
    d.tdi_status |= 1;
    return;
  }
  auto& m = d.m[c];
  const auto reg_value = [&](isa::Reg r) { return r == isa::Reg::m15 ? 0u : m[static_cast<unsigned>(r)]; };
  const auto set_reg = [&](isa::Reg r, std::uint32_t v) {
    if (r != isa::Reg::m15) m[static_cast<unsigned>(r)] = v;
  };
  const auto sram_ok = [](std::uint32_t a) {
    return a % 4 == 0 && a >= target::kSramBase && a <= target::kSramEnd - 4;
  };
  const std::uint32_t words[1] = {word};
  const isa::Instruction instruction = isa::decode(words).instruction;
  if (const auto* get = std::get_if<isa::Get>(&instruction)) {
    switch (get->csr) {
      case isa::Csr::kPc: set_reg(get->dst, d.pc[c]); return;
      case isa::Csr::kStatus: set_reg(get->dst, d.status_csr[c]); return;
      case isa::Csr::kDebugData: set_reg(get->dst, d.debug_data); return;
      default: break;
    }
  } else if (const auto* put = std::get_if<isa::Put>(&instruction)) {
    if (put->csr == isa::Csr::kDebugData) {
      d.debug_data = reg_value(put->src);
      return;
    }
  } else if (const auto* ld = std::get_if<isa::Ld32>(&instruction)) {
    const std::uint32_t a = reg_value(ld->base) + reg_value(ld->delta) + 4 * ld->offset_words;
    if (!sram_ok(a)) {
      d.tdi_status |= 2;
      return;
    }
    set_reg(ld->dst, sram_word(tile, a));
    return;
  } else if (const auto* st = std::get_if<isa::St32>(&instruction)) {
    const std::uint32_t a = reg_value(st->base) + reg_value(st->delta) + 4 * st->offset_words;
    if (!sram_ok(a)) {
      d.tdi_status |= 2;
      return;
    }
    std::uint8_t bytes[4];
    store_u32_le(reg_value(st->src), bytes);
    write_sram(tile, a, bytes);
    return;
  }
  d.tdi_status |= 4;  // not an instruction this fake executes
}

}  // namespace tessera::testing
