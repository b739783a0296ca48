#include "compiler/exchange/phase_memo.hpp"

#include <algorithm>
#include <bit>

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

}  // namespace

std::vector<std::uint32_t> PhaseMemo::shape_of(const PreparedPhase& phase) {
  if (names_.empty()) {
    names_.assign(target::kTileCount * kElementBits, 0);
    next_name_.assign(target::kTileCount, 0);
    shared_.assign(target::kTileCount, 0);
  }
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
      shared_[tile] = reads[tile] & writes[tile];
  }
  // Those elements of a piece's on `tile`, each named by the order in which
  // the phase first touches it there.
  const auto named = [&](std::uint16_t tile, std::uint32_t elements) {
    std::uint8_t* names = names_.data() + std::size_t{tile} * kElementBits;
    std::uint32_t renamed = 0;
    for (std::uint32_t mask = elements & shared_[tile]; mask != 0; mask &= mask - 1) {
      std::uint8_t& name = names[std::countr_zero(mask)];
      if (name == 0) {
        if (next_name_[tile] == 0) named_tiles_.push_back(tile);
        name = ++next_name_[tile];
      }
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
  for (const std::uint16_t tile : named_tiles_) {
    std::fill_n(names_.data() + std::size_t{tile} * kElementBits, kElementBits, 0);
    next_name_[tile] = 0;
  }
  named_tiles_.clear();
  return shape;
}

PieceTimes PhaseMemo::schedule(const PreparedPhase& phase) {
  ++lookups_;
  std::vector<std::uint32_t> shape = shape_of(phase);
  std::vector<Entry>& bucket = entries_[hash_of(shape)];
  for (const Entry& entry : bucket) {
    if (entry.shape == shape) {
      ++hits_;
      return entry.times;
    }
  }
  PieceTimes times = schedule_pieces(phase);
  bucket.push_back(Entry{std::move(shape), times});
  return times;
}

}  // namespace tessera::compiler::exchange
