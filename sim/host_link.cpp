#include "sim/host_link.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "support/little_endian.hpp"
#include "target/host_exchange.hpp"
#include "target/memory_map.hpp"

namespace tessera::sim {

void HostMemory::attach(std::uint32_t index, std::span<std::uint8_t> bytes) {
  buffers_[index] = bytes;
}

void HostMemory::detach(std::uint32_t index) { buffers_.erase(index); }

std::uint64_t HostMemory::size() const noexcept {
  std::uint64_t total = 0;
  for (const auto& [index, bytes] : buffers_) total += bytes.size();
  return total;
}

namespace {

// Calls f(buffer span, offset in it, offset in the transfer, length) for each
// piece of [address, address + size); false when it leaves the buffers.
template <class Buffers, class F>
bool for_each_piece(Buffers& buffers, std::uint64_t address, std::uint64_t size, F&& f) {
  std::uint64_t base = 0;
  std::uint64_t done = 0;
  for (auto& [index, bytes] : buffers) {
    const std::uint64_t end = base + bytes.size();
    while (done < size && address + done >= base && address + done < end) {
      const std::uint64_t offset = address + done - base;
      const std::uint64_t length = std::min<std::uint64_t>(size - done, bytes.size() - offset);
      f(bytes, offset, done, length);
      done += length;
    }
    base = end;
  }
  return done == size;
}

}  // namespace

bool HostMemory::read(std::uint64_t address, std::span<std::uint8_t> bytes) const {
  if (address + bytes.size() < address || address + bytes.size() > size()) return false;
  return for_each_piece(buffers_, address, bytes.size(),
                        [&](std::span<std::uint8_t> buffer, std::uint64_t offset,
                            std::uint64_t at, std::uint64_t length) {
                          std::copy_n(buffer.begin() + static_cast<std::ptrdiff_t>(offset), length,
                                      bytes.begin() + static_cast<std::ptrdiff_t>(at));
                        });
}

bool HostMemory::write(std::uint64_t address, std::span<const std::uint8_t> bytes) {
  if (address + bytes.size() < address || address + bytes.size() > size()) return false;
  return for_each_piece(buffers_, address, bytes.size(),
                        [&](std::span<std::uint8_t> buffer, std::uint64_t offset,
                            std::uint64_t at, std::uint64_t length) {
                          std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(at), length,
                                      buffer.begin() + static_cast<std::ptrdiff_t>(offset));
                        });
}

namespace {

struct Transfer {
  target::PacketHeader header;
  std::vector<std::uint32_t> payload;  // D2H only
};

bool crosses_host_page(std::uint64_t offset, std::uint32_t size) {
  return size > 0 && offset / target::kHostPageBytes != (offset + size - 1) / target::kHostPageBytes;
}

}  // namespace

