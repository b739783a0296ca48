// The conformance cases on a real C600. They run when TESSERA_DEVICE names a
// device node, and are reported as skipped otherwise. docs/HARDWARE.md says
// how to run them.
//
//   TESSERA_DEVICE       the device node, e.g. /dev/ipu0
//   TESSERA_BOOTLOADER   the SDK's tile_bootloader_cc_ipu21.elf
//   TESSERA_IPUCFG       the configuration capture, e.g. c600-init.ipucfg
//   TESSERA_LOCK_DIR     optional: where the device lock file lives
//
// The compiled-graph cases (graph_cases.hpp) are registered here too. A
// compiled package is not hardware-loadable yet (its kernels are host
// models), so today each of them checks that the device refuses the package
// with that reason and then reports itself skipped, saying so; when compiled
// packages become loadable the check fails and asks for run_graph_case.

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <memory>

#include "backends/c600/c600_transport.hpp"
#include "conformance/cases.hpp"
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

  std::unique_ptr<runtime::Transport> transport_;
};

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

TEST_P(C600GraphConformance, RefusedUntilKernelsRunOnHardware) {
  const GraphCase& graph_case = GetParam();
  const std::string refusal = expect_graph_case_refused(*transport_, graph_case);
  if (HasFailure()) return;
  GTEST_SKIP() << graph_case.name << " not run: compiled packages are not hardware-loadable yet; "
               << "the device refused it as expected (" << refusal << ")";
}

INSTANTIATE_TEST_SUITE_P(GraphCases, C600GraphConformance, ::testing::ValuesIn(graph_cases()),
                         [](const ::testing::TestParamInfo<GraphCase>& case_info) {
                           return case_info.param.name;
                         });

}  // namespace
}  // namespace tessera::conformance
