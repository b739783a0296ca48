#pragma once
// Runs a compiled package on the simulator backend through runtime::Session,
// the way `tessera run` does: "load_parameters" (when present) with the
// parameters, then "run" with the host inputs. Test code only.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schema/model.hpp"
#include "sim/options.hpp"
#include "tests/testing/graph_reference.hpp"

namespace tessera::compiler::testing {

using tessera::testing::TensorBytes;

struct GraphRun {
  TensorBytes outputs;
  std::uint64_t cycles = 0;  // simulated cycles until every tile halted
  std::string report;        // the run report (cycles per tile), as JSON text
  std::string trace;         // the Chrome trace, as JSON text (with options.trace)
  // Internal exchange phases the simulator compared with the package's plan,
  // and those the package left unchecked.
  std::uint64_t checked_phases = 0;
  std::uint64_t unchecked_phases = 0;
};

// `bindings` holds every host input and parameter by name.
GraphRun run_on_simulator(const schema::Application& package, const TensorBytes& bindings,
                          const sim::SimOptions& options = {});

}  // namespace tessera::compiler::testing
