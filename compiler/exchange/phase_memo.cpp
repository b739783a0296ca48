#include "compiler/exchange/phase_memo.hpp"

#include <algorithm>
#include <bit>
#include <optional>

#include "target/memory_map.hpp"
#include "target/topology.hpp"

namespace tessera::compiler::exchange {
namespace {

constexpr std::size_t kElementBits = 32;  // ElementSet's mask

std::uint64_t hash_of(const std::vector<std::uint32_t>& shape) {
  std::uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a over the words
  for (const std::uint32_t word : shape) {
    hash ^= word;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// The phase's shape (phase_memo.hpp): the words that decide its times.
std::vector<std::uint32_t> shape_of(const PreparedPhase& phase) {
  // Per tile, the name given to each of its 32 element bits in this phase
  // (0: none yet), the next name, and the elements it both reads and writes.
  std::vector<std::uint8_t> tile_names(target::kTileCount * kElementBits, 0);
  std::vector<std::uint8_t> next_name(target::kTileCount, 0);
  std::vector<std::uint32_t> shared(target::kTileCount, 0);
  // The elements each piece reads on its sender and writes on each receiver
  // (the list scheduler's elements_of), in piece order.
  std::vector<std::uint32_t> masks;
  for (const Piece& piece : phase.pieces) {
    masks.push_back(
        target::elements_of({piece.source_address, piece.source_address + 4 * piece.words}).mask());
    for (const auto& destination : piece.destinations) {
      masks.push_back(
          target::elements_of({destination.address, destination.address + 4 * piece.words}).mask());
    }
  }
  // A timeline only asks whether a read meets a write on its tile, so only
  // the elements a tile both reads and writes in the phase matter there.
  {
    std::vector<std::uint32_t> reads(target::kTileCount), writes(target::kTileCount);
    std::size_t m = 0;
    for (const Piece& piece : phase.pieces) {
      reads[piece.source.value] |= masks[m++];
      for (const auto& destination : piece.destinations)
        writes[destination.tile.value] |= masks[m++];
    }
    for (std::size_t tile = 0; tile < target::kTileCount; ++tile)
      shared[tile] = reads[tile] & writes[tile];
  }
  // Those elements of a piece's on `tile`, each named by the order in which
  // the phase first touches it there.
  const auto named = [&](std::uint16_t tile, std::uint32_t elements) {
    std::uint8_t* names = tile_names.data() + std::size_t{tile} * kElementBits;
    std::uint32_t renamed = 0;
    for (std::uint32_t mask = elements & shared[tile]; mask != 0; mask &= mask - 1) {
      std::uint8_t& name = names[std::countr_zero(mask)];
      if (name == 0) name = ++next_name[tile];
      renamed |= std::uint32_t{1} << (name - 1);
    }
    return renamed;
  };

  std::vector<std::uint32_t> shape;
  shape.reserve(8 + phase.pieces.size() * 8 + phase.orders.size() * 3);
  shape.push_back(static_cast<std::uint32_t>(phase.pieces.size()));
  shape.push_back(static_cast<std::uint32_t>(phase.orders.size()));
  std::size_t m = 0;
  for (const Piece& piece : phase.pieces) {
    shape.push_back(static_cast<std::uint32_t>(piece.transfer));
    shape.push_back(piece.first_word);
    shape.push_back(piece.source.value);
    shape.push_back(piece.words);
    shape.push_back(named(piece.source.value, masks[m++]));
    shape.push_back(static_cast<std::uint32_t>(piece.destinations.size()));
    for (const auto& destination : piece.destinations) {
      shape.push_back(destination.tile.value);
      shape.push_back(named(destination.tile.value, masks[m++]));
    }
  }
  for (const PieceOrder& order : phase.orders) {
    shape.push_back(static_cast<std::uint32_t>(order.before));
    shape.push_back(static_cast<std::uint32_t>(order.after));
    shape.push_back(order.tile ? order.tile->value : 0xFFFFFFFFu);
  }
  return shape;
}

}  // namespace

PieceTimes PhaseMemo::schedule(const PreparedPhase& phase) {
  std::vector<std::uint32_t> shape = shape_of(phase);
  const std::uint64_t hash = hash_of(shape);
  std::promise<PieceTimes> promise;
  std::optional<std::shared_future<PieceTimes>> earlier;
  {
    const std::lock_guard lock(mutex_);
    ++lookups_;
    std::vector<Entry>& bucket = entries_[hash];
    for (const Entry& entry : bucket) {
      if (entry.shape == shape) {
        ++hits_;
        earlier = entry.times;
        break;
      }
    }
    if (!earlier) bucket.push_back(Entry{std::move(shape), promise.get_future().share()});
  }
  // Waited for outside the lock: other shapes' lookups go on meanwhile.
  if (earlier) return earlier->get();
  try {
    PieceTimes times = schedule_pieces(phase);
    promise.set_value(times);
    return times;
  } catch (...) {
    promise.set_exception(std::current_exception());
    throw;
  }
}

std::size_t PhaseMemo::lookups() const {
  const std::lock_guard lock(mutex_);
  return lookups_;
}

std::size_t PhaseMemo::hits() const {
  const std::lock_guard lock(mutex_);
  return hits_;
}

}  // namespace tessera::compiler::exchange
