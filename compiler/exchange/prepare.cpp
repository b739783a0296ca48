#include "compiler/exchange/prepare.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "compiler/exchange/error.hpp"
#include "target/exchange_timing.hpp"
#include "target/memory_map.hpp"

namespace tessera::compiler::exchange {
namespace {

std::string describe(std::size_t index, const LogicalTransfer& transfer) {
  std::string text = fmt::format("transfer {} ({} {:#x}, {} words →", index, transfer.source,
                                 transfer.source_address, transfer.words);
  for (const auto& destination : transfer.destinations) {
    text += fmt::format(" {} {:#x}", destination.tile, destination.address);
  }
  return text + ")";
}

// The bytes of `words` words at `address`, which must lie in SRAM
// word-aligned; what() names them in the error (made only then: a phase has
// millions of transfers).
template <class What>
target::AddressRange checked_words(std::uint32_t address, std::uint32_t words, What what) {
  if (!target::is_word_aligned(address)) {
    throw ExchangeScheduleError(fmt::format("{} address {:#x} is not word-aligned", what(), address));
  }
  const std::uint64_t end = std::uint64_t{address} + 4 * std::uint64_t{words};
  if (address < target::kSramBase || end > target::kSramEnd) {
    throw ExchangeScheduleError(fmt::format("{} [{:#x}, {:#x}) is outside SRAM {}", what(),
                                            address, end, target::kSram));
  }
  return {address, static_cast<std::uint32_t>(end)};
}

void check_transfer(const LogicalTransfer& transfer) {
  if (transfer.words == 0) throw ExchangeScheduleError("it has no words");
  if (transfer.destinations.empty()) throw ExchangeScheduleError("it has no destinations");
  if (!target::on_chip(transfer.source)) {
    throw ExchangeScheduleError(fmt::format("source tile {} is not on the chip", transfer.source));
  }
  checked_words(transfer.source_address, transfer.words, [] { return "the source range"; });
  for (const auto& destination : transfer.destinations) {
    if (!target::on_chip(destination.tile)) {
      throw ExchangeScheduleError(
          fmt::format("destination tile {} is not on the chip", destination.tile));
    }
    if (destination.tile == transfer.source) {
      throw ExchangeScheduleError(fmt::format(
          "destination {} is the source tile; the exchange does not deliver to its sender",
          destination.tile));
    }
    checked_words(destination.address, transfer.words,
                  [&] { return fmt::format("the destination range on {}", destination.tile); });
  }
}

// One tile's access to bytes by one piece.
struct Access {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  std::size_t piece = 0;
  bool write = false;
};

}  // namespace

PreparedPhase prepare_phase(const PhaseTransfers& phase) {
  PreparedPhase prepared;
  for (std::size_t index = 0; index < phase.transfers.size(); ++index) {
    const LogicalTransfer& transfer = phase.transfers[index];
    with_context([&] { return describe(index, transfer); }, [&] { check_transfer(transfer); });
    // Each listing of a destination tile goes to a separate round of messages:
    // one message reaches a tile's one incoming pointer only once. Mostly
    // every tile is listed once: one round, the destinations by tile.
    const auto by_tile = [](const auto& a, const auto& b) { return a.tile < b.tile; };
    std::vector<std::vector<schema::TransferDestination>> rounds(1, transfer.destinations);
    std::sort(rounds[0].begin(), rounds[0].end(), by_tile);
    if (std::adjacent_find(rounds[0].begin(), rounds[0].end(), [](const auto& a, const auto& b) {
          return a.tile == b.tile;
        }) != rounds[0].end()) {
      std::map<std::uint16_t, std::size_t> listings;
      rounds.clear();
      for (const auto& destination : transfer.destinations) {
        const std::size_t round = listings[destination.tile.value]++;
        if (round == rounds.size()) rounds.emplace_back();
        rounds[round].push_back(destination);
      }
      for (auto& round : rounds) std::sort(round.begin(), round.end(), by_tile);
    }
    // Messages of near-equal length, each within the hardware limit.
    const std::uint32_t count =
        (transfer.words + target::kMaxTransferWords - 1) / target::kMaxTransferWords;
    for (auto& round : rounds) {
      std::uint32_t done = 0;
      for (std::uint32_t chunk = 0; chunk < count; ++chunk) {
        const std::uint32_t words = (transfer.words - done) / (count - chunk);
        Piece piece{index, done, transfer.source, transfer.source_address + 4 * done, words, round};
        for (auto& destination : piece.destinations) destination.address += 4 * done;
        prepared.pieces.push_back(std::move(piece));
        done += words;
      }
    }
  }

  // Orders from shared bytes: per tile, in piece order, a write and any other
  // access to overlapping bytes (RAW, WAR, WAW).
  std::vector<std::vector<Access>> accesses(target::kTileCount);  // by tile
  for (std::size_t i = 0; i < prepared.pieces.size(); ++i) {
    const Piece& piece = prepared.pieces[i];
    accesses[piece.source.value].push_back(
        {piece.source_address, piece.source_address + 4 * piece.words, i, false});
    for (const auto& destination : piece.destinations) {
      accesses[destination.tile.value].push_back(
          {destination.address, destination.address + 4 * piece.words, i, true});
    }
  }
  for (std::uint16_t tile = 0; tile < accesses.size(); ++tile) {
    std::vector<Access>& list = accesses[tile];
    std::sort(list.begin(), list.end(), [](const Access& a, const Access& b) {
      return std::tie(a.begin, a.end, a.piece, a.write) < std::tie(b.begin, b.end, b.piece, b.write);
    });
    for (std::size_t a = 0; a < list.size(); ++a) {
      for (std::size_t b = a + 1; b < list.size() && list[b].begin < list[a].end; ++b) {
        if (list[a].piece == list[b].piece || !(list[a].write || list[b].write)) continue;
        prepared.orders.push_back({std::min(list[a].piece, list[b].piece),
                                   std::max(list[a].piece, list[b].piece),
                                   PhysicalTile(tile)});
      }
    }
  }

  // Orders the caller asked for, between every piece of the two transfers.
  std::vector<std::size_t> first_piece(phase.transfers.size() + 1, prepared.pieces.size());
  for (std::size_t i = prepared.pieces.size(); i-- > 0;) first_piece[prepared.pieces[i].transfer] = i;
  for (std::size_t t = phase.transfers.size(); t-- > 0;) {
    first_piece[t] = std::min(first_piece[t], first_piece[t + 1]);
  }
  for (std::size_t k = 0; k < phase.orders.size(); ++k) {
    const TransferOrder& order = phase.orders[k];
    if (order.before >= phase.transfers.size() || order.after >= phase.transfers.size() ||
        order.before == order.after) {
      throw ExchangeScheduleError(fmt::format(
          "orders[{}]: transfer {} before transfer {} does not name two of the phase's {} "
          "transfers",
          k, order.before, order.after, phase.transfers.size()));
    }
    for (std::size_t a = first_piece[order.before]; a < first_piece[order.before + 1]; ++a) {
      for (std::size_t b = first_piece[order.after]; b < first_piece[order.after + 1]; ++b) {
        prepared.orders.push_back({a, b, std::nullopt});
      }
    }
  }
  const auto key = [](const PieceOrder& o) {
    return std::tuple(o.before, o.after, o.tile.has_value(), o.tile ? o.tile->value : 0);
  };
  std::sort(prepared.orders.begin(), prepared.orders.end(),
            [&](const auto& a, const auto& b) { return key(a) < key(b); });
  prepared.orders.erase(std::unique(prepared.orders.begin(), prepared.orders.end(),
                                    [&](const auto& a, const auto& b) { return key(a) == key(b); }),
                        prepared.orders.end());
  return prepared;
}

}  // namespace tessera::compiler::exchange
