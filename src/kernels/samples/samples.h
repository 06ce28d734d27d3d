// The built-in ops' sample tables (registry/sample.h), one file per op
// family, joined to their ops when the built-in set is handed to the
// registry (BuiltinOps::take). A table lists the
// shapes that hurt (0-d, empty, one element, odd sizes, transposed and
// strided views, broadcasting corners), every dtype the op claims, and bad
// samples with the text their error must contain.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "kernels/define.h"

namespace opgraph::kernels::samples {

using Layout = SampleTensor::Layout;
using Attr = std::pair<std::string, AttrValue>;

// The dtypes the tables name most.
inline constexpr DType F32 = DType::Float32;
inline constexpr DType F64 = DType::Float64;
inline constexpr DType I32 = DType::Int32;
inline constexpr DType I64 = DType::Int64;
inline constexpr DType B = DType::Bool;

inline SampleTensor tensor(DType dtype, Shape shape, Layout layout = Layout::Contiguous) {
  return SampleTensor::of(dtype, std::move(shape), layout);
}

inline Sample good(std::vector<SampleTensor> inputs, std::vector<Attr> attrs = {}) {
  Sample sample;
  sample.inputs = std::move(inputs);
  sample.attrs = std::move(attrs);
  return sample;
}

inline Sample bad(std::vector<SampleTensor> inputs, std::string error, std::vector<Attr> attrs = {}) {
  Sample sample = good(std::move(inputs), std::move(attrs));
  sample.error = std::move(error);
  return sample;
}

// A good sample of one float32 input (retyped() makes it any dtype).
inline Sample one(Shape shape, std::vector<Attr> attrs, Layout layout = Layout::Contiguous) {
  return good({tensor(DType::Float32, std::move(shape), layout)}, std::move(attrs));
}

// One input of each shape an elementwise op must take, of `dtype`, values in [low, high].
std::vector<SampleTensor> elementwise_inputs(DType dtype, double low = -2, double high = 2);

// Good samples of an op of one elementwise tensor (and `attrs`): each
// elementwise shape in each of `dtypes`, values in [low, high].
std::vector<Sample> elementwise(std::initializer_list<DType> dtypes, double low, double high,
                                const std::vector<Attr>& attrs = {});

// Good samples of an op of two tensors that broadcast: the corners of
// broadcasting (0-d against a matrix, size-1 dims on both sides, empty dims,
// transposed and strided operands) in each of `dtypes`, values in [low, high].
std::vector<Sample> broadcasting(std::initializer_list<DType> dtypes, double low, double high);

// `samples` once in each of `dtypes`: their float32 inputs take the dtype
// (index and mask inputs keep theirs).
std::vector<Sample> retyped(std::initializer_list<DType> dtypes, const std::vector<Sample>& samples);

// Every dtype an op that only moves elements is sampled in (retyped()).
std::vector<Sample> any_dtype(const std::vector<Sample>& samples);

// `value` `n` times: a per-dim attribute, or the spatial part of a shape.
inline std::vector<int64_t> repeat(int64_t value, size_t n) { return std::vector<int64_t>(n, value); }

// `lead` (batch, channels), then `dims` spatial dims of `size`.
inline Shape spatial(Shape lead, int64_t size, size_t dims) {
  lead.insert(lead.end(), dims, size);
  return lead;
}

// `table`, then `more` (the bad samples, as a rule).
std::vector<Sample> with(std::vector<Sample> table, std::initializer_list<Sample> more);

// Adds `samples` to each op of `ops`.
void add_to_each(BuiltinOps& builtins, std::initializer_list<const char*> ops, const std::vector<Sample>& samples);

void register_unary_math_samples(BuiltinOps& builtins);
void register_binary_samples(BuiltinOps& builtins);
void register_softmax_samples(BuiltinOps& builtins);
void register_matmul_samples(BuiltinOps& builtins);
void register_reduce_samples(BuiltinOps& builtins);
void register_pool_samples(BuiltinOps& builtins);
void register_norm_samples(BuiltinOps& builtins);
void register_compare_samples(BuiltinOps& builtins);
void register_arith_samples(BuiltinOps& builtins);
void register_shape_samples(BuiltinOps& builtins);
void register_scatter_samples(BuiltinOps& builtins);
void register_conv_samples(BuiltinOps& builtins);
void register_loss_samples(BuiltinOps& builtins);
void register_activation_samples(BuiltinOps& builtins);
void register_upsample_samples(BuiltinOps& builtins);
void register_factory_samples(BuiltinOps& builtins);
void register_attention_samples(BuiltinOps& builtins);
void register_fft_samples(BuiltinOps& builtins);
void register_data_dependent_samples(BuiltinOps& builtins);
void register_recurrent_samples(BuiltinOps& builtins);
void register_quantization_samples(BuiltinOps& builtins);
void register_random_samples(BuiltinOps& builtins);

}  // namespace opgraph::kernels::samples
