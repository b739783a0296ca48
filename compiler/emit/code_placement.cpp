// Step 4 of linking, the placement: the sizes of every tile's main program,
// host programs and packets, rows, loop words, kernel stubs and (with device
// code) linked kernels, placed in region 0 by the one allocator (sizes
// first: none depends on an address).
#include <exception>

#include "compiler/emit/linker.hpp"

namespace tessera::compiler::emit::linking {

// (step, bytes) of every row `tile` has, in step order.
std::vector<std::pair<std::size_t, std::uint32_t>> Linker::rows_of(PhysicalTile tile) const {
  std::vector<std::pair<std::size_t, std::uint32_t>> rows;
  for (auto it = probe_rows_.lower_bound({tile, 0});
       it != probe_rows_.end() && it->first.first == tile; ++it) {
    rows.emplace_back(it->first.second, it->second);
  }
  return rows;
}

namespace {

std::uint32_t sample_buffer_size(std::uint32_t records) {
  return checked_cast<std::uint32_t>(schema::sample_buffer_bytes(records), "sample buffer bytes");
}

// The most records (below `capacity`) a sample buffer, request
// `sample_request`, may hold with the tile's code still placed; nullopt when
// not even an empty one fits (the samples' own code takes the room).
std::optional<std::uint32_t> records_that_fit(PhysicalTile tile,
                                              std::vector<AllocationRequest> requests,
                                              std::size_t sample_request, RegionSplit region,
                                              std::uint32_t capacity) {
  const auto fits = [&](std::uint32_t records) {
    requests[sample_request].size = sample_buffer_size(records);
    try {
      (void)place_tile(tile, requests, region);
      return true;
    } catch (const PlacementError&) {
      return false;
    }
  };
  if (!fits(0)) return std::nullopt;
  std::uint32_t low = 0, high = capacity;  // low fits, high does not
  while (high - low > 1) {
    const std::uint32_t middle = low + (high - low) / 2;
    (fits(middle) ? low : high) = middle;
  }
  return low;
}

}  // namespace

void Linker::place_code() {
  for (const PhysicalTile tile : tiles_) {
    TileCode& code = code_[tile];
    for (const auto& name : kernels_of(tile)) code.stubs[name] = kProbeCode;
    for (std::size_t k = 0; k < host_.batches.size(); ++k) code.host_code[k] = kProbeCode;
    for (const auto& [step, size] : rows_of(tile)) code.rows[step] = kProbeCode;
    for (std::size_t i = 0; i < program_.steps.size(); ++i) {
      if (program_.steps[i].kind == StepKind::kLoopBegin) code.loop_counters[i] = kProbeCode;
    }
    for (const auto& [loop, cursor] : cursors_of(tile)) code.cursors[loop][cursor] = kProbeCode;
    if (profiling()) {
      // While sizes are found: the largest buffer. Main's size does not
      // depend on it (a capacity below 2^20 is one setzi).
      code.sample_capacity = *options_.profile_samples;
      code.samples = schema::Allocation{
          0,
          std::string(schema::kSampleBufferName),
          "",
          kProbeCode,
          checked_cast<std::uint32_t>(schema::sample_buffer_bytes(code.sample_capacity),
                                      "sample buffer bytes"),
          0,
          schema::kLiveToEnd,
          schema::AllocationKind::kRuntime,
          schema::kNoProvenance};
    }
  }
  if (profiling()) report_.samples.emplace();
  // Tiles whose sample buffers do not fit: the first one's error, and what
  // would fit on all of them.
  std::optional<std::string> sample_failure;
  std::size_t tiles_short = 0;
  std::uint32_t fitting_records = std::numeric_limits<std::uint32_t>::max();
  std::vector<PhysicalTile> tiles_without_room;
  // Each tile's main program emitted at the probe addresses for its size
  // (and its sample records), on the pool: it reads only what the loop above
  // set. A tile's failure is rethrown when its turn comes below, so the
  // first error in tile order is the one reported.
  struct MainSize {
    std::uint32_t bytes = 0;
    std::uint64_t records = 0;
    std::exception_ptr failure;
  };
  std::vector<MainSize> main_sizes(tiles_.size());
  pool_.for_each(tiles_.size(), [&](std::size_t t) {
    try {
      const MainCode probe = emit_main(tiles_[t], staging_id(tiles_[t]));
      main_sizes[t].bytes = code_bytes(probe.code);
      main_sizes[t].records = probe.records;
    } catch (...) {
      main_sizes[t].failure = std::current_exception();
    }
  });
  // Sizes first (no size depends on an address), then one placement per tile.
  for (std::size_t t = 0; t < tiles_.size(); ++t) {
    const PhysicalTile tile = tiles_[t];
    TileCode& code = code_[tile];
    std::vector<AllocationRequest> requests;
    std::vector<std::function<void(std::uint32_t)>> assign;
    auto request = [&](std::string name, schema::AllocationKind kind, std::uint32_t size,
                       std::function<void(std::uint32_t)> set) {
      AllocationRequest r;
      r.name = std::move(name);
      r.kind = kind;
      r.size = size;
      r.alignment = 8;
      r.placement = MemoryPlacement::kStandard;
      requests.push_back(r);
      assign.push_back(std::move(set));
    };
    const MainSize& probe = main_sizes[t];
    if (probe.failure) std::rethrow_exception(probe.failure);
    request("main", schema::AllocationKind::kCode, probe.bytes,
            [&code](std::uint32_t a) { code.main = a; });
    // Host programs: every inactive batch shares one.
    std::optional<std::size_t> idle_request;
    for (std::size_t k = 0; k < host_.batches.size(); ++k) {
      const TileHostStep& step = host_.batches[k].step(tile);
      const auto program = step.program(kProbeCode);
      if (!step.active()) {
        if (!idle_request) {
          idle_request = requests.size();
          request("host idle", schema::AllocationKind::kCode, code_bytes(program.instructions),
                  [](std::uint32_t) {});
        }
        idle_batches_[tile].push_back(k);
        continue;
      }
      request(fmt::format("host batch {}", k), schema::AllocationKind::kCode,
              code_bytes(program.instructions),
              [&code, k](std::uint32_t a) { code.host_code[k] = a; });
      // The program was made with its packets at the probe address too.
      const std::uint32_t packets = TileHostStep::packet_bytes(program, kProbeCode);
      if (packets > 0) {
        request(fmt::format("host packets {}", k), schema::AllocationKind::kRuntime, packets,
                [&code, k](std::uint32_t a) { code.host_packets[k] = a; });
      }
    }
    for (const auto& [step, size] : rows_of(tile)) {
      request(row_name(step), schema::AllocationKind::kExchangeRow, size,
              [&code, step](std::uint32_t a) { code.rows[step] = a; });
    }
    for (auto& [step, counter] : code.loop_counters) {
      request(fmt::format("loop counter (step {})", step), schema::AllocationKind::kRuntime, 4,
              [&code, at = step](std::uint32_t a) { code.loop_counters[at] = a; });
    }
    for (auto& [loop, cursors] : code.cursors) {
      for (auto& [cursor, at] : cursors) {
        request(fmt::format("sequence pointer (step {}, {})", loop,
                            program_.buffers[cursor.buffer].name),
                schema::AllocationKind::kRuntime, 4,
                [&code, loop = loop, cursor = cursor](std::uint32_t a) {
                  code.cursors[loop][cursor] = a;
                });
      }
    }
    // With device code, the kernels that have it are linked into one
    // allocation (device_link.cpp) and called there; the rest keep stubs.
    std::set<std::string> kernels;
    for (const auto& [name, stub] : code.stubs) kernels.insert(name);
    if (options_.device != nullptr) {
      if (const auto link = device_link(kernels)) {
        code.linked.insert(link->kernels.begin(), link->kernels.end());
        request("device kernels", schema::AllocationKind::kCode, link->extent,
                [this, &code, kernels, link](std::uint32_t a) {
                  code.device = place_device_link(kernels, *link, a);
                  for (const auto& name : link->kernels)
                    code.stubs[name] = code.device->address_of(name);
                });
        requests.back().alignment = link->alignment;
      }
    }
    const std::size_t stubs = code.stubs.size() - code.linked.size();
    if (stubs != 0) {
      request("kernel stubs", schema::AllocationKind::kCode,
              checked_cast<std::uint32_t>(stubs * kStubBytes, "kernel stubs"),
              [&code](std::uint32_t a) {
                std::uint32_t at = a;
                for (auto& [name, stub] : code.stubs) {
                  if (code.linked.contains(name)) continue;
                  stub = at;
                  at += kStubBytes;
                }
              });
    }
    // The sample buffer, last: it takes what the code leaves. A run-time
    // word array like the loop counters, so with the code (region 0). It is
    // read over TDI after the run, not by a host exchange while code runs,
    // which is why the prior art aligned and padded its buffers to whole
    // elements (ipu21-target.md §2.2 rule 4).
    std::optional<std::size_t> sample_request;
    std::uint32_t sample_capacity_records = 0;
    if (profiling()) {
      sample_capacity_records = sample_capacity(probe.records);
      sample_request = requests.size();
      request(std::string(schema::kSampleBufferName), schema::AllocationKind::kRuntime,
              sample_buffer_size(sample_capacity_records),
              [&code, sample_capacity_records](std::uint32_t) {
                code.sample_capacity = sample_capacity_records;
              });
      auto& samples = *report_.samples;
      samples.max_records = std::max(samples.max_records, probe.records);
      samples.max_capacity = std::max(samples.max_capacity, sample_capacity_records);
      if (probe.records > sample_capacity_records) ++samples.tiles_dropping;
    }
    const auto split = code_end_.find(tile);
    const RegionSplit region =
        split == code_end_.end() ? RegionSplit{} : RegionSplit{split->second};
    std::vector<schema::Allocation> placed;
    try {
      placed = place_tile(tile, requests, region);
    } catch (const PlacementError& error) {
      if (!sample_request) {
        if (!region.code_end) throw;
        // The report lists what is live, not why region 0 is short: say
        // that the tile's data took its top.
        throw PlacementError(fmt::format(
            "{}\n  (code and exchange rows end below {:#x}: this tile's data outgrew region 1, so "
            "its bound weights took region 0's {} bytes above; the tile holds more than its memory)",
            error.what(), *region.code_end, target::kStandardRegion.end - *region.code_end));
      }
      // Say what would fit, on every tile, before giving up.
      if (!sample_failure) sample_failure = error.what();
      const auto fits =
          records_that_fit(tile, requests, *sample_request, region, sample_capacity_records);
      fitting_records = std::min(fitting_records, fits.value_or(0));
      if (!fits) tiles_without_room.push_back(tile);
      ++tiles_short;
      continue;
    }
    const std::uint32_t first_id = staging_id(tile) + 1;
    std::uint32_t high = 0;
    for (std::size_t r = 0; r < placed.size(); ++r) {
      assign[r](placed[r].address);
      schema::Allocation held = placed[r];
      held.id = checked_cast<std::uint32_t>(first_id + r, "allocation id");
      if (r == sample_request) code.samples = held;
      code_allocations_[tile].push_back(held);
      high = std::max(high, held.address + held.size - target::kLoadBase);
    }
    if (idle_request) {
      for (const std::size_t k : idle_batches_[tile])
        code.host_code[k] = placed[*idle_request].address;
    }
    report_.max_code_bytes = std::max(report_.max_code_bytes, high);
  }
  if (sample_failure) {
    std::string advice =
        tiles_without_room.empty()
            ? fmt::format("at most {} records fit on every one (--profile-samples={})",
                          fitting_records, fitting_records)
            : fmt::format(
                  "on {} of them ({}{}) not even the records' code fits beside an empty "
                  "buffer: those tiles' memory is full",
                  tiles_without_room.size(), tiles_without_room.front(),
                  tiles_without_room.size() > 1 ? ", …" : "");
    throw PlacementError(fmt::format(
        "{}\n  (with profile samples: {} tiles cannot hold their sample buffers of up to {} "
        "records; {})",
        *sample_failure, tiles_short, *options_.profile_samples, advice));
  }
}

}  // namespace tessera::compiler::emit::linking
