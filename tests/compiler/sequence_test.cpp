// Repeats with sequence values (issue 18 item 1): iteration i's body reads
// entry i of each sequence, and the loop is never unrolled — the emitted
// code moves a pointer on by the entry's stride every iteration and copies
// the entry into the body's argument (compiler/lower/repeat.cpp). Every
// compiled result is compared bit for bit with the CPU reference of the
// sequence graph and of the same graph written out unrolled (slices of the
// sequences), on several tile counts.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>

#include "compiler/compile.hpp"
#include "compiler/emit/link.hpp"
#include "compiler/lower/lower.hpp"
#include "kernels/half.hpp"
#include "schema/writer.hpp"
#include "target/memory_map.hpp"
#include "tests/compiler/graph_runner.hpp"

namespace tessera::compiler {
namespace {

using testing::run_on_simulator;
using testing::TensorBytes;

// Deterministic finite values of `type`, different for every `seed`.
std::vector<std::uint8_t> values_of(const TensorType& type, std::uint32_t seed) {
  const std::uint64_t n = element_count(type.shape);
  std::vector<std::uint8_t> bytes(byte_size(type));
  for (std::uint64_t k = 0; k < n; ++k) {
    const float value =
        static_cast<float>(static_cast<int>((k * 7 + seed * 13) % 23) - 11) * 0.375f +
        static_cast<float>(seed % 5) * 0.0625f;
    if (type.dtype() == DType::kF32) {
      std::memcpy(bytes.data() + 4 * k, &value, 4);
    } else {
      const std::uint16_t half = kernels::f32_to_f16(value);
      std::memcpy(bytes.data() + 2 * k, &half, 2);
    }
  }
  return bytes;
}

// What the body does with the carried value, an entry of each sequence and
// the invariants; returns the next carried value.
using Body = std::function<ValueId(Graph&, ValueId carried, std::span<const ValueId> entries,
                                   std::span<const ValueId> invariant)>;

// The repeat, and the same operations written out `count` times with each
// entry a slice of its sequence (the unrolled reference).
ValueId sequence_repeat(Graph& g, std::uint32_t count, ValueId x,
                        const std::vector<ValueId>& sequences,
                        const std::vector<ValueId>& invariant, const Body& body) {
  return g.repeat(
      count, {x}, sequences, invariant,
      [&](Graph& b, std::span<const ValueId> c, std::span<const ValueId> s,
          std::span<const ValueId> inv) { return std::vector<ValueId>{body(b, c[0], s, inv)}; })[0];
}

ValueId unrolled(Graph& g, std::uint32_t count, ValueId x, const std::vector<ValueId>& sequences,
                 const std::vector<ValueId>& invariant, const Body& body) {
  ValueId c = x;
  for (std::uint32_t i = 0; i < count; ++i) {
    std::vector<ValueId> entries;
    for (const ValueId s : sequences) {
      const Shape& shape = g.type(s).shape;
      std::vector<std::uint32_t> begin(shape.size(), 0), end(shape.begin(), shape.end());
      begin[0] = i;
      end[0] = i + 1;
      entries.push_back(g.reshape(g.slice(s, begin, end), Shape(shape.begin() + 1, shape.end())));
    }
    c = body(g, c, entries, invariant);
  }
  return c;
}

enum class Source { kParameter, kHostInput, kComputed };

struct Case {
  std::uint32_t count;
  DType dtype;
  Shape entry;  // of the sequence; the carried value has this shape too
  Source source;
};

std::string describe(const Case& c) {
  return fmt::format("count {} {} entry {} {}", c.count, c.dtype == DType::kF32 ? "f32" : "f16",
                     format_shape(c.entry),
                     c.source == Source::kParameter   ? "parameter"
                     : c.source == Source::kHostInput ? "host input"
                                                      : "computed");
}

// x carried; s a sequence of `c.entry`s (a binding, or computed: t + t with t
// a binding, so its producer lowers it entry-major); w an invariant row.
// The body: c ← (c + s_i) + w, and a second, transposed sequence summed.
Graph build(const Case& c, bool unroll, TensorBytes& inputs) {
  Graph g;
  const TensorType entry{{c.dtype, 0}, c.entry};
  Shape whole{c.count};
  whole.insert(whole.end(), c.entry.begin(), c.entry.end());
  const TensorType sequence{{c.dtype, 0}, whole};
  const ValueId x = g.host_input("x", entry);
  inputs["x"] = values_of(entry, 1);
  ValueId s;
  switch (c.source) {
    case Source::kParameter:
      s = g.parameter("s", sequence);
      break;
    case Source::kHostInput:
      s = g.host_input("s", sequence);
      break;
    case Source::kComputed: {
      const ValueId t = g.host_input("s", sequence);
      s = g.add(t, t);
      break;
    }
  }
  inputs["s"] = values_of(sequence, 2);
  const TensorType row{{c.dtype, 0}, {c.entry.back()}};
  const ValueId w = g.parameter("w", row);
  inputs["w"] = values_of(row, 3);
  const Body body = [](Graph& b, ValueId carried, std::span<const ValueId> entries,
                       std::span<const ValueId> invariant) {
    return b.add(b.add(carried, entries[0]), invariant[0]);
  };
  const ValueId h = unroll ? unrolled(g, c.count, x, {s}, {w}, body)
                           : sequence_repeat(g, c.count, x, {s}, {w}, body);
  g.host_output("y", h);
  return g;
}

void expect_equals_unrolled(const Case& c, std::initializer_list<std::uint32_t> tile_counts) {
  TensorBytes inputs;
  const Graph g = build(c, false, inputs);
  const Graph written_out = build(c, true, inputs);
  const TensorBytes expected = tessera::testing::evaluate_graph(g, inputs);
  ASSERT_EQ(expected, tessera::testing::evaluate_graph(written_out, inputs)) << describe(c);
  for (const std::uint32_t tiles : tile_counts) {
    const CompileResult compiled = compile(g, {.tiles = tiles});
    const auto run = run_on_simulator(compiled.application, inputs);
    EXPECT_EQ(run.outputs, expected) << describe(c) << " on " << tiles << " tiles";
  }
}

TEST(Sequence, ParameterSequencesEqualTheUnrolledReference) {
  for (const std::uint32_t count : {1u, 3u, 27u}) {
    expect_equals_unrolled({count, DType::kF32, {6, 4}, Source::kParameter}, {1, 3, 6});
  }
  expect_equals_unrolled({5, DType::kF16, {4, 3}, Source::kParameter}, {1, 2, 4});
  // A stride of 36,000 bytes: more than one add's 16-bit immediate.
  expect_equals_unrolled({3, DType::kF32, {9000}, Source::kParameter}, {1});
}

TEST(Sequence, HostInputSequencesEqualTheUnrolledReference) {
  expect_equals_unrolled({3, DType::kF32, {5, 3}, Source::kHostInput}, {1, 5});
  expect_equals_unrolled({27, DType::kF16, {8, 2}, Source::kHostInput}, {1, 4, 8});
  // Entries of 6 bytes: not whole words, so the sequence is copied into a
  // padded entry-major buffer before the loop.
  expect_equals_unrolled({4, DType::kF16, {3}, Source::kHostInput}, {1, 3});
  expect_equals_unrolled({3, DType::kF16, {5, 3}, Source::kHostInput}, {1, 2, 3});
}

TEST(Sequence, ComputedSequencesEqualTheUnrolledReference) {
  expect_equals_unrolled({3, DType::kF32, {4, 4}, Source::kComputed}, {1, 4});
  expect_equals_unrolled({27, DType::kF16, {6, 2}, Source::kComputed}, {3});
  expect_equals_unrolled({1, DType::kF16, {2, 5}, Source::kComputed}, {2});
}

// Two sequences, one of them transposed on the device (data movement into
// the entry-major layout), a sum over each entry, scalar f32 entries, and an
// invariant: c ← c + reduce_sum(a_i, 1) · broadcast + b_i.
TEST(Sequence, SeveralSequencesWithSumsAndScalarEntries) {
  for (const std::uint32_t tiles : {1u, 3u, 7u}) {
    Graph g;
    const ValueId x = g.host_input("x", DType::kF32, {7});
    const ValueId a =
        g.transpose(g.host_input("a", DType::kF32, {7, 4, 3}), {2, 0, 1});  // [3, 7, 4]
    const ValueId b = g.parameter("b", DType::kF32, {3});
    const auto body = [](Graph& body_graph, ValueId c, std::span<const ValueId> s,
                         std::span<const ValueId>) {
      return body_graph.add(body_graph.add(c, body_graph.reduce_sum(s[0], {1})), s[1]);
    };
    const ValueId h = sequence_repeat(g, 3, x, {a, b}, {}, body);
    g.host_output("y", h);
    Graph written_out;
    {
      const ValueId x2 = written_out.host_input("x", DType::kF32, {7});
      const ValueId a2 =
          written_out.transpose(written_out.host_input("a", DType::kF32, {7, 4, 3}), {2, 0, 1});
      const ValueId b2 = written_out.parameter("b", DType::kF32, {3});
      written_out.host_output("y", unrolled(written_out, 3, x2, {a2, b2}, {}, body));
    }
    const TensorBytes inputs{{"x", values_of({{DType::kF32, 0}, {7}}, 4)},
                             {"a", values_of({{DType::kF32, 0}, {7, 4, 3}}, 5)},
                             {"b", values_of({{DType::kF32, 0}, {3}}, 6)}};
    const TensorBytes expected = tessera::testing::evaluate_graph(g, inputs);
    ASSERT_EQ(expected, tessera::testing::evaluate_graph(written_out, inputs));
    const auto run = run_on_simulator(compile(g, {.tiles = tiles}).application, inputs);
    EXPECT_EQ(run.outputs, expected) << tiles << " tiles";
  }
}

// A sequence of sequences: the outer loop's entry [4, 6] is the inner
// loop's sequence (copied entry-major each outer iteration), and the outer
// sequence also enters the inner loop as an invariant.
TEST(Sequence, NestedRepeatsReadTheirOwnEntries) {
  for (const std::uint32_t tiles : {1u, 3u}) {
    Graph g;
    const ValueId x = g.host_input("x", DType::kF32, {6});
    const ValueId s = g.parameter("s", DType::kF32, {3, 4, 6});
    const ValueId t = g.parameter("t", DType::kF32, {3, 6});
    const auto h =
        g.repeat(3, {x}, {s}, {t},
                 [](Graph& outer, std::span<const ValueId> c, std::span<const ValueId> q,
                    std::span<const ValueId> inv) {
                   // q[0]: f32[4, 6]; inner: c ← c + q_j + t_j (j < 3), four times… three t rows.
                   const ValueId rows = outer.slice(q[0], {0, 0}, {3, 6});
                   return outer.repeat(
                       3, {c[0]}, {rows, inv[0]}, {},
                       [](Graph& inner, std::span<const ValueId> ic, std::span<const ValueId> e,
                          std::span<const ValueId>) {
                         return std::vector<ValueId>{inner.add(inner.add(ic[0], e[0]), e[1])};
                       });
                 });
    g.host_output("y", h[0]);
    const TensorBytes inputs{{"x", values_of({{DType::kF32, 0}, {6}}, 7)},
                             {"s", values_of({{DType::kF32, 0}, {3, 4, 6}}, 8)},
                             {"t", values_of({{DType::kF32, 0}, {3, 6}}, 9)}};
    // The unrolled sum, by hand: y = x + Σ_i Σ_{j<3} (s[i][j] + t[j]) in that order.
    std::vector<float> y(6), sv(72), tv(18);
    std::memcpy(y.data(), inputs.at("x").data(), 24);
    std::memcpy(sv.data(), inputs.at("s").data(), 288);
    std::memcpy(tv.data(), inputs.at("t").data(), 72);
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 3; ++j) {
        for (std::size_t k = 0; k < 6; ++k) y[k] = (y[k] + sv[i * 24 + j * 6 + k]) + tv[j * 6 + k];
      }
    }
    const TensorBytes expected = tessera::testing::evaluate_graph(g, inputs);
    std::vector<std::uint8_t> by_hand(24);
    std::memcpy(by_hand.data(), y.data(), 24);
    ASSERT_EQ(expected.at("y"), by_hand);
    const auto run = run_on_simulator(compile(g, {.tiles = tiles}).application, inputs);
    EXPECT_EQ(run.outputs, expected) << tiles << " tiles";
  }
}

