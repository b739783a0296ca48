#include "compiler/lower/lower.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>

#include "compiler/layout/locate.hpp"
#include "compiler/layout/resolve.hpp"
#include "compiler/lower/layout_policy.hpp"
#include "compiler/lower/moves.hpp"
#include "compiler/placement.hpp"
#include "kernels/registry.hpp"
#include "schema/model.hpp"
#include "support/checked.hpp"

namespace tessera::compiler::lower {
namespace {

using Index = std::vector<std::uint64_t>;

// Where a value lives: its resolved layout and buffer.
struct Storage {
  ResolvedLayout resolved;
  BufferId buffer = 0;
  std::unique_ptr<ElementLocator> locator;

  Location location(std::span<const std::uint64_t> index) const {
    const ElementPlace place = locator->locate(index);
    return {resolved.shards[place.shard].tile, buffer,
            checked_cast<std::uint32_t>(place.offset, "element offset")};
  }
};

// Advances a row-major multi-index; false after the last one.
bool next_index(Index& index, std::span<const std::uint32_t> shape) {
  for (std::size_t a = shape.size(); a-- > 0;) {
    if (++index[a] < shape[a]) return true;
    index[a] = 0;
  }
  return false;
}

std::uint32_t element_bytes(const TensorType& type) { return schema::dtype_size(type.dtype()); }

class Lowerer {
 public:
  Lowerer(const Graph& graph, const LowerOptions& options)
      : graph_(graph), layouts_(options.tiles, options.min_shard_bytes) {
    if (options.tiles == 0 || options.tiles > static_cast<std::uint32_t>(target::kTileCount)) {
      throw LoweringError(fmt::format("the tile count must be 1 … {}, not {}", target::kTileCount,
                                      options.tiles));
    }
  }

  Program run() {
    const auto parameters = graph_.top_level(OpKind::kParameter);
    if (!parameters.empty()) {
      HostCall load{std::string(kLoadParametersCall), {}, {}};
      for (const OpId op : parameters) load.inputs.push_back(binding_name(op));
      program_.calls.push_back(load);
      program_.steps.push_back(Step{StepKind::kHostInputs, program_.calls.size() - 1, {}, {}, {}});
    }
    HostCall run{std::string(kRunCall), {}, {}};
    for (const OpId op : graph_.top_level(OpKind::kHostInput)) run.inputs.push_back(binding_name(op));
    for (const OpId op : graph_.top_level(OpKind::kHostOutput)) run.outputs.push_back(binding_name(op));
    program_.calls.push_back(run);
    const std::size_t run_call = program_.calls.size() - 1;
    program_.steps.push_back(Step{StepKind::kHostInputs, run_call, {}, {}, {}});
    for (const OpId op : graph_.top().operations) lower(op);
    program_.steps.push_back(Step{StepKind::kHostOutputs, run_call, {}, {}, {}});
    return std::move(program_);
  }

 private:
  std::string binding_name(OpId op) const {
    return std::get<BindingAttributes>(graph_.operation(op).attributes).name;
  }

  const Storage& storage(ValueId value) const { return *storage_.at(value); }

  // The same elements from one storage into another of the same type.
  void copy_value(const Storage& from, const Storage& to, const TensorType& type, std::uint32_t provenance,
                  const std::string& label) {
    MoveLowering moves(program_, label, provenance, element_bytes(type));
    Index index(type.shape.size(), 0);
    const std::uint64_t count = element_count(type.shape);
    for (std::uint64_t n = 0; n < count; ++n, next_index(index, type.shape)) {
      moves.move(to.location(index), from.location(index));
    }
    finish_steps(moves, {}, provenance);
  }

