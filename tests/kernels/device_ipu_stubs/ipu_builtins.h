#pragma once
// Stand-in for popc's <ipu_builtins.h> (see ipu_stubs.hpp): the builtins the
// device sources' fast paths call, declared with the signatures poplibs'
// IPU21 codelets use them with.
#include <ipu_vector_math>
extern "C" void __builtin_ipu_put(unsigned value, unsigned csr);
extern "C" void __builtin_ipu_uput(unsigned value, unsigned csr);
extern "C" void __builtin_ipu_ld64putcs(unsigned cwei);
extern "C" void __builtin_ipu_ld128putcs(unsigned cwei);
extern "C" uint2 __builtin_ipu_tapack(const void* in, const void* partials, void* out);
extern "C" half2 __builtin_ipu_f16v2exp(half2 x);
half2 __builtin_ipu_tanh(half2 x);
