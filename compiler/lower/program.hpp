#pragma once
// The lowered program: a graph turned into address-free per-tile work
// (compiler-prior-art.md §9: placement decided once, late). It names buffers
// (one per tensor, staging area or constant table, with a size per tile that
// holds it) and lists steps every tile walks through in the same order:
//
//   host inputs   the batches of one host call that bring its inputs in
//   exchange      one exchange phase of logical transfers between buffers
//   compute       kernel runs per tile (moves, adds, sums)
//   host outputs  the batches that take the call's outputs out
//   loop begin / loop end
//                 the steps between run `count` times (a repeat region, never
//                 unrolled: the same code and rows run every iteration)
//
// Nothing here has an address: a Location is (tile, buffer, byte offset in
// the buffer). link.hpp places the buffers and emits the code.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/tensor_type.hpp"
#include "schema/model.hpp"
#include "target/topology.hpp"

namespace tessera::compiler::lower {

using target::LogicalTile;
using BufferId = std::uint32_t;

struct Buffer {
  std::string name;    // "%3", "staging (op 4)", …
  std::string tensor;  // the graph value it holds, "" for staging and tables
  schema::AllocationKind kind = schema::AllocationKind::kTensor;
  std::uint32_t alignment = 8;
  std::map<LogicalTile, std::uint32_t> bytes;                   // per tile that holds it
  std::map<LogicalTile, std::vector<std::uint8_t>> contents;    // constant bytes (tables)
  // Rounded to whole memory elements, so nothing else shares one (an AMP
  // left operand must not share an element with the output it accumulates).
  bool whole_elements = false;
  std::uint32_t provenance = schema::kNoProvenance;
};

struct Location {
  LogicalTile tile;
  BufferId buffer = 0;
  std::uint32_t offset = 0;  // bytes from the buffer's start on that tile
  friend auto operator<=>(const Location&, const Location&) = default;
};

// `words` 32-bit words from `source` to every destination (a multicast when
// there are several). Offsets are word-aligned.
struct Transfer {
  Location source;
  std::uint32_t words = 0;
  std::vector<Location> destinations;
  std::uint32_t provenance = schema::kNoProvenance;
};

// A kernel operand: `offset` bytes into `buffer` on the calling tile. With a
// `stride`, the pointer moves on by `stride` bytes every iteration of the
// loop that begins at step `loop` (iteration i reads offset + i·stride): how
// a loop body reaches entry i of a sequence value without unrolling. The
// emitted code keeps that pointer in a word of tile memory, set at the
// loop's begin and advanced at its end (emit/link.cpp).
struct PointerOperand {
  unsigned reg = 2;
  BufferId buffer = 0;
  std::uint32_t offset = 0;
  std::uint32_t stride = 0;  // bytes per iteration of `loop`; 0: a fixed pointer
  std::size_t loop = 0;      // the loop-begin step `stride` counts iterations of
};

// A scalar register filled at run time from the word `offset` bytes into
// `buffer` on the calling tile (word-aligned), plus `add`: runtime data a
// kernel takes in a register, such as a weight block's F143 scale (a
// parameter), or the native F143 GEMM's product scale — that scale plus the
// activations' compile-time one. The emitted code loads it the way it loads
// a moving pointer, then adds `add` (emit/footprint.cpp).
struct LoadedScalar {
  unsigned reg = 5;
  BufferId buffer = 0;
  std::uint32_t offset = 0;
  std::int32_t add = 0;
};

// One kernel call with the register ABI (kernels/kernel_abi.hpp): pointer
// registers point into buffers on the calling tile, scalars are constants,
// loaded scalars words of tile memory.
struct KernelRun {
  std::string kernel;
  std::vector<PointerOperand> pointers;
  std::vector<std::pair<unsigned, std::uint32_t>> scalars;
  std::uint32_t provenance = schema::kNoProvenance;
  std::vector<LoadedScalar> loaded = {};
};

enum class StepKind : std::uint8_t { kHostInputs, kExchange, kCompute, kHostOutputs, kLoopBegin, kLoopEnd };

struct Step {
  StepKind kind = StepKind::kCompute;
  std::size_t call = 0;                                 // host steps: index into Program::calls
  std::vector<Transfer> transfers;                      // exchange
  std::map<LogicalTile, std::vector<KernelRun>> runs;   // compute, in order per tile
  std::uint32_t provenance = schema::kNoProvenance;
  std::uint32_t count = 0;   // loop begin: iterations (≥ 1)
  std::size_t partner = 0;   // loop begin: its end's step index; loop end: its begin's
};

// A piece of a binding's host tensor on one tile.
struct HostSlice {
  LogicalTile tile;
  BufferId buffer = 0;
  std::uint32_t offset = 0;        // in the buffer
  std::uint64_t host_offset = 0;   // in the row-major host tensor
  std::uint32_t size = 0;          // logical bytes
};

struct HostBinding {
  std::string name;
  TensorType type;
  std::vector<HostSlice> slices;
};

struct HostCall {
  std::string name;
  std::vector<std::string> inputs;   // input or weight binding names, payload order
  std::vector<std::string> outputs;  // output binding names
};

struct Program {
  std::vector<Buffer> buffers;
  std::vector<Step> steps;
  std::vector<HostBinding> inputs;
  std::vector<HostBinding> weights;
  std::vector<HostBinding> outputs;
  std::vector<HostCall> calls;
  std::vector<std::string> provenance;  // indexed by the provenance fields
  // One line per planned operation (a GEMM's or an attention's blocks,
  // tiles, waves and modelled cycles), for the compile report.
  std::vector<std::string> plans;

  std::uint32_t add_provenance(std::string text);
  BufferId add_buffer(Buffer buffer);
};

}  // namespace tessera::compiler::lower
