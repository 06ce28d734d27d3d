#include "kernels/builtin.h"

namespace opgraph::kernels {

void register_reshape_backward_ops(Registry& registry);
void register_shape_ops(Registry& registry);
void register_concat_ops(Registry& registry);
void register_matmul_ops(Registry& registry);
void register_conv_backward_ops(Registry& registry);
void register_gemm_ops(Registry& registry);
void register_conv_ops(Registry& registry);
void register_conv_nchwc_ops(Registry& registry);
void register_prelu_ops(Registry& registry);
void register_pool_ops(Registry& registry);
void register_upsample_ops(Registry& registry);
void register_grid_sample_ops(Registry& registry);
void register_distance_ops(Registry& registry);
void register_softmax_ops(Registry& registry);
void register_reduce_ops(Registry& registry);
void register_sort_ops(Registry& registry);
void register_norm_ops(Registry& registry);
void register_loss_ops(Registry& registry);
void register_softmax_cross_entropy_ops(Registry& registry);
void register_activation_ops(Registry& registry);
void register_unary_math_ops(Registry& registry);
void register_binary_backward_ops(Registry& registry);
void register_binary_ops(Registry& registry);
void register_attention_ops(Registry& registry);
void register_compare_ops(Registry& registry);
void register_convert_ops(Registry& registry);
void register_factory_ops(Registry& registry);
void register_random_ops(Registry& registry);
void register_scan_ops(Registry& registry);
void register_gather_ops(Registry& registry);
void register_scatter_ops(Registry& registry);
void register_pad_ops(Registry& registry);
void register_split_ops(Registry& registry);
void register_assert_ops(Registry& registry);
void register_data_dependent_ops(Registry& registry);
void register_fft_ops(Registry& registry);
void register_recurrent_ops(Registry& registry);
void register_sample_tables(Registry& registry);  // kernels/samples/

// One line per op family. Kept explicit rather than left to static
// initializers, which a static link may drop without a word.
void register_builtin_ops(Registry& registry) {
  register_reshape_backward_ops(registry);  // before the ops that name them
  register_shape_ops(registry);
  register_concat_ops(registry);
  register_matmul_ops(registry);
  register_conv_backward_ops(registry);  // before the forward ops that name them
  register_gemm_ops(registry);
  register_conv_ops(registry);
  register_conv_nchwc_ops(registry);
  register_prelu_ops(registry);
  register_pool_ops(registry);
  register_upsample_ops(registry);
  register_grid_sample_ops(registry);
  register_distance_ops(registry);
  register_softmax_ops(registry);
  register_reduce_ops(registry);
  register_sort_ops(registry);
  register_norm_ops(registry);
  register_loss_ops(registry);
  register_softmax_cross_entropy_ops(registry);
  register_activation_ops(registry);
  register_unary_math_ops(registry);
  register_binary_backward_ops(registry);
  register_binary_ops(registry);
  register_attention_ops(registry);
  register_compare_ops(registry);
  register_convert_ops(registry);
  register_factory_ops(registry);
  register_random_ops(registry);
  register_scan_ops(registry);
  register_gather_ops(registry);
  register_scatter_ops(registry);
  register_pad_ops(registry);
  register_split_ops(registry);
  register_assert_ops(registry);
  register_data_dependent_ops(registry);
  register_fft_ops(registry);
  register_recurrent_ops(registry);
  register_sample_tables(registry);  // after the ops they describe
}

}  // namespace opgraph::kernels
