#include "compiler/exchange/earliest_start_queue.hpp"

#include "compiler/exchange/error.hpp"

namespace tessera::compiler::exchange {

using target::Event;

template <class T>
void EarliestStartQueue::Heap<T>::push(const T& item) {
  std::size_t position = items_.size();
  items_.push_back(item);
  while (position > 0) {
    const std::size_t parent = (position - 1) / 2;
    if (!(item < items_[parent])) break;
    items_[position] = items_[parent];
    position = parent;
  }
  items_[position] = item;
}

template <class T>
void EarliestStartQueue::Heap<T>::pop() {
  const T last = items_.back();
  items_.pop_back();
  if (!items_.empty()) sift_down(0, last);
}

template <class T>
void EarliestStartQueue::Heap<T>::replace_top(const T& item) {
  sift_down(0, item);
}

template <class T>
void EarliestStartQueue::Heap<T>::sift_down(std::size_t position, const T& item) {
  const std::size_t size = items_.size();
  for (;;) {
    std::size_t child = 2 * position + 1;
    if (child >= size) break;
    if (child + 1 < size && items_[child + 1] < items_[child]) ++child;
    if (!(items_[child] < item)) break;
    items_[position] = items_[child];
    position = child;
  }
  items_[position] = item;
}

EarliestStartQueue::EarliestStartQueue(std::size_t tiles, std::vector<std::uint16_t> sender,
                                       std::vector<std::uint32_t> rank)
    : sender_(std::move(sender)), rank_(std::move(rank)), senders_(tiles),
      position_(tiles, kAbsent) {}

void EarliestStartQueue::add(std::size_t piece, Event bound) {
  const std::uint16_t tile = sender_[piece];
  Sender& sender = senders_[tile];
  const auto index = static_cast<std::uint32_t>(piece);
  if (bound <= sender.frontier) {
    sender.ripe.push({rank_[piece], index});
  } else {
    sender.waiting.push({bound, rank_[piece], index});
  }
  publish(tile);
}

std::optional<EarliestStartQueue::Candidate> EarliestStartQueue::top() {
  if (heap_.empty()) return std::nullopt;
  const Sender& sender = senders_[heap_.front().tile];
  const std::size_t piece =
      sender.ripe.empty() ? sender.waiting.top().piece : sender.ripe.top().piece;
  return Candidate{heap_.front().bound, piece};
}

bool EarliestStartQueue::check_top(const Sender& sender, std::size_t piece) const {
  const bool ripe = !sender.ripe.empty();
  if ((ripe ? sender.ripe.top().piece : sender.waiting.top().piece) != piece) {
    throw ExchangeScheduleError("internal error: the earliest-start queue moved a piece that is "
                                "not its sender's first");
  }
  return ripe;
}

void EarliestStartQueue::raise(std::size_t piece, Event bound) {
  const std::uint16_t tile = sender_[piece];
  Sender& sender = senders_[tile];
  const auto index = static_cast<std::uint32_t>(piece);
  const bool was_ripe = check_top(sender, piece);
  if (bound <= sender.frontier) {
    if (was_ripe) return;  // still ripe, its rank unchanged: nothing moves
    sender.waiting.pop();
    sender.ripe.push({rank_[piece], index});
  } else if (was_ripe) {
    sender.ripe.pop();
    sender.waiting.push({bound, rank_[piece], index});
  } else {
    sender.waiting.replace_top({bound, rank_[piece], index});
  }
  publish(tile);
}

void EarliestStartQueue::remove(std::size_t piece, Event frontier) {
  Sender& sender = senders_[sender_[piece]];
  if (check_top(sender, piece)) {
    sender.ripe.pop();
  } else {
    sender.waiting.pop();
  }
  raise_frontier(sender_[piece], frontier);
}

void EarliestStartQueue::raise_frontier(std::uint16_t tile, Event frontier) {
  Sender& sender = senders_[tile];
  sender.frontier = std::max(sender.frontier, frontier);
  while (!sender.waiting.empty() && sender.waiting.top().bound <= sender.frontier) {
    const Bounded ripe = sender.waiting.top();
    sender.waiting.pop();
    sender.ripe.push({ripe.rank, ripe.piece});
  }
  publish(tile);
}

void EarliestStartQueue::publish(std::uint16_t tile) {
  const Sender& sender = senders_[tile];
  const std::uint32_t position = position_[tile];
  if (sender.ripe.empty() && sender.waiting.empty()) {
    if (position == kAbsent) return;
    const Key last = heap_.back();
    heap_.pop_back();
    position_[tile] = kAbsent;
    if (last.tile == tile) return;  // it was the last entry
    // The last entry takes the freed place and moves up or down from there.
    if (position > 0 && last < heap_[(position - 1) / 2]) {
      sift_up(position, last);
    } else {
      sift_down(position, last);
    }
    return;
  }
  const Key key = sender.ripe.empty()
                      ? Key{sender.waiting.top().bound, sender.waiting.top().rank, tile}
                      : Key{sender.frontier, sender.ripe.top().rank, tile};
  if (position == kAbsent) {
    heap_.push_back(key);
    sift_up(static_cast<std::uint32_t>(heap_.size() - 1), key);
  } else if (position > 0 && key < heap_[(position - 1) / 2]) {
    sift_up(position, key);
  } else {
    sift_down(position, key);
  }
}

void EarliestStartQueue::sift_up(std::uint32_t position, Key key) {
  while (position > 0) {
    const std::uint32_t parent = (position - 1) / 2;
    if (!(key < heap_[parent])) break;
    place(position, heap_[parent]);
    position = parent;
  }
  place(position, key);
}

void EarliestStartQueue::sift_down(std::uint32_t position, Key key) {
  const auto size = static_cast<std::uint32_t>(heap_.size());
  for (;;) {
    std::uint32_t child = 2 * position + 1;
    if (child >= size) break;
    if (child + 1 < size && heap_[child + 1] < heap_[child]) ++child;
    if (!(heap_[child] < key)) break;
    place(position, heap_[child]);
    position = child;
  }
  place(position, key);
}

}  // namespace tessera::compiler::exchange
