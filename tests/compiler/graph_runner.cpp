#include "tests/compiler/graph_runner.hpp"

#include "backends/sim/sim_transport.hpp"
#include "runtime/session.hpp"

#include <nlohmann/json.hpp>

namespace tessera::compiler::testing {

GraphRun run_on_simulator(const schema::Application& package, const TensorBytes& bindings,
                          const sim::SimOptions& options) {
  backends::SimTransportOptions transport_options;
  transport_options.sim = options;
  backends::SimTransport transport(target::Topology::c600(), transport_options);
  runtime::Session session(transport, package);
  GraphRun result;
  for (const auto& call : package.host_exchange.calls) {
    runtime::BindingViews inputs;
    for (const auto& name : call.input_bindings) inputs.emplace(name, bindings.at(name));
    for (auto& [name, bytes] : session.call(call.name, inputs)) result.outputs[name] = std::move(bytes);
  }
  session.finish();
  result.cycles = transport.chip().now();
  result.report = transport.chip().report().to_json().dump();
  if (options.trace) result.trace = transport.chip().trace().dump();
  result.checked_phases = transport.chip().exchange_stats().checked_phases;
  result.unchecked_phases = transport.chip().exchange_stats().unchecked_phases;
  return result;
}

}  // namespace tessera::compiler::testing
