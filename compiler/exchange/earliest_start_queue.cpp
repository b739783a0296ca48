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
  while (!heap_.empty()) {
    const auto [bound, rank, tile, version] = heap_.top();
    const Sender& sender = senders_[tile];
    if (version != sender.version) {
      heap_.pop();  // the sender's top has changed since
      continue;
    }
    const std::size_t piece =
        sender.ripe.empty() ? std::get<2>(sender.waiting.top()) : sender.ripe.top().second;
    return Candidate{bound, piece};
  }
  return std::nullopt;
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
  ++sender.version;
  if (!sender.ripe.empty()) {
    heap_.emplace(sender.frontier, sender.ripe.top().first, tile, sender.version);
  } else if (!sender.waiting.empty()) {
    const auto& [bound, rank, piece] = sender.waiting.top();
    heap_.emplace(bound, rank, tile, sender.version);
  }
}

}  // namespace tessera::compiler::exchange
