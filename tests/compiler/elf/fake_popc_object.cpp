// The fake popc's back end: `fake_popc_object OUT SOURCE [FLAGS...]` writes a
// Colossus relocatable object (tests/testing/elf_writer.hpp).
//
// A device kernel source (one with `TESSERA_DEVICE_KERNEL(symbol, …)` lines,
// kernels/device/) gets what popc would give the link step: one global
// function per entry, each in its own `.text.<symbol>` (16 bytes: the
// source's length, the entry's index, a word relocated by R_COLOSSUS_32 to
// the address of the source's shared `.rodata`, and 0), and that `.rodata`
// (8 bytes: the length again and the entry count), so linking them exercises
// reachability, a shared section and a relocation. The last word is
// relocated by R_COLOSSUS_32 to `tessera_fake_shared_helper`, an inline helper
// every device object carries as popc emits one out of line: a weak function
// in its own COMDAT group (8 bytes: kFakeHelperMagic, 0), the same in every
// object, so a tile linking two families must keep exactly one copy.
//
// Any other source: one function — named by -DKERNEL_SYMBOL=NAME, else
// `kernel` — whose two words are the source's length and the number of
// flags, so a test can tell which build produced an object.
#include <cctype>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "tests/testing/elf_writer.hpp"

namespace {

namespace elf = tessera::compiler::elf;

// The symbols of the source's TESSERA_DEVICE_KERNEL(symbol, …) and
// TESSERA_DEVICE_SUPERVISED_KERNEL(symbol, …) lines.
std::vector<std::string> device_entries(const std::string& text) {
  std::vector<std::string> symbols;
  std::size_t line = 0;
  while (line < text.size()) {
    std::size_t end = text.find('\n', line);
    if (end == std::string::npos) end = text.size();
    std::size_t at = text.find_first_not_of(" \t", line);
    std::string_view macro;
    for (const std::string_view name :
         {std::string_view("TESSERA_DEVICE_KERNEL("),
          std::string_view("TESSERA_DEVICE_SUPERVISED_KERNEL(")}) {
      if (at < end && text.compare(at, name.size(), name) == 0) macro = name;
    }
    if (!macro.empty()) {
      at += macro.size();
      std::size_t stop = at;
      while (stop < end &&
             (std::isalnum(static_cast<unsigned char>(text[stop])) != 0 || text[stop] == '_')) {
        ++stop;
      }
      if (stop > at) symbols.push_back(text.substr(at, stop - at));
    }
    line = end + 1;
  }
  return symbols;
}

// The shared helper's first word (tests/cli/hardware_package_test.cpp checks it): "HELP".
constexpr std::uint32_t kFakeHelperMagic = 0x504C4548;

void put32(std::vector<std::uint8_t>& bytes, std::uint32_t word) {
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<std::uint8_t>(word >> (8 * i)));
}

std::vector<std::uint8_t> device_object(const std::vector<std::string>& kernels,
                                        std::uint32_t length) {
  tessera::testing::ElfWriter writer;
  std::vector<std::uint8_t> shared;
  put32(shared, length);
  put32(shared, static_cast<std::uint32_t>(kernels.size()));
  const auto rodata = writer.add_section(".rodata", shared, elf::kShfAlloc, 8);
  const auto rodata_symbol = writer.add_section_symbol(rodata);
  std::vector<std::uint8_t> helper_code;
  put32(helper_code, kFakeHelperMagic);
  put32(helper_code, 0);
  const auto helper_text = writer.add_section(".text.tessera_fake_shared_helper", helper_code,
                                              elf::kShfAlloc | elf::kShfExecInstr, 8);
  const auto helper = writer.add_symbol("tessera_fake_shared_helper",
                                        static_cast<std::uint16_t>(helper_text), 0, elf::kStbWeak,
                                        elf::kSttFunc, 8);
  writer.add_group(helper, {helper_text});
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    std::vector<std::uint8_t> code;
    for (const std::uint32_t word : {length, static_cast<std::uint32_t>(i), 0u, 0u})
      put32(code, word);
    const auto text =
        writer.add_section(".text." + kernels[i], code, elf::kShfAlloc | elf::kShfExecInstr, 8);
    writer.add_symbol(kernels[i], static_cast<std::uint16_t>(text), 0, elf::kStbGlobal,
                      elf::kSttFunc, 16);
    writer.add_relocation(text, 8, elf::RelocationType::k32, rodata_symbol);
    writer.add_relocation(text, 12, elf::RelocationType::k32, helper);
  }
  return writer.build();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: fake_popc_object OUT SOURCE [FLAGS...]\n";
    return 2;
  }
  std::ifstream source(argv[2], std::ios::binary);
  if (!source) {
    std::cerr << argv[2] << ": cannot open\n";
    return 1;
  }
  const std::string text((std::istreambuf_iterator<char>(source)),
                         std::istreambuf_iterator<char>());
  std::string symbol = "kernel";
  const std::string prefix = "-DKERNEL_SYMBOL=";
  for (int i = 3; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag.rfind(prefix, 0) == 0) symbol = flag.substr(prefix.size());
  }
  const std::vector<std::string> kernels = device_entries(text);
  const auto length = static_cast<std::uint32_t>(text.size());
  const auto bytes = kernels.empty() ? tessera::testing::single_function_object(
                                           symbol, {length, static_cast<std::uint32_t>(argc - 3)})
                                     : device_object(kernels, length);
  std::ofstream out(argv[1], std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return out ? 0 : 1;
}
