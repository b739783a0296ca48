#include "cli/tile_listing.hpp"

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/tile_debug.hpp"
#include "support/error.hpp"
#include "support/little_endian.hpp"
#include "target/assembly.hpp"

namespace tessera::cli {
namespace {

using schema::Application;
using schema::TileImage;

// Enough to recognize the package without flooding the error line.
constexpr std::size_t kTilesNamedInErrors = 8;

// Comment lines under a listing line start below its words.
constexpr std::string_view kCommentIndent = "          ; ";

const schema::TileDebug* find_debug(const Application& app, target::PhysicalTile tile) {
  const auto it = std::find_if(app.debug.tiles.begin(), app.debug.tiles.end(),
                               [&](const schema::TileDebug& debug) { return debug.tile == tile; });
  return it == app.debug.tiles.end() ? nullptr : &*it;
}

std::string tile_name(target::PhysicalTile tile) {
  const auto logical = target::Topology::c600().logical(tile);
  return logical ? fmt::format("{} ({})", tile, *logical) : fmt::format("{}", tile);
}

std::string flags_text(std::uint32_t flags) {
  std::string text;
  text += (flags & schema::kSegmentRead) != 0 ? 'R' : '-';
  text += (flags & schema::kSegmentWrite) != 0 ? 'W' : '-';
  text += (flags & schema::kSegmentExecute) != 0 ? 'X' : '-';
  return text;
}

std::string operand_text(const sim::TileDebugIndex& index, const schema::CallOperand& operand) {
  const schema::Allocation* allocation = index.allocation(operand.allocation);
  return fmt::format(
      "$m{} → {} [{:#x}, +{}) {}", operand.reg,
      allocation != nullptr ? allocation->name : fmt::format("#{}", operand.allocation),
      operand.address, operand.footprint, operand.writes ? "write" : "read");
}

void print_call_site(const sim::TileDebugIndex& index, const schema::CallSite& site,
                     std::ostream& out) {
  const std::string& provenance = index.provenance(site.provenance);
  out << kCommentIndent << "call site: " << site.kernel
      << (provenance.empty() ? "" : "  <- " + provenance) << '\n';
  for (const auto& operand : site.operands) {
    out << kCommentIndent << "  " << operand_text(index, operand) << '\n';
  }
}

// Walks one tile's listing lines in address order and places the debug
// records that start at each line; whatever no line starts at is reported
// at the end, so nothing in the package goes unmentioned.
class Annotator {
 public:
  Annotator(const Application& app, const TileImage& image, const schema::TileDebug* debug)
      : image_(image), debug_(debug) {
    if (debug_ == nullptr) return;
    index_ = sim::TileDebugIndex(*debug_, app.debug.provenance);
    symbols_ = debug_->symbols;
    std::stable_sort(symbols_.begin(), symbols_.end(),
                     [](const auto& a, const auto& b) { return a.address < b.address; });
    call_sites_ = debug_->call_sites;
    std::stable_sort(call_sites_.begin(), call_sites_.end(),
                     [](const auto& a, const auto& b) { return a.pc < b.pc; });
  }

  void print_line(const target::isa::ListingLine& line, std::ostream& out) {
    unplaced_before(line.address);
    for (; next_symbol_ < symbols_.size() && symbols_[next_symbol_].address == line.address;
         ++next_symbol_) {
      out << symbols_[next_symbol_].name << ":\n";
    }
    std::vector<std::string> notes;
    if (line.address == image_.entry_point) notes.push_back("entry point");
    if (const auto target = target::isa::code_target(line.instruction)) {
      if (const schema::Symbol* symbol = index_.symbol_at(*target)) notes.push_back(symbol->name);
    }
    out << target::isa::format_listing_line(line);
    for (std::size_t i = 0; i < notes.size(); ++i) out << (i == 0 ? "  ; " : ", ") << notes[i];
    out << '\n';
    if (line.address == image_.entry_point) entry_placed_ = true;
    for (; next_site_ < call_sites_.size() && call_sites_[next_site_].pc == line.address;
         ++next_site_) {
      print_call_site(index_, call_sites_[next_site_], out);
    }
  }

  // Records starting before `address` were not at the start of any line:
  // inside a two-word instruction, in zero fill, or outside the code.
  void unplaced_before(std::uint32_t address) {
    for (; next_symbol_ < symbols_.size() && symbols_[next_symbol_].address < address;
         ++next_symbol_) {
      unplaced_symbols_.push_back(&symbols_[next_symbol_]);
    }
    for (; next_site_ < call_sites_.size() && call_sites_[next_site_].pc < address; ++next_site_) {
      unplaced_sites_.push_back(&call_sites_[next_site_]);
    }
  }

  void print_unplaced(std::ostream& out) {
    unplaced_before(0xFFFFFFFF);  // past SRAM: every record left over
    std::vector<std::string> notes;
    if (!entry_placed_) {
      notes.push_back(
          fmt::format("entry point {:#x} does not start a listed instruction", image_.entry_point));
    }
    for (const auto* symbol : unplaced_symbols_) {
      // Data symbols are expected outside the code.
      if (symbol->kind == schema::SymbolKind::kData) continue;
      notes.push_back(fmt::format("{} symbol {} at {:#x} does not start a listed instruction",
                                  schema::symbol_kind_name(symbol->kind), symbol->name,
                                  symbol->address));
    }
    for (const auto* site : unplaced_sites_) {
      notes.push_back(fmt::format("call site {:#x} ({}) does not start a listed instruction",
                                  site->pc, site->kernel));
    }
    if (notes.empty()) return;
    out << '\n';
    for (const auto& note : notes) out << "; note: " << note << '\n';
  }

