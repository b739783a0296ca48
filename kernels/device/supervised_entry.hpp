#pragma once
// TESSERA_DEVICE_SUPERVISED_KERNEL(symbol, Program, portable): a registry
// symbol whose fast path needs the supervisor between worker runs — the AMP
// GEMM, which loads the shared weight registers (CWEI, supervisor-only
// putcs loads) before each run. `Program` is a type with
//   struct Step;                       what one run of the six workers reads
//                                      (8-aligned: it is runall's vertex base)
//   template <typename Workers>
//   static void supervise(const Registers&, TileMemory&, Workers&);
//   static void work(const Step&, unsigned worker);
// where supervise calls workers.wait() (every worker of the last run has
// exited) before it touches anything a running worker reads (CWEI, the
// Step), workers.run(step) to start all six on `step`, and ends with
// workers.wait(). `portable` is the plain worker body of the same kernel
// (device_abi.hpp's TESSERA_DEVICE_KERNEL) for builds without fast paths.
//
// - popc (`__IPU__`, fast paths): the registry symbol is a supervisor stub in
//   assembly — it stores $m2…$m9 and $m10 in a 40-byte frame on the
//   supervisor stack, calls `symbol_supervisor` with $m0 = the frame, then
//   returns through $m10 — and `symbol_supervisor` (C++, target
//   "supervisor") builds the Registers and runs Program::supervise, whose
//   run is `setzi` + `runall` of `symbol_worker` on the Step and whose wait is
//   `sync` TEXCH_SYNCZONE_LOCAL (poplibs' RUN_ALL and syncWorkers [SDK]).
//   [INF] that popc passes a supervisor function's first pointer argument
//   in $m0, as Poplar passes a supervisor vertex's state ("supervisor base
//   is $m0", poplibs conv_partial_1x1 [SDK]); popc's C calling convention
//   for supervisor code is not published.
// - the host with the emulation: the portable entry runs supervise with
//   the emulation's workers (ipu21::run_workers runs the six bodies in turn,
//   each in its own accumulator context; ipu21::wait_workers), and the
//   emulation refuses a CWEI load or a return while workers may still run.
// - the host without fast paths: TESSERA_DEVICE_KERNEL(symbol, portable).

#include "kernels/device/device_abi.hpp"
#include "kernels/device/ipu_fast_paths.hpp"

#if TESSERA_DEVICE_FAST_PATHS && defined(__IPU__)
#include <arch/gc_tile_defines.h>  // TEXCH_SYNCZONE_LOCAL [SDK]

#define TESSERA_DEVICE_SUPERVISED_KERNEL(symbol, program, portable)                             \
  extern "C" __attribute__((target("worker")))                                                  \
  __attribute__((colossus_vertex)) bool symbol##_worker() {                                     \
    const auto* step = static_cast<const program::Step*>(__builtin_ipu_get_vertex_base());      \
    program::work(*step, __builtin_ipu_get_worker_id());                                        \
    return true;                                                                                \
  }                                                                                             \
  namespace tessera::device::supervised {                                                       \
  struct symbol##_workers {                                                                     \
    void wait() { asm volatile("sync %[zone]" ::[zone] "i"(TEXCH_SYNCZONE_LOCAL) : "memory"); } \
    void run(const program::Step& step) {                                                       \
      unsigned entry;                                                                           \
      asm volatile("setzi %[entry], " TESSERA_DEVICE_STRINGIFY(symbol) "_worker\n\t"            \
                   "runall %[entry], %[step], 0"                                                \
                   : [entry] "=&r"(entry)                                                       \
                   : [step] "r"(&step)                                                          \
                   : "memory");                                                                 \
    }                                                                                           \
  };                                                                                            \
  }                                                                                             \
  extern "C" __attribute__((target("supervisor"))) void symbol##_supervisor(                    \
      const std::uint32_t* frame) {                                                             \
    ::tessera::device::Registers registers;                                                     \
    for (unsigned i = 0; i < 8; ++i) registers.m[2 + i] = frame[i];                             \
    ::tessera::device::TileMemory memory;                                                       \
    ::tessera::device::supervised::symbol##_workers workers;                                    \
    program::supervise(registers, memory, workers);                                             \
  }                                                                                             \
  asm(".section .text." TESSERA_DEVICE_STRINGIFY(symbol) ",\"ax\",@progbits\n"                  \
      ".globl " TESSERA_DEVICE_STRINGIFY(symbol) "\n"                                           \
      ".type " TESSERA_DEVICE_STRINGIFY(symbol) ", @function\n"                                 \
      ".align 8\n"                                                                              \
      ".supervisor\n" TESSERA_DEVICE_STRINGIFY(symbol) ":\n"                                    \
      "  add $m11, $m11, -40\n"                                                                 \
      "  st32 $m2, $m11, $mzero, 0\n"                                                           \
      "  st32 $m3, $m11, $mzero, 1\n"                                                           \
      "  st32 $m4, $m11, $mzero, 2\n"                                                           \
      "  st32 $m5, $m11, $mzero, 3\n"                                                           \
      "  st32 $m6, $m11, $mzero, 4\n"                                                           \
      "  st32 $m7, $m11, $mzero, 5\n"                                                           \
      "  st32 $m8, $m11, $mzero, 6\n"                                                           \
      "  st32 $m9, $m11, $mzero, 7\n"                                                           \
      "  st32 $m10, $m11, $mzero, 8\n"                                                          \
      "  add $m0, $m11, 0\n"                                                                    \
      "  call $m10, " TESSERA_DEVICE_STRINGIFY(symbol) "_supervisor\n"                         \
      "  ld32 $m10, $m11, $mzero, 8\n"                                                          \
      "  add $m11, $m11, 40\n"                                                                  \
      "  br $m10\n"                                                                             \
      ".size " TESSERA_DEVICE_STRINGIFY(symbol) ", .-" TESSERA_DEVICE_STRINGIFY(symbol) "\n"    \
      ".section .text\n");
#elif TESSERA_DEVICE_FAST_PATHS
#define TESSERA_DEVICE_SUPERVISED_KERNEL(symbol, program, portable)                              \
  namespace tessera::device::entry {                                                             \
  void symbol(const ::tessera::device::Registers& call, ::tessera::device::TileMemory& memory) { \
    ::tessera::device::Registers registers;                                                      \
    for (unsigned i = 2; i <= 9; ++i) registers.m[i] = call.m[i];                                \
    TESSERA_DEVICE_EMULATION_CALL_SCOPE();                                                       \
    ::ipu21::EmulatedWorkers<program> workers;                                                   \
    try {                                                                                        \
      program::supervise(registers, memory, workers);                                            \
    } catch (...) {                                                                              \
      ::ipu21::supervisor_aborts();                                                              \
      throw;                                                                                     \
    }                                                                                            \
    ::ipu21::supervisor_returns();                                                               \
  }                                                                                              \
  }
#else
#define TESSERA_DEVICE_SUPERVISED_KERNEL(symbol, program, portable) \
  TESSERA_DEVICE_KERNEL(symbol, portable)
#endif