std::vector<Fault> solve_host_phase(std::span<Tile* const> tiles,
                                    std::span<const std::size_t> participants, std::uint64_t phase,
                                    HostMemory& host, HostStats& stats,
                                    std::map<std::size_t, HostService>& services) {
  std::vector<Fault> faults;
  const auto fault_on = [&](std::size_t index, FaultKind kind, std::string message) {
    Tile& tile = *tiles[index];
    if (tile.status() == TileStatus::kFaulted) return;
    tile.raise(kind, fmt::format("host phase {}: {}", phase, message));
    faults.push_back(*tile.fault());
  };

  // Every participant's outgoing words, in the order it sent them.
  std::map<std::size_t, std::vector<std::uint32_t>> sent;
  for (const std::size_t p : participants) {
    const ExchangeRecord& record = *tiles[p]->exchange();
    auto& words = sent[p];
    for (const auto& send : record.sends) {
      if ((send.sctl & target::kSctl64BitItems) != 0) {
        fault_on(p, FaultKind::kNotModelled, "a 64-bit send to the host is not modelled");
        break;
      }
      for (std::uint32_t i = 0; i < send.items; ++i) {
        const std::uint64_t address =
            std::uint64_t{record.outgoing_base} + 4 * (std::uint64_t{send.first_item} + i);
        if (address % 4 != 0 || address < target::kSramBase || address + 4 > target::kSramEnd) {
          fault_on(p, FaultKind::kExchangeAddress,
                   fmt::format("{} sends from {:#x}, outside SRAM", tiles[p]->id(), address));
          break;
        }
        words.push_back(tiles[p]->sram().read_u32(static_cast<std::uint32_t>(address)));
      }
    }
  }

  // Packets: XREQ bitmaps from owners, headers (and D2H payloads) from targets.
  std::set<std::uint16_t> requested;
  std::map<std::size_t, std::vector<Transfer>> transfers;
  for (auto& [p, words] : sent) {
    const target::PhysicalTile tile = tiles[p]->id();
    for (std::size_t i = 0; i < words.size();) {
      if (i + 1 >= words.size()) {
        fault_on(p, FaultKind::kExchangeAddress,
                 fmt::format("{} sent a lone word {:#010x} to the host", tile, words[i]));
        break;
      }
      const std::uint32_t w0 = words[i], w1 = words[i + 1];
      try {
        // A bitmap's word 0 holds bits 0..23 only; every header sets bit 31.
        if (target::is_xreq_owner(tile) && (w0 >> target::kXreqWord0Bits) == 0) {
          for (const auto t : target::XreqBitmap::from_words(tile, w0, w1).targets()) {
            requested.insert(t.value);
          }
          i += 2;
          continue;
        }
        Transfer transfer{target::parse_packet_header(w0, w1), {}};
        if (transfer.header.tile != tile) {
          fault_on(p, FaultKind::kExchangeAddress,
                   fmt::format("{} sent a packet routed to {}", tile, transfer.header.tile));
          break;
        }
        i += 2;
        if (transfer.header.direction == target::HostDirection::kDeviceToHost) {
          const std::size_t count = transfer.header.size / 4;
          if (words.size() - i < count) {
            fault_on(p, FaultKind::kExchangeAddress,
                     fmt::format("{} sent a D2H header for {} bytes but only {} payload bytes",
                                 tile, transfer.header.size, 4 * (words.size() - i)));
            break;
          }
          transfer.payload.assign(words.begin() + static_cast<std::ptrdiff_t>(i),
                                  words.begin() + static_cast<std::ptrdiff_t>(i + count));
          i += count;
        }
        transfers[p].push_back(std::move(transfer));
      } catch (const target::HostExchangeError& error) {
        fault_on(p, FaultKind::kExchangeAddress,
                 fmt::format("{} sent a malformed host packet [{:#010x}, {:#010x}]: {}", tile, w0,
                             w1, error.what()));
        break;
      }
    }
  }

  // The host serves the requested targets.
  for (auto& [p, list] : transfers) {
    const target::PhysicalTile tile = tiles[p]->id();
    if (!requested.contains(tile.value)) {
      fault_on(p, FaultKind::kExchangeAddress,
               fmt::format("{} sent host packets, but its XREQ owner {} did not request service "
                           "for it in this phase",
                           tile, target::xreq_owner(tile)));
      continue;
    }
    HostService& service = services[p];
    service.mux = tiles[p]->incoming_mux();
    service.endpoint = target::host_mux(tile);
    for (const auto& transfer : list) {
      const auto& header = transfer.header;
      if (crosses_host_page(header.host_offset, header.size)) {
        fault_on(p, FaultKind::kExchangeAddress,
                 fmt::format("{}: the packet [{:#x}, +{}) crosses a {}-byte host page", tile,
                             header.host_offset, header.size, target::kHostPageBytes));
        break;
      }
      if (header.direction == target::HostDirection::kHostToDevice &&
          service.mux != service.endpoint) {
        // The host's reply goes out, but the tile is not listening to it.
        service.unheard_words += header.size == 0 ? 1 : header.size / 4;
        continue;
      }
      if (header.direction == target::HostDirection::kHostToDevice) {
        if (header.size == 0) {  // the zero-byte read that closes a D2H transfer
          service.returned_words += 1;
          continue;
        }
        std::vector<std::uint8_t> bytes(header.size);
        if (!host.read(header.host_offset, bytes)) {
          fault_on(p, FaultKind::kExchangeAddress,
                   fmt::format("{}: H2D read of host [{:#x}, +{}) outside the attached buffers "
                               "({} bytes)",
                               tile, header.host_offset, header.size, host.size()));
          break;
        }
        tiles[p]->sram().write(header.tile_address, bytes);
        service.returned_words += header.size / 4;
        service.cycles += header.size / 4;
        stats.h2d_bytes += header.size;
      } else {
        std::vector<std::uint8_t> bytes;
        for (const auto word : transfer.payload) append_u32_le(bytes, word);
        if (!host.write(header.host_offset, bytes)) {
          fault_on(p, FaultKind::kExchangeAddress,
                   fmt::format("{}: D2H write of host [{:#x}, +{}) outside the attached buffers "
                               "({} bytes)",
                               tile, header.host_offset, header.size, host.size()));
          break;
        }
        service.cycles += header.size / 4;
        stats.d2h_bytes += header.size;
      }
    }
  }
  return faults;
}

}  // namespace tessera::sim
