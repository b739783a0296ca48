// Step 4 of linking, profile samples (LinkOptions::profile_samples): the
// records a tile's main program appends to its sample buffer, each through a
// call of the sample helper (kernels::kProfileSample), in the layout
// schema/profile_samples.hpp owns and the C600 backend decodes.
//
// The supervisor cannot read the cycle counter ($COUNT_L); a worker can, so
// every record is a helper call, a worker handoff, which costs its cycles
// (kernels::kProfileSampleCycles) and the supervisor instructions that load
// its registers. Where records go (main_code.cpp, footprint.cpp):
//   - a step record (host, exchange, synchronization) before the startup
//     rendezvous, before a host batch's program, before an exchange phase's
//     entry sync — never between that sync and the row, whose timing the
//     schedule fixes —;
//   - a kernel-call record before each kernel call's register loads (the
//     helper may use any register), naming the call site that follows it;
//   - a loop record after each store to a loop's counter word, with the
//     word stored;
//   - an end record before the halt.
#include "compiler/emit/linker.hpp"

namespace tessera::compiler::emit::linking {
namespace {

// The buffer's layout has one owner, schema/profile_samples.hpp; the helper
// (kernels/, which cannot include schema/) spells it out again, and the
// compiler, which sees both, holds them together.
static_assert(kernels::kProfileSampleHeaderWords == schema::kSampleHeaderWords);
static_assert(kernels::kProfileSampleRecordWords == schema::kSampleRecordWords);

constexpr unsigned kBuffer = 2, kSite = 3, kCapacity = 4, kSource = 5, kValue = 6;

// A provenance as a site's argument (kNoSiteArgument: none).
std::uint32_t site_argument(std::uint32_t provenance) {
  if (provenance == schema::kNoProvenance) return schema::kNoSiteArgument;
  if (provenance >= schema::kNoSiteArgument) {
    throw LinkError(fmt::format(
        "profile samples: provenance {} does not fit a sample site's argument (below {:#x})",
        provenance, schema::kNoSiteArgument));
  }
  return provenance;
}

}  // namespace

void Linker::emit_sample(MainCode& main, PhysicalTile tile, std::uint32_t site,
                         std::uint32_t provenance, std::optional<std::uint32_t> value_word) const {
  if (!profiling()) return;
  const TileCode& code = code_.at(tile);
  kernels::Registers registers{};
  registers[kBuffer] = code.samples->address;
  registers[kSite] = site;
  registers[kCapacity] = code.sample_capacity;
  registers[kSource] = value_word ? kernels::kSampleTheRegister : kernels::kSampleTheCounter;
  std::vector<std::pair<unsigned, std::uint32_t>> scalars = {
      {kSite, registers[kSite]}, {kCapacity, registers[kCapacity]}, {kSource, registers[kSource]}};
  std::map<unsigned, MovingPointer> loaded;
  if (value_word) loaded[kValue] = MovingPointer{*value_word, 0};
  emit_call(main, tile, std::string(kernels::kProfileSample), {{kBuffer, &*code.samples}},
            registers, code.stubs.at(std::string(kernels::kProfileSample)), provenance, loaded,
            scalars);
  ++main.sample_sites;
  main.records = checked_add(main.records, main.runs, "profile sample records");
}

void Linker::emit_step_sample(MainCode& main, PhysicalTile tile, schema::StepKind kind,
                              std::uint32_t provenance, bool once) const {
  if (!profiling()) return;
  const std::uint32_t site = schema::sample_site(kind, site_argument(provenance));
  if (once && main.open_step == site) return;
  emit_sample(main, tile, site, provenance);
  main.open_step = site;
}

std::uint32_t Linker::sample_capacity(std::uint64_t records) const {
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(records, *options_.profile_samples));
}

}  // namespace tessera::compiler::emit::linking
