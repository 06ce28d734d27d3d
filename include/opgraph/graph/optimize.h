// Rewrites that make a graph cheaper to run, as ONNX Runtime's default
// optimizations do when it loads a model. Each leaves every output the same
// up to float rounding. A Session makes them at load (SessionOptions::optimize).
#pragma once

#include "opgraph/graph/graph.h"
#include "opgraph/graph/opg.h"

namespace opgraph {

// - GELU's tanh form written out as eight elementwise nodes (transformers'
//   NewGELUActivation: GPT-2, GPT-J, CodeGen, Phi) becomes one aten::gelu
//   with approximate="tanh".
// - aten::conv1d of a 3-D input by a constant weight becomes aten::conv2d of
//   its [N, C, 1, W] form by an [O, C, 1, K] weight; the activations (as
//   below) after it run on the 4-D result too, and a squeeze gives the 3-D
//   value to any other reader. The rewrites below then treat it as any 2-D
//   convolution.
// - An inference batch norm after a 2-D convolution, with constant weight,
//   bias and statistics, is folded into the convolution's weight and bias
//   (new constants; the constants no node reads any more are dropped).
// - aten::cat drops operands with no elements (the empty key-value cache of
//   a decoder exported with use_cache=True), and the slice or reshape that
//   made one for the cat alone; with one left, that operand's producer
//   computes the cat's output.
// - x * rsqrt(mean(x^2, -1, keepdim=True) + eps) with a constant eps (the
//   RMS norm that transformers' Llama, Mistral, Qwen and T5 write out) becomes
//   aten::rms_norm over x's last dim; a constant weight of that dim's size
//   multiplying it becomes the norm's weight.
// - x * cos + cat(-x2, x1) * sin, where x1 and x2 are the halves of x's last
//   dim and cos and sin (one shape) broadcast to x's (transformers'
//   apply_rotary_pos_emb), becomes opgraph::rotary_embedding(x, cos, sin).
// - relu, gelu (erf or tanh form), sigmoid, tanh, silu or hardtanh(0, 6) after a
//   2-D convolution, a linear layer, or an addmm adding a constant vector
//   bias to the product with a constant matrix (GPT-2's Conv1D) is applied
//   by that op as it writes its output (opgraph::conv2d, opgraph::linear,
//   opgraph::gemm), saving a pass over the tensor; also where a reshape
//   (view, flatten...) lies between the two.
// Each only where the first op's output feeds nothing else and is not a
// graph output. The fused node keeps the first node's name.
// - aten::scaled_dot_product_attention whose q, k and v are each
//   transpose(1, 2) of a rank-4 tensor, and whose output only feeds
//   transpose(1, 2) (through same-shape copies or views), becomes
//   opgraph::attention_bshd on the tensors before the transposes, writing
//   what the last transpose gave; the transposes go. q or k may be a rotary
//   embedding of such a transpose with rank-4 cos and sin: it then rotates
//   the tensor before the transpose, by cos and sin transposed alike. Before
//   that, k and v that are each reshape(expand(t.unsqueeze(2))) copies of t's
//   heads for every query head of a group (transformers' repeat_kv) are read
//   as t, the attention grouping its query heads (enable_gqa).
// - Then use_nchwc_layout, and after it: add(product, shortcut) of a blocked
//   convolution or a linear layer that applies no activation (through a
//   same-shape copy) and a value of its shape that is a graph input, a
//   constant or computed before it, and an activation after that add (as
//   above), are done by the product (its residual input and activation),
//   which a Session runs in place of the shortcut where nothing reads the
//   shortcut after it; and mul(linear layer, gate) either way round, with a
//   gate of its shape that is a graph input, a constant or computed before
//   it (a SwiGLU MLP: silu(gate_proj(x)) * up_proj(x)), is done by the linear
//   layer (its multiplier input), after its activation.
// `registry` binds the nodes' attributes, defaults filled in; `precision` is
// what the Session's products with a weight multiply in (use_nchwc_layout).
void optimize(Graph& graph, Weights& weights, const Registry& registry = Registry::global(),
              Precision precision = Precision::Float32);

// On a CPU with AVX2 or AVX-512: the float32 2-D convolutions with constant
// weights that read or write another one's values (through relu, silu,
// gelu, hardswish, leaky_relu, hardtanh around 0, add, sub and mul between them) become opgraph::conv2d_nchwc,
// which keeps activations in blocks of 16 (AVX-512) or 8 channels (AVX2),
// or on AVX-512 channels-last (one block of every channel) where none of
// those convolutions is grouped and none of their outputs takes more than
// 16 MiB; those elementwise ops run on the blocks, and
// a max pooling between them (without dilation) becomes
// opgraph::max_pool2d_nchwc; a zero aten::pad of the last two dims
// before such a convolution becomes its padding; opgraph::nchwc_to_nchw
// converts a blocked value back where any other node or the caller reads it.
// With Precision::BFloat16 every chain runs channels-last, the one layout
// of oneDNN's bfloat16 kernels on AMX.
void use_nchwc_layout(Graph& graph, const Registry& registry = Registry::global(),
                      Precision precision = Precision::Float32);

}  // namespace opgraph
