// The conformance cases on a real C600. They run when TESSERA_DEVICE names a
// device node, and are reported as skipped otherwise. docs/HARDWARE.md says
// how to run them.
//
//   TESSERA_DEVICE       the device node, e.g. /dev/ipu0
//   TESSERA_BOOTLOADER   the SDK's tile_bootloader_cc_ipu21.elf
//   TESSERA_IPUCFG       the configuration capture, e.g. c600-init.ipucfg
//   TESSERA_LOCK_DIR     optional: where the device lock file lives
//   TESSERA_POPLAR_SDK   the Poplar SDK (DIR/bin/popc, DIR/bin/pop-objdump)
//                        that builds the device kernels of the compiled cases
//
// The compiled-graph cases (graph_cases.hpp), one case per kernel family and
// a tiny SigLIP tower (device_cases.hpp) are compiled with device kernels
// (as `tessera compile --sdk`; the kernel cache is the default one,
// $TESSERA_KERNEL_CACHE or ~/.cache/tessera/kernels), run on the device and
// compared with the CPU reference and with the host models (the same graph
// compiled without device code, run on the simulator in this process).

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <memory>

#include "backends/c600/c600_transport.hpp"
#include "backends/sim/sim_transport.hpp"
#include "compiler/elf/poplar_tools.hpp"
#include "conformance/cases.hpp"
#include "conformance/device_cases.hpp"
#include "conformance/graph_cases.hpp"

namespace tessera::conformance {
namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

class C600Device {
 protected:
  // Opens the device, or skips the test when there is none.
  void open() {
    const std::string device = environment("TESSERA_DEVICE");
    struct stat info {};
    if (device.empty() || ::stat(device.c_str(), &info) != 0 || !S_ISCHR(info.st_mode)) {
      GTEST_SKIP() << "no C600: set TESSERA_DEVICE to a device node (e.g. /dev/ipu0) to run "
                      "the conformance cases on hardware";
    }
    backends::c600::C600Options options;
    options.device = device;
    options.bootloader = environment("TESSERA_BOOTLOADER");
    options.ipucfg = environment("TESSERA_IPUCFG");
    options.lock_directory = environment("TESSERA_LOCK_DIR");
    ASSERT_FALSE(options.bootloader.empty()) << "TESSERA_BOOTLOADER must name the bootloader ELF";
    ASSERT_FALSE(options.ipucfg.empty()) << "TESSERA_IPUCFG must name the .ipucfg capture";
    transport_ = backends::c600::open_c600(options);
  }

  // The device kernels from $TESSERA_POPLAR_SDK's popc, built once per run;
  // nullptr (and a failure saying so) when the variable is unset.
  static DeviceKernelBuild* device_build() {
    const std::string sdk = environment(compiler::elf::kPoplarSdkVariable);
    if (sdk.empty()) {
      ADD_FAILURE() << compiler::elf::kPoplarSdkVariable
                    << " must name the Poplar SDK (DIR/bin/popc): the compiled cases are built "
                       "with device kernels";
      return nullptr;
    }
    static DeviceKernelBuild build(sdk, compiler::elf::default_kernel_cache_directory());
    return &build;
  }

  // The open device, once (run_device_graph_case opens it after compiling).
  OpenTransport device_once() {
    return [this] { return std::move(transport_); };
  }

  std::unique_ptr<runtime::Transport> transport_;
};

std::unique_ptr<runtime::Transport> open_sim() { return std::make_unique<backends::SimTransport>(); }

class C600Conformance : public ::testing::Test, protected C600Device {
 protected:
  void SetUp() override { open(); }
};

class C600GraphConformance : public ::testing::TestWithParam<GraphCase>, protected C600Device {
 protected:
  void SetUp() override { open(); }
};

TEST_F(C600Conformance, MarksReadZeroAfterOpen) { marks_read_zero_after_open(*transport_); }

TEST_F(C600Conformance, RefusesEmulatedPackage) { refuses_emulated_package(*transport_); }

TEST_F(C600Conformance, HaltingProgramHaltsAndSramRoundTrips) {
  halting_program_halts(*transport_);
  if (HasFailure()) return;
  sram_round_trip(*transport_);
}

TEST_P(C600GraphConformance, WithDeviceKernelsMatchesTheHostModelsAndTheReference) {
  const GraphCase& graph_case = GetParam();
  SCOPED_TRACE(graph_case.exercises);
  DeviceKernelBuild* build = device_build();
  if (build == nullptr) return;
  run_device_graph_case(device_once(), open_sim, *build, graph_case,
                        HostModelMatch::kWithinReference);
}

class C600KernelFamilyConformance : public ::testing::TestWithParam<KernelFamilyCase>,
                                    protected C600Device {
 protected:
  void SetUp() override { open(); }
};

TEST_P(C600KernelFamilyConformance, WithDeviceKernelsMatchesTheHostModelsAndTheReference) {
  const KernelFamilyCase& family_case = GetParam();
  SCOPED_TRACE(family_case.graph.exercises);
  DeviceKernelBuild* build = device_build();
  if (build == nullptr) return;
  run_device_graph_case(device_once(), open_sim, *build, family_case.graph,
                        HostModelMatch::kWithinReference, family_case.family,
                        !family_case.unreachable.empty());
}

INSTANTIATE_TEST_SUITE_P(KernelFamilies, C600KernelFamilyConformance,
                         ::testing::ValuesIn(kernel_family_cases()),
                         [](const ::testing::TestParamInfo<KernelFamilyCase>& case_info) {
                           return case_info.param.graph.name;
                         });

TEST_F(C600Conformance, TinySiglipWithDeviceKernelsMatchesTheHostModelsAndTheReference) {
  DeviceKernelBuild* build = device_build();
  if (build == nullptr) return;
  run_device_siglip_case(device_once(), open_sim, *build, HostModelMatch::kWithinReference);
}

INSTANTIATE_TEST_SUITE_P(GraphCases, C600GraphConformance, ::testing::ValuesIn(graph_cases()),
                         [](const ::testing::TestParamInfo<GraphCase>& case_info) {
                           return case_info.param.name;
                         });

}  // namespace
}  // namespace tessera::conformance
