#pragma once
// Every registry symbol that has a device source here, one X-macro list so
// the host's table of portable entries (device_kernels.cpp) and the
// declarations cannot drift apart. Registry symbols without a device source
// must be listed in tests/kernels/device_kernels_missing.inc (today none).
#define TESSERA_DEVICE_KERNEL_LIST(X)          \
  X(tessera_worker_barrier)                    \
  X(tessera_sample_cycles)                     \
  X(tessera_copy_words)                        \
  X(tessera_fill_words)                        \
  X(tessera_add_u32)                           \
  X(tessera_add_f32)                           \
  X(tessera_add_f16)                           \
  X(tessera_mul_f32)                           \
  X(tessera_mul_f16)                           \
  X(tessera_add_row_broadcast_f32)             \
  X(tessera_add_row_broadcast_f16)             \
  X(tessera_sum_f32)                           \
  X(tessera_sum_f16)                           \
  X(tessera_move_elements_b32)                 \
  X(tessera_move_elements_b16)                 \
  X(tessera_move_elements_b8)                  \
  X(tessera_convert_f32_to_f16)                \
  X(tessera_convert_f16_to_f32)                \
  X(tessera_quantize_f16_to_f143)              \
  X(tessera_expand_f143_to_f16)                \
  X(tessera_quantize_a16_to_a32_f143)          \
  X(tessera_softmax_rows_f32)                  \
  X(tessera_softmax_rows_f16)                  \
  X(tessera_layer_norm_rows_f32)               \
  X(tessera_layer_norm_rows_f16)               \
  X(tessera_gelu_f32)                          \
  X(tessera_gelu_f16)                          \
  X(tessera_gelu_c16_to_a16_f16)               \
  X(tessera_add_bias_c16_f16)                  \
  X(tessera_add_bias_c16_f32)                  \
  X(tessera_relayout_c16_to_a16_f16)           \
  X(tessera_reblock_a16_to_a16_f16)            \
  X(tessera_reblock_c16_to_a16_f16)            \
  X(tessera_rearrange_left_f16)                \
  X(tessera_rearrange_transposed_right_f16)    \
  X(tessera_rearrange_block_major_f16)         \
  X(tessera_rearrange_output_f16)              \
  X(tessera_unpack_left_f16)                   \
  X(tessera_unpack_transposed_right_f16)       \
  X(tessera_unpack_block_major_f16)            \
  X(tessera_unpack_output_f16)                 \
  X(tessera_layer_norm_f16)                    \
  X(tessera_add_layer_norm_f16)                \
  X(tessera_gemm_f32_init)                     \
  X(tessera_gemm_f32_accumulate)               \
  X(tessera_gemm_f16_init)                     \
  X(tessera_gemm_f16_accumulate)               \
  X(tessera_gemm_f16_expanded_f143_init)       \
  X(tessera_gemm_f16_expanded_f143_accumulate) \
  X(tessera_gemm_f143_init)                    \
  X(tessera_gemm_f143_accumulate)              \
  X(tessera_attention_pack_query_f16)          \
  X(tessera_attention_pack_key_f16)            \
  X(tessera_attention_pack_value_f16)          \
  X(tessera_attention_unpack_head_f16)         \
  X(tessera_attention_softmax_f16)             \
  X(tessera_attention_merge_initial_f16)       \
  X(tessera_attention_merge_middle_f16)        \
  X(tessera_attention_merge_final_f16)         \
  X(tessera_attention_merge_single_f16)        \
  X(tessera_attention_f32_to_f16)
