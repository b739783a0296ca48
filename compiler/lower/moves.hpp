#pragma once
// Lowering of element moves: one operation's "destination element ←
// source element" pairs (any data movement: copy, slice, concat, reshape,
// transpose, broadcast, gathering partials for a sum) → logical transfers
// for one exchange phase plus local kernel runs.
//
//   * moves are coalesced into runs (both sides contiguous, same tiles and
//     buffers); callers that know a run (a row of a shard) pass it whole
//     (move_run), which gives the same runs as its element moves;
//   * a run between tiles whose ends are whole words on both sides is one
//     transfer; equal source ranges going to several places are one
//     multicast transfer;
//   * a run between tiles that is not whole words (f16, f8) brings the words
//     covering it (merged per source) into a staging buffer on the
//     destination tile; a local move (below) then puts the run in place;
//   * a run on one tile (or out of the staging buffer) whose two ends sit at
//     the same byte of their words and that spans at least kCopyWordsMinimum
//     whole words is a tessera_copy_words call for those words, plus element
//     moves for the ≤ 3 bytes before and after them (an f16 or f8 run of any
//     length costs a table of at most 6 entries); every other local move is
//     an entry of a tessera_move_elements_b{8,16,32} table (a constant
//     buffer, 8 bytes per element).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/lower/program.hpp"

namespace tessera::compiler::lower {

// Below this many words a table move is cheaper than the copy helper's
// 288-cycle call (kernels/costs.hpp).
inline constexpr std::uint32_t kCopyWordsMinimum = 32;

class MoveLowering {
 public:
  MoveLowering(Program& program, std::string label, std::uint32_t provenance,
               std::uint32_t element_bytes);

  // One element from `source` to `destination`.
  void move(const Location& destination, const Location& source);
  // `bytes` (a non-zero multiple of the element size) contiguous bytes from
  // `source` on to `destination` on: exactly the element moves of those
  // elements in order, at one call instead of one per element.
  void move_run(const Location& destination, const Location& source, std::uint32_t bytes);

  // The transfers (for one exchange step) and the local runs (appended per
  // tile to `compute`) that carry out every move so far.
  std::vector<Transfer> finish(std::map<LogicalTile, std::vector<KernelRun>>& compute);

 private:
  struct Run {
    std::uint32_t destination = 0;  // offset in the destination buffer
    std::uint32_t source = 0;       // offset in the source buffer
    std::uint32_t bytes = 0;
  };
  // (destination tile, destination buffer, source tile, source buffer)
  using RunKey = std::tuple<LogicalTile, BufferId, LogicalTile, BufferId>;

  std::string move_kernel() const;

  Program& program_;
  std::string label_;
  std::uint32_t provenance_;
  std::uint32_t element_bytes_;
  std::map<RunKey, std::vector<Run>> runs_;
  // The runs of the last move's key: consecutive moves mostly share it.
  std::optional<RunKey> last_key_;
  std::vector<Run>* last_runs_ = nullptr;
};

}  // namespace tessera::compiler::lower
