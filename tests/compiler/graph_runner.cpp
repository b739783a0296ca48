#include "tests/compiler/graph_runner.hpp"

#include "backends/sim/sim_transport.hpp"
#include "runtime/session.hpp"

namespace tessera::compiler::testing {

GraphRun run_on_simulator(const schema::Application& package, const TensorBytes& bindings) {
  backends::SimTransport transport;
  runtime::Session session(transport, package);
  GraphRun result;
  for (const auto& call : package.host_exchange.calls) {
    runtime::BindingViews inputs;
    for (const auto& name : call.input_bindings) inputs.emplace(name, bindings.at(name));
    for (auto& [name, bytes] : session.call(call.name, inputs)) result.outputs[name] = std::move(bytes);
  }
  session.finish();
  result.cycles = transport.chip().now();
  result.checked_phases = transport.chip().exchange_stats().checked_phases;
  result.unchecked_phases = transport.chip().exchange_stats().unchecked_phases;
  return result;
}

}  // namespace tessera::compiler::testing
