# The .ipuexe package: one application for a whole IPU21, run unchanged by the
# simulator and by a C600. Layout, validation rules, limits and the build
# digest are described in docs/FORMAT.md.
#
# Compatibility: ordinals are never renumbered or reused. A change that old
# readers would misread bumps `schemaVersion` (packageSchemaVersion below);
# additions that default to empty or zero keep it.
#
# Integers: addresses are tile-SRAM byte addresses (UInt32); host-side offsets
# and sizes are UInt64.

@0xc547bb1d2d1c4877;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("tessera::schema::wire");

# 2: HostCall.inputBindings and outputBindings (they are part of the digest).
const packageSchemaVersion :UInt32 = 2;

struct Application {
  header @0 :Header;
  blobs @1 :List(Blob);              # content-addressed, each stored once
  tiles @2 :List(TileImage);         # sorted by physical tile
  inputs @3 :List(Binding);
  outputs @4 :List(Binding);
  weights @5 :List(Binding);
  hostExchange @6 :HostExchange;
  entryPoints @7 :List(EntryPoint);
  deviceConfigWrites @8 :List(DeviceConfigWrite);  # applied in order
  hardwareLoadable @9 :Bool;
  notLoadableReason @10 :Text;       # non-empty exactly when hardwareLoadable is false
  debug @11 :Debug;
  buildDigest @12 :Data;             # SHA-256 over the decoded model (docs/FORMAT.md)
}

struct Header {
  schemaVersion @0 :UInt32;
  compilerVersion @1 :Text;          # the producing tessera's version and git revision
  target @2 :Text;                   # "ipu21"
  tileMemoryBase @3 :UInt32;         # 0x4c000
  tileMemorySize @4 :UInt32;         # 0x9c000
}

enum BlobCodec {
  raw @0;
  zstd @1;                           # exactly one frame with its content size
}

struct Blob {
  sha256 @0 :Data;                   # 32 bytes, over the uncompressed bytes
  uncompressedSize @1 :UInt64;
  codec @2 :BlobCodec;
  data @3 :Data;
}

struct Segment {
  address @0 :UInt32;
  memorySize @1 :UInt32;             # bytes past fileSize are zero-filled
  blob @2 :UInt32;                   # index into Application.blobs
  blobOffset @3 :UInt64;
  fileSize @4 :UInt32;
  flags @5 :UInt32;                  # READ = 1, WRITE = 2, EXECUTE = 4
}

struct TileImage {
  physicalTile @0 :UInt16;
  entryPoint @1 :UInt32;             # where the supervisor starts (0x4c010)
  segments @2 :List(Segment);        # sorted by address, non-overlapping
}

enum DType {
  f32 @0;
  f16 @1;
  u32 @2;
  f8f143 @3;                         # F143 FP8 with a per-block scale
  i32 @4;
  u8 @5;
}

# Where part of a host tensor lives on the chip.
struct RegionSlice {
  tile @0 :UInt16;                   # physical
  tileAddress @1 :UInt32;
  fileOffset @2 :UInt64;             # into the tensor's bytes, row-major
  size @3 :UInt64;
}

struct Binding {
  name @0 :Text;                     # unique across inputs, outputs and weights
  dtype @1 :DType;
  shape @2 :List(UInt32);
  slices @3 :List(RegionSlice);
}

struct HostPage {
  index @0 :UInt32;                  # the driver's buffer id
  size @1 :UInt64;
}

struct HostSlice {
  page @0 :UInt32;
  pageOffset @1 :UInt64;
  fileOffset @2 :UInt64;             # into the call's payload (see HostCall.inputBindings)
  size @3 :UInt64;
}

struct HostCall {
  name @0 :Text;
  command @1 :UInt32;                # the word written to the command slot
  phases @2 :UInt32;                 # host-sync phases the call takes
  inputs @3 :List(HostSlice);
  outputs @4 :List(HostSlice);
  invocations @5 :UInt32 = 1;
  inputBatchEnds @6 :List(UInt32);   # exclusive slice indices per rendezvous
  outputBatchEnds @7 :List(UInt32);
  inputBindings @8 :List(Text);      # names of input or weight bindings; their host tensors
                                     # concatenated in this order form the call's input payload
  outputBindings @9 :List(Text);     # names of output bindings; concatenated likewise form the
                                     # output payload
}