// The loop is never unrolled: 3 or 27 iterations give the same rows, the
// same exchange plan and the same kernel calls on every tile. What grows is
// the sequence binding's host I/O: split over tiles, each tile's part of
// each entry is its own host slice (one staging copy each in the host
// batches), until the host packs weights per tile.
TEST(Sequence, TheLoopDoesNotGrowWithTheCount) {
  const auto compiled = [](std::uint32_t count) {
    TensorBytes inputs;
    return compile(build({count, DType::kF32, {6, 4}, Source::kParameter}, false, inputs),
                   {.tiles = 3});
  };
  // Per tile: its rows' sizes, and its kernel calls other than host staging copies.
  const auto loop_code = [](const schema::Application& app) {
    std::vector<std::pair<std::vector<std::uint32_t>, std::vector<std::string>>> tiles;
    for (const auto& tile : app.debug.tiles) {
      auto& [rows, calls] = tiles.emplace_back();
      for (const auto& symbol : tile.symbols) {
        if (symbol.kind == schema::SymbolKind::kExchangeRow) rows.push_back(symbol.size);
      }
      for (const auto& site : tile.call_sites) {
        const bool stages =
            std::any_of(site.operands.begin(), site.operands.end(), [](const auto& o) {
              return o.address >= target::kH2dStaging &&
                     o.address < target::kH2dStaging + target::kH2dStagingMaxBytes;
            });
        if (!stages) calls.push_back(site.kernel);
      }
    }
    return tiles;
  };
  const CompileResult three = compiled(3);
  const CompileResult many = compiled(27);
  EXPECT_EQ(loop_code(three.application), loop_code(many.application));
  // The same planned transfers (their data addresses move with the larger sequence).
  const auto planned = [](const schema::Application& app) {
    std::vector<std::vector<std::uint32_t>> words;
    for (const auto& phase : app.debug.exchange_phases) {
      auto& list = words.emplace_back();
      for (const auto& transfer : phase.transfers) list.push_back(transfer.words);
    }
    return words;
  };
  EXPECT_EQ(planned(three.application), planned(many.application));
  EXPECT_FALSE(planned(three.application).empty());
  EXPECT_EQ(three.application.debug.phase_loops.size(), 1u);
  EXPECT_EQ(many.application.debug.phase_loops.at(0).count, 27u);
}

