#pragma once
// One tile's code from a package, as `tessera disasm PACKAGE --tile T` prints
// it: the executable segments disassembled (target/assembly.hpp), annotated
// with the tile's debug records: labels at symbols, symbol names for call
// and branch targets, the operands and provenance of every call site, the
// entry point.

#include <iosfwd>

#include "schema/model.hpp"
#include "target/topology.hpp"

namespace tessera::cli {

// The image of `tile`. Throws InputError naming the package's tiles when the
// package has no image for it.
const schema::TileImage& tile_image(const schema::Application& app, target::PhysicalTile tile);

// Every executable segment of `image` in address order: a header per segment,
// then one line per instruction. A tile without debug records is still
// listed, without names. The application must be validated (read_package does).
void print_tile_listing(const schema::Application& app, const schema::TileImage& image,
                        std::ostream& out);

// The tile's symbols and allocations, one per line.
void print_tile_symbols(const schema::Application& app, const schema::TileImage& image,
                        std::ostream& out);

}  // namespace tessera::cli