  // A buffer for `value` where the layout policy puts it (a host input or
  // parameter is a binding, everything else a computed value).
  Storage& allocate(ValueId value, const TensorType& type, std::string name,
                    std::uint32_t provenance, bool binding = false) {
    auto held = std::make_unique<Storage>();
    const TensorPlacement placement = binding ? layouts_.binding(type) : layouts_.computed(type);
    held->resolved = resolve(placement.layout, type.shape, placement.tiles);
    Buffer buffer;
    buffer.name = std::move(name);
    buffer.tensor = format_value(value);
    buffer.alignment = held->resolved.layout.alignment;
    buffer.provenance = provenance;
    require_placeable(buffer, held->resolved);
    for (const Shard& shard : held->resolved.shards) {
      buffer.bytes[shard.tile] = checked_cast<std::uint32_t>(shard.allocation_bytes, "shard bytes");
    }
    held->buffer = program_.add_buffer(std::move(buffer));
    held->locator = std::make_unique<ElementLocator>(held->resolved);
    Storage& result = *held;
    storage_[value] = held.get();
    owned_.push_back(std::move(held));
    return result;
  }

  // The largest shard of a tensor must fit its tile with nothing else there;
  // if it does not, the placement report says so now, before any move into
  // it is lowered (placement.hpp, the one owner of what a tile holds).
  static void require_placeable(const Buffer& buffer, const ResolvedLayout& resolved) {
    const Shard* largest = nullptr;
    for (const Shard& shard : resolved.shards) {
      if (largest == nullptr || shard.allocation_bytes > largest->allocation_bytes) {
        largest = &shard;
      }
    }
    if (largest == nullptr || largest->allocation_bytes == 0) return;
    require_placeable(buffer, largest->tile, largest->allocation_bytes,
                      resolved.layout.memory_class);
  }

  static void require_placeable(const Buffer& buffer, LogicalTile tile, std::uint64_t bytes,
                                MemoryClass memory_class) {
    AllocationRequest request;
    request.name = buffer.name;
    request.tensor = buffer.tensor;
    request.kind = buffer.kind;
    request.size = bytes;
    request.alignment = buffer.alignment;
    request.placement = memory_class == MemoryClass::kInterleaved ? MemoryPlacement::kInterleaved
                                                                  : MemoryPlacement::kStandard;
    request.provenance = buffer.provenance;
    require_fits_alone(target::c600_physical(tile), request);
  }

  std::vector<HostSlice> slices(const Storage& held) const {
    std::vector<HostSlice> result;
    for (const Shard& shard : held.resolved.shards) {
      if (shard.replica != 0) continue;
      for (const ByteRun& run : host_runs(shard)) {
        result.push_back(HostSlice{
            shard.tile, held.buffer, checked_cast<std::uint32_t>(run.shard_offset, "slice offset"),
            run.host_offset, checked_cast<std::uint32_t>(run.bytes, "slice bytes")});
      }
    }
    return result;
  }

  // Appends the exchange and compute steps of `moves` plus `extra` runs.
  void finish_steps(MoveLowering& moves, std::map<LogicalTile, std::vector<KernelRun>> compute,
                    std::uint32_t provenance) {
    std::map<LogicalTile, std::vector<KernelRun>> runs;
    std::vector<Transfer> transfers = moves.finish(runs);
    for (auto& [tile, list] : compute) {
      auto& all = runs[tile];
      all.insert(all.end(), list.begin(), list.end());
    }
    if (!transfers.empty()) {
      program_.steps.push_back(Step{StepKind::kExchange, 0, std::move(transfers), {}, provenance});
    }
    if (!runs.empty()) program_.steps.push_back(Step{StepKind::kCompute, 0, {}, std::move(runs), provenance});
  }

