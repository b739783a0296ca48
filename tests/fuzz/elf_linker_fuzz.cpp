// libFuzzer target: the Colossus object reader and the linker on arbitrary
// bytes (compiler/elf). Their contract is that a malformed object is an
// ObjectError and an object that does not link a LinkError; so this catches
// those two and nothing else. Any other exception, a sanitizer finding, a
// timeout or an allocation above -malloc_limit_mb is a crash.
//
// Build and run: `make fuzz-elf` (seeds from tessera_fuzz_elf_seeds).
// Reproduce a crash: ./tessera_fuzz_elf_linker crash-<sha1>.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "compiler/elf/linker.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace elf = tessera::compiler::elf;
  try {
    const std::vector<elf::ObjectFile> objects{
        elf::read_object("fuzz.o", std::span<const std::uint8_t>(data, size))};
    // The seeds' names (tests/testing/elf_writer.hpp), so mutations of a
    // valid object reach reachability, placement and relocation.
    elf::LinkOptions options;
    options.entry = "main";
    options.retained = {"buffer"};
    options.externals["external"] = 0x5C000;
    (void)elf::link(objects, options);
  } catch (const elf::ObjectError&) {
  } catch (const elf::LinkError&) {
  }
  return 0;
}
