#pragma once
// The host side of the simulated PCIe link: host buffers the runtime
// attaches, and the host phase solver that serves the packets tiles send
// after a host sync (reference ipu21-target.md §4.5, driver-host-protocol.md
// §4, §5, §8).
//
// In a host phase an XREQ owner sends its 46-bit bitmap naming the targets
// it requests service for; each target sends packet headers (target/'s
// parse_packet_header is the only decoder): an H2D read request makes the
// host copy bytes from host memory into the tile's packet window; a D2H
// header is followed by its payload words, which the host writes into host
// memory; a zero-byte read closes a D2H transfer. What the host returns (read
// data, the zero-byte read's word) reaches the target only through its
// INCOMING_MUX selecting its host endpoint (target::host_mux). A target's `sync 0` waits
// until the host has served it, and its INCOMING_DCOUNT must equal the words
// the host returned (payload words for H2D, one per zero-byte read).
//
// [INF] Host buffers form one host address space, concatenated in ascending
// buffer index (driver-host-protocol.md §8.5 infers this).

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "sim/fault.hpp"
#include "sim/tile.hpp"

namespace tessera::sim {

class HostMemory {
 public:
  // Attaches `bytes` as buffer `index` (replacing an earlier one). The chip
  // reads and writes them while a run serves host packets.
  void attach(std::uint32_t index, std::span<std::uint8_t> bytes);
  void detach(std::uint32_t index);
  void detach_all() { buffers_.clear(); }
  std::uint64_t size() const noexcept;

  // Copies between host addresses and `bytes`; false when the range is not
  // inside the attached buffers.
  bool read(std::uint64_t address, std::span<std::uint8_t> bytes) const;
  bool write(std::uint64_t address, std::span<const std::uint8_t> bytes);

 private:
  std::map<std::uint32_t, std::span<std::uint8_t>> buffers_;
};

struct HostStats {
  std::uint64_t h2d_bytes = 0;
  std::uint64_t d2h_bytes = 0;
};

// What the host did for one tile in a phase: words it returned (for the
// dcount check) and the cycles the transfers take at 4 bytes per cycle.
// Words the host sent while the tile's INCOMING_MUX did not select its host
// endpoint never reached it (`unheard_words`, with the mux and the endpoint
// for the report).
struct HostService {
  std::uint64_t returned_words = 0;
  std::uint64_t cycles = 0;
  std::uint64_t unheard_words = 0;
  std::uint32_t mux = 0;
  std::uint32_t endpoint = 0;
};

// Serves one host phase: parses every participant's sent words as packets
// and moves the data. Faults name tile and packet; services are by tile index.
std::vector<Fault> solve_host_phase(std::span<Tile* const> tiles,
                                    std::span<const std::size_t> participants, std::uint64_t phase,
                                    HostMemory& host, HostStats& stats,
                                    std::map<std::size_t, HostService>& services);

}  // namespace tessera::sim