  void lower(OpId id) {
    const Operation& op = graph_.operation(id);
    const std::string described = graph_.describe(id);
    switch (op.kind) {
      case OpKind::kHostInput:
      case OpKind::kParameter: {
        const std::string name = binding_name(id);
        const std::uint32_t provenance = program_.add_provenance(
            fmt::format("{} {}", op.kind == OpKind::kHostInput ? "host input" : "parameter", name));
        const Storage& held =
            allocate(op.results[0], graph_.type(op.results[0]), name, provenance, true);
        HostBinding binding{name, graph_.type(op.results[0]), slices(held)};
        (op.kind == OpKind::kHostInput ? program_.inputs : program_.weights).push_back(std::move(binding));
        return;
      }
      case OpKind::kHostOutput: {
        const ValueId value = op.inputs[0];
        program_.outputs.push_back(HostBinding{binding_name(id), graph_.type(value), slices(storage(value))});
        return;
      }
      case OpKind::kRepeat:
        if (std::get<RepeatAttributes>(op.attributes).sequence > 0) {
          // Iteration i's addresses into each sequence are issue 18's later work.
          throw LoweringError(
              fmt::format("{}: a repeat with sequence values is not lowered yet", described));
        }
        return lower_repeat(id, op, described);
      case OpKind::kAdd: return lower_add(id, op, described);
      case OpKind::kReduceSum: return lower_reduce_sum(id, op, described);
      // Issue 18's operations are in the IR and the CPU reference; planning,
      // layouts and lowering come later.
      case OpKind::kMatmul:
      case OpKind::kMul:
      case OpKind::kGelu:
      case OpKind::kLayerNorm:
      case OpKind::kSoftmax:
      case OpKind::kAttention:
      case OpKind::kConvert:
      case OpKind::kBlockScale:
        throw LoweringError(fmt::format("{}: not lowered yet", described));
      default: return lower_data_movement(id, op, described);
    }
  }

  // For every result element, the input it comes from and where in it.
  void lower_data_movement(OpId id, const Operation& op, const std::string& described) {
    const ValueId result = op.results[0];
    const TensorType& type = graph_.type(result);
    const std::uint32_t provenance = program_.add_provenance(described);
    const Storage& out = allocate(result, type, format_value(result), provenance);
    MoveLowering moves(program_, fmt::format("op {}", id.index), provenance, element_bytes(type));
    const auto& shape = type.shape;
    // concat: where each input starts along the axis, so an element's input
    // is one binary search (not a scan of the inputs before it).
    std::vector<std::uint64_t> starts;
    if (op.kind == OpKind::kConcat) {
      const std::uint32_t axis = std::get<ConcatAttributes>(op.attributes).axis;
      std::uint64_t at = 0;
      for (const ValueId input : op.inputs) {
        starts.push_back(at);
        at += graph_.type(input).shape[axis];
      }
    }
    Index index(shape.size(), 0);
    Index from;
    const std::uint64_t count = element_count(shape);
    std::uint64_t flat = 0;
    for (std::uint64_t n = 0; n < count; ++n, next_index(index, shape), ++flat) {
      std::size_t input = 0;
      switch (op.kind) {
        case OpKind::kCopy: from = index; break;
        case OpKind::kReshape: {
          const auto& in_shape = graph_.type(op.inputs[0]).shape;
          from.assign(in_shape.size(), 0);
          std::uint64_t rest = flat;
          for (std::size_t a = in_shape.size(); a-- > 0;) {
            from[a] = rest % in_shape[a];
            rest /= in_shape[a];
          }
          break;
        }
        case OpKind::kSlice: {
          const auto& slice = std::get<SliceAttributes>(op.attributes);
          from = index;
          for (std::size_t a = 0; a < from.size(); ++a) from[a] += slice.begin[a];
          break;
        }
        case OpKind::kTranspose: {
          const auto& permutation = std::get<TransposeAttributes>(op.attributes).permutation;
          from.assign(index.size(), 0);
          for (std::size_t a = 0; a < index.size(); ++a) from[permutation[a]] = index[a];
          break;
        }
        case OpKind::kBroadcastTo: from = broadcast_source(graph_.type(op.inputs[0]).shape, index); break;
        case OpKind::kConcat: {
          const std::uint32_t axis = std::get<ConcatAttributes>(op.attributes).axis;
          from = index;
          const auto after = std::upper_bound(starts.begin(), starts.end(), index[axis]);
          input = static_cast<std::size_t>(after - starts.begin()) - 1;
          from[axis] -= starts[input];
          break;
        }
        default:
          throw LoweringError(fmt::format("{}: not a data-movement operation", described));
      }
      moves.move(out.location(index), storage(op.inputs[input]).location(from));
    }
    finish_steps(moves, {}, provenance);
  }

