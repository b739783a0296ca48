#pragma once
// The state one lowering shares between the per-operation lowerings
// (operations.hpp): the graph, the program being built, where every value
// lives, and the helpers every operation needs (allocating a value's buffer
// where the layout policy puts it, scratch buffers, turning element moves
// and kernel runs into steps). lower.cpp owns the walk over the graph; each
// family of operations is lowered in its own file against this interface.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "compiler/ir/graph.hpp"
#include "compiler/layout/locate.hpp"
#include "compiler/layout/resolve.hpp"
#include "compiler/lower/layout_policy.hpp"
#include "compiler/lower/moves.hpp"
#include "compiler/lower/program.hpp"
#include "compiler/plan/attention_plan.hpp"

namespace tessera::compiler::lower {

using Index = std::vector<std::uint64_t>;

// Advances a row-major multi-index; false after the last one.
bool next_index(Index& index, std::span<const std::uint32_t> shape);

// The index of the element of an operand of shape `in_shape` that NumPy
// broadcasting reads for result element `index`.
Index broadcast_source(std::span<const std::uint32_t> in_shape, const Index& index);

std::uint32_t element_bytes(const TensorType& type);

// Where a value lives: its resolved layout and buffer.
struct Storage {
  ResolvedLayout resolved;
  BufferId buffer = 0;
  std::unique_ptr<ElementLocator> locator;

  Location location(std::span<const std::uint64_t> index) const;
  // The element at `index` and how many elements from it along the last
  // axis follow it contiguously in its shard (ElementLocator::locate_run).
  struct Run {
    Location location;
    std::uint64_t elements = 0;
  };
  Run run(std::span<const std::uint64_t> index) const;
};

// Every element of a tensor of `shape` from `from` to the same index in
// `to`, in row-major order: one move_run per stretch of a row contiguous in
// both (the element moves of that order, a row at a time).
void move_same_index(MoveLowering& moves, const Storage& to, const Storage& from,
                     std::span<const std::uint32_t> shape, std::uint32_t element_size);

// One `kernel` run per non-empty shard of `out`: $m2 = out, $m3 = a, $m4 = b
// at the shard's offset (a and b in out's layout), $m5 = its element count —
// the ABI of the element-wise binary kernels (tessera_add_*, tessera_mul_*).
std::map<LogicalTile, std::vector<KernelRun>> binary_elementwise_runs(
    const std::string& kernel, const Storage& out, BufferId a, BufferId b,
    std::uint32_t element_size, std::uint32_t provenance);

class LoweringContext {
 public:
  LoweringContext(const Graph& graph, LayoutPolicy layouts, Program& program,
                  std::optional<bool> gemm_a_homes = std::nullopt,
                  plan::AttentionPlanOptions attention = {});
  virtual ~LoweringContext() = default;

  const Graph& graph() const { return graph_; }
  Program& program() { return program_; }
  LayoutPolicy& layouts() { return layouts_; }
  const LayoutPolicy& layouts() const { return layouts_; }
  // LowerOptions::gemm_a_homes.
  std::optional<bool> gemm_a_homes() const { return gemm_a_homes_; }
  // LowerOptions::attention.
  const plan::AttentionPlanOptions& attention_options() const { return attention_; }

  // Lowers one operation (and, for a repeat, its body): lower.cpp's dispatch.
  virtual void lower(OpId op) = 0;

