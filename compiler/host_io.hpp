#pragma once
// Host I/O lowering: binding slices → the package's host exchange (pages,
// slots, calls, batches) and each tile's part in every host batch, matching
// the protocol runtime::Session drives (docs/RUNTIME.md).
//
// The rules (driver-host-protocol.md §4, §5; compiler-prior-art.md §5):
//   * page 0 is the 4 KiB command page; page 1 the data page of one 4 KiB
//     slot per tile that takes part in any transfer, in ascending physical
//     tile order;
//   * each binding slice is cut into ≤ 4 KiB pieces, a per-tile FIFO; a
//     batch takes from every tile (round robin across tiles) as many pending
//     pieces as fill its slot (at least one), back to back in the slot, so
//     the transfers of one batch run concurrently in their own slots, later
//     batches reuse the slots, and many small bindings on one tile share a
//     batch;
//   * a call's input batches come first, then its output batches; a call
//     with I input and O output batches declares 2(I + O) − 1 phases;
//   * in every batch each package tile runs exactly one host-phase program:
//     an XREQ owner of a target in the batch requests service for it, a
//     target moves its transfer, any other tile runs the inactive program;
//   * a tile's pieces of one batch are one host transfer: pieces that are
//     contiguous on the tile too move as one run; an H2D run outside the
//     packet window (or not 32-byte aligned), or several runs, land in the
//     staging buffer and are copied into place after the batch; several D2H
//     runs are first gathered into the staging buffer (which no input uses
//     then) and sent from there.
//
// The plan is address-free where it can be: a tile's program is produced for
// the packet address the placement gives it (packet_bytes() says how much it
// needs); its code size does not depend on that address.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "schema/model.hpp"
#include "support/error.hpp"
#include "target/host_exchange.hpp"
#include "target/topology.hpp"

namespace tessera::compiler {

class HostIoError : public Error {
 public:
  using Error::Error;
};

// One binding slice moving between the host and one tile.
struct HostTransfer {
  target::PhysicalTile tile;
  std::uint32_t tile_address = 0;    // where the bytes live on the tile
  std::uint64_t payload_offset = 0;  // in the call's payload (schema::call_payload)
  std::uint32_t size = 0;            // bytes: > 0, a multiple of 4
};

struct HostCallRequest {
  std::string name;
  std::uint32_t command = 0;
  std::vector<std::string> input_bindings;   // form the input payload, in order
  std::vector<std::string> output_bindings;  // form the output payload, in order
  std::vector<HostTransfer> inputs;          // host → tile
  std::vector<HostTransfer> outputs;         // tile → host
};

// Moves `words` between the staging buffer and tile memory, through the copy
// helper the tile program calls: into place after an H2D batch, or gathered
// into the staging buffer before a D2H batch.
struct StagingCopy {
  std::uint32_t destination = 0;
  std::uint32_t source = 0;
  std::uint32_t words = 0;
  friend bool operator==(const StagingCopy&, const StagingCopy&) = default;
};

// One tile's part in one host batch.
class TileHostStep {
 public:
  TileHostStep() = default;  // inactive
  TileHostStep(std::optional<target::XreqBitmap> requests, std::optional<target::H2dTransfer> h2d,
               std::optional<target::D2hTransfer> d2h, std::vector<StagingCopy> copies_before,
               std::vector<StagingCopy> copies_after);

  bool active() const noexcept { return requests_ || h2d_ || d2h_; }
  const std::optional<target::XreqBitmap>& requests() const noexcept { return requests_; }
  const std::optional<target::H2dTransfer>& h2d() const noexcept { return h2d_; }
  const std::optional<target::D2hTransfer>& d2h() const noexcept { return d2h_; }
  // Copies the tile runs before its host-phase program (D2H gathering) and
  // after it (H2D data from the staging buffer into place).
  const std::vector<StagingCopy>& copies_before() const noexcept { return copies_before_; }
  const std::vector<StagingCopy>& copies_after() const noexcept { return copies_after_; }

  // Bytes of packet words the program sends (8-aligned start needed); 0 when inactive.
  std::uint32_t packet_bytes() const;
  // The same, of a program already made with its packets at `packet_address`
  // (the linker sizes code and packets from one program per tile and batch).
  static std::uint32_t packet_bytes(const target::HostProgram& program,
                                    std::uint32_t packet_address);
  // The host-phase program with its packets at `packet_address` (8-aligned),
  // ending `br $m10`. The same number of instructions for every address.
  target::HostProgram program(std::uint32_t packet_address) const;

 private:
  std::optional<target::XreqBitmap> requests_;
  std::optional<target::H2dTransfer> h2d_;  // packet_address filled in by program()
  std::optional<target::D2hTransfer> d2h_;
  std::vector<StagingCopy> copies_before_;
  std::vector<StagingCopy> copies_after_;
};

// One host batch: every package tile's step (inactive unless listed).
struct HostBatch {
  std::string call;
  bool input = true;
  std::size_t index = 0;  // within the call's input or output batches
  std::map<target::PhysicalTile, TileHostStep> steps;  // active tiles only

  const TileHostStep& step(target::PhysicalTile tile) const;
};

struct HostPlan {
  schema::HostExchange exchange;
  // In device order: each call's input batches, then its output batches.
  std::vector<HostBatch> batches;
};

// HostIoError naming the call, transfer and rule when a request cannot be
// lowered: a tile outside `package_tiles`, or an XREQ owner of a target that
// is not in it; a size of 0 or not a multiple of 4; an address outside tile
// SRAM; a slice past the 32-bit size of a transfer.
HostPlan plan_host_io(std::span<const HostCallRequest> calls,
                      std::span<const target::PhysicalTile> package_tiles);

}  // namespace tessera::compiler