  static Index broadcast_source(std::span<const std::uint32_t> in_shape, const Index& index) {
    const std::size_t offset = index.size() - in_shape.size();
    Index from(in_shape.size(), 0);
    for (std::size_t a = 0; a < in_shape.size(); ++a) from[a] = in_shape[a] == 1 ? 0 : index[a + offset];
    return from;
  }

  void lower_add(OpId id, const Operation& op, const std::string& described) {
    const ValueId result = op.results[0];
    const TensorType& type = graph_.type(result);
    const std::uint32_t provenance = program_.add_provenance(described);
    const Storage& out = allocate(result, type, format_value(result), provenance);
    MoveLowering moves(program_, fmt::format("op {}", id.index), provenance, element_bytes(type));
    // Each operand in the result's layout: itself, or a broadcast copy.
    std::vector<BufferId> operands;
    for (std::size_t k = 0; k < 2; ++k) {
      const ValueId input = op.inputs[k];
      // An operand of the result's type and placement is used where it is;
      // any other is brought into the result's layout (a broadcast is
      // materialised, a tensor on other tiles is moved).
      if (graph_.type(input) == type && storage(input).resolved == out.resolved) {
        operands.push_back(storage(input).buffer);
        continue;
      }
      const Storage& source = storage(input);
      const Storage& holder = scratch_like(
          out, fmt::format("{} broadcast to {}", format_value(input), format_shape(type.shape)),
          format_value(input), provenance);
      Index index(type.shape.size(), 0);
      const std::uint64_t count = element_count(type.shape);
      for (std::uint64_t n = 0; n < count; ++n, next_index(index, type.shape)) {
        moves.move(holder.location(index),
                   source.location(broadcast_source(graph_.type(input).shape, index)));
      }
      operands.push_back(holder.buffer);
    }
    const std::string kernel(type.dtype() == DType::kF32 ? kernels::kAddF32 : kernels::kAddF16);
    if (type.dtype() != DType::kF32 && type.dtype() != DType::kF16) {
      throw LoweringError(fmt::format("{}: add takes f32 or f16", described));
    }
    std::map<LogicalTile, std::vector<KernelRun>> compute;
    for (const Shard& shard : out.resolved.shards) {
      const auto elements =
          checked_cast<std::uint32_t>(shard.bytes / element_bytes(type), "add elements");
      if (elements == 0) continue;
      const auto offset = checked_cast<std::uint32_t>(shard.offset, "shard offset");
      compute[shard.tile].push_back(
          KernelRun{kernel,
                    {{2, out.buffer, offset}, {3, operands[0], offset}, {4, operands[1], offset}},
                    {{5, elements}},
                    provenance});
    }
    finish_steps(moves, std::move(compute), provenance);
  }

