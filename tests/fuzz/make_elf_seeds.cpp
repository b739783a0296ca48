// Writes the ELF fuzz target's seed corpus into DIRECTORY: the tests' sample
// object (every section kind and several relocation types) and a
// one-function object, both valid Colossus relocatables.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/testing/elf_writer.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <directory>\n", argc > 0 ? argv[0] : "tessera_fuzz_elf_seeds");
    return 2;
  }
  const std::filesystem::path directory = argv[1];
  std::filesystem::create_directories(directory);
  const auto write = [&](const char* name, const std::vector<std::uint8_t>& bytes) {
    std::ofstream out(directory / name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    return static_cast<bool>(out);
  };
  const bool ok = write("sample.o", tessera::testing::sample_colossus_object()) &&
                  write("main.o", tessera::testing::single_function_object("main", {0, 1, 2}));
  return ok ? 0 : 1;
}