 private:
  const TileImage& image_;
  const schema::TileDebug* debug_;
  sim::TileDebugIndex index_;
  std::vector<schema::Symbol> symbols_;
  std::vector<schema::CallSite> call_sites_;
  std::size_t next_symbol_ = 0;
  std::size_t next_site_ = 0;
  std::vector<const schema::Symbol*> unplaced_symbols_;
  std::vector<const schema::CallSite*> unplaced_sites_;
  bool entry_placed_ = false;
};

void print_segment(const Application& app, const schema::Segment& segment, Annotator& annotator,
                   std::ostream& out) {
  out << fmt::format("\nsegment [{:#x}, {:#x})  {}  {} bytes", segment.address,
                     std::uint64_t{segment.address} + segment.memory_size,
                     flags_text(segment.flags), segment.memory_size);
  if (segment.file_size < segment.memory_size) {
    out << fmt::format(" ({} from the package, then zeros)", segment.file_size);
  }
  out << '\n';

  const std::vector<std::uint8_t> bytes = schema::segment_bytes(app, segment);
  // Instructions are whole words at 4-aligned addresses; list from the first
  // one, and only the package's bytes: zero fill is not code anyone wrote.
  const std::uint32_t skip = (4 - segment.address % 4) % 4;
  const std::size_t listed = std::min<std::size_t>(segment.file_size, bytes.size());
  if (skip != 0) out << fmt::format("; {} bytes before the first aligned word\n", skip);
  std::vector<std::uint32_t> words;
  for (std::size_t at = skip; at + 4 <= listed; at += 4) {
    words.push_back(load_u32_le(&bytes[at]));
  }
  const std::uint32_t base = segment.address + skip;
  for (const auto& line : target::isa::disassemble_words(words, base)) {
    annotator.print_line(line, out);
  }
  const std::uint64_t listed_end = std::uint64_t{base} + 4 * words.size();
  const std::uint64_t end = std::uint64_t{segment.address} + segment.memory_size;
  if (listed_end < end) {
    const std::uint64_t tail_from = std::uint64_t{segment.address} + listed;
    if (listed_end < tail_from) {
      out << fmt::format("{:08x}  ; {} trailing bytes, not a whole word\n", listed_end,
                         tail_from - listed_end);
    }
    if (tail_from < end) {
      out << fmt::format("{:08x}  ; {} zero bytes to {:#x}\n", tail_from, end - tail_from, end);
    }
  }
}

}  // namespace

const TileImage& tile_image(const Application& app, target::PhysicalTile tile) {
  const auto it = std::find_if(app.tiles.begin(), app.tiles.end(),
                               [&](const TileImage& image) { return image.tile == tile; });
  if (it != app.tiles.end()) return *it;
  std::string tiles;
  for (std::size_t i = 0; i < app.tiles.size() && i < kTilesNamedInErrors; ++i) {
    tiles += fmt::format("{}{}", i == 0 ? "" : ", ", app.tiles[i].tile);
  }
  if (app.tiles.size() > kTilesNamedInErrors) {
    tiles += fmt::format(", … ({} more)", app.tiles.size() - kTilesNamedInErrors);
  }
  throw InputError(
      fmt::format("{} is not one of the package's {} tiles ({})", tile, app.tiles.size(), tiles));
}

void print_tile_listing(const Application& app, const TileImage& image, std::ostream& out) {
  const schema::TileDebug* debug = find_debug(app, image.tile);
  std::vector<const schema::Segment*> code;
  for (const auto& segment : image.segments) {
    if ((segment.flags & schema::kSegmentExecute) != 0) code.push_back(&segment);
  }
  std::stable_sort(code.begin(), code.end(),
                   [](const auto* a, const auto* b) { return a->address < b->address; });

  out << fmt::format("tile {}: entry point {:#x}, {} executable segment{}", tile_name(image.tile),
                     image.entry_point, code.size(), code.size() == 1 ? "" : "s");
  if (debug != nullptr) {
    out << fmt::format("; {} symbols, {} call sites\n", debug->symbols.size(),
                       debug->call_sites.size());
  } else {
    out << "; no debug records, so no names\n";
  }
  Annotator annotator(app, image, debug);
  for (const auto* segment : code) print_segment(app, *segment, annotator, out);
  annotator.print_unplaced(out);
}

void print_tile_symbols(const Application& app, const TileImage& image, std::ostream& out) {
  const schema::TileDebug* debug = find_debug(app, image.tile);
  out << fmt::format("tile {}: entry point {:#x}\n", tile_name(image.tile), image.entry_point);
  if (debug == nullptr) {
    out << "no debug records\n";
    return;
  }
  std::vector<schema::Symbol> symbols = debug->symbols;
  std::stable_sort(symbols.begin(), symbols.end(),
                   [](const auto& a, const auto& b) { return a.address < b.address; });
  for (const auto& s : symbols) {
    out << fmt::format("symbol      {:#07x} {:>6}  {:<14} {}\n", s.address, s.size,
                       schema::symbol_kind_name(s.kind), s.name);
  }
  std::vector<schema::Allocation> allocations = debug->allocations;
  std::stable_sort(allocations.begin(), allocations.end(),
                   [](const auto& a, const auto& b) { return a.address < b.address; });
  for (const auto& a : allocations) {
    const std::string provenance =
        a.provenance < app.debug.provenance.size() ? app.debug.provenance[a.provenance] : "";
    out << fmt::format("allocation  {:#07x} {:>6}  {:<14} #{} {}{}\n", a.address, a.size,
                       schema::allocation_kind_name(a.kind), a.id, a.name,
                       provenance.empty() ? "" : "  <- " + provenance);
  }
}

}  // namespace tessera::cli
