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

// One side of a call: batches of at most one 4 KiB slot of pieces per tile.
struct SidePlan {
  std::vector<schema::HostSlice> slices;
  std::vector<std::uint32_t> batch_ends;
  std::vector<HostBatch> batches;
};

// The transfer and copies of one tile's pieces in one batch, which lie back
// to back in its slot. When they are contiguous on the tile too they are one
// run: an H2D run lands directly when it may, a D2H run is sent from where it
// is. Otherwise H2D data lands in the staging buffer and each piece is copied
// into place after the batch, and D2H pieces are first gathered into the
// staging buffer. (A copy per piece, not per run: a piece lies in one
// binding's allocation, a run may span several.)
TileHostStep target_step(PhysicalTile tile, std::optional<target::XreqBitmap> request, bool input,
                         std::span<const Piece> pieces, std::uint64_t host_offset) {
  bool one_run = true;
  std::uint32_t bytes = 0;
  for (const Piece& piece : pieces) {
    one_run = one_run && piece.tile_address == pieces.front().tile_address + bytes;
    bytes += piece.size;
  }
  const std::uint32_t first = pieces.front().tile_address;
  if (input && one_run && lands_directly(first, bytes)) {
    return TileHostStep(request, target::H2dTransfer{tile, first, host_offset, bytes}, std::nullopt,
                        {}, {});
  }
  if (!input && one_run) {
    return TileHostStep(request, std::nullopt, target::D2hTransfer{tile, first, host_offset, bytes},
                        {}, {});
  }
  std::vector<StagingCopy> copies;
  std::uint32_t slot_offset = 0;
  for (const Piece& piece : pieces) {
    const std::uint32_t staged = target::kH2dStaging + slot_offset;
    const std::uint32_t words = piece.size / target::kWordBytes;
    copies.push_back(input ? StagingCopy{piece.tile_address, staged, words}
                           : StagingCopy{staged, piece.tile_address, words});
    slot_offset += piece.size;
  }
  if (input) {
    return TileHostStep(request, target::H2dTransfer{tile, target::kH2dStaging, host_offset, bytes},
                        std::nullopt, {}, std::move(copies));
  }
  return TileHostStep(request, std::nullopt,
                      target::D2hTransfer{tile, target::kH2dStaging, host_offset, bytes},
                      std::move(copies), {});
}

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

  SidePlan side;
  for (std::size_t b = 0;
       std::any_of(fifo.begin(), fifo.end(), [](const auto& f) { return !f.second.empty(); });
       ++b) {
    std::map<PhysicalTile, target::XreqBitmap> requests;
    std::map<PhysicalTile, std::vector<Piece>> moving;
    for (auto& [tile, pieces] : fifo) {
      if (pieces.empty()) continue;
      const std::uint32_t slot = slots.at(tile);
      std::vector<Piece>& batch_pieces = moving[tile];
      std::uint32_t filled = 0;
      while (!pieces.empty() && filled + pieces.front().size <= kSlotBytes) {
        const Piece& piece = pieces.front();
        side.slices.push_back(schema::HostSlice{kDataPage,
                                                std::uint64_t{slot} * kSlotBytes + filled,
                                                piece.payload_offset, piece.size});
        filled += piece.size;
        batch_pieces.push_back(piece);
        pieces.pop_front();
      }
      const PhysicalTile owner = target::xreq_owner(tile);
      requests.try_emplace(owner, owner).first->second.add(tile);
    }
    side.batch_ends.push_back(checked_cast<std::uint32_t>(side.slices.size(), "host slices"));

    HostBatch batch{call.name, input, b, {}};
    std::set<PhysicalTile> active;
    for (const auto& [tile, pieces] : moving) active.insert(tile);
    for (const auto& [owner, bitmap] : requests) active.insert(owner);
    for (const PhysicalTile tile : active) {
      std::optional<target::XreqBitmap> request;
      if (const auto found = requests.find(tile); found != requests.end()) request = found->second;
      const auto found = moving.find(tile);
      if (found == moving.end()) {
        batch.steps.emplace(tile, TileHostStep(request, std::nullopt, std::nullopt, {}, {}));
        continue;
      }
      const std::uint64_t host_offset = data_base + std::uint64_t{slots.at(tile)} * kSlotBytes;
      batch.steps.emplace(tile, target_step(tile, request, input, found->second, host_offset));
    }
    side.batches.push_back(std::move(batch));
  }
  return side;
}

}  // namespace

TileHostStep::TileHostStep(std::optional<target::XreqBitmap> requests,
                           std::optional<target::H2dTransfer> h2d,
                           std::optional<target::D2hTransfer> d2h,
                           std::vector<StagingCopy> copies_before,
                           std::vector<StagingCopy> copies_after)
    : requests_(std::move(requests)),
      h2d_(h2d),
      d2h_(d2h),
      copies_before_(std::move(copies_before)),
      copies_after_(std::move(copies_after)) {}

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
  return packet_bytes(program(kProbeAddress), kProbeAddress);
}

std::uint32_t TileHostStep::packet_bytes(const target::HostProgram& program,
                                         std::uint32_t packet_address) {
  std::uint32_t end = packet_address;
  for (const auto& block : program.packets) {
    end = std::max(end, block.address + static_cast<std::uint32_t>(block.words.size()) *
                                            target::kWordBytes);
  }
  return end - packet_address;
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
