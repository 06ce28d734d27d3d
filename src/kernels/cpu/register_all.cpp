#include "kernels/builtin.h"
#include "kernels/define.h"

namespace opgraph::kernels {

void register_shape_ops(BuiltinOps& builtins);
void register_reshape_backward_ops(BuiltinOps& builtins);
void register_concat_ops(BuiltinOps& builtins);
void register_matmul_ops(BuiltinOps& builtins);
void register_gemm_ops(BuiltinOps& builtins);
void register_conv_ops(BuiltinOps& builtins);
void register_conv_nchwc_ops(BuiltinOps& builtins);
void register_pool_nchwc_ops(BuiltinOps& builtins);
void register_conv_backward_ops(BuiltinOps& builtins);
void register_prelu_ops(BuiltinOps& builtins);
void register_pool_ops(BuiltinOps& builtins);
void register_upsample_ops(BuiltinOps& builtins);
void register_grid_sample_ops(BuiltinOps& builtins);
void register_distance_ops(BuiltinOps& builtins);
void register_softmax_ops(BuiltinOps& builtins);
void register_reduce_ops(BuiltinOps& builtins);
void register_sort_ops(BuiltinOps& builtins);
void register_norm_ops(BuiltinOps& builtins);
void register_rotary_ops(BuiltinOps& builtins);
void register_loss_ops(BuiltinOps& builtins);
void register_softmax_cross_entropy_ops(BuiltinOps& builtins);
void register_activation_ops(BuiltinOps& builtins);
void register_unary_math_ops(BuiltinOps& builtins);
void register_binary_ops(BuiltinOps& builtins);
void register_binary_backward_ops(BuiltinOps& builtins);
void register_attention_ops(BuiltinOps& builtins);
void register_compare_ops(BuiltinOps& builtins);
void register_convert_ops(BuiltinOps& builtins);
void register_factory_ops(BuiltinOps& builtins);
void register_random_ops(BuiltinOps& builtins);
void register_scan_ops(BuiltinOps& builtins);
void register_gather_ops(BuiltinOps& builtins);
void register_scatter_ops(BuiltinOps& builtins);
void register_pad_ops(BuiltinOps& builtins);
void register_split_ops(BuiltinOps& builtins);
void register_assert_ops(BuiltinOps& builtins);
void register_data_dependent_ops(BuiltinOps& builtins);
void register_fft_ops(BuiltinOps& builtins);
void register_recurrent_ops(BuiltinOps& builtins);
void register_quantized_layer_ops(BuiltinOps& builtins);
void register_quantization_ops(BuiltinOps& builtins);
void register_sample_tables(BuiltinOps& builtins);  // kernels/samples/

// One line per op family, in any order: the registry checks the set as one
// batch. Kept explicit rather than left to static initializers, which a
// static link may drop without a word.
std::vector<OpDef> builtin_ops() {
  BuiltinOps builtins;
  register_shape_ops(builtins);
  register_reshape_backward_ops(builtins);
  register_concat_ops(builtins);
  register_matmul_ops(builtins);
  register_gemm_ops(builtins);
  register_conv_ops(builtins);
  register_conv_nchwc_ops(builtins);
  register_pool_nchwc_ops(builtins);
  register_conv_backward_ops(builtins);
  register_prelu_ops(builtins);
  register_pool_ops(builtins);
  register_upsample_ops(builtins);
  register_grid_sample_ops(builtins);
  register_distance_ops(builtins);
  register_softmax_ops(builtins);
  register_reduce_ops(builtins);
  register_sort_ops(builtins);
  register_norm_ops(builtins);
  register_rotary_ops(builtins);
  register_loss_ops(builtins);
  register_softmax_cross_entropy_ops(builtins);
  register_activation_ops(builtins);
  register_unary_math_ops(builtins);
  register_binary_ops(builtins);
  register_binary_backward_ops(builtins);
  register_attention_ops(builtins);
  register_compare_ops(builtins);
  register_convert_ops(builtins);
  register_factory_ops(builtins);
  register_random_ops(builtins);
  register_scan_ops(builtins);
  register_gather_ops(builtins);
  register_scatter_ops(builtins);
  register_pad_ops(builtins);
  register_split_ops(builtins);
  register_assert_ops(builtins);
  register_data_dependent_ops(builtins);
  register_fft_ops(builtins);
  register_recurrent_ops(builtins);
  register_quantized_layer_ops(builtins);
  register_quantization_ops(builtins);
  register_sample_tables(builtins);
  return std::move(builtins).take();
}

}  // namespace opgraph::kernels
