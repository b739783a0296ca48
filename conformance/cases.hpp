#pragma once
// Backend-agnostic conformance cases: each takes an open runtime::Transport
// and checks one behaviour every backend must share. They use GoogleTest
// assertions, so they run inside a TEST. The c600 suite
// (c600_conformance_test.cpp) runs them on a real device when TESSERA_DEVICE
// names one; tests/backends/c600 runs them on the fake device.

#include "runtime/transport.hpp"
#include "schema/model.hpp"

namespace tessera::conformance {

// A hardware-loadable package in which every tile of `topology` runs only the
// entry trampoline `setzi $m0, 0; br $m0` at 0x4C010: a branch to address 0,
// which halts the supervisor (ipu21-target.md §3, "Completion").
schema::Application halting_application(const target::Topology& topology);

// After open, both HSP marks read 0 (the configuration replay's rule).
void marks_read_zero_after_open(runtime::Transport& transport);
// The halting package loads, starts and halts on every tile without faults.
void halting_program_halts(runtime::Transport& transport);
// SRAM written through the debug path reads back, aligned and unaligned, on
// the first, last and a middle tile (run after halting_program_halts).
void sram_round_trip(runtime::Transport& transport);
// A package that is not hardware-loadable is refused with its reason (c600 only).
void refuses_emulated_package(runtime::Transport& transport);

}  // namespace tessera::conformance
