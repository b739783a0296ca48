// Linking (link.hpp): the six steps in order. Each step is defined in its
// own file (linker.hpp names them); this file only runs them.
#include "compiler/emit/link.hpp"

#include "compiler/emit/linker.hpp"

namespace tessera::compiler::emit {
namespace linking {

schema::Application Linker::run() {
  app_.compiler_version = options_.compiler_version;
  find_lifetimes();
  rounds_ = phase_rounds(program_.steps);
  find_tiles();
  place_data();
  make_bindings();
  plan_host();
  schedule_exchanges(/*final=*/false);
  place_code();
  schedule_exchanges(/*final=*/true);
  emit_tiles();
  app_.debug.provenance = program_.provenance;
  report_.package_tiles = tiles_.size();
  report_.host_batches = host_.batches.size();
  return std::move(app_);
}

}  // namespace linking

schema::Application link_program(const lower::Program& program, const LinkOptions& options,
                                 LinkReport* report) {
  LinkReport local;
  return linking::Linker(program, options, report != nullptr ? *report : local).run();
}

}  // namespace tessera::compiler::emit
