#pragma once
// Conformance with device kernels (issue 21 item 7): graphs compiled as
// `tessera compile --sdk` compiles them — every kernel call linked to the
// device code popc built from kernels/device/, the package hardware-loadable
// — run on a backend and compared with the host models' results.
//
// One case per kernel family (one per kernels/device/ source: each case's
// package must call at least one kernel of its family, checked), and a tiny
// SigLIP tower. Every case is checked twice:
//   against the CPU reference — the graph reference interpreter's bounds
//     (tests/testing/graph_reference.hpp: the same bits where the semantics
//     is exact, docs/GRAPH_FORMAT.md's bound where it depends on the plan),
//     or, for SigLIP, the FP32 tower (models/siglip/reference.hpp) within the
//     f16 bar of tests/models/siglip_graph_test.cpp;
//   against the host models — the same graph compiled without device code
//     (the kernels are the host models) and run on `host_models` (a
//     SimTransport): HostModelMatch::kBitwise requires the same bytes (the
//     simulator runs the host models at the linked entries, so any difference
//     is the link's or the package's fault); kWithinReference (silicon)
//     requires the same bytes where the reference's bound is exact and
//     otherwise prints how many elements differ from the host models — the
//     device kernels' fast paths are held to the model's bound there, not to
//     its bits (kernels/README.md, "Device sources").

#include <cstddef>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/elf/device_sources.hpp"
#include "compiler/elf/kernel_cache.hpp"
#include "conformance/graph_cases.hpp"
#include "runtime/transport.hpp"
#include "schema/model.hpp"

namespace tessera::conformance {

// popc of an SDK (the real one, or tests/compiler/elf/fake_sdk), its kernel
// cache in `cache`, and the device sources of this source tree
// (compiler::elf::default_device_source_root()). InputError naming a missing tool.
class DeviceKernelBuild {
 public:
  DeviceKernelBuild(const std::filesystem::path& sdk, const std::filesystem::path& cache);
  DeviceKernelBuild(const DeviceKernelBuild&) = delete;
  DeviceKernelBuild& operator=(const DeviceKernelBuild&) = delete;

  compiler::emit::DeviceCode* code() { return &sources_; }
  // The family (kernels/device/ source stem, "elementwise") defining `kernel`; empty when none.
  std::string family_of(std::string_view kernel) const;
  // Every family with at least one kernel.
  std::set<std::string> families() const;

 private:
  compiler::elf::KernelCache cache_;
  compiler::elf::DeviceSources sources_;
  std::map<std::string, std::string, std::less<>> families_;  // kernel → family
};

struct KernelFamilyCase {
  std::string family;  // the kernels/device/ source whose kernels the package must call
  GraphCase graph;
  // Empty when the compiler calls the family; otherwise why no compiled graph
  // can reach it yet — the case then checks that the package does NOT call it,
  // so the day the compiler starts to, the case says to require it instead.
  std::string unreachable = {};
};

void PrintTo(const KernelFamilyCase& family_case, std::ostream* os);

// One case per kernel family, in a fixed order (conformance/README.md).
const std::vector<KernelFamilyCase>& kernel_family_cases();

enum class HostModelMatch { kBitwise, kWithinReference };

// Opens a backend. The device and the host models are opened one after the
// other, each closed before the next opens (the simulator allows one chip per
// process).
using OpenTransport = std::function<std::unique_ptr<runtime::Transport>()>;

struct DeviceCaseRun {
  std::set<std::string> families_called;  // by the device-linked package
  std::size_t differing_from_host_models = 0;
  std::uint64_t compiled_bytes = 0;
};

// Compiles the case with `device`'s kernels (expects a hardware-loadable
// package) and without them, runs the first on `open_device()` and the second
// on `open_host_models()`, and checks both comparisons above (GoogleTest assertions:
// run it inside a TEST). `family`, when not empty, must be among the
// families the linked package calls (or, with `family_unreachable`, must not be).
DeviceCaseRun run_device_graph_case(const OpenTransport& open_device,
                                    const OpenTransport& open_host_models, DeviceKernelBuild& device,
                                    const GraphCase& graph_case, HostModelMatch match,
                                    std::string_view family = {},
                                    bool family_unreachable = false);

// The tiny SigLIP tower (tests/models/siglip_testing.hpp's tiny_config: two
// layers, hidden 64, two heads, a 30-pixel image of 8-pixel patches) at f16,
// random weights (seed 7), batch 1, on `tiles` tiles: the same two checks,
// the reference's being cosine ≥ 0.9999 and max |error| ≤ 0.02 on both outputs.
DeviceCaseRun run_device_siglip_case(const OpenTransport& open_device,
                                     const OpenTransport& open_host_models,
                                     DeviceKernelBuild& device,
                                     HostModelMatch match, std::uint32_t tiles = 64);

}  // namespace tessera::conformance