struct HostExchange {
  startupMark @0 :UInt32;            # the mark the loader releases the device to
  commandPage @1 :UInt32;
  commandOffset @2 :UInt64;          # 4-byte command word in commandPage
  pages @3 :List(HostPage);
  attachOrder @4 :List(UInt32);
  calls @5 :List(HostCall);
}

struct EntryPoint {
  name @0 :Text;
  command @1 :UInt32;
  externalSyncs @2 :UInt32;          # host syncs after the startup rendezvous
}

struct DeviceConfigWrite {
  offset @0 :UInt32;                 # 4-aligned, inside the configuration space
  value @1 :UInt32;
}

# ---- Debug information: what the simulator checks and reports against -------

struct Debug {
  tiles @0 :List(TileDebug);         # sorted by physical tile
  exchangePhases @1 :List(ExchangePhase);  # a loop's phases once, for its first iteration
  provenance @2 :List(Text);         # graph provenance strings, referenced by index
  phaseLoops @3 :List(PhaseLoop);    # where planned phases repeat (docs/FORMAT.md)
  # 0: only the rounds that have a planned phase are checked. N > 0: the plan
  # is complete below round N (a round without a planned phase moves no
  # words) and the rounds from N on are not checked (the producer's cap).
  plannedRounds @4 :UInt64;
}

const noProvenance :UInt32 = 0xffffffff;

enum SymbolKind {
  kernel @0;
  runtimeHelper @1;
  exchangeRow @2;
  data @3;
  code @4;
}

struct Symbol {
  name @0 :Text;
  address @1 :UInt32;
  size @2 :UInt32;
  kind @3 :SymbolKind;
}

enum AllocationKind {
  tensor @0;
  staging @1;                        # exchange receive staging
  code @2;
  exchangeRow @3;
  runtime @4;                        # reserved runtime state
  scratch @5;
}

struct Allocation {
  id @0 :UInt32;                     # unique within the tile
  name @1 :Text;
  tensor @2 :Text;                   # graph value, empty when none
  address @3 :UInt32;
  size @4 :UInt32;
  liveFrom @5 :UInt32;               # program step, inclusive
  liveUntil @6 :UInt32;              # program step, exclusive; 0xffffffff = to the end
  kind @7 :AllocationKind;
  provenance @8 :UInt32 = 0xffffffff;
}

struct CallOperand {
  register @0 :UInt8;                # $m2..$m9
  allocation @1 :UInt32;             # id of the allocation the operand belongs to
  address @2 :UInt32;                # the operand's first byte
  footprint @3 :UInt32;              # bytes the kernel may touch from address (kernel registry)
  writes @4 :Bool;
}

struct CallSite {
  pc @0 :UInt32;                     # address of the call instruction
  kernel @1 :Text;                   # the kernel or runtime helper's symbol
  operands @2 :List(CallOperand);
  provenance @3 :UInt32 = 0xffffffff;
}

struct TileDebug {
  physicalTile @0 :UInt16;
  symbols @1 :List(Symbol);
  allocations @2 :List(Allocation);
  callSites @3 :List(CallSite);      # sorted by pc
  loops @4 :List(CodeLoop);          # the program's loops, in program order (outer before inner)
}

# A loop of the tile's main program (a `repeat`): the word at `counter` holds
# count − i while the tile runs iteration i (0-based) and 0 before the loop
# begins and after it ends, so a profiler reads which iteration a tile is in.
struct CodeLoop {
  counter @0 :UInt32;                # address of the loop's counter word
  count @1 :UInt32;                  # iterations, ≥ 1
  provenance @2 :UInt32 = 0xffffffff;  # the repeat operation
}

struct TransferDestination {
  tile @0 :UInt16;
  address @1 :UInt32;
}

struct PlannedTransfer {
  sourceTile @0 :UInt16;
  sourceAddress @1 :UInt32;
  words @2 :UInt32;
  destinations @3 :List(TransferDestination);
  provenance @4 :UInt32 = 0xffffffff;
}

struct ExchangePhase {
  id @0 :UInt32;                     # the internal-sync round that opens it (its first occurrence)
  transfers @1 :List(PlannedTransfer);
}

# A loop of the program: rounds [firstRound, firstRound + roundsPerIteration
# × count) run the same phases `count` times, so round r inside it is planned
# as round firstRound + (r − firstRound) mod roundsPerIteration.
struct PhaseLoop {
  firstRound @0 :UInt64;
  roundsPerIteration @1 :UInt64;     # ≥ 1
  count @2 :UInt32;                  # ≥ 2
}
