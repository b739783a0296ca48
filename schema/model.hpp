#pragma once
// The decoded package: what a compiler builds, what the writer serializes and
// what the reader returns after full validation. Plain C++ values; the Cap'n
// Proto form (schema/application.capnp) exists only inside writer and reader.
// Field meanings are documented in application.capnp and docs/FORMAT.md.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "target/topology.hpp"

namespace tessera::schema {

using Sha256 = std::array<std::uint8_t, 32>;

// The package's blobs: byte strings addressed by index, each stored once
// (adding the same bytes twice returns the first index).
class BlobStore {
 public:
  // Adds bytes (deduplicated by SHA-256) and returns the blob's index.
  std::uint32_t add(std::vector<std::uint8_t> bytes);
  // Adds bytes whose digest is already known (the reader verified it).
  std::uint32_t add_verified(std::vector<std::uint8_t> bytes, const Sha256& digest);
  // Adds blob `index` of `source`, sharing its bytes instead of copying them
  // (blob bytes are immutable). Throws std::out_of_range for a bad index.
  std::uint32_t add_shared(const BlobStore& source, std::uint32_t index);

  std::size_t size() const noexcept { return blobs_.size(); }
  std::span<const std::uint8_t> bytes(std::uint32_t index) const;
  const Sha256& digest(std::uint32_t index) const;
  // Total uncompressed bytes.
  std::uint64_t total_bytes() const noexcept { return total_bytes_; }

  // Equal when they hold the same blobs in the same order.
  friend bool operator==(const BlobStore& a, const BlobStore& b);

 private:
  struct Entry {
    Sha256 digest;
    std::shared_ptr<const std::vector<std::uint8_t>> bytes;
  };
  std::uint32_t add_entry(Entry entry);

  // A digest's first 8 bytes are as good a hash as any (SHA-256 output).
  struct DigestHash {
    std::size_t operator()(const Sha256& digest) const noexcept {
      std::uint64_t hash = 0;
      for (std::size_t i = 0; i < 8; ++i) hash = hash << 8 | digest[i];
      return static_cast<std::size_t>(hash);
    }
  };

