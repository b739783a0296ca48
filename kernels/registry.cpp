#include "kernels/registry.hpp"

#include <algorithm>
#include <stdexcept>

#include "kernels/attention.hpp"
#include "kernels/gemm.hpp"
#include "kernels/f143_kernels.hpp"
#include "kernels/layer_norm.hpp"
#include "kernels/layout_kernels.hpp"
#include "kernels/pointwise_kernels.hpp"
#include "kernels/row_normalisation.hpp"

namespace tessera::kernels {

const KernelRegistry& KernelRegistry::standard() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    add_runtime_helpers(r);
    add_elementwise_kernels(r);
    add_float_add_kernels(r);
    add_reduction_kernels(r);
    add_move_kernels(r);
    add_gemm_kernels(r);
    add_mul_kernels(r);
    add_convert_kernels(r);
    add_bias_kernels(r);
    add_activation_kernels(r);
    add_reblock_kernels(r);
    add_rearrange_kernels(r);
    add_f143_kernels(r);
    add_layer_norm_kernels(r);
    add_row_normalisation_kernels(r);
    add_attention_kernels(r);
    return r;
  }();
  return registry;
}

void KernelRegistry::add(KernelSpec spec) {
  if (find(spec.name) != nullptr) {
    throw std::logic_error("kernel '" + spec.name + "' is registered twice");
  }
  specs_.push_back(std::move(spec));
}

const KernelSpec* KernelRegistry::find(std::string_view name) const noexcept {
  const auto it = std::find_if(specs_.begin(), specs_.end(),
                               [&](const KernelSpec& spec) { return spec.name == name; });
  return it == specs_.end() ? nullptr : &*it;
}

}  // namespace tessera::kernels
