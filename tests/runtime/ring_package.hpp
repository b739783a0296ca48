#pragma once
// A hand-built package that exercises the whole host-call protocol, for the
// runtime tests until the compiler emits such packages (its host side is
// already the compiler's: compiler/host_io.hpp plans the batches and each
// tile's host programs): input x (u32) moves
// host → device in 4 KiB batches through the page slots (staged at the H2D
// window, then copied into place), every compute tile doubles its share
// (tessera_add_u32, x + x), the tiles pass their results one step round a
// ring in an internal exchange phase (D2D), and output y moves device → host
// in batches. So y's share of compute tile i is 2·x's share of tile i − 1.
//
// XREQ owners of the compute tiles take part in the package (and in every
// internal sync) even when they compute nothing.

#include <cstdint>
#include <vector>

#include "schema/model.hpp"
#include "target/topology.hpp"

namespace tessera::runtime::testing {

struct RingSpec {
  std::vector<target::PhysicalTile> compute_tiles;  // in ring order, at least 2
  std::uint32_t words_per_tile = 256;                // ≤ 4096
  // A kernel that runs past its operand: the add's count register says one
  // word more than the call site's footprint (a KernelOverrun on the first
  // compute tile).
  bool overrun = false;
};

schema::Application ring_package(const RingSpec& spec);

// The CPU reference for y.
std::vector<std::uint32_t> ring_reference(const RingSpec& spec, const std::vector<std::uint32_t>& x);

}  // namespace tessera::runtime::testing
