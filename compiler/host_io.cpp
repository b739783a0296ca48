#include "compiler/host_io.hpp"

#include <algorithm>
#include <deque>
#include <set>

#include <fmt/format.h>

#include "schema/host_layout.hpp"
#include "support/checked.hpp"
#include "target/memory_map.hpp"

namespace tessera::compiler {
namespace {

using target::PhysicalTile;

constexpr std::uint32_t kCommandPage = 0;
constexpr std::uint32_t kDataPage = 1;
constexpr std::uint32_t kSlotBytes = target::kHostPageBytes;  // one transfer at most
// An owner that is also a target keeps its bitmap first, its headers after.
constexpr std::uint32_t kBitmapBytes = 2 * target::kWordBytes;
// Any 8-aligned SRAM address: programs are measured there (their size does
// not depend on it).
constexpr std::uint32_t kProbeAddress = 0x60000;

// Where staged H2D data and the packet words live: a direct H2D destination
// must stay clear of them.
constexpr target::AddressRange kReservedWindow{target::kXreqBitmap,
                                               target::kH2dStaging + target::kH2dStagingMaxBytes};

struct Piece {
  std::uint32_t tile_address = 0;
  std::uint64_t payload_offset = 0;
  std::uint32_t size = 0;
};

// H2D may land directly only inside the window, 32-byte aligned, away from
// the packets and the staging buffer.
bool lands_directly(std::uint32_t address, std::uint32_t size) {
  const auto range = target::AddressRange::from_size(address, size);
  return address % target::kH2dAddressUnit == 0 && target::kH2dWindow.contains(range) &&
         !range.overlaps(kReservedWindow);
}

void check_transfer(const HostTransfer& transfer, const std::set<PhysicalTile>& package,
                    const std::string& where) {
  if (!package.contains(transfer.tile)) {
    throw HostIoError(fmt::format("{}: {} is not a tile of the package", where, transfer.tile));
  }
  const PhysicalTile owner = target::xreq_owner(transfer.tile);
  if (!package.contains(owner)) {
    throw HostIoError(fmt::format(
        "{}: {}'s XREQ owner {} is not a tile of the package; it must request the host's service",
        where, transfer.tile, owner));
  }
  if (transfer.size == 0 || transfer.size % target::kWordBytes != 0) {
    throw HostIoError(fmt::format("{}: size {} is not a positive multiple of 4 bytes", where,
                                  transfer.size));
  }
  const std::uint64_t end = checked_add<std::uint64_t>(transfer.tile_address, transfer.size, where);
  if (transfer.tile_address % target::kWordBytes != 0 || transfer.tile_address < target::kSram.begin ||
      end > target::kSram.end) {
    throw HostIoError(fmt::format("{}: bytes [{:#x}, {:#x}) on {} are not word-aligned tile SRAM",
                                  where, transfer.tile_address, end, transfer.tile));
  }
  checked_add(transfer.payload_offset, std::uint64_t{transfer.size}, where + " payload range");
}

// One side of a call: batches of at most one ≤ 4 KiB piece per tile.
struct SidePlan {
  std::vector<schema::HostSlice> slices;
  std::vector<std::uint32_t> batch_ends;
  std::vector<HostBatch> batches;
};

SidePlan plan_side(const HostCallRequest& call, bool input,
                   const std::map<PhysicalTile, std::uint32_t>& slots, std::uint64_t data_base) {
  std::map<PhysicalTile, std::deque<Piece>> fifo;
  for (const HostTransfer& transfer : input ? call.inputs : call.outputs) {
    for (std::uint32_t done = 0; done < transfer.size; done += kSlotBytes) {
      fifo[transfer.tile].push_back(
          Piece{transfer.tile_address + done, transfer.payload_offset + done,
                std::min(kSlotBytes, transfer.size - done)});
    }
  }
  std::size_t batch_count = 0;
  for (const auto& [tile, pieces] : fifo) batch_count = std::max(batch_count, pieces.size());

  SidePlan side;
  for (std::size_t b = 0; b < batch_count; ++b) {
    std::map<PhysicalTile, target::XreqBitmap> requests;
    std::map<PhysicalTile, Piece> moving;
    for (const auto& [tile, pieces] : fifo) {
      if (b >= pieces.size()) continue;
      const Piece& piece = pieces[b];
      const std::uint32_t slot = slots.at(tile);
      side.slices.push_back(schema::HostSlice{kDataPage, std::uint64_t{slot} * kSlotBytes,
                                              piece.payload_offset, piece.size});
      moving.emplace(tile, piece);
      const PhysicalTile owner = target::xreq_owner(tile);
      requests.try_emplace(owner, owner).first->second.add(tile);
    }
    side.batch_ends.push_back(checked_cast<std::uint32_t>(side.slices.size(), "host slices"));

    HostBatch batch{call.name, input, b, {}};
    std::set<PhysicalTile> active;
    for (const auto& [tile, piece] : moving) active.insert(tile);
    for (const auto& [owner, bitmap] : requests) active.insert(owner);
    for (const PhysicalTile tile : active) {
      std::optional<target::XreqBitmap> request;
      if (const auto found = requests.find(tile); found != requests.end()) request = found->second;
      std::optional<target::H2dTransfer> h2d;
      std::optional<target::D2hTransfer> d2h;
      std::optional<StagingCopy> copy;
      if (const auto found = moving.find(tile); found != moving.end()) {
        const Piece& piece = found->second;
        const std::uint64_t host_offset = data_base + std::uint64_t{slots.at(tile)} * kSlotBytes;
        if (input) {
          const bool direct = lands_directly(piece.tile_address, piece.size);
          const std::uint32_t lands = direct ? piece.tile_address : target::kH2dStaging;
          h2d = target::H2dTransfer{tile, lands, host_offset, piece.size};
          if (!direct) {
            copy = StagingCopy{piece.tile_address, target::kH2dStaging,
                               piece.size / target::kWordBytes};
          }
        } else {
          d2h = target::D2hTransfer{tile, piece.tile_address, host_offset, piece.size};
        }
      }
      batch.steps.emplace(tile, TileHostStep(request, h2d, d2h, copy));
    }
    side.batches.push_back(std::move(batch));
  }
  return side;
}

}  // namespace

TileHostStep::TileHostStep(std::optional<target::XreqBitmap> requests,
                           std::optional<target::H2dTransfer> h2d,
                           std::optional<target::D2hTransfer> d2h, std::optional<StagingCopy> copy)
    : requests_(std::move(requests)), h2d_(h2d), d2h_(d2h), copy_(copy) {}

target::HostProgram TileHostStep::program(std::uint32_t packet_address) const {
  if (!active()) return target::inactive_program();
  const std::uint32_t headers = requests_ ? packet_address + kBitmapBytes : packet_address;
  std::optional<target::TargetCode> code;
  if (h2d_) {
    target::H2dTransfer transfer = *h2d_;
    transfer.packet_address = headers;
    code = target::h2d_target_code(transfer);
  } else if (d2h_) {
    target::D2hTransfer transfer = *d2h_;
    transfer.packet_address = headers;
    code = target::d2h_target_code(transfer);
  }
  if (requests_ && code) return target::owner_target_program(*requests_, *code, packet_address);
  if (requests_) return target::xreq_only_program(*requests_, packet_address);
  return target::target_only_program(*code);
}

std::uint32_t TileHostStep::packet_bytes() const {
  if (!active()) return 0;
  std::uint32_t end = kProbeAddress;
  for (const auto& block : program(kProbeAddress).packets) {
    end = std::max(end, block.address + static_cast<std::uint32_t>(block.words.size()) *
                                            target::kWordBytes);
  }
  return end - kProbeAddress;
}

const TileHostStep& HostBatch::step(target::PhysicalTile tile) const {
  static const TileHostStep inactive;
  const auto found = steps.find(tile);
  return found == steps.end() ? inactive : found->second;
}

HostPlan plan_host_io(std::span<const HostCallRequest> calls,
                      std::span<const target::PhysicalTile> package_tiles) {
  const std::set<PhysicalTile> package(package_tiles.begin(), package_tiles.end());
  std::set<PhysicalTile> taking_part;
  for (std::size_t c = 0; c < calls.size(); ++c) {
    for (const bool input : {true, false}) {
      const auto& transfers = input ? calls[c].inputs : calls[c].outputs;
      for (std::size_t t = 0; t < transfers.size(); ++t) {
        check_transfer(transfers[t], package,
                       fmt::format("host call '{}' {}[{}]", calls[c].name,
                                   input ? "inputs" : "outputs", t));
        taking_part.insert(transfers[t].tile);
      }
    }
  }
  std::map<PhysicalTile, std::uint32_t> slots;
  for (const PhysicalTile tile : taking_part) {
    slots.emplace(tile, checked_cast<std::uint32_t>(slots.size(), "host slots"));
  }

  HostPlan plan;
  plan.exchange.command_page = kCommandPage;
  plan.exchange.command_offset = 0;
  plan.exchange.pages = {
      schema::HostPage{kCommandPage, kSlotBytes},
      schema::HostPage{kDataPage, std::uint64_t{kSlotBytes} * std::max<std::size_t>(1, slots.size())}};
  plan.exchange.attach_order = {kCommandPage, kDataPage};
  const std::uint64_t data_base = schema::host_page_base(plan.exchange, kDataPage);

  for (const HostCallRequest& request : calls) {
    SidePlan in = plan_side(request, true, slots, data_base);
    SidePlan out = plan_side(request, false, slots, data_base);
    schema::HostCall call;
    call.name = request.name;
    call.command = request.command;
    call.input_bindings = request.input_bindings;
    call.output_bindings = request.output_bindings;
    call.inputs = std::move(in.slices);
    call.outputs = std::move(out.slices);
    call.input_batch_ends = std::move(in.batch_ends);
    call.output_batch_ends = std::move(out.batch_ends);
    const std::size_t batches = in.batches.size() + out.batches.size();
    call.phases = batches == 0 ? 0 : checked_cast<std::uint32_t>(2 * batches - 1, "host phases");
    plan.exchange.calls.push_back(std::move(call));
    for (auto& batch : in.batches) plan.batches.push_back(std::move(batch));
    for (auto& batch : out.batches) plan.batches.push_back(std::move(batch));
  }
  return plan;
}

}  // namespace tessera::compiler
