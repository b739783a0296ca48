// Step 2 of linking: the program's bindings as package bindings (slices at
// their placed addresses), host_io's batches for every host call, and the H2D
// staging buffer those batches copy through.
#include "compiler/emit/linker.hpp"

namespace tessera::compiler::emit::linking {

schema::Binding Linker::make_binding(const lower::HostBinding& b) const {
  schema::Binding result{b.name, b.type.dtype(), b.type.shape, {}};
  for (const auto& slice : b.slices) {
    result.slices.push_back(schema::RegionSlice{physical(slice.tile),
                                                address({slice.tile, slice.buffer, slice.offset}),
                                                slice.host_offset, slice.size});
  }
  return result;
}

void Linker::make_bindings() {
  for (const auto& b : program_.inputs) app_.inputs.push_back(make_binding(b));
  for (const auto& b : program_.outputs) app_.outputs.push_back(make_binding(b));
  for (const auto& b : program_.weights) app_.weights.push_back(make_binding(b));
}

void Linker::plan_host() {
  std::vector<HostCallRequest> requests;
  for (std::size_t c = 0; c < program_.calls.size(); ++c) {
    const auto& call = program_.calls[c];
    const auto command = checked_cast<std::uint32_t>(c, "host call");
    HostCallRequest request{call.name, command, call.inputs, call.outputs, {}, {}};
    schema::HostCall layout;
    layout.name = call.name;
    layout.input_bindings = call.inputs;
    layout.output_bindings = call.outputs;
    for (const auto side : {schema::CallSide::kInput, schema::CallSide::kOutput}) {
      for (const auto& part : schema::call_payload(app_, layout, side)) {
        for (const auto& slice : part.binding->slices) {
          // A tensor whose size is not whole words ends in payload padding
          // (schema::call_payload) and in its allocation's padding.
          const auto size =
              checked_cast<std::uint32_t>((slice.size + 3) / 4 * 4, "host slice bytes");
          HostTransfer transfer{slice.tile, slice.tile_address, part.offset + slice.file_offset,
                                size};
          (side == schema::CallSide::kInput ? request.inputs : request.outputs).push_back(transfer);
        }
      }
    }
    requests.push_back(std::move(request));
  }
  host_ = plan_host_io(requests, tiles_);
  app_.host_exchange = host_.exchange;
  for (std::size_t k = 0; k < host_.batches.size(); ++k) {
    const auto& batch = host_.batches[k];
    std::size_t call = 0;
    while (program_.calls[call].name != batch.call) ++call;
    batches_of_[{call, batch.input}].push_back(k);
  }
}

// The staging buffer the host I/O lowering copies through (one per tile, in
// the reserved exchange window): H2D data lands there, D2H data of several
// allocations is gathered there.
schema::Allocation Linker::h2d_staging(std::uint32_t id) const {
  return schema::Allocation{id,
                            "h2d staging",
                            "",
                            target::kH2dStaging,
                            target::kH2dStagingMaxBytes,
                            0,
                            schema::kLiveToEnd,
                            schema::AllocationKind::kStaging,
                            schema::kNoProvenance};
}

bool Linker::in_staging(std::uint32_t address) {
  return address >= target::kH2dStaging &&
         address < target::kH2dStaging + target::kH2dStagingMaxBytes;
}

}  // namespace tessera::compiler::emit::linking
