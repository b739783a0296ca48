// The fake popc's back end: `fake_popc_object OUT SOURCE [FLAGS...]` writes a
// Colossus relocatable object (tests/testing/elf_writer.hpp) defining one
// function — named by -DKERNEL_SYMBOL=NAME, else `kernel` — whose two words
// are the source's length and the number of flags, so a test can tell which
// build produced an object.
#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/testing/elf_writer.hpp"

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
  const auto bytes = tessera::testing::single_function_object(
      symbol, {static_cast<std::uint32_t>(text.size()), static_cast<std::uint32_t>(argc - 3)});
  std::ofstream out(argv[1], std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return out ? 0 : 1;
}