  std::vector<Entry> blobs_;
  // Only looked up, never walked (blob order is blobs_'s): a hash table,
  // not a tree of 32-byte keys compared with memcmp at every level.
  std::unordered_map<Sha256, std::uint32_t, DigestHash> index_of_;
  std::uint64_t total_bytes_ = 0;
};

// Segment flags.
inline constexpr std::uint32_t kSegmentRead = 1;
inline constexpr std::uint32_t kSegmentWrite = 2;
inline constexpr std::uint32_t kSegmentExecute = 4;
inline constexpr std::uint32_t kSegmentFlagMask = kSegmentRead | kSegmentWrite | kSegmentExecute;

struct Segment {
  std::uint32_t address = 0;
  std::uint32_t memory_size = 0;  // bytes past file_size are zero
  std::uint32_t blob = 0;
  std::uint64_t blob_offset = 0;
  std::uint32_t file_size = 0;
  std::uint32_t flags = kSegmentRead;
  friend bool operator==(const Segment&, const Segment&) = default;
};

struct TileImage {
  target::PhysicalTile tile;
  std::uint32_t entry_point = 0;
  std::vector<Segment> segments;
  friend bool operator==(const TileImage&, const TileImage&) = default;
};

enum class DType : std::uint8_t { kF32, kF16, kU32, kF8F143, kI32, kU8 };

// Bytes per element, and the name used in text ("f32", "f8f143", …).
std::uint32_t dtype_size(DType dtype) noexcept;
std::string_view dtype_name(DType dtype) noexcept;

struct RegionSlice {
  target::PhysicalTile tile;
  std::uint32_t tile_address = 0;
  std::uint64_t file_offset = 0;
  std::uint64_t size = 0;
  friend bool operator==(const RegionSlice&, const RegionSlice&) = default;
};

struct Binding {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::uint32_t> shape;
  std::vector<RegionSlice> slices;
  friend bool operator==(const Binding&, const Binding&) = default;
};

// Bytes of a binding's host tensor: product(shape) · dtype size. Throws
// ArithmeticError when that overflows 64 bits.
std::uint64_t payload_bytes(const Binding& binding);

struct HostPage {
  std::uint32_t index = 0;
  std::uint64_t size = 0;
  friend bool operator==(const HostPage&, const HostPage&) = default;
};

struct HostSlice {
  std::uint32_t page = 0;
  std::uint64_t page_offset = 0;
  std::uint64_t file_offset = 0;
  std::uint64_t size = 0;
  friend bool operator==(const HostSlice&, const HostSlice&) = default;
};

struct HostCall {
  std::string name;
  std::uint32_t command = 0;
  std::uint32_t phases = 0;
  std::vector<HostSlice> inputs;
  std::vector<HostSlice> outputs;
  std::uint32_t invocations = 1;
  std::vector<std::uint32_t> input_batch_ends;
  std::vector<std::uint32_t> output_batch_ends;
  // What the payloads are: the named bindings' host tensors concatenated in
  // this order (see call_payload below). Inputs name input or weight bindings.
  std::vector<std::string> input_bindings;
  std::vector<std::string> output_bindings;
  friend bool operator==(const HostCall&, const HostCall&) = default;
};

struct HostExchange {
  std::uint32_t startup_mark = 0;
  std::uint32_t command_page = 0;
  std::uint64_t command_offset = 0;
  std::vector<HostPage> pages;
  std::vector<std::uint32_t> attach_order;
  std::vector<HostCall> calls;
  friend bool operator==(const HostExchange&, const HostExchange&) = default;
};

struct EntryPoint {
  std::string name;
  std::uint32_t command = 0;
  std::uint32_t external_syncs = 0;
  friend bool operator==(const EntryPoint&, const EntryPoint&) = default;
};

struct DeviceConfigWrite {
  std::uint32_t offset = 0;
  std::uint32_t value = 0;
  friend bool operator==(const DeviceConfigWrite&, const DeviceConfigWrite&) = default;
};

// ---- Debug information --------------------------------------------------------

inline constexpr std::uint32_t kNoProvenance = 0xFFFFFFFF;
inline constexpr std::uint32_t kLiveToEnd = 0xFFFFFFFF;

enum class SymbolKind : std::uint8_t { kKernel, kRuntimeHelper, kExchangeRow, kData, kCode };
enum class AllocationKind : std::uint8_t { kTensor, kStaging, kCode, kExchangeRow, kRuntime, kScratch };

std::string_view symbol_kind_name(SymbolKind kind) noexcept;
std::string_view allocation_kind_name(AllocationKind kind) noexcept;

struct Symbol {
  std::string name;
  std::uint32_t address = 0;
  std::uint32_t size = 0;
  SymbolKind kind = SymbolKind::kCode;
  friend bool operator==(const Symbol&, const Symbol&) = default;
};

struct Allocation {
  std::uint32_t id = 0;
  std::string name;
  std::string tensor;
  std::uint32_t address = 0;
  std::uint32_t size = 0;
  std::uint32_t live_from = 0;
  std::uint32_t live_until = kLiveToEnd;
  AllocationKind kind = AllocationKind::kTensor;
  std::uint32_t provenance = kNoProvenance;
  friend bool operator==(const Allocation&, const Allocation&) = default;
};

struct CallOperand {
  std::uint8_t reg = 2;  // $m2..$m9
  std::uint32_t allocation = 0;
  std::uint32_t address = 0;
  std::uint32_t footprint = 0;
  bool writes = false;
  friend bool operator==(const CallOperand&, const CallOperand&) = default;
};

struct CallSite {
  std::uint32_t pc = 0;
  std::string kernel;
  std::vector<CallOperand> operands;
  std::uint32_t provenance = kNoProvenance;
  friend bool operator==(const CallSite&, const CallSite&) = default;
};

// A loop of a tile's main program (application.capnp CodeLoop): the word at
// `counter` holds count − i during iteration i, and 0 outside the loop.
struct CodeLoop {
  std::uint32_t counter = 0;
  std::uint32_t count = 0;
  std::uint32_t provenance = kNoProvenance;
  friend bool operator==(const CodeLoop&, const CodeLoop&) = default;
};

struct TileDebug {
  target::PhysicalTile tile;
  std::vector<Symbol> symbols;
  std::vector<Allocation> allocations;
  std::vector<CallSite> call_sites;
  std::vector<CodeLoop> loops;  // in program order, outer before inner
  friend bool operator==(const TileDebug&, const TileDebug&) = default;
};

struct TransferDestination {
  target::PhysicalTile tile;
  std::uint32_t address = 0;
  friend bool operator==(const TransferDestination&, const TransferDestination&) = default;
};

struct PlannedTransfer {
  target::PhysicalTile source_tile;
  std::uint32_t source_address = 0;
  std::uint32_t words = 0;
  std::vector<TransferDestination> destinations;
  std::uint32_t provenance = kNoProvenance;
  friend bool operator==(const PlannedTransfer&, const PlannedTransfer&) = default;
};

struct ExchangePhase {
  std::uint32_t id = 0;
  std::vector<PlannedTransfer> transfers;
  friend bool operator==(const ExchangePhase&, const ExchangePhase&) = default;
};

// Rounds [first_round, first_round + rounds_per_iteration × count) repeat the
// phases of their first iteration (schema/phase_plan.hpp).
struct PhaseLoop {
  std::uint64_t first_round = 0;
  std::uint64_t rounds_per_iteration = 0;
  std::uint32_t count = 0;
  friend bool operator==(const PhaseLoop&, const PhaseLoop&) = default;
};

struct Debug {
  std::vector<TileDebug> tiles;
  std::vector<ExchangePhase> exchange_phases;
  std::vector<std::string> provenance;
  std::vector<PhaseLoop> phase_loops;
  // 0: only rounds with a planned phase are checked; N > 0: every round below
  // N is planned (none of its own: it moves no words), rounds from N on are not.
  std::uint64_t planned_rounds = 0;
  friend bool operator==(const Debug&, const Debug&) = default;
};

// ---- The application ------------------------------------------------------------

struct Application {
  std::string compiler_version;
  BlobStore blobs;
  std::vector<TileImage> tiles;
  std::vector<Binding> inputs;
  std::vector<Binding> outputs;
  std::vector<Binding> weights;
  HostExchange host_exchange;
  std::vector<EntryPoint> entry_points;
  std::vector<DeviceConfigWrite> device_config_writes;
  bool hardware_loadable = false;
  std::string not_loadable_reason = "kernels are emulated only";
  Debug debug;
  friend bool operator==(const Application&, const Application&) = default;
};

// The application in the canonical form the writer emits: tiles sorted by
// physical tile, segments by address, debug tiles by tile and call sites by
// pc; blobs renumbered in order of first use by those segments, unused blobs
// dropped. Order that carries meaning (bindings, calls and each call's binding
// lists, entry points, config writes) is kept. read(write(a)) == canonical(a).
Application canonical(const Application& application);
// The same, taking the parts it can from `application` instead of copying
// them (a compiled model's debug section holds millions of records).
Application canonical(Application&& application);
// Whether canonical(application) == application: the writer then writes it
// as it is, without making the canonical copy.
bool is_canonical(const Application& application);

// ---- Call payloads --------------------------------------------------------------
//
// A host call moves one flat byte buffer per direction, its payload: the host
// tensors of the bindings the call names (HostCall::input_bindings, which name
// input or weight bindings, and HostCall::output_bindings, which name output
// bindings), concatenated in the listed order, each starting on a 4-byte
// boundary (zero to three padding bytes after a part whose size is not a
// multiple of 4, and at the end). That is one invocation's payload; a call of
// N invocations carries N of them back to back, so invocation i's copy of a
// part starts at i × (the padded invocation size) + part.offset.
// HostSlice::file_offset indexes the whole payload.
//
// These functions are the one owner of that layout (docs/FORMAT.md, "Call
// payloads"); nothing else sums binding sizes to find a payload offset.

enum class CallSide : std::uint8_t { kInput, kOutput };

// "input" or "output".
std::string_view call_side_name(CallSide side) noexcept;

// Where one named binding's host tensor sits in one invocation's payload.
struct PayloadPart {
  const Binding* binding = nullptr;  // into the application's inputs, weights or outputs
  std::uint64_t offset = 0;          // the parts before it, each padded to a word
  std::uint64_t size = 0;            // payload_bytes(*binding)
  friend bool operator==(const PayloadPart&, const PayloadPart&) = default;
};

// Finds the bindings a call side may name, by name, in O(log n): input and
// weight bindings for CallSide::kInput, output bindings for kOutput. Build it
// once when laying out many calls. It points into `application`, which must
// outlive it and stay unchanged. With duplicate binding names (an invalid
// application) the first binding wins.
class BindingLookup {
 public:
  explicit BindingLookup(const Application& application);
  // The binding named `name` that `side` may name, or nullptr.
  const Binding* find(CallSide side, std::string_view name) const;

