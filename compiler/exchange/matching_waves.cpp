#include "compiler/exchange/matching_waves.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>

#include "target/topology.hpp"

namespace tessera::compiler::exchange {
namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

// Hopcroft–Karp over senders (left) and receivers (right); edges are
// messages. Returns the matched messages. One per phase, cleared for each
// wave (a phase has as many waves as its busiest tile has messages).
class Matching {
 public:
  Matching(std::size_t left, std::size_t right)
      : adjacent_(left), match_left_(left, kNone), match_right_(right, kNone), level_(left),
        via_(left, kNone) {}

  // No edges, nothing matched.
  void clear() {
    for (auto& edges : adjacent_) edges.clear();
    std::fill(match_left_.begin(), match_left_.end(), kNone);
    std::fill(match_right_.begin(), match_right_.end(), kNone);
    std::fill(via_.begin(), via_.end(), kNone);
  }

  // An edge left → right carried by `message`; edges are tried in the order added.
  void add(std::size_t left, std::size_t right, std::size_t message) {
    adjacent_[left].push_back({right, message});
  }

  std::vector<std::size_t> run() {
    while (layer()) {
      for (std::size_t u = 0; u < adjacent_.size(); ++u) {
        if (match_left_[u] == kNone) augment(u);
      }
    }
    std::vector<std::size_t> messages;
    for (std::size_t u = 0; u < adjacent_.size(); ++u) {
      if (match_left_[u] != kNone) messages.push_back(via_[u]);
    }
    return messages;
  }

 private:
  struct Edge {
    std::size_t right;
    std::size_t message;
  };

  bool layer() {
    std::queue<std::size_t> queue;
    bool found = false;
    for (std::size_t u = 0; u < adjacent_.size(); ++u) {
      level_[u] = match_left_[u] == kNone ? 0 : kNone;
      if (level_[u] == 0) queue.push(u);
    }
    while (!queue.empty()) {
      const std::size_t u = queue.front();
      queue.pop();
      for (const Edge& e : adjacent_[u]) {
        const std::size_t w = match_right_[e.right];
        if (w == kNone) {
          found = true;
        } else if (level_[w] == kNone) {
          level_[w] = level_[u] + 1;
          queue.push(w);
        }
      }
    }
    return found;
  }

  // Iterative depth-first search for an augmenting path from u along the levels.
  bool augment(std::size_t root) {
    struct Frame {
      std::size_t u;
      std::size_t next;
    };
    std::vector<Frame> stack{{root, 0}};
    std::vector<std::size_t> edges;  // the edge index taken at each frame
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.next == adjacent_[frame.u].size()) {
        level_[frame.u] = kNone;  // dead end
        stack.pop_back();
        if (!edges.empty()) edges.pop_back();
        continue;
      }
      const std::size_t taken = frame.next++;
      const Edge& e = adjacent_[frame.u][taken];
      const std::size_t w = match_right_[e.right];
      if (w == kNone) {
        edges.push_back(taken);
        for (std::size_t k = stack.size(); k-- > 0;) {
          const Edge& flip = adjacent_[stack[k].u][edges[k]];
          match_left_[stack[k].u] = flip.right;
          match_right_[flip.right] = stack[k].u;
          via_[stack[k].u] = flip.message;
        }
        return true;
      }
      if (level_[w] == level_[frame.u] + 1) {
        edges.push_back(taken);
        stack.push_back({w, 0});
      }
    }
    return false;
  }

  std::vector<std::vector<Edge>> adjacent_;
  std::vector<std::size_t> match_left_;
  std::vector<std::size_t> match_right_;
  std::vector<std::size_t> level_;
  std::vector<std::size_t> via_;  // left → the message of its matched edge
};

}  // namespace

std::optional<std::vector<std::size_t>> matching_wave_order(const PreparedPhase& phase) {
  const std::size_t n = phase.pieces.size();
  std::map<std::uint16_t, std::size_t> sends, receives;
  for (const Piece& piece : phase.pieces) {
    if (piece.destinations.size() != 1) return std::nullopt;
    ++sends[piece.source.value];
    ++receives[piece.destinations[0].tile.value];
  }
  std::size_t busiest = 0;
  for (const auto& [tile, count] : sends) busiest = std::max(busiest, count);
  for (const auto& [tile, count] : receives) busiest = std::max(busiest, count);
  const std::size_t tiles = std::max(sends.size(), receives.size());
  if (n == 0 || busiest * tiles > 2 * n) return std::nullopt;  // max roles > 2 × mean

  std::vector<std::size_t> waiting(n, 0);
  std::vector<std::vector<std::size_t>> successors(n);
  for (const PieceOrder& order : phase.orders) {
    ++waiting[order.after];
    successors[order.before].push_back(order.after);
  }
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.push_back(i);
  }
  std::vector<std::size_t> order;
  Matching matching(target::kTileCount, target::kTileCount);
  while (!ready.empty()) {
    std::sort(ready.begin(), ready.end());
    matching.clear();
    for (const std::size_t i : ready) {
      matching.add(phase.pieces[i].source.value, phase.pieces[i].destinations[0].tile.value, i);
    }
    std::vector<std::size_t> wave = matching.run();
    std::sort(wave.begin(), wave.end());
    std::vector<std::size_t> rest;
    std::set_difference(ready.begin(), ready.end(), wave.begin(), wave.end(),
                        std::back_inserter(rest));
    for (const std::size_t i : wave) {
      order.push_back(i);
      for (const std::size_t after : successors[i]) {
        if (--waiting[after] == 0) rest.push_back(after);
      }
    }
    ready = std::move(rest);
  }
  if (order.size() != n) return std::nullopt;  // a cycle: the list scheduler reports it
  return order;
}

}  // namespace tessera::compiler::exchange
