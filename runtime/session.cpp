#include "runtime/session.hpp"

#include <algorithm>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "schema/validate.hpp"
#include "support/checked.hpp"
#include "support/logging.hpp"

namespace tessera::runtime {

namespace {

// Outputs are poisoned before the device writes them, so a slot the device
// never wrote cannot pass for data (driver-host-protocol.md §4).
constexpr std::uint8_t kOutputPoison = 0xA5;

// The slices of batch `b` given exclusive batch ends.
std::span<const schema::HostSlice> batch(const std::vector<schema::HostSlice>& slices,
                                         const std::vector<std::uint32_t>& ends, std::size_t b) {
  const std::size_t begin = b == 0 ? 0 : ends[b - 1];
  return std::span(slices).subspan(begin, ends[b] - begin);
}

// Rendezvous a call takes: two per batch, the last one the caller's close.
std::uint64_t call_rendezvous(const schema::HostCall& call) {
  return 2 * (std::uint64_t{call.input_batch_ends.size()} + call.output_batch_ends.size());
}

std::string list_names(const auto& items) {
  std::string names;
  for (const auto& item : items) names += (names.empty() ? "" : ", ") + fmt::format("'{}'", item.name);
  return names.empty() ? "none" : names;
}

}  // namespace

// One call side's payload (schema::call_payload owns its layout), with the
// walk that maps a payload range onto the bindings it covers.
struct Session::Payload {
  std::vector<schema::PayloadPart> parts;