  void lower_reduce_sum(OpId id, const Operation& op, const std::string& described) {
    const ValueId result = op.results[0];
    const TensorType& type = graph_.type(result);
    const TensorType& in_type = graph_.type(op.inputs[0]);
    const auto& reduce = std::get<ReduceAttributes>(op.attributes);
    const std::uint32_t s = element_bytes(type);
    if (type.dtype() != DType::kF32 && type.dtype() != DType::kF16) {
      throw LoweringError(fmt::format("{}: reduce_sum takes f32 or f16", described));
    }
    const std::uint32_t provenance = program_.add_provenance(described);
    const Storage& out = allocate(result, type, format_value(result), provenance);
    const Storage& source = storage(op.inputs[0]);

    std::vector<bool> reduced(in_type.shape.size(), false);
    Shape reduced_shape;
    for (const std::uint32_t axis : reduce.axes) {
      reduced[axis] = true;
      reduced_shape.push_back(in_type.shape[axis]);
    }
    const std::uint64_t contributions = element_count(reduced_shape);

    // The partials buffer on each result tile: row k holds the k-th
    // contribution of every element of the tile's shard.
    Buffer partials;
    partials.name = fmt::format("partials (op {})", id.index);
    partials.kind = schema::AllocationKind::kScratch;
    partials.provenance = provenance;
    std::map<LogicalTile, std::uint32_t> stride;
    std::map<LogicalTile, std::uint64_t> shard_offset;
    for (const Shard& shard : out.resolved.shards) {
      if (shard.bytes == 0) continue;
      shard_offset[shard.tile] = shard.offset;
      const std::uint64_t row = (shard.bytes + 3) / 4 * 4;
      std::uint64_t bytes = 0;
      if (__builtin_mul_overflow(row, contributions, &bytes)) {
        bytes = std::numeric_limits<std::uint64_t>::max();
      }
      // Partials that could never fit are the placement report now, not
      // after lowering every contribution's move.
      require_placeable(partials, shard.tile, bytes, out.resolved.layout.memory_class);
      stride[shard.tile] = checked_cast<std::uint32_t>(row, "partials row");
      partials.bytes[shard.tile] = checked_cast<std::uint32_t>(bytes, "partials bytes");
    }
    const BufferId partials_id = program_.add_buffer(std::move(partials));

    MoveLowering moves(program_, fmt::format("op {}", id.index), provenance, s);
    Index k_index(reduced_shape.size(), 0);
    Index from(in_type.shape.size(), 0);
    for (std::uint64_t k = 0; k < contributions; ++k, next_index(k_index, reduced_shape)) {
      Index index(type.shape.size(), 0);
      const std::uint64_t count = element_count(type.shape);
      for (std::uint64_t n = 0; n < count; ++n, next_index(index, type.shape)) {
        // The input index: kept axes from the result, reduced ones from k.
        std::size_t kept = 0, r = 0;
        for (std::size_t a = 0; a < from.size(); ++a) {
          if (reduced[a]) {
            from[a] = k_index[r++];
            if (reduce.keep_dims) ++kept;
          } else {
            from[a] = index[kept++];
          }
        }
        const Location target = out.location(index);
        const auto slot = checked_cast<std::uint32_t>(
            k * stride.at(target.tile) + (target.offset - shard_offset.at(target.tile)),
            "partials slot");
        moves.move(Location{target.tile, partials_id, slot}, source.location(from));
      }
    }
    const std::string kernel(type.dtype() == DType::kF32 ? kernels::kSumF32 : kernels::kSumF16);
    std::map<LogicalTile, std::vector<KernelRun>> compute;
    for (const Shard& shard : out.resolved.shards) {
      if (shard.bytes == 0) continue;
      compute[shard.tile].push_back(
          KernelRun{kernel,
                    {{2, out.buffer, checked_cast<std::uint32_t>(shard.offset, "shard offset")},
                     {3, partials_id, 0}},
                    {{4, checked_cast<std::uint32_t>(shard.bytes / s, "sum elements")},
                     {5, checked_cast<std::uint32_t>(contributions, "sum rows")},
                     {6, stride.at(shard.tile)}},
                    provenance});
    }
    finish_steps(moves, std::move(compute), provenance);
  }

  // A repeat: the carried values live in loop-state buffers (which are also
  // the repeat's results), initialised before the loop; the body reads its
  // arguments from them (carried) or from the outer values (invariant), and
  // each iteration ends by copying the yields into the state. The body's
  // steps sit once between a loop begin and a loop end.
  void lower_repeat(OpId id, const Operation& op, const std::string& described) {
    const auto& attributes = std::get<RepeatAttributes>(op.attributes);
    const Block& body = graph_.block(attributes.body);
    const std::size_t carried = attributes.carried;
    const std::uint32_t provenance = program_.add_provenance(described);
    std::vector<const Storage*> state;
    for (std::size_t j = 0; j < carried; ++j) {
      const ValueId result = op.results[j];
      const Storage& held = allocate(result, graph_.type(result), format_value(result), provenance);
      copy_value(storage(op.inputs[j]), held, graph_.type(result), provenance,
                 fmt::format("op {} entry", id.index));
      state.push_back(&held);
    }
    for (std::size_t j = 0; j < body.arguments.size(); ++j) {
      storage_[body.arguments[j]] = j < carried ? state[j] : &storage(op.inputs[j]);
    }
    const std::size_t begin = program_.steps.size();
    Step open;
    open.kind = StepKind::kLoopBegin;
    open.count = attributes.count;
    open.provenance = provenance;
    program_.steps.push_back(std::move(open));
    for (const OpId inner : body.operations) lower(inner);
    copy_yields(body, state, provenance, id);
    Step close;
    close.kind = StepKind::kLoopEnd;
    close.partner = begin;
    close.provenance = provenance;
    program_.steps[begin].partner = program_.steps.size();
    program_.steps.push_back(std::move(close));
  }

