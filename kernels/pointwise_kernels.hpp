#pragma once
// Symbol names and registration of the element-wise and activation kernels
// (ABIs in kernels/README.md and at the top of each source file).

#include <string_view>

#include "kernels/registry.hpp"

namespace tessera::kernels {

// Element-wise products (kernels/float_mul.cpp).
inline constexpr std::string_view kMulF32 = "tessera_mul_f32";
inline constexpr std::string_view kMulF16 = "tessera_mul_f16";

void add_mul_kernels(KernelRegistry& registry);

// f32 <-> f16 conversion (kernels/convert.cpp).
inline constexpr std::string_view kConvertF32ToF16 = "tessera_convert_f32_to_f16";
inline constexpr std::string_view kConvertF16ToF32 = "tessera_convert_f16_to_f32";

void add_convert_kernels(KernelRegistry& registry);

// The bias add after a GEMM, on its C16 output (kernels/bias_add.cpp).
inline constexpr std::string_view kAddBiasC16F16 = "tessera_add_bias_c16_f16";
inline constexpr std::string_view kAddBiasC16F32 = "tessera_add_bias_c16_f32";

void add_bias_kernels(KernelRegistry& registry);

// tanh GeLU (kernels/activation.cpp).
inline constexpr std::string_view kGeluF16 = "tessera_gelu_f16";
inline constexpr std::string_view kGeluF32 = "tessera_gelu_f32";
inline constexpr std::string_view kGeluC16ToA16F16 = "tessera_gelu_c16_to_a16_f16";

void add_activation_kernels(KernelRegistry& registry);

}  // namespace tessera::kernels
