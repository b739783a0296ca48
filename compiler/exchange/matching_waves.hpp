#pragma once
// An order of a point-to-point phase's messages in "matching waves" (the
// prior art's HEAD improvement, compiler-prior-art.md §3.2): repeatedly take a
// maximum matching (Hopcroft–Karp) of the ready messages' sender → receiver
// edges, so each wave uses every tile at most once each way. List-scheduled
// in this order, tiles leave a wave together instead of queueing behind
// whichever message happened to start first.

#include <cstddef>
#include <optional>
#include <vector>

#include "compiler/exchange/prepare.hpp"

namespace tessera::compiler::exchange {

// nullopt when the phase has a multicast or is unbalanced (some tile sends or
// receives more than twice the mean number of messages per tile), where waves
// would be many and small. Deterministic: ties go to lower indices.
std::optional<std::vector<std::size_t>> matching_wave_order(const PreparedPhase& phase);

}  // namespace tessera::compiler::exchange
