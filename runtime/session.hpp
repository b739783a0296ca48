#pragma once
// runtime::Session: one package on one Transport, and the host-call protocol
// run once for every backend (ARCHITECTURE.md decision 6; the protocol is
// documented in docs/RUNTIME.md).
//
// Lifecycle:
//   Session session(transport, application);   // validates, loads, starts,
//                                               // attaches the host pages and
//                                               // gives the startup credit
//   auto out = session.call("run", inputs);     // a host call, by name
//   session.finish();                           // waits for the device to halt
//
// A call moves its input bindings host → device and its output bindings
// device → host in batches through fixed 4 KiB page slots; each batch is two
// GS2 rendezvous (entry and completion), and the host copies between the
// caller's tensors and the slots only between rendezvous. Inputs are checked
// (names, sizes) before anything is written, so a bad call fails cleanly and
// the session stays usable. Device trouble during a call is a DeviceError
// carrying the device's faults, or a TimeoutError carrying where every tile
// waits; after either the device is in an unknown state and the session must
// be rebuilt.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/host_pages.hpp"
#include "runtime/tensor.hpp"
#include "runtime/transport.hpp"
#include "schema/model.hpp"
#include "schema/profile.hpp"
#include "support/error.hpp"

namespace tessera::runtime {

// The device stopped the protocol: a fault, a breakpoint stop, or a halt
// where a rendezvous was due. what() names the call and phase and every fault.
class DeviceError : public Error {
 public:
  DeviceError(std::string message, std::vector<DeviceFault> faults)
      : Error(std::move(message)), faults_(std::move(faults)) {}
  const std::vector<DeviceFault>& faults() const noexcept { return faults_; }

 private:
  std::vector<DeviceFault> faults_;
};

// A wait passed its limit, or the device can make no more progress. what()
// includes where each tile waits (from debug reads).
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// The range of SessionOptions' timeouts: at least a millisecond (a limit of
// 0 would fail every wait), at most a day, so that no deadline computed
// from one can overflow the clock.
inline constexpr std::chrono::milliseconds kMinWaitTimeout{1};
inline constexpr std::chrono::milliseconds kMaxWaitTimeout = std::chrono::hours(24);

struct SessionOptions {
  // How long one rendezvous may take (driver-host-protocol.md §5.8: 10 s).
  // Both timeouts lie in [kMinWaitTimeout, kMaxWaitTimeout] (UsageError).
  std::chrono::milliseconds rendezvous_timeout{10'000};
  // How long finish() waits for the device to halt.
  std::chrono::milliseconds halt_timeout{10'000};
  // Before every HSP write the host waits a seeded-uniform 0..max µs
  // (§5.8's write jitter): the device must wait at each rendezvous, so the
  // results may not change. 0 disables it.
  std::uint32_t write_jitter_max_us = 0;
  std::uint64_t write_jitter_seed = 1;
};

// Bytes of one binding, in its row-major host layout.
using BindingBytes = std::map<std::string, std::vector<std::uint8_t>, std::less<>>;
using BindingViews = std::map<std::string, std::span<const std::uint8_t>, std::less<>>;
using TensorMap = std::map<std::string, HostTensor, std::less<>>;

class Session {
 public:
  // Validates the application (schema::validate) and its host protocol, maps
  // the host pages, then resets the device, loads every tile, applies the
  // configuration writes, starts the tiles, attaches the host pages and runs
  // the startup rendezvous. When any step fails, the pages attached so far
  // are detached before the error leaves the constructor.
  Session(Transport& transport, schema::Application application, SessionOptions options = {});
  ~Session() = default;  // the host pages detach themselves
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const schema::Application& application() const noexcept { return application_; }
  Transport& transport() noexcept { return transport_; }

  // Any binding (input, output or weight) by name; UsageError listing the
  // names when there is none.
  const schema::Binding& binding(std::string_view name) const;
  // The host call `name`; UsageError listing the calls when there is none.
  const schema::HostCall& host_call(std::string_view name) const;
  // The calls in the order the device program expects them.
  std::vector<std::string> call_names() const;

  // Runs host call `name`: every binding the call reads must be in `inputs`
  // with exactly its byte size, and nothing else. Returns the output
  // bindings the call writes.
  BindingBytes call(std::string_view name, const BindingViews& inputs);

  // The same with typed tensors: each input is checked against its binding
  // (dtype and shape; an error naming both) before anything runs, and each
  // output comes back with its binding's dtype and shape.
  TensorMap invoke(std::string_view name, const TensorMap& inputs);

  // Runs entry point `name`: its external syncs, one rendezvous each.
  void run_entry_point(std::string_view name);

  // Waits until every context of every tile has halted.
  void finish();

  // Where each tile is (pc and what it waits for), grouped, for people.
  std::string where_tiles_wait();
  std::vector<DeviceFault> faults() { return transport_.faults(); }
  std::optional<schema::Profile> profile() { return transport_.profile(); }

  // Rendezvous completed so far (the startup one included).
  std::uint64_t rendezvous_count() const noexcept { return rendezvous_; }

 private:
  struct Payload;
  void start();
  void rendezvous(std::string_view what);
  void write_credit();
  [[noreturn]] void fail_wait(WaitOutcome outcome, std::string_view what);
  HostBuffer& page(std::uint32_t index);

  Transport& transport_;
  schema::Application application_;
  SessionOptions options_;
  std::optional<HostPages> pages_;  // mapped once the package is validated
  std::uint64_t rendezvous_ = 0;
  std::uint64_t jitter_state_ = 0;
};

}  // namespace tessera::runtime
