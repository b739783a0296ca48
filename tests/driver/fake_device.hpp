#pragma once
// A fake C600 behind driver::DeviceSystem, faithful to
// driver-host-protocol.md §8 where the driver depends on it. It records every
// system call and every MMIO access, and emulates:
//   * the kernel driver: all 12 ioctls with the argument styles of §1.2
//     (values checked, pointed-to structs read), the ICU mailbox reply
//     (word 0 high half 0x4078), BUFFER_ATTACH registration, RESET_DEVICE
//     clearing the tiles; injectable ioctl errors;
//   * the 0x80000-byte register file: writes stored and read back, except
//     the active registers below;
//   * the autoloader: AUTOLD_DATA is a FIFO; a CSR write with GO stages the
//     FIFO (DATA_PRESENT) or installs the staged image on tiles 0..(csr>>9)&0x7FF;
//     GO reads 1 for `autoloader_busy_reads` reads, then clear; the TARGET
//     and load-pointer words are checked against §3.2;
//   * HSP GS1/GS2 as 16-bit credit counters consumed by the device's own
//     syncs: while the bootloader runs (buffer 0 attached), one GS1 credit
//     loads a batch (descriptor table, 17..643 frames per slot, every frame
//     header, trailer and payload checked, payloads copied to SRAM from
//     0x4C010) or, on an all-0xFF transport, takes the execute sentinel; the
//     next write is the final mark: all its credits are taken at once and
//     every loaded supervisor starts (state running at 0x4C010). A credit is
//     consumed only on the `hsp_latency_reads`-th read after the write, so
//     the host's wait loops run. The device never takes a credit it has no
//     sync for: a protocol error stalls it (and is listed in violations());
//   * after start, a scripted program: expect_sync() queues the device's
//     host syncs (GS1 or GS2), each optionally with an action run before the
//     sync releases (an H2D or D2H copy between attached host buffers and
//     SRAM); when the script runs out, every context halts (TDI state 0),
//     unless halt_when_script_done is false;
//   * TDI: CONTEXT_STATUS from per-context states plus ERERR; RUN_BREAK stops
//     a running context with RBRK and EXCEPTION_CLEAR resumes it; injected
//     instructions, decoded with target/'s decoder: get/put of $DBG_DATA,
//     get of $PC and $SSR/$WSR, ld32/st32 over a sparse fake SRAM; an
//     injection into a running context or an unsupported word sets STATUS
//     error bits.
// Not emulated: tile execution (no supervisor code runs — the script stands
// in for the program), exchange, DCOUNT/exchange-control semantics, traps
// and their re-trap rule, HexOPT translation beyond "buffers concatenated in
// index order in 4 KiB pages", timing, the XB/CCSR registers' meaning (they
// are plain storage).

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "driver/system.hpp"
#include "target/topology.hpp"

namespace tessera::testing {

class FakeDevice final : public driver::DeviceSystem {
 public:
  static constexpr const char* kDefaultPath = "/dev/fake-ipu0";
  explicit FakeDevice(std::string path = kDefaultPath);
  ~FakeDevice() override;

  // --- DeviceSystem ---------------------------------------------------------
  int open(const char* path, int flags) override;
  int ioctl(int fd, unsigned long request, std::uintptr_t argument) override;
  void* mmap(std::size_t length, int protection, int flags, int fd, off_t offset) override;
  int munmap(void* address, std::size_t length) override;
  int close(int fd) override;
  std::uint32_t read32(const volatile std::uint32_t* reg) override;
  void write32(volatile std::uint32_t* reg, std::uint32_t value) override;

  // --- What the host did ------------------------------------------------------
  enum class CallKind { kOpen, kIoctl, kMmap, kMunmap, kClose };
  struct Call {
    CallKind kind;
    unsigned long request = 0;     // ioctl
    std::uintptr_t argument = 0;   // ioctl: the raw argument
  };
  const std::vector<Call>& calls() const { return calls_; }
  std::vector<unsigned long> ioctl_requests() const;
  struct Access {
    bool write;
    std::uint32_t offset;
    std::uint32_t value;
    friend bool operator==(const Access&, const Access&) = default;
  };
  const std::vector<Access>& accesses() const { return accesses_; }
  void clear_records();
  // Values written to one register, in order.
  std::vector<std::uint32_t> writes_to(std::uint32_t offset) const;

  struct Attachment {
    std::uint32_t index;
    std::uint32_t size;
    std::uint64_t vaddr;
  };
  const std::vector<Attachment>& attach_history() const { return attach_history_; }
  const std::map<std::uint32_t, Attachment>& attached() const { return attached_; }
  const std::vector<std::array<std::uint32_t, 5>>& mailbox_requests() const { return mailbox_; }
  const std::vector<std::uint32_t>& secondary_ids() const { return secondary_ids_; }
  // Protocol errors the fake saw (it stalls instead of proceeding).
  const std::vector<std::string>& violations() const { return violations_; }

  // --- Knobs ------------------------------------------------------------------
  std::uint32_t mailbox_reply_word0 = 0x4078020E;
  std::map<unsigned long, int> ioctl_errors;  // request → errno to fail with
  unsigned autoloader_busy_reads = 2;
  unsigned hsp_latency_reads = 2;
  bool halt_when_script_done = true;
  bool fail_open = false;