  // Calls f(part, offset in the part, offset in [offset, offset + size), length)
  // for each piece of the payload range.
  template <class F>
  void for_each_piece(std::uint64_t offset, std::uint64_t size, F&& f) const {
    const std::uint64_t end = offset + size;
    for (const schema::PayloadPart& part : parts) {
      const std::uint64_t begin = std::max(offset, part.offset);
      const std::uint64_t stop = std::min(end, part.offset + part.size);
      if (begin < stop) f(part, begin - part.offset, begin - offset, stop - begin);
    }
  }
};

Session::Session(Transport& transport, schema::Application application, SessionOptions options)
    : transport_(transport), application_(schema::canonical(std::move(application))), options_(options),
      jitter_state_(options.write_jitter_seed) {
  for (const auto& [name, timeout] : {std::pair{"rendezvous_timeout", options.rendezvous_timeout},
                                      std::pair{"halt_timeout", options.halt_timeout}}) {
    if (timeout < kMinWaitTimeout || timeout > kMaxWaitTimeout) {
      throw UsageError(fmt::format("SessionOptions::{}: {} ms is outside {} to {} ms", name,
                                   timeout.count(), kMinWaitTimeout.count(),
                                   kMaxWaitTimeout.count()));
    }
  }
  schema::validate(application_);
  for (const auto& call : application_.host_exchange.calls) {
    if (call.invocations != 1) {
      throw UsageError(fmt::format(
          "host call '{}' has {} invocations; this runtime runs a call once per call() — "
          "repeat work on the device or call it again",
          call.name, call.invocations));
    }
    const std::uint64_t needed = call_rendezvous(call);
    if (needed > 0 && call.phases != needed - 1) {
      throw UsageError(fmt::format(
          "host call '{}' declares {} phases, but its {} input and {} output batches take {} "
          "(two per batch, the last closed by the host)",
          call.name, call.phases, call.input_batch_ends.size(), call.output_batch_ends.size(),
          needed - 1));
    }
  }
  start();
}

void Session::start() {
  // The host memory first: a page the host cannot map fails before the
  // device is touched.
  pages_.emplace(application_.host_exchange);
  transport_.reset();
  transport_.load(application_);
  // After the load, which may reset configuration registers (HEAD's order,
  // driver-host-protocol.md §3.7), before the supervisors start.
  for (const auto& write : application_.device_config_writes) {
    transport_.write_config(write.offset, write.value);
  }
  transport_.start();
  const auto& exchange = application_.host_exchange;
  pages_->attach(transport_, exchange.attach_order);
  // The startup rendezvous: no tile touches host memory before the pages
  // are attached (docs/RUNTIME.md).
  if (!exchange.calls.empty()) rendezvous("the startup rendezvous");
}

HostBuffer& Session::page(std::uint32_t index) { return pages_->page(index); }

const schema::Binding& Session::binding(std::string_view name) const {
  for (const auto* list : {&application_.inputs, &application_.outputs, &application_.weights}) {
    for (const auto& binding : *list) {
      if (binding.name == name) return binding;
    }
  }
  throw UsageError(fmt::format("the package has no binding '{}' (inputs: {}; outputs: {}; "
                               "weights: {})",
                               name, list_names(application_.inputs),
                               list_names(application_.outputs), list_names(application_.weights)));
}

const schema::HostCall& Session::host_call(std::string_view name) const {
  for (const auto& call : application_.host_exchange.calls) {
    if (call.name == name) return call;
  }
  throw UsageError(fmt::format("the package has no host call '{}' (calls: {})", name,
                               list_names(application_.host_exchange.calls)));
}

std::vector<std::string> Session::call_names() const {
  std::vector<std::string> names;
  for (const auto& call : application_.host_exchange.calls) names.push_back(call.name);
  return names;
}

void Session::write_credit() {
  if (options_.write_jitter_max_us > 0) {
    // splitmix64: a seeded sequence that is the same on every platform.
    std::uint64_t z = (jitter_state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    transport_.idle(std::chrono::microseconds(z % (options_.write_jitter_max_us + 1ull)));
  }
  transport_.write_mark(HspMark::kGs2, 1);
}

void Session::rendezvous(std::string_view what) {
  // The mark must read 0 before the host releases the next round; anything
  // else means the device has not consumed an earlier credit.
  const std::uint16_t left = transport_.read_mark(HspMark::kGs2);
  if (left != 0) {
    throw DeviceError(fmt::format("{}: GS2 still holds {} unconsumed credits", what, left),
                      transport_.faults());
  }
  write_credit();
  const WaitOutcome outcome = transport_.wait_mark_zero(HspMark::kGs2, options_.rendezvous_timeout);
  if (outcome != WaitOutcome::kReached) fail_wait(outcome, what);
  ++rendezvous_;
}

void Session::fail_wait(WaitOutcome outcome, std::string_view what) {
  const auto faults = transport_.faults();
  switch (outcome) {
    case WaitOutcome::kFaulted: {
      std::string message = fmt::format("{}: the device faulted", what);
      for (const auto& fault : faults) message += "\n  " + describe(fault);
      throw DeviceError(std::move(message), faults);
    }
    case WaitOutcome::kHalted:
      throw DeviceError(fmt::format("{}: the device halted before taking the credit (the package "
                                    "expects fewer rendezvous than the host gave)",
                                    what),
                        faults);
    case WaitOutcome::kStopped:
      throw DeviceError(fmt::format("{}: a tile stopped at a breakpoint\n{}", what,
                                    where_tiles_wait()),
                        faults);
    case WaitOutcome::kStalled:
      throw TimeoutError(fmt::format("{}: the device can make no progress\n{}", what,
                                     where_tiles_wait()));
    case WaitOutcome::kTimedOut:
    case WaitOutcome::kReached:
      break;
  }
  throw TimeoutError(fmt::format("{}: timed out\n{}", what, where_tiles_wait()));
}

BindingBytes Session::call(std::string_view name, const BindingViews& inputs) {
  const schema::HostCall& call = host_call(name);
  // Everything about the caller's tensors is checked before the device sees
  // a credit, so a bad call changes nothing.
  const Payload in{schema::call_payload(application_, call, schema::CallSide::kInput)};
  const Payload out{schema::call_payload(application_, call, schema::CallSide::kOutput)};
  for (const auto& part : in.parts) {
    const auto given = inputs.find(part.binding->name);
    if (given == inputs.end()) {
      throw UsageError(fmt::format("host call '{}' needs input '{}' ({} bytes)", call.name,
                                   part.binding->name, part.size));
    }
    if (given->second.size() != part.size) {
      throw UsageError(fmt::format("host call '{}': input '{}' has {} bytes, expected {}",
                                   call.name, part.binding->name, given->second.size(), part.size));
    }
  }
  for (const auto& [given_name, bytes] : inputs) {
    const bool used = std::any_of(in.parts.begin(), in.parts.end(),
                                  [&](const auto& part) { return part.binding->name == given_name; });
    if (!used) {
      throw UsageError(fmt::format("host call '{}' takes no input '{}'", call.name, given_name));
    }
  }

  BindingBytes outputs;
  for (const auto& part : out.parts) {
    outputs[part.binding->name].assign(checked_cast<std::size_t>(part.size, "output size"), 0);
  }
  auto copy_in = [&](std::span<const schema::HostSlice> slices) {
    for (const auto& slice : slices) {
      in.for_each_piece(slice.file_offset, slice.size,
                        [&](const schema::PayloadPart& part, std::uint64_t from, std::uint64_t at,
                            std::uint64_t length) {
                          const auto bytes = inputs.find(part.binding->name)->second;
                          page(slice.page).copy_in(
                              static_cast<std::size_t>(slice.page_offset + at),
                              bytes.subspan(static_cast<std::size_t>(from),
                                            static_cast<std::size_t>(length)));
                        });
    }
  };
  auto poison = [&](std::span<const schema::HostSlice> slices) {
    for (const auto& slice : slices) {
      page(slice.page).fill(static_cast<std::size_t>(slice.page_offset),
                            static_cast<std::size_t>(slice.size), kOutputPoison);
    }
  };
  auto copy_out = [&](std::span<const schema::HostSlice> slices) {
    for (const auto& slice : slices) {
      out.for_each_piece(slice.file_offset, slice.size,
                         [&](const schema::PayloadPart& part, std::uint64_t to, std::uint64_t at,
                             std::uint64_t length) {
                           auto& bytes = outputs[part.binding->name];
                           page(slice.page).copy_out(
                               static_cast<std::size_t>(slice.page_offset + at),
                               std::span(bytes).subspan(static_cast<std::size_t>(to),
                                                        static_cast<std::size_t>(length)));
                         });
    }
  };

  // Rendezvous 2b enters batch b and 2b + 1 completes it; input batches come
  // first. The host copies only while the device waits at an entry: inputs
  // of the batch about to run, outputs of the batch that just completed.
  const std::size_t input_batches = call.input_batch_ends.size();
  const std::size_t output_batches = call.output_batch_ends.size();
  const std::uint64_t total = call_rendezvous(call);
  spdlog::debug("host call '{}': {} input and {} output batches, {} rendezvous", call.name,
             input_batches, output_batches, total);
  for (std::uint64_t r = 0; r < total; ++r) {
    if (r % 2 == 0) {
      const std::size_t b = static_cast<std::size_t>(r / 2);
      if (b < input_batches) {
        copy_in(batch(call.inputs, call.input_batch_ends, b));
      } else {
        const std::size_t j = b - input_batches;
        if (j > 0) copy_out(batch(call.outputs, call.output_batch_ends, j - 1));
        poison(batch(call.outputs, call.output_batch_ends, j));
      }
    }
    rendezvous(fmt::format("host call '{}' rendezvous {}/{}", call.name, r + 1, total));
  }
  if (output_batches > 0) {
    copy_out(batch(call.outputs, call.output_batch_ends, output_batches - 1));
  }
  return outputs;
}

TensorMap Session::invoke(std::string_view name, const TensorMap& inputs) {
  BindingViews views;
  for (const auto& [input_name, tensor] : inputs) {
    check_matches(tensor, binding(input_name), fmt::format("input '{}'", input_name));
    views.emplace(input_name, tensor.bytes());
  }
  TensorMap outputs;
  for (auto& [output_name, bytes] : call(name, views)) {
    const schema::Binding& bound = binding(output_name);
    outputs.emplace(output_name, HostTensor(bound.dtype, binding_shape(bound), std::move(bytes)));
  }
  return outputs;
}

void Session::run_entry_point(std::string_view name) {
  const auto& entries = application_.entry_points;
  const auto found = std::find_if(entries.begin(), entries.end(),
                                  [&](const auto& entry) { return entry.name == name; });
  if (found == entries.end()) {
    throw UsageError(fmt::format("the package has no entry point '{}' (entry points: {})", name,
                                 list_names(entries)));
  }
  for (std::uint32_t i = 0; i < found->external_syncs; ++i) {
    rendezvous(fmt::format("entry point '{}' sync {}/{}", name, i + 1, found->external_syncs));
  }
}

void Session::finish() {
  const WaitOutcome outcome = transport_.wait_halted(options_.halt_timeout);
  if (outcome != WaitOutcome::kReached) fail_wait(outcome, "waiting for the device to halt");
  const auto faults = transport_.faults();
  if (!faults.empty()) {
    std::string message = "the device halted with faults";
    for (const auto& fault : faults) message += "\n  " + describe(fault);
    throw DeviceError(std::move(message), faults);
  }
}

std::string Session::where_tiles_wait() {
  // Grouped by (pc, state), so 1472 tiles at one sync read as one line.
  std::map<std::pair<std::uint32_t, std::string>, std::vector<target::PhysicalTile>> groups;
  for (const auto& image : application_.tiles) {
    const TileState state = transport_.tile_state(image.tile);
    std::string what = state.detail.empty()
                           ? std::string(context_state_name(state.contexts[0]))
                           : state.detail;
    groups[{state.pc, what}].push_back(image.tile);
  }
  std::string text;
  for (const auto& [key, tiles] : groups) {
    std::string names;
    const std::size_t shown = std::min<std::size_t>(tiles.size(), 8);
    for (std::size_t i = 0; i < shown; ++i) names += fmt::format("{}{}", i ? ", " : "", tiles[i]);
    if (tiles.size() > shown) names += fmt::format(" and {} more", tiles.size() - shown);
    text += fmt::format("  {} tile{} at pc {:#x}: {} ({})\n", tiles.size(),
                        tiles.size() == 1 ? "" : "s", key.first, key.second, names);
  }
  return text;
}

}  // namespace tessera::runtime
