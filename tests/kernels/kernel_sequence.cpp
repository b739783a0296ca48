#include "tests/kernels/kernel_sequence.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "tests/sim/program.hpp"

namespace tessera::kernels::testing {
namespace {

using namespace sim::testing;

const target::PhysicalTile kTile = target::c600_physical(target::LogicalTile(0));

}  // namespace

KernelSequence::KernelSequence(const std::vector<SequenceCall>& calls,
                               const std::vector<Buffer>& buffers, sim::SimOptions options,
                               const KernelRegistry& registry)
    : chip_(small_topology(1), options, registry) {
  // One entry per distinct kernel, after the program: the symbol the calls
  // name (its code, a return, never runs).
  std::map<std::string_view, std::uint32_t> entries;
  for (const SequenceCall& call : calls) {
    if (registry.find(call.kernel) == nullptr) {
      throw std::invalid_argument("no kernel " + std::string(call.kernel));
    }
    entries.emplace(call.kernel, 0);
  }
  std::vector<isa::Instruction> program;
  std::vector<std::size_t> call_indices;
  for (const SequenceCall& call : calls) {
    for (unsigned reg = kOutputRegister; reg <= kLastArgumentRegister; ++reg) {
      program = program + load_constant(static_cast<Reg>(reg), call.registers[reg]);
    }
    call_indices.push_back(program.size());
    program.push_back(isa::Call{Reg::m10, 0});  // target patched below
  }
  program = program + halt();
  const std::uint32_t code_end = target::kLoadBase + 4 * static_cast<std::uint32_t>(program.size());
  std::uint32_t entry = (code_end + 0xFF) / 0x100 * 0x100;
  for (auto& [kernel, address] : entries) {
    address = entry;
    entry += 8;
  }
  if (entry > kBufferBase) throw std::invalid_argument("kernel sequence: program too long");
  for (std::size_t i = 0; i < calls.size(); ++i) {
    program[call_indices[i]] = isa::Call{Reg::m10, entries.at(calls[i].kernel)};
    call_pcs_.push_back(target::kLoadBase + 4 * static_cast<std::uint32_t>(call_indices[i]));
  }
  supervisor_instructions_ = program.size();
  load_program(chip_, kTile, program);

  schema::TileDebug debug;
  debug.tile = kTile;
  for (const auto& [kernel, address] : entries) {
    load_program(chip_, kTile, {isa::Br{Reg::m10}}, address);
    debug.symbols.push_back(
        schema::Symbol{std::string(kernel), address, 4, schema::SymbolKind::kKernel});
  }
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& buffer = buffers[i];
    debug.allocations.push_back(schema::Allocation{
        static_cast<std::uint32_t>(i + 1), buffer.name, "%" + buffer.name, buffer.address,
        buffer.size, 0, schema::kLiveToEnd, schema::AllocationKind::kTensor, 0});
    if (!buffer.contents.empty()) chip_.load_segment(kTile, buffer.address, buffer.contents, false);
  }
  for (std::size_t c = 0; c < calls.size(); ++c) {
    const KernelSpec& spec = *registry.find(calls[c].kernel);
    schema::CallSite site{call_pcs_[c], std::string(calls[c].kernel), {}, 0};
    for (const OperandSpec& operand : spec.operands) {
      const std::uint32_t pointer = calls[c].registers[operand.reg];
      std::uint32_t owner = 0;
      for (std::size_t i = 0; i < buffers.size(); ++i) {
        if (pointer >= buffers[i].address && pointer - buffers[i].address < buffers[i].size) {
          owner = static_cast<std::uint32_t>(i + 1);
          break;
        }
      }
      site.operands.push_back(
          schema::CallOperand{static_cast<std::uint8_t>(operand.reg), owner, pointer,
                              static_cast<std::uint32_t>(operand.footprint(calls[c].registers)),
                              operand.access != Access::kRead});
    }
    debug.call_sites.push_back(site);
  }
  chip_.set_debug(kTile, debug, {"graph: attention task"});
  chip_.start();
  result_ = chip_.run();
}

const sim::Fault& KernelSequence::fault() const { return chip_.faults().all().at(0); }

std::string KernelSequence::fault_text() const {
  return chip_.faults().all().empty() ? std::string() : sim::describe(fault());
}

std::size_t KernelSequence::faulting_call() const {
  if (chip_.faults().empty() || !fault().pc) return call_pcs_.size();
  const auto it = std::find(call_pcs_.begin(), call_pcs_.end(), *fault().pc);
  return static_cast<std::size_t>(it - call_pcs_.begin());
}

std::vector<std::uint8_t> KernelSequence::read(std::uint32_t address, std::uint32_t size) {
  std::vector<std::uint8_t> bytes(size);
  chip_.tile(kTile).sram().read(address, bytes);
  return bytes;
}

}  // namespace tessera::kernels::testing