// Entries on one tile (a minimum shard size keeps them whole) are one host
// slice whatever the count: then every tile has the same segments, code
// (main, rows, stubs), symbols, allocations and call sites for 1, 3 or 27
// iterations — only numbers in them differ (the count, the sequence's size,
// the addresses after it, the host programs' payload sizes).
TEST(Sequence, EveryTilesCodeIsTheSameSizeForAnyCount) {
  using Sizes = std::vector<std::array<std::uint64_t, 5>>;
  std::vector<Sizes> sizes;
  for (const std::uint32_t count : {1u, 3u, 27u}) {
    TensorBytes inputs;
    const Graph g = build({count, DType::kF32, {6, 4}, Source::kParameter}, false, inputs);
    const CompileResult compiled = compile(g, {.tiles = 3, .min_shard_bytes = 1u << 16});
    Sizes& per_tile = sizes.emplace_back();
    for (std::size_t t = 0; t < compiled.application.tiles.size(); ++t) {
      const auto& image = compiled.application.tiles[t];
      const auto& debug = compiled.application.debug.tiles[t];
      std::uint64_t code =
          0;  // main, rows, stubs: host programs and packets hold the payload's size
      for (const auto& symbol : debug.symbols) {
        if (!symbol.name.starts_with("host")) code += symbol.size;
      }
      per_tile.push_back({image.segments.size(), code, debug.symbols.size(),
                          debug.allocations.size(), debug.call_sites.size()});
    }
    const auto run = run_on_simulator(compiled.application, inputs);
    EXPECT_EQ(run.outputs, tessera::testing::evaluate_graph(g, inputs)) << count;
  }
  EXPECT_EQ(sizes[0], sizes[1]);
  EXPECT_EQ(sizes[1], sizes[2]);
}

