// One case per validation rule: the sample package with exactly that rule
// broken, written without validation, must fail to read with that rule's
// error (field path and reason).
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "schema/digest.hpp"
#include "schema/package_error.hpp"
#include "schema/reader.hpp"
#include "schema/validate.hpp"
#include "schema/writer.hpp"
#include "target/memory_map.hpp"
#include "tests/testing/sample_package.hpp"

namespace tessera::schema {
namespace {

using target::PhysicalTile;

struct Rule {
  std::string name;
  std::function<void(Application&)> break_it;
  std::string expected;  // the error's text starts with the path; this must appear in it
  bool writer_repairs = false;  // canonical() fixes it (blob numbering), so the writer accepts it
};

TileImage& tile5(Application& app) { return app.tiles[1]; }
TileDebug& debug5(Application& app) { return app.debug.tiles[0]; }
PlannedTransfer& transfer(Application& app) { return app.debug.exchange_phases[0].transfers[0]; }

// clang-format off
const std::vector<Rule> kRules = {
  {"compiler named", [](auto& a) { a.compiler_version = ""; }, "header.compilerVersion: the producing compiler is not named"},
  {"at least one tile", [](auto& a) { a.tiles.clear(); a.blobs = {}; a.inputs.clear(); a.outputs.clear(); a.weights.clear(); a.debug = {}; }, "tiles: a package needs at least one tile"},
  {"tile on the chip", [](auto& a) { tile5(a).tile = PhysicalTile(1472); }, "tiles[1].physicalTile: p1472 is not a C600 tile"},
  {"tiles sorted and unique", [](auto& a) { tile5(a).tile = PhysicalTile(0); }, "tiles[1].physicalTile: p0 follows p0"},
  {"known segment flags", [](auto& a) { tile5(a).segments[1].flags |= 8; }, "tiles[1].segments[1].flags: unknown flag bits 0x8"},
  {"segment not empty", [](auto& a) { tile5(a).segments[1].memory_size = 0; tile5(a).segments[1].file_size = 0; }, "tiles[1].segments[1].memorySize: a segment must not be empty"},
  {"segment end does not wrap", [](auto& a) { tile5(a).segments[1].address = 0xFFFFFF00; }, "tiles[1].segments[1].memorySize: 0xffffff00 + 0x200 bytes overflows"},
  {"segment loadable", [](auto& a) { tile5(a).segments[1].address = 0xE7B00; }, "tiles[1].segments[1].address: [0xe7b00, 0xe7d00) is outside the loadable range"},
  {"segment not below load base", [](auto& a) { tile5(a).segments[0].address = 0x4C000; a.tiles[1].entry_point = 0x4C000; }, "tiles[1].segments[0].address: [0x4c000, 0x4c080) is outside the loadable range"},
  {"executable below 0x80000", [](auto& a) { tile5(a).segments[1].address = 0x7FF00; tile5(a).segments[1].flags |= kSegmentExecute; }, "tiles[1].segments[1].flags: executable segment [0x7ff00, 0x80100) reaches beyond"},
  {"file within memory", [](auto& a) { tile5(a).segments[1].memory_size = 255; }, "tiles[1].segments[1].fileSize: 256 exceeds memorySize 255"},
  {"blob exists", [](auto& a) { tile5(a).segments[1].blob = 9; }, "tiles[1].segments[1].blob: 9 is not a blob index (3 blobs)"},
  {"blob window inside blob", [](auto& a) { tile5(a).segments[1].blob_offset = 1; }, "tiles[1].segments[1].blobOffset: 0x1 + fileSize 0x100 exceeds the blob's 0x100 bytes"},
  // review-findings.md #2: blobOffset + fileSize wrapped 64 bits and passed.
  {"blob window does not wrap", [](auto& a) { tile5(a).segments[1].blob_offset = 0xFFFFFFFFFFFFFFFF; tile5(a).segments[1].file_size = 1; }, "tiles[1].segments[1].blobOffset: 0xffffffffffffffff + fileSize 0x1 exceeds"},
  // Issue 15 item 5: the reader bounds each blob by its segments before decoding it.
  {"blob holds only loaded bytes", [](auto& a) { tile5(a).segments[1].file_size = 200; }, "blobs[2].uncompressedSize: 256 bytes, but the segments using it load only its first 200"},
  {"blobs in first-use order", [](auto& a) { std::swap(a.tiles[0].segments[1].blob, tile5(a).segments[1].blob); }, "tiles[0].segments[1].blob: blob 2 is used before blob 1", true},
  {"every blob used", [](auto& a) { tile5(a).segments[1].blob = 1; }, "blobs[2]: no segment uses this blob", true},
  {"segments disjoint", [](auto& a) { tile5(a).segments[1].address = target::kLoadBase + 64; }, "tiles[1].segments[1].address: 0x4c050 overlaps segments[0]"},
  // review-findings.md #14: the entry point was never checked.
  {"entry point executable", [](auto& a) { tile5(a).entry_point = 0x60000; }, "tiles[1].entryPoint: 0x60000 is not a 4-aligned address inside an executable segment"},
  {"entry point aligned", [](auto& a) { tile5(a).entry_point = target::kLoadBase + 2; }, "tiles[1].entryPoint: 0x4c012 is not a 4-aligned"},
  {"entry point in range", [](auto& a) { tile5(a).entry_point = 0xFFFFFFFC; }, "tiles[1].entryPoint: 0xfffffffc is not"},
  {"binding named", [](auto& a) { a.inputs[0].name = ""; }, "inputs[0].name: a binding needs a name"},
  {"binding names unique", [](auto& a) { a.weights[0].name = "image"; }, "weights[0].name: 'image' is already the name of inputs[0]"},
  {"shape product fits", [](auto& a) { a.inputs[0].shape = {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFF}; }, "inputs[0].shape: shape product"},
  {"slice not empty", [](auto& a) { a.inputs[0].slices[0].size = 0; }, "inputs[0].slices[0].size: a slice must not be empty"},
  {"slice tile exists", [](auto& a) { a.inputs[0].slices[0].tile = PhysicalTile(7); }, "inputs[0].slices[0].tile: p7 is not one of the package's tiles"},
  {"slice in tile memory", [](auto& a) { a.inputs[0].slices[0].tile_address = 0xE7FF0; }, "inputs[0].slices[0].tileAddress: [0xe7ff0, 0xe8010) is outside tile memory"},
  {"slice inside the tensor", [](auto& a) { a.inputs[0].slices[1].file_offset = 33; }, "inputs[0].slices[1].fileOffset: 0x21 + size 0x20 exceeds the tensor's 0x40 bytes"},
  {"output slices disjoint", [](auto& a) { a.outputs[0].slices[1].file_offset = 8; }, "outputs[0].slices: slices overlap at byte 0x8"},
  {"output covered", [](auto& a) { a.outputs[0].slices.pop_back(); }, "outputs[0].slices: no slice covers byte 0x10"},
  {"page not empty", [](auto& a) { a.host_exchange.pages[0].size = 0; }, "hostExchange.pages[0].size: a page must not be empty"},
  {"page defined once", [](auto& a) { a.host_exchange.pages[1].index = 0; }, "hostExchange.pages[1].index: page 0 is defined twice"},
  {"attached page exists", [](auto& a) { a.host_exchange.attach_order[1] = 4; }, "hostExchange.attachOrder[1]: page 4 does not exist"},
  {"page attached once", [](auto& a) { a.host_exchange.attach_order[1] = 0; }, "hostExchange.attachOrder[1]: page 0 is attached twice"},
  // Issue 15 item 1: an unbounded page size validated, then the session's
  // MAP_POPULATE mapping of it (and BUFFER_ATTACH's 32-bit size) failed at run time.
  {"host page span does not wrap", [](auto& a) { a.host_exchange.pages[1].size = 0xFFFFFFFFFFFFFFFF; }, "hostExchange.pages[1].size: host page size: 0xffffffffffffffff + 0xfff overflows"},
  {"host pages within what a host pins", [](auto& a) { a.host_exchange.pages[1].size = 1ull << 32; }, "hostExchange.pages[1].size: 0x100000000 bytes take the host pages to 0x100001000 bytes, more than the 0x10000000 a package may pin"},
  {"host pages total within what a host pins", [](auto& a) { a.host_exchange.pages[1].size = (256u << 20) - 4095; }, "hostExchange.pages[1].size: 0xffff001 bytes take the host pages to 0x10001000 bytes"},
  // Issue 15 item 3: such packages validated, then faulted or failed at run time.
  {"command page attached", [](auto& a) { a.host_exchange.attach_order = {1}; }, "hostExchange.attachOrder: page 0 (the command page) is never attached"},
  {"slice pages attached", [](auto& a) { a.host_exchange.attach_order = {0}; }, "hostExchange.attachOrder: page 1 (used by hostExchange.calls[0].inputs[0]) is never attached"},
  {"startup mark fits an HSP mark", [](auto& a) { a.host_exchange.startup_mark = 0x10000; }, "hostExchange.startupMark: 65536 does not fit a 16-bit HSP mark"},
  {"command page exists", [](auto& a) { a.host_exchange.command_page = 3; }, "hostExchange.commandPage: page 3 does not exist"},
  {"command word inside its page", [](auto& a) { a.host_exchange.command_offset = 4094; }, "hostExchange.commandOffset: 0xffe is not a 4-aligned word inside page 0"},
  {"call named", [](auto& a) { a.host_exchange.calls[0].name = ""; }, "hostExchange.calls[0].name: a call needs a name"},
  {"call names unique", [](auto& a) { a.host_exchange.calls.push_back(a.host_exchange.calls[0]); }, "hostExchange.calls[1].name: 'run' names two calls"},
  {"call runs", [](auto& a) { a.host_exchange.calls[0].invocations = 0; }, "hostExchange.calls[0].invocations: a call runs at least once"},
  {"host slice page exists", [](auto& a) { a.host_exchange.calls[0].inputs[0].page = 2; }, "hostExchange.calls[0].inputs[0].page: page 2 does not exist"},
  {"host slice not empty", [](auto& a) { a.host_exchange.calls[0].outputs[0].size = 0; }, "hostExchange.calls[0].outputs[0].size: a slice must not be empty"},
  {"host slice inside page", [](auto& a) { a.host_exchange.calls[0].outputs[0].page_offset = 8190; }, "hostExchange.calls[0].outputs[0].pageOffset: 0x1ffe + size 0x20 exceeds page 1"},
  {"host slice offset does not wrap", [](auto& a) { a.host_exchange.calls[0].inputs[0].file_offset = 0xFFFFFFFFFFFFFFF0; }, "hostExchange.calls[0].inputs[0].fileOffset: 0xfffffffffffffff0 + size 0x40 overflows"},
  {"batch ends given", [](auto& a) { a.host_exchange.calls[0].input_batch_ends.clear(); }, "hostExchange.calls[0].inputBatchEnds: a call side with slices needs its batch ends"},
  {"batch ends increase", [](auto& a) { a.host_exchange.calls[0].input_batch_ends = {1, 1}; }, "hostExchange.calls[0].inputBatchEnds[1]: 1 does not increase on 1"},
  {"last batch ends at slice count", [](auto& a) { a.host_exchange.calls[0].inputs.push_back(a.host_exchange.calls[0].inputs[0]); }, "hostExchange.calls[0].inputBatchEnds: the last batch ends at 1, not at the slice count 2"},
  {"no batch ends without slices", [](auto& a) { a.host_exchange.calls[0].outputs.clear(); }, "hostExchange.calls[0].outputBatchEnds: batch ends given for a call side with no slices"},
  {"call side with slices names bindings", [](auto& a) { a.host_exchange.calls[0].output_bindings.clear(); }, "hostExchange.calls[0].outputBindings: a call side with slices needs at least one binding"},
  {"call input bindings are inputs or weights", [](auto& a) { a.host_exchange.calls[0].input_bindings.push_back("x"); }, "hostExchange.calls[0].inputBindings[1]: 'x' is not an input or weight binding"},
  {"call output bindings are outputs", [](auto& a) { a.host_exchange.calls[0].output_bindings = {"image"}; }, "hostExchange.calls[0].outputBindings[0]: 'image' is not an output binding (it is an input or weight binding)"},
  {"call binding listed once", [](auto& a) { a.host_exchange.calls[0].input_bindings.push_back("image"); }, "hostExchange.calls[0].inputBindings[1]: 'image' is already listed at inputBindings[0]"},
  {"call payload fits 64 bits", [](auto& a) { a.inputs[0].shape = {0xFFFFFFFF, 0x0FFFFFFF}; a.host_exchange.calls[0].invocations = 5; }, "hostExchange.calls[0].inputBindings: input payload: 0x3ffffffbc0000004 * 0x5 overflows 64-bit arithmetic"},
  {"input slice inside the payload", [](auto& a) { a.host_exchange.calls[0].inputs[0].file_offset = 1; }, "hostExchange.calls[0].inputs[0]: fileOffset 0x1 + size 0x40 exceeds the input payload of 0x40 bytes"},
  {"output slice inside the payload", [](auto& a) { a.host_exchange.calls[0].outputs[0].size = 33; }, "hostExchange.calls[0].outputs[0]: fileOffset 0x0 + size 0x21 exceeds the output payload of 0x20 bytes"},
  {"entry point named", [](auto& a) { a.entry_points[0].name = ""; }, "entryPoints[0].name: an entry point needs a name"},
  {"entry point names unique", [](auto& a) { a.entry_points.push_back(a.entry_points[0]); }, "entryPoints[1].name: 'main' names two entry points"},
  {"config write aligned", [](auto& a) { a.device_config_writes[0].offset = 0x2002; }, "deviceConfigWrites[0].offset: 0x2002 is not a 4-aligned word inside the 0x80000-byte configuration space"},
  {"config write inside the space", [](auto& a) { a.device_config_writes[0].offset = 0x80000; }, "deviceConfigWrites[0].offset: 0x80000 is not a 4-aligned word"},
  {"config write not an HSP mark", [](auto& a) { a.device_config_writes[0].offset = 0x302C; }, "deviceConfigWrites[0].offset: 0x302c is an HSP mark register"},
  {"config offset written once", [](auto& a) { a.device_config_writes.push_back({0x2000, 5}); }, "deviceConfigWrites[1].offset: 0x2000 is written twice"},
  {"not loadable says why", [](auto& a) { a.not_loadable_reason = ""; }, "notLoadableReason: a package that is not hardware-loadable must say why"},
  {"loadable gives no reason", [](auto& a) { a.hardware_loadable = true; }, "notLoadableReason: a hardware-loadable package gives no reason"},
  {"debug tile exists", [](auto& a) { debug5(a).tile = PhysicalTile(6); }, "debug.tiles[0].physicalTile: p6 is not one of the package's tiles"},
  {"debug tiles sorted", [](auto& a) { a.debug.tiles.push_back(a.debug.tiles[0]); }, "debug.tiles[1].physicalTile: p5 follows p5"},
  {"symbol named", [](auto& a) { debug5(a).symbols[0].name = ""; }, "debug.tiles[0].symbols[0].name: a symbol needs a name"},
  {"symbol in tile memory", [](auto& a) { debug5(a).symbols[1].address = 0x40000; }, "debug.tiles[0].symbols[1].address: [0x40000, 0x40040) is outside tile memory"},
  {"code symbol in executable segment", [](auto& a) { debug5(a).symbols[0].address = 0x60000; }, "debug.tiles[0].symbols[0].address: kernel symbol 'gemm_f16' at [0x60000, 0x60020) is not inside an executable segment"},
  {"allocation ids unique", [](auto& a) { debug5(a).allocations[1].id = 1; }, "debug.tiles[0].allocations[1].id: id 1 is used twice"},
  {"allocation not empty", [](auto& a) { debug5(a).allocations[0].size = 0; }, "debug.tiles[0].allocations[0].size: an allocation must not be empty"},
  {"allocation in tile memory", [](auto& a) { debug5(a).allocations[0].address = 0xE8000; }, "debug.tiles[0].allocations[0].address: [0xe8000, 0xe8040) is outside tile memory"},
  {"allocation live range ordered", [](auto& a) { debug5(a).allocations[0].live_from = 4; }, "debug.tiles[0].allocations[0].liveFrom: 4 is after liveUntil 3"},
  {"provenance index valid", [](auto& a) { debug5(a).allocations[0].provenance = 2; }, "debug.tiles[0].allocations[0].provenance: 2 is not an index into debug.provenance"},
  {"call site in executable segment", [](auto& a) { debug5(a).call_sites[0].pc = 0x60000; }, "debug.tiles[0].callSites[0].pc: 0x60000 is not an instruction inside an executable segment"},
  {"call sites sorted", [](auto& a) { debug5(a).call_sites.push_back(debug5(a).call_sites[0]); }, "debug.tiles[0].callSites[1].pc: 0x4c018 does not follow 0x4c018"},
  {"call site names kernel", [](auto& a) { debug5(a).call_sites[0].kernel = ""; }, "debug.tiles[0].callSites[0].kernel: a call site names its kernel"},
  {"operand register", [](auto& a) { debug5(a).call_sites[0].operands[0].reg = 10; }, "debug.tiles[0].callSites[0].operands[0].register: $m10 is not a distinct operand register"},
  {"operand registers distinct", [](auto& a) { debug5(a).call_sites[0].operands[1].reg = 2; }, "debug.tiles[0].callSites[0].operands[1].register: $m2 is not a distinct"},
  {"operand allocation exists", [](auto& a) { debug5(a).call_sites[0].operands[0].allocation = 99; }, "debug.tiles[0].callSites[0].operands[0].allocation: no allocation of this tile has id 99"},
  // review-findings.md #1: a footprint larger than its buffer.
  {"footprint inside allocation", [](auto& a) { debug5(a).call_sites[0].operands[0].footprint = 33; }, "debug.tiles[0].callSites[0].operands[0].footprint: 33 bytes at 0x60040 reach outside allocation 'y' [0x60040, 0x60060)"},
  {"phase ids unique", [](auto& a) { a.debug.exchange_phases.push_back(a.debug.exchange_phases[0]); }, "debug.exchangePhases[1].id: phase 7 is described twice"},
  {"transfer words", [](auto& a) { transfer(a).words = 0; }, "debug.exchangePhases[0].transfers[0].words: 0 is outside 1..4148"},
  {"transfer at most 4148 words", [](auto& a) { transfer(a).words = 4149; }, "debug.exchangePhases[0].transfers[0].words: 4149 is outside 1..4148"},
  {"transfer source tile", [](auto& a) { transfer(a).source_tile = PhysicalTile(1); }, "debug.exchangePhases[0].transfers[0].sourceTile: p1 is not one of the package's tiles"},
  {"transfer source aligned", [](auto& a) { transfer(a).source_address += 2; }, "debug.exchangePhases[0].transfers[0].sourceAddress: an exchange address is word-aligned"},
  {"transfer source in memory", [](auto& a) { transfer(a).source_address = 0xE7FF0; }, "debug.exchangePhases[0].transfers[0].sourceAddress: [0xe7ff0, 0xe8010) is outside tile memory"},
  {"transfer has destinations", [](auto& a) { transfer(a).destinations.clear(); }, "debug.exchangePhases[0].transfers[0].destinations: a transfer needs a destination"},
  {"destination tile exists", [](auto& a) { transfer(a).destinations[0].tile = PhysicalTile(64); }, "debug.exchangePhases[0].transfers[0].destinations[0].tile: p64 is not one of the package's tiles"},
  {"destination aligned", [](auto& a) { transfer(a).destinations[0].address = 0x60001; }, "debug.exchangePhases[0].transfers[0].destinations[0].address: an exchange address is word-aligned"},
  {"destination in memory", [](auto& a) { transfer(a).destinations[0].address = 0x4B000; }, "debug.exchangePhases[0].transfers[0].destinations[0].address: [0x4b000, 0x4b020) is outside tile memory"},
  {"loop counter aligned", [](auto& a) { debug5(a).loops.push_back({0x60042, 3, kNoProvenance}); }, "debug.tiles[0].loops[0].counter: 0x60042 is not a word address"},
  {"loop counter in memory", [](auto& a) { debug5(a).loops.push_back({0xE8000, 3, kNoProvenance}); }, "debug.tiles[0].loops[0].counter: [0xe8000, 0xe8004) is outside tile memory"},
  {"loop runs", [](auto& a) { debug5(a).loops.push_back({0x60040, 0, kNoProvenance}); }, "debug.tiles[0].loops[0].count: a loop runs at least once"},
  {"loop provenance exists", [](auto& a) { debug5(a).loops.push_back({0x60040, 3, 7}); }, "debug.tiles[0].loops[0].provenance: 7 is not an index into debug.provenance"},
};
// clang-format on

// A tile's loops (counter word, count, provenance) survive the write and
// read, and the digest covers them.
TEST(TileDebugLoops, RoundTripAndEnterTheDigest) {
  Application app = testing::sample_application();
  const Sha256 without = build_digest(canonical(app));
  debug5(app).loops = {{0x60040, 27, 0}, {0x60044, 3, kNoProvenance}};
  const Application read = read_package(serialize_package(app));
  EXPECT_EQ(read.debug.tiles[0].loops, debug5(app).loops);
  const Sha256 with = build_digest(read);
  EXPECT_NE(with, without);
  debug5(app).loops[1].count = 4;
  EXPECT_NE(build_digest(canonical(app)), with);
}

class ValidationRule : public ::testing::TestWithParam<Rule> {};

TEST_P(ValidationRule, BrokenAloneGivesItsError) {
  const Rule& rule = GetParam();
  Application app = testing::sample_application();
  rule.break_it(app);
  const auto bytes = serialize_unchecked_for_testing(app);
  try {
    (void)read_package(bytes);
    FAIL() << "the reader accepted a package breaking '" << rule.name << "'";
  } catch (const PackageError& error) {
    EXPECT_NE(std::string(error.what()).find(rule.expected), std::string::npos)
        << "got: " << error.what();
  }
  // The writer refuses the same application before writing anything.
  if (rule.writer_repairs) {
    EXPECT_NO_THROW(serialize_package(app));
  } else {
    EXPECT_THROW(serialize_package(app), PackageError);
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, ValidationRule, ::testing::ValuesIn(kRules),
                         [](const auto& test) {
                           std::string name = test.param.name;
                           for (auto& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(Validation, TheSampleIsValid) {
  EXPECT_NO_THROW(validate(testing::sample_application()));
}

}  // namespace
}  // namespace tessera::schema