  const Storage& storage(ValueId value) const { return *storage_.at(value); }
  bool has_storage(ValueId value) const { return storage_.contains(value); }
  // Operations another's lowering carried out (a GEMM's bias add and GeLU,
  // gemm_epilogue.hpp): the dispatch skips them.
  void lowered_with(OpId op) { lowered_with_.insert(op); }
  bool lowered_already(OpId op) const { return lowered_with_.contains(op); }
  // Makes `value` (a block argument) live where `held` does.
  void alias(ValueId value, const Storage& held) { storage_[value] = &held; }
  // A block-scaled value has no storage of its own: its codes and scales
  // (a block_scale's inputs, or a repeat's entries of them).
  struct BlockScaled {
    const Storage* codes = nullptr;
    const Storage* scales = nullptr;
    // How the codes hold each [K, N] matrix (BlockScaleAttributes::panels):
    // 0 row-major, m = 16 or 32 the weight panels B_m×16.
    std::uint32_t panels = 0;
  };
  void bind_block_scaled(ValueId value, BlockScaled held) { block_scaled_[value] = held; }
  // nullptr when `value` has none bound.
  const BlockScaled* block_scaled(ValueId value) const {
    const auto found = block_scaled_.find(value);
    return found == block_scaled_.end() ? nullptr : &found->second;
  }

  // A buffer for `value` where the layout policy puts it (a host input or
  // parameter is a binding, everything else a computed value; a value a
  // repeat reads as a sequence entry-major).
  Storage& allocate(ValueId value, const TensorType& type, std::string name,
                    std::uint32_t provenance, bool binding = false);
  // A buffer for `value` in a placement the caller chose.
  Storage& allocate_at(ValueId value, const TensorType& type, const TensorPlacement& placement,
                       std::string name, std::uint32_t provenance);
  // A scratch buffer of `type` in a placement the caller chose, for a copy of
  // a value that is not that value's own storage (an entry-major copy of a
  // sequence, an operand of another dtype brought into a result's rows).
  const Storage& scratch_at(const TensorType& type, const TensorPlacement& placement,
                            std::string name, std::string tensor, std::uint32_t provenance);
  // A buffer with the same layout as `like`, for values that are not graph
  // values of their own (a broadcast operand, a saved loop state).
  const Storage& scratch_like(const Storage& like, std::string name, std::string tensor,
                              std::uint32_t provenance);

  // A scratch buffer of `bytes` zero bytes on logical tiles 0 … tiles − 1,
  // loaded with the image and shared by every caller that asks with the same
  // `key` (grown to the largest request): for staging whose padding must stay
  // zero while each user rewrites its own logical part (a GEMM's A blocks),
  // so a graph of many GEMMs of one shape keeps one such buffer, not one per
  // operation, live for the whole run.
  BufferId shared_zeros(const std::string& key, std::uint32_t bytes, std::uint32_t tiles,
                        bool whole_elements, std::uint32_t provenance);

  // The same elements from one storage into another of the same type.
  void copy_value(const Storage& from, const Storage& to, const TensorType& type,
                  std::uint32_t provenance, const std::string& label);

  // Appends the exchange and compute steps of `moves` plus `compute` runs.
  void finish_steps(MoveLowering& moves, std::map<LogicalTile, std::vector<KernelRun>> compute,
                    std::uint32_t provenance);

  // The largest shard of a tensor must fit its tile with nothing else there;
  // if it does not, the placement report says so now, before any move into
  // it is lowered (placement.hpp, the one owner of what a tile holds).
  static void require_placeable(const Buffer& buffer, const ResolvedLayout& resolved);
  static void require_placeable(const Buffer& buffer, LogicalTile tile, std::uint64_t bytes,
                                MemoryClass memory_class);

  // The host slices of a binding's storage (replica 0).
  std::vector<HostSlice> slices(const Storage& held) const;

 protected:
  const Graph& graph_;
  LayoutPolicy layouts_;
  std::optional<bool> gemm_a_homes_;
  plan::AttentionPlanOptions attention_;
  Program& program_;

 private:
  Storage& keep(std::unique_ptr<Storage> held, ValueId value);
  std::unique_ptr<Storage> make(const TensorType& type, const TensorPlacement& placement,
                                std::string name, std::string tensor, std::uint32_t provenance);

  std::vector<std::unique_ptr<Storage>> owned_;
  std::map<std::string, BufferId> shared_zeros_;
  std::map<ValueId, const Storage*> storage_;  // block arguments alias their sources
  std::map<ValueId, BlockScaled> block_scaled_;
  std::set<OpId> lowered_with_;
};

}  // namespace tessera::compiler::lower