  // --- Device state -------------------------------------------------------------
  std::uint32_t register_value(std::uint32_t offset) const { return regs_[offset / 4]; }
  unsigned installed_tiles() const { return installed_tiles_; }
  const std::vector<std::uint8_t>& staged_bootloader() const { return bootloader_; }
  unsigned batches_loaded() const { return batches_; }
  bool sentinel_seen() const { return sentinel_; }
  std::uint32_t final_mark() const { return final_mark_; }
  const std::set<std::uint16_t>& loaded_tiles() const { return loaded_; }
  std::uint32_t frames_loaded(std::uint16_t tile) const;
  bool started() const { return phase_ == Phase::kRunning || phase_ == Phase::kHalted; }
  unsigned syncs_done() const { return syncs_done_; }
  unsigned credits_consumed(std::uint32_t mark) const;

  std::vector<std::uint8_t> sram(std::uint16_t tile, std::uint32_t address, std::size_t size) const;
  void write_sram(std::uint16_t tile, std::uint32_t address, std::span<const std::uint8_t> bytes);
  std::uint32_t sram_word(std::uint16_t tile, std::uint32_t address) const;

  // 0 inactive, 1 running, 2 excepted-debug, 3 excepted.
  unsigned context_state(std::uint16_t tile, unsigned context) const;
  void set_context_state(std::uint16_t tile, unsigned context, unsigned state);
  void set_status_csr(std::uint16_t tile, unsigned context, std::uint32_t value);
  void set_pc(std::uint16_t tile, unsigned context, std::uint32_t value);
  void set_m(std::uint16_t tile, unsigned context, unsigned m, std::uint32_t value);
  std::uint32_t m(std::uint16_t tile, unsigned context, unsigned m) const;
  void set_ererr(std::uint16_t tile, std::uint32_t ererr);

  // --- Scripted program -----------------------------------------------------------
  using Action = std::function<void(FakeDevice&)>;
  void expect_sync(std::uint32_t mark, std::string name, Action action = {});
  std::size_t pending_syncs() const { return script_.size(); }
  // The host address space: attached buffers in index order, each rounded up
  // to 4 KiB pages [INF]. Throws std::out_of_range outside one buffer.
  void host_read(std::uint64_t host_offset, std::span<std::uint8_t> bytes) const;
  void host_write(std::uint64_t host_offset, std::span<const std::uint8_t> bytes);
  void h2d(std::uint16_t tile, std::uint32_t address, std::uint64_t host_offset, std::size_t size);
  void d2h(std::uint16_t tile, std::uint32_t address, std::uint64_t host_offset, std::size_t size);

 private:
  enum class Phase { kIdle, kBatches, kFinal, kRunning, kHalted };
  struct TileDebug {
    std::array<unsigned, 7> state{};
    std::array<unsigned, 7> resume{};
    std::array<std::array<std::uint32_t, 16>, 7> m{};
    std::array<std::uint32_t, 7> pc{};
    std::array<std::uint32_t, 7> status_csr{};
    std::uint32_t debug_data = 0;
    std::uint32_t run_break = 0;
    std::uint32_t owner = 0;
    std::uint32_t tdi_status = 0;
    std::uint32_t ererr = 0;
  };
  struct Sync {
    std::uint32_t mark;
    std::string name;
    Action action;
  };

  std::uint32_t offset_of(const volatile std::uint32_t* reg, bool write);
  void write_register(std::uint32_t offset, std::uint32_t value);
  std::uint32_t read_register(std::uint32_t offset);
  void autoloader_go(std::uint32_t csr);
  void process_credits(std::uint32_t mark);
  bool load_batch();
  bool transport_is_sentinel() const;
  void start_supervisors();
  void halt_all();
  void reset_tiles();
  TileDebug& debug(std::uint16_t tile);
  void tdi_write(std::uint16_t tile, std::uint32_t reg, std::uint32_t value);
  std::uint32_t tdi_read(std::uint16_t tile, std::uint32_t reg);
  void inject(std::uint16_t tile, std::uint32_t word);
  void violation(std::string text);
  std::uint8_t* host_pointer(std::uint64_t host_offset, std::size_t size) const;

  std::string path_;
  int fd_ = -1;
  bool mapped_ = false;
  std::vector<std::uint32_t> regs_;
  std::vector<Call> calls_;
  std::vector<Access> accesses_;
  std::vector<Attachment> attach_history_;
  std::map<std::uint32_t, Attachment> attached_;
  std::vector<std::array<std::uint32_t, 5>> mailbox_;
  std::vector<std::uint32_t> secondary_ids_;
  std::vector<std::string> violations_;

  std::vector<std::uint32_t> fifo_;
  std::vector<std::uint8_t> bootloader_;
  unsigned busy_reads_left_ = 0;
  unsigned installed_tiles_ = 0;
  Phase phase_ = Phase::kIdle;
  unsigned batches_ = 0;
  bool sentinel_ = false;
  std::uint32_t final_mark_ = 0;
  std::set<std::uint16_t> loaded_;
  std::map<std::uint16_t, std::uint32_t> frames_;
  std::map<std::uint32_t, unsigned> reads_since_write_;
  std::map<std::uint32_t, unsigned> consumed_;
  std::deque<Sync> script_;
  unsigned syncs_done_ = 0;

  std::map<std::uint16_t, std::map<std::uint32_t, std::vector<std::uint8_t>>> sram_;
  std::map<std::uint16_t, TileDebug> debug_;
};

}  // namespace tessera::testing