 private:
  std::map<std::string_view, const Binding*> input_side_;
  std::map<std::string_view, const Binding*> output_side_;
};

// One invocation's payload on `side` of `call`: one part per name in the
// call's list for that side, in list order, each at the sum of the sizes
// before it. Throws std::invalid_argument when a name is not a binding that
// side may name, and ArithmeticError when a size or an offset overflows 64
// bits; validate() rejects both, so a read package never throws.
std::vector<PayloadPart> call_payload(const BindingLookup& bindings, const HostCall& call,
                                      CallSide side);
std::vector<PayloadPart> call_payload(const Application& application, const HostCall& call,
                                      CallSide side);

// Bytes of the whole payload on `side` of `call`: invocations × the padded
// invocation size (checked; throws as call_payload does). Every HostSlice of
// that side lies inside [0, call_payload_bytes).
std::uint64_t call_payload_bytes(const BindingLookup& bindings, const HostCall& call,
                                 CallSide side);
std::uint64_t call_payload_bytes(const Application& application, const HostCall& call,
                                 CallSide side);

// The bytes a segment loads: its file bytes, then zeros up to memory_size.
// The segment must have been validated against the application's blobs.
std::vector<std::uint8_t> segment_bytes(const Application& application, const Segment& segment);

}  // namespace tessera::schema
