#include "tests/kernels/kernel_runner.hpp"

#include <stdexcept>

#include "tests/sim/program.hpp"

namespace tessera::kernels::testing {
namespace {

using namespace sim::testing;

const target::PhysicalTile kTile = target::c600_physical(target::LogicalTile(0));
constexpr std::uint32_t kKernelEntry = 0x4D000;  // the kernel symbol; its code never runs

}  // namespace

KernelRun::KernelRun(std::string_view kernel, const Registers& registers,
                     const std::vector<Buffer>& buffers, sim::SimOptions options,
                     const KernelRegistry& registry)
    : chip_(small_topology(1), options, registry) {
  const KernelSpec* spec = registry.find(kernel);
  if (spec == nullptr) throw std::invalid_argument("no kernel " + std::string(kernel));
  std::vector<isa::Instruction> program;
  for (unsigned reg = kOutputRegister; reg <= kLastArgumentRegister; ++reg) {
    program = program + load_constant(static_cast<Reg>(reg), registers[reg]);
  }
  call_pc_ = target::kLoadBase + 4 * static_cast<std::uint32_t>(program.size());
  supervisor_instructions_ = program.size() + 1 + halt().size();
  load_program(chip_, kTile,
               program + std::vector<isa::Instruction>{isa::Call{Reg::m10, kKernelEntry}} + halt());
  load_program(chip_, kTile, {isa::Br{Reg::m10}}, kKernelEntry);

  schema::TileDebug debug;
  debug.tile = kTile;
  debug.symbols = {
      schema::Symbol{std::string(kernel), kKernelEntry, 4, schema::SymbolKind::kKernel}};
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const Buffer& buffer = buffers[i];
    debug.allocations.push_back(schema::Allocation{
        static_cast<std::uint32_t>(i + 1), buffer.name, "%" + buffer.name, buffer.address,
        buffer.size, 0, schema::kLiveToEnd, schema::AllocationKind::kTensor, 0});
    if (!buffer.contents.empty()) chip_.load_segment(kTile, buffer.address, buffer.contents, false);
  }
  schema::CallSite site{call_pc_, std::string(kernel), {}, 0};
  for (const OperandSpec& operand : spec->operands) {
    const std::uint32_t pointer = registers[operand.reg];
    std::uint32_t owner = 0;
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      if (pointer >= buffers[i].address && pointer - buffers[i].address <= buffers[i].size) {
        owner = static_cast<std::uint32_t>(i + 1);
        break;
      }
    }
    site.operands.push_back(schema::CallOperand{
        static_cast<std::uint8_t>(operand.reg), owner, pointer,
        static_cast<std::uint32_t>(operand.footprint(registers)), operand.access != Access::kRead});
  }
  debug.call_sites = {site};
  chip_.set_debug(kTile, debug, {"graph: " + std::string(kernel)});
  chip_.start();
  result_ = chip_.run();
}

const sim::Fault& KernelRun::fault() const { return chip_.faults().all().at(0); }

std::string KernelRun::fault_text() const {
  return chip_.faults().all().empty() ? std::string() : sim::describe(fault());
}

std::vector<std::uint8_t> KernelRun::read(std::uint32_t address, std::uint32_t size) {
  std::vector<std::uint8_t> bytes(size);
  chip_.tile(kTile).sram().read(address, bytes);
  return bytes;
}

bool KernelRun::initialized(std::uint32_t address, std::uint32_t size) const {
  return chip_.tile(kTile).sram().initialized(address, size);
}

std::vector<std::uint8_t> to_bytes(const std::vector<std::uint32_t>& elements,
                                   unsigned element_bytes) {
  std::vector<std::uint8_t> bytes;
  for (const std::uint32_t value : elements) {
    for (unsigned b = 0; b < element_bytes; ++b)
      bytes.push_back(static_cast<std::uint8_t>(value >> (8 * b)));
  }
  return bytes;
}

std::vector<std::uint32_t> from_bytes(const std::vector<std::uint8_t>& bytes,
                                      unsigned element_bytes) {
  std::vector<std::uint32_t> elements(bytes.size() / element_bytes);
  for (std::size_t i = 0; i < elements.size(); ++i) {
    for (unsigned b = 0; b < element_bytes; ++b) {
      elements[i] |= std::uint32_t{bytes[i * element_bytes + b]} << (8 * b);
    }
  }
  return elements;
}

}  // namespace tessera::kernels::testing
