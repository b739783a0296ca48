// Writes the hand-built ring package (tests/runtime/ring_package.hpp), an
// input x and the CPU reference of y, for `make demo` until the compiler
// emits packages:  make_ring_package DIR [TILES [WORDS]]
//   DIR/ring.ipuexe  DIR/x.npy  DIR/y_expected.npy
#include <cstdlib>
#include <iostream>
#include <string>

#include "runtime/tensor.hpp"
#include "runtime/tensor_file.hpp"
#include "schema/writer.hpp"
#include "support/little_endian.hpp"
#include "target/topology.hpp"
#include "tests/runtime/ring_package.hpp"

int main(int argc, char** argv) {
  using namespace tessera;
  if (argc < 2 || argc > 4) {
    std::cerr << "usage: make_ring_package DIR [TILES [WORDS]]\n";
    return 2;
  }
  const std::string dir = argv[1];
  const unsigned long tiles = argc > 2 ? std::stoul(argv[2]) : target::kTileCount;
  const unsigned long words = argc > 3 ? std::stoul(argv[3]) : 1024;
  if (tiles < 2 || tiles > target::kTileCount || words < 1 || words > 4096) {
    std::cerr << "make_ring_package: 2..1472 tiles and 1..4096 words per tile\n";
    return 2;
  }
  try {
    runtime::testing::RingSpec spec;
    for (unsigned long i = 0; i < tiles; ++i) {
      spec.compute_tiles.push_back(target::c600_physical(target::LogicalTile(static_cast<std::uint16_t>(i))));
    }
    spec.words_per_tile = static_cast<std::uint32_t>(words);
    std::vector<std::uint32_t> x(tiles * words);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::uint32_t>(i * 2654435761u + 12345u);
    schema::write_package(runtime::testing::ring_package(spec), dir + "/ring.ipuexe");
    const runtime::TensorShape shape{x.size()};
    runtime::write_tensor_file(dir + "/x.npy",
                               runtime::HostTensor(schema::DType::kU32, shape, words_to_bytes(x)));
    runtime::write_tensor_file(
        dir + "/y_expected.npy",
        runtime::HostTensor(schema::DType::kU32, shape,
                            words_to_bytes(runtime::testing::ring_reference(spec, x))));
  } catch (const std::exception& error) {
    std::cerr << "make_ring_package: " << error.what() << '\n';
    return 1;
  }
  return 0;
}