  // The end of an iteration: every carried state takes its yield, all at
  // once. A yield that is another carried value (`[a, a]`, a swap) reads that
  // state, so its copy comes before the state is overwritten; a cycle of such
  // reads (a permutation) first saves one state in a temporary.
  void copy_yields(const Block& body, const std::vector<const Storage*>& state,
                   std::uint32_t provenance, OpId id) {
    const std::size_t carried = state.size();
    std::vector<const Storage*> source(carried, nullptr);    // where each state's next value is
    std::vector<std::optional<std::size_t>> reads(carried);  // the state that value is, if any
    for (std::size_t j = 0; j < carried; ++j) {
      const ValueId yielded = body.yields[j];
      if (yielded == body.arguments[j]) continue;  // unchanged
      source[j] = &storage(yielded);
      for (std::size_t a = 0; a < carried; ++a) {
        if (yielded == body.arguments[a]) reads[j] = a;
      }
    }
    const auto read_by_another = [&](std::size_t j) {
      for (std::size_t k = 0; k < carried; ++k) {
        if (k != j && source[k] != nullptr && reads[k] == j) return true;
      }
      return false;
    };
    const auto pending = [&] {
      return std::any_of(source.begin(), source.end(),
                         [](const Storage* from) { return from != nullptr; });
    };
    while (pending()) {
      std::optional<std::size_t> next;
      for (std::size_t j = 0; j < carried && !next; ++j) {
        if (source[j] != nullptr && !read_by_another(j)) next = j;
      }
      if (next) {
        copy_value(*source[*next], *state[*next], graph_.type(body.yields[*next]), provenance,
                   fmt::format("op {} yield {}", id.index, *next));
        source[*next] = nullptr;
        continue;
      }
      // Every pending state is read by another one: a cycle. Save the first.
      std::size_t j = 0;
      while (source[j] == nullptr) ++j;
      const Storage& saved =
          scratch_like(*state[j], fmt::format("carried {} saved (op {})", j, id.index),
                       format_value(body.arguments[j]), provenance);
      copy_value(*state[j], saved, graph_.type(body.arguments[j]), provenance,
                 fmt::format("op {} save {}", id.index, j));
      for (std::size_t k = 0; k < carried; ++k) {
        if (source[k] != nullptr && reads[k] == j) {
          source[k] = &saved;
          reads[k].reset();
        }
      }
    }
  }

  // A buffer with the same layout as `like`, for values that are not graph
  // values of their own (a broadcast operand, a saved loop state).
  const Storage& scratch_like(const Storage& like, std::string name, std::string tensor,
                              std::uint32_t provenance) {
    auto held = std::make_unique<Storage>();
    held->resolved = like.resolved;
    Buffer buffer = program_.buffers[like.buffer];
    buffer.name = std::move(name);
    buffer.tensor = std::move(tensor);
    buffer.provenance = provenance;
    held->buffer = program_.add_buffer(std::move(buffer));
    held->locator = std::make_unique<ElementLocator>(held->resolved);
    owned_.push_back(std::move(held));
    return *owned_.back();
  }

  const Graph& graph_;
  LayoutPolicy layouts_;
  Program program_;
  std::vector<std::unique_ptr<Storage>> owned_;
  std::map<ValueId, const Storage*> storage_;  // block arguments alias their sources
};

}  // namespace

Program lower_graph(const Graph& graph, const LowerOptions& options) {
  return Lowerer(graph, options).run();
}

}  // namespace tessera::compiler::lower
