// Linking (link.hpp): the six steps in order. Each step is defined in its
// own file (linker.hpp names them); this file only runs them.
#include "compiler/emit/link.hpp"

#include <fmt/format.h>

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
  // Hardware-loadable only when there is device code and every call of
  // every tile resolved to it (issue 21 item 5).
  if (options_.device != nullptr && every_call_linked()) {
    app_.hardware_loadable = true;
    app_.not_loadable_reason.clear();
  } else {
    app_.not_loadable_reason = not_loadable_reason();
  }
  app_.debug.provenance = program_.provenance;
  report_.package_tiles = tiles_.size();
  report_.host_batches = host_.batches.size();
  return std::move(app_);
}

// Why the package cannot run on a C600 (issue 21 item 5): the first kernel
// call in program order without device code — every call, when the build
// has none; a package that calls no kernel keeps the schema's default reason.
std::string Linker::not_loadable_reason() const {
  const char* why = options_.device == nullptr ? "compiled without --sdk: build with a Poplar SDK to link popc-built device kernels"
                                               : "no source in kernels/device/ defines it";
  for (const lower::Step& step : program_.steps) {
    for (const auto& [tile, runs] : step.runs) {
      for (const lower::KernelRun& run : runs) {
        if (has_device_code(run.kernel)) continue;
        const std::string op = run.provenance < program_.provenance.size()
                                   ? fmt::format(" for {}", program_.provenance[run.provenance])
                                   : std::string();
        return fmt::format(
            "kernels are emulated only: kernel '{}' (first called on {}{}) has no linked device "
            "code ({})",
            run.kernel, physical(tile), op, why);
      }
    }
  }
  // Only a helper the link step adds (the staging copies) lacks it.
  for (const auto& [tile, code] : code_) {
    for (const auto& [name, target] : code.stubs) {
      if (!code.linked.contains(name)) {
        return fmt::format(
            "kernels are emulated only: kernel '{}' (first called on {}) has no linked device "
            "code ({})",
            name, tile, why);
      }
    }
  }
  return schema::Application{}.not_loadable_reason;
}

}  // namespace linking

unsigned default_link_threads() noexcept {
  return std::min(ThreadPool::machine_threads(), kMaxLinkThreads);
}

schema::Application link_program(const lower::Program& program, const LinkOptions& options,
                                 LinkReport* report) {
  if (options.threads > kMaxLinkThreads) {
    throw UsageError(fmt::format("link threads: {} is outside 1..{} (0: the machine's cores)",
                                 options.threads, kMaxLinkThreads));
  }
  LinkReport local;
  return linking::Linker(program, options, report != nullptr ? *report : local).run();
}

}  // namespace tessera::compiler::emit
