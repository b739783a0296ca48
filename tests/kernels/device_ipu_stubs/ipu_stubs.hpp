#pragma once
// Stand-ins for what popc --target ipu21 provides, so a host clang can
// parse and type-check the __IPU__ branches of kernels/device/ sources
// (-fsyntax-only: nothing is compiled or assembled). Declarations only, with
// the signatures Graphcore's public codelet sources use; a check that the
// device branches are well-formed C++, not that they are right for silicon.
extern "C" void* __builtin_ipu_get_vertex_base();
extern "C" unsigned __builtin_ipu_get_worker_id();
extern "C" unsigned __builtin_ipu_get_scount_l();
