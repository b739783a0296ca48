// EarliestStartQueue (exchange/earliest_start_queue.hpp) against brute
// force: after every operation the queue's top is the ready piece of least
// (bound, rank), where a piece's bound is the larger of its own and its
// sender's frontier — found here by scanning every ready piece. Random
// operations in the list scheduler's pattern: pieces become ready, the top
// is raised (a stale bound) or removed (placed, moving its sender's
// frontier), and senders' frontiers move on their own.

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "compiler/exchange/earliest_start_queue.hpp"

namespace tessera::compiler::exchange {
namespace {

using target::Event;

TEST(EarliestStartQueue, TopIsTheReadyPieceOfLeastBoundThenRank) {
  std::mt19937 random(6);
  for (int trial = 0; trial < 30; ++trial) {
    const std::size_t tiles = 1 + random() % 12;
    const std::size_t pieces = 1 + random() % 300;
    std::vector<std::uint16_t> sender(pieces);
    for (auto& s : sender) s = static_cast<std::uint16_t>(random() % tiles);
    std::vector<std::uint32_t> rank(pieces);
    std::iota(rank.begin(), rank.end(), 0u);
    std::shuffle(rank.begin(), rank.end(), random);
    EarliestStartQueue queue(tiles, sender, rank);

    std::vector<std::optional<Event>> bound(pieces);  // ready pieces' own bounds
    std::vector<Event> frontier(tiles, 0);
    std::size_t released = 0;
    const auto expected = [&]() -> std::optional<EarliestStartQueue::Candidate> {
      std::optional<EarliestStartQueue::Candidate> best;
      for (std::size_t i = 0; i < pieces; ++i) {
        if (!bound[i]) continue;
        const Event b = std::max(*bound[i], frontier[sender[i]]);
        if (!best || b < best->bound || (b == best->bound && rank[i] < rank[best->piece])) {
          best = EarliestStartQueue::Candidate{b, i};
        }
      }
      return best;
    };
    for (int step = 0; step < 3000; ++step) {
      const auto top = queue.top();
      const auto want = expected();
      ASSERT_EQ(top.has_value(), want.has_value()) << "trial " << trial << " step " << step;
      if (top) {
        ASSERT_EQ(top->piece, want->piece) << "trial " << trial << " step " << step;
        ASSERT_EQ(top->bound, want->bound) << "trial " << trial << " step " << step;
        ASSERT_EQ(queue.frontier(sender[top->piece]), frontier[sender[top->piece]]);
      }
      const unsigned action = random() % 4;
      if (action == 0 && released < pieces) {
        const Event b = static_cast<Event>(random() % 200);
        bound[released] = b;
        queue.add(released++, b);
      } else if (action == 1 && top) {
        const Event b = top->bound + 1 + static_cast<Event>(random() % 20);
        bound[top->piece] = b;
        queue.raise(top->piece, b);
      } else if (action == 2 && top) {
        const Event f = random() % 3 == 0 ? 0 : top->bound + static_cast<Event>(random() % 10);
        bound[top->piece].reset();
        frontier[sender[top->piece]] = std::max(frontier[sender[top->piece]], f);
        queue.remove(top->piece, f);
      } else if (action == 3) {
        const auto tile = static_cast<std::uint16_t>(random() % tiles);
        const Event f = frontier[tile] + static_cast<Event>(random() % 30) - 10;
        frontier[tile] = std::max(frontier[tile], f);
        queue.raise_frontier(tile, f);
      }
    }
  }
}

}  // namespace
}  // namespace tessera::compiler::exchange
