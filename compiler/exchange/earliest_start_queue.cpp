#include "compiler/exchange/earliest_start_queue.hpp"

#include "compiler/exchange/error.hpp"

namespace tessera::compiler::exchange {

using target::Event;

EarliestStartQueue::EarliestStartQueue(std::size_t tiles, std::vector<std::uint16_t> sender,
                                       std::vector<std::uint32_t> rank)
    : sender_(std::move(sender)), rank_(std::move(rank)), senders_(tiles) {}

void EarliestStartQueue::add(std::size_t piece, Event bound) {
  const std::uint16_t tile = sender_[piece];
  Sender& sender = senders_[tile];
  if (bound <= sender.frontier) {
    sender.ripe.emplace(rank_[piece], piece);
  } else {
    sender.waiting.emplace(bound, rank_[piece], piece);
  }
  publish(tile);
}

std::optional<EarliestStartQueue::Candidate> EarliestStartQueue::top() {
  if (heap_.empty()) return std::nullopt;
  const Sender& sender = senders_[heap_.front()];
  const std::size_t piece =
      sender.ripe.empty() ? std::get<2>(sender.waiting.top()) : sender.ripe.top().second;
  return Candidate{sender.bound, piece};
}

void EarliestStartQueue::raise(std::size_t piece, Event bound) {
  const std::uint16_t tile = sender_[piece];
  Sender& sender = senders_[tile];
  pop_top(sender, piece);
  if (bound <= sender.frontier) {
    sender.ripe.emplace(rank_[piece], piece);
  } else {
    sender.waiting.emplace(bound, rank_[piece], piece);
  }
  publish(tile);
}

void EarliestStartQueue::remove(std::size_t piece, Event frontier) {
  pop_top(senders_[sender_[piece]], piece);
  raise_frontier(sender_[piece], frontier);
}

void EarliestStartQueue::raise_frontier(std::uint16_t tile, Event frontier) {
  Sender& sender = senders_[tile];
  sender.frontier = std::max(sender.frontier, frontier);
  while (!sender.waiting.empty() && std::get<0>(sender.waiting.top()) <= sender.frontier) {
    const auto [bound, rank, ripe] = sender.waiting.top();
    sender.waiting.pop();
    sender.ripe.emplace(rank, ripe);
  }
  publish(tile);
}

void EarliestStartQueue::pop_top(Sender& sender, std::size_t piece) {
  const bool from_ripe = !sender.ripe.empty();
  const std::size_t top = from_ripe ? sender.ripe.top().second : std::get<2>(sender.waiting.top());
  if (top != piece) {
    throw ExchangeScheduleError("internal error: the earliest-start queue moved a piece that is "
                                "not its sender's first");
  }
  if (from_ripe) {
    sender.ripe.pop();
  } else {
    sender.waiting.pop();
  }
}

void EarliestStartQueue::publish(std::uint16_t tile) {
  Sender& sender = senders_[tile];
  if (sender.ripe.empty() && sender.waiting.empty()) {
    if (sender.position == kAbsent) return;
    const std::uint32_t position = sender.position;
    const std::uint16_t last = heap_.back();
    heap_.pop_back();
    sender.position = kAbsent;
    if (last == tile) return;  // it was the last entry
    place(position, last);
    sift_up(position);
    sift_down(senders_[last].position);
    return;
  }
  if (!sender.ripe.empty()) {
    sender.bound = sender.frontier;
    sender.rank = sender.ripe.top().first;
  } else {
    sender.bound = std::get<0>(sender.waiting.top());
    sender.rank = std::get<1>(sender.waiting.top());
  }
  if (sender.position == kAbsent) {
    heap_.push_back(tile);
    sender.position = static_cast<std::uint32_t>(heap_.size() - 1);
  }
  sift_up(sender.position);
  sift_down(sender.position);
}

void EarliestStartQueue::sift_up(std::uint32_t position) {
  const std::uint16_t tile = heap_[position];
  while (position > 0) {
    const std::uint32_t parent = (position - 1) / 2;
    if (!before(tile, heap_[parent])) break;
    place(position, heap_[parent]);
    position = parent;
  }
  place(position, tile);
}

void EarliestStartQueue::sift_down(std::uint32_t position) {
  const std::uint16_t tile = heap_[position];
  const auto size = static_cast<std::uint32_t>(heap_.size());
  for (;;) {
    std::uint32_t child = 2 * position + 1;
    if (child >= size) break;
    if (child + 1 < size && before(heap_[child + 1], heap_[child])) ++child;
    if (!before(heap_[child], tile)) break;
    place(position, heap_[child]);
    position = child;
  }
  place(position, tile);
}

}  // namespace tessera::compiler::exchange
