#pragma once
// The secondary loader's batch (driver-host-protocol.md §3.1, §3.3): it takes
// tile images 64 at a time, in physical order from tile 0, and the package's
// tile count must be a nonzero multiple of 64. The driver's loader loads by it
// (driver/loader.hpp) and the compiler pads a hardware package to it
// (compiler/emit/link.hpp). Its own header, apart from memory_map.hpp, so the
// few users depend on it alone.

namespace tessera::target {

inline constexpr unsigned kLoaderBatchTiles = 64;

}  // namespace tessera::target
