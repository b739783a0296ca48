#pragma once
// compile(): a graph → a package, the compiler's front door (tessera compile
// and the C++ API use it).
//
//   verify (ir/verifier.hpp) → lower (lower/lower.hpp: layouts, address-free
//   per-tile work) → link (emit/link.hpp: placement, host I/O, exchange
//   scheduling, code, debug section).
//
// The package runs on the simulator (runtime::Session, `tessera run`).
// Without device code it is not hardware-loadable: the kernels exist as host
// models only. With it (CompileOptions::device: popc-built kernels,
// elf/device_sources.hpp) each tile's kernels are linked into its code, the
// package covers whole loader batches and is hardware-loadable when every
// kernel it calls has device code. Compiling the same graph with the same
// options (and the same device objects) twice gives identical bytes.
//
// Host calls: "load_parameters" (the parameters, when the graph has any),
// then "run" (the host inputs in, the host outputs out).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/emit/link.hpp"
#include "compiler/ir/graph.hpp"
#include "compiler/plan/attention_plan.hpp"
#include "schema/model.hpp"

namespace tessera::compiler {

struct CompileOptions {
  // Tensors are spread over logical tiles 0 … tiles − 1 (1 … 1472).
  std::uint32_t tiles = 1472;
  // No tensor is cut into shards smaller than this many bytes (0: spread
  // every tensor over as many tiles as it has row blocks). Larger shards mean
  // fewer, longer exchange messages: a [1024] f32 sum result spread one
  // element per tile gathers its partials as one-word messages.
  std::uint64_t min_shard_bytes = 0;
  // lower::LowerOptions::gemm_a_homes (nullopt: the planner chooses).
  std::optional<bool> gemm_a_homes = std::nullopt;
  // lower::LowerOptions::attention (default: the planner chooses).
  plan::AttentionPlanOptions attention = {};
  // Replay and re-check every exchange row (reference §5.5); cheap.
  bool validate_exchange = true;
  // Host threads for linking (emit::LinkOptions::threads: 1 … emit::kMaxLinkThreads;
  // 0: the machine's cores, capped; UsageError otherwise). Same bytes for every count.
  unsigned threads = 0;
  // The kernels' device code (emit::LinkOptions::device); nullptr: emulated only.
  emit::DeviceCode* device = nullptr;
  // Cycle samples for a C600 profile (emit::LinkOptions::profile_samples):
  // each tile's sample buffer holds at most this many records (1 …
  // emit::kMaxProfileSampleRecords; UsageError otherwise); nullopt: none.
  std::optional<std::uint32_t> profile_samples = std::nullopt;
};

struct CompileResult {
  schema::Application application;
  emit::LinkReport report;
  std::size_t lowered_steps = 0;
  // Each planned operation's plan, one line each (a GEMM's blocks, tiles,
  // waves and modelled cycles against its FLOP bound).
  std::vector<std::string> plans;
};

// Throws GraphError (an invalid graph), lower::LoweringError (an operation
// this compiler cannot lower), PlacementError (with the per-tile memory
// report), exchange::ExchangeScheduleError, emit::LinkError.
CompileResult compile(const Graph& graph, const CompileOptions& options = {});

// "compiled 12 steps: 3 exchange phases (…), 40 kernel calls, …" — what
// `tessera compile --report` prints.
std::string format_report(const CompileResult& result);

}  // namespace tessera::compiler