TEST(Sequence, CompilingTwiceGivesIdenticalBytes) {
  TensorBytes inputs;
  const Graph g = build({27, DType::kF16, {5, 3}, Source::kParameter}, false, inputs);
  const auto first = schema::serialize_package(compile(g, {.tiles = 4}).application);
  const auto second = schema::serialize_package(compile(g, {.tiles = 4}).application);
  EXPECT_EQ(first, second);
}

// The footprint assertion follows a moving pointer to the loop's last
// iteration: a stride that would read past the sequence there (its first
// iteration is inside) is a LinkError naming kernel, operand and allocation.
TEST(Sequence, AStrideReadingPastTheSequenceIsALinkError) {
  TensorBytes inputs;
  const Graph g = build({3, DType::kF32, {6, 4}, Source::kParameter}, false, inputs);
  lower::Program program = lower::lower_graph(g, {.tiles = 2});
  bool tampered = false;
  for (auto& step : program.steps) {
    for (auto& [tile, runs] : step.runs) {
      for (auto& run : runs) {
        for (auto& pointer : run.pointers) {
          if (pointer.stride != 0 && !tampered) {
            pointer.stride += 4;  // iteration 2 ends 8 bytes past the sequence
            tampered = true;
          }
        }
      }
    }
  }
  ASSERT_TRUE(tampered);
  try {
    emit::link_program(program, {});
    FAIL() << "linked a moving pointer that overruns";
  } catch (const emit::LinkError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("kernel tessera_copy_words on p"), std::string::npos) << message;
    EXPECT_NE(message.find("operand $m3 (source) footprint [0x"), std::string::npos) << message;
    EXPECT_NE(message.find("in the loop's last iteration is not inside its allocation 's'"),
              std::string::npos)
        << message;
  }
}

// Sub-word scalar entries have no axis to pad to whole words: refused,
// naming the repeat and the sequence.
TEST(Sequence, SubWordScalarEntriesAreALoweringError) {
  Graph g;
  const ValueId x = g.host_input("x", DType::kF16, {});
  const ValueId s = g.parameter("s", DType::kF16, {3});
  g.host_output("y", sequence_repeat(g, 3, x, {s}, {},
                                     [](Graph& b, ValueId c, std::span<const ValueId> e,
                                        std::span<const ValueId>) { return b.add(c, e[0]); }));
  try {
    (void)compile(g, {.tiles = 2});
    ADD_FAILURE() << "compiled";
  } catch (const lower::LoweringError& error) {
    EXPECT_NE(std::string(error.what()).find("op 2 (repeat %0, %1): sequence %1 f16[3]"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace tessera::compiler
