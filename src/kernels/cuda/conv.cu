// opgraph::conv2d (with its fused bias and activation) and its gradients on
// CUDA, as im2col + GEMM (Chellapilla et al. 2006, Caffe's convolution): per
// image and group, the input windows are unfolded into a column matrix
// (C/g * KH * KW rows, OH * OW columns) that a cuBLASLt product with the
// group's weights turns into its output channels (the forward pass does a
// batch of images in one product). The gradients run the same
// products transposed and fold the columns back (col2im), each input element
// gathering its own terms, so no atomics are needed.
#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "cuda/cuda_check.h"
#include "kernels/cuda/blas_lt.h"
#include "kernels/cuda/epilogue.h"
#include "kernels/cuda/register.h"
#include "kernels/define.h"

namespace opgraph::cuda {
namespace {

using kernels::Activation;

constexpr int kThreads = 256;

// Sizes of one convolution, from its input, weight and output shapes.
struct Conv {
  int64_t batch, channels, height, width;  // input
  int64_t out_channels, out_height, out_width;
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;

  __host__ __device__ int64_t group_channels() const { return channels / groups; }
  __host__ __device__ int64_t group_out_channels() const { return out_channels / groups; }
  __host__ __device__ int64_t column_rows() const { return group_channels() * kernel_h * kernel_w; }
  __host__ __device__ int64_t column_cols() const { return out_height * out_width; }
};

std::pair<int64_t, int64_t> pair_of(std::span<const int64_t> values) {
  return values.size() == 1 ? std::pair{values[0], values[0]} : std::pair{values[0], values[1]};
}

// The attributes every conv2d op takes, in their schemas' order.
struct ConvAttrs {
  std::span<const int64_t> stride, padding, dilation;
  int64_t groups;
};

// The shape functions have checked every size; the kernels only read them.
Conv conv_of(const Tensor& input, const Tensor& weight, const Tensor& output, const ConvAttrs& attrs) {
  OPGRAPH_CHECK(input.dim() == 4, "input: the CUDA kernel takes a batch (N, C, H, W), got ", input.str());
  Conv c{};
  c.batch = input.size(0), c.channels = input.size(1), c.height = input.size(2), c.width = input.size(3);
  c.out_channels = weight.size(0), c.kernel_h = weight.size(2), c.kernel_w = weight.size(3);
  c.out_height = output.size(2), c.out_width = output.size(3);
  std::tie(c.stride_h, c.stride_w) = pair_of(attrs.stride);
  std::tie(c.pad_h, c.pad_w) = pair_of(attrs.padding);
  std::tie(c.dilation_h, c.dilation_w) = pair_of(attrs.dilation);
  c.groups = attrs.groups;
  // The unfolding indexes planes and an image's column rows in 32 bits.
  OPGRAPH_CHECK(c.height * c.width <= INT32_MAX && c.out_height * c.out_width <= INT32_MAX &&
                    c.batch * c.column_rows() <= INT32_MAX,
                "conv2d on cuda: planes and the batch's column rows of at most 2^31 - 1 elements, got input ",
                input.str(), ", weight ", weight.str(), " and output ", output.str());
  return c;
}

// columns[b][(ch * KH + kh) * KW + kw][oh * OW + ow] = the input tap of output (oh, ow) of
// image b, 0 in the padding, for `images` images `image_stride` elements apart.
// blockIdx.y walks the column rows (an image's channel and tap each) and a
// few blocks' threads a row's OH * OW positions, several each: a thread finds
// its row's tap once, and an element costs one 32-bit division.
template <typename T>
__global__ void im2col(const T* image, T* columns, Conv c, int32_t images, int64_t image_stride) {
  const int32_t cols = static_cast<int32_t>(c.column_cols()), out_width = static_cast<int32_t>(c.out_width);
  const int32_t height = static_cast<int32_t>(c.height), width = static_cast<int32_t>(c.width);
  const int32_t rows = static_cast<int32_t>(c.column_rows()), kernel_w = static_cast<int32_t>(c.kernel_w);
  const int32_t taps = static_cast<int32_t>(c.kernel_h * c.kernel_w);
  const int32_t stride_h = static_cast<int32_t>(c.stride_h), stride_w = static_cast<int32_t>(c.stride_w);
  for (int32_t image_row = blockIdx.y; image_row < images * rows; image_row += gridDim.y) {
    const int32_t b = image_row / rows, row = image_row - b * rows;
    const int32_t ch = row / taps, kh = (row - ch * taps) / kernel_w, kw = row - ch * taps - kh * kernel_w;
    const T* plane = image + b * image_stride + int64_t(ch) * height * width;
    const int32_t top = kh * static_cast<int32_t>(c.dilation_h) - static_cast<int32_t>(c.pad_h);
    const int32_t left = kw * static_cast<int32_t>(c.dilation_w) - static_cast<int32_t>(c.pad_w);
    T* out = columns + int64_t(image_row) * cols;
    for (int32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < cols; p += gridDim.x * blockDim.x) {
      const int32_t oh = p / out_width, ow = p - oh * out_width;
      const int32_t h = oh * stride_h + top, w = ow * stride_w + left;
      out[p] = h >= 0 && h < height && w >= 0 && w < width ? plane[h * width + w] : T(0);
    }
  }
}

// Elements of a column row that one thread unfolds, at the least.
constexpr int kElementsPerThread = 8;

// Launches im2col over `images` images' columns.
template <typename T>
void unfold(const T* image, T* columns, const Conv& c, int64_t images, int64_t image_stride, cudaStream_t stream) {
  const dim3 grid(blocks_for(c.column_cols(), kThreads * kElementsPerThread),
                  static_cast<unsigned>(std::clamp<int64_t>(images * c.column_rows(), 1, 65535)));
  im2col<T><<<grid, kThreads, 0, stream>>>(image, columns, c, static_cast<int32_t>(images), image_stride);
  OPGRAPH_CUDA_CHECK(cudaGetLastError());
}

// The inverse gather: each input element of the group sums the column entries that read it.
template <typename T>
__global__ void col2im(const T* columns, T* image, Conv c) {
  const int64_t count = c.group_channels() * c.height * c.width, cols = c.column_cols();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t w = i % c.width, h = i / c.width % c.height, ch = i / (c.width * c.height);
    T sum = 0;
    for (int64_t kh = 0; kh < c.kernel_h; ++kh) {
      const int64_t top = h + c.pad_h - kh * c.dilation_h;
      if (top < 0 || top % c.stride_h != 0 || top / c.stride_h >= c.out_height) continue;
      for (int64_t kw = 0; kw < c.kernel_w; ++kw) {
        const int64_t left = w + c.pad_w - kw * c.dilation_w;
        if (left < 0 || left % c.stride_w != 0 || left / c.stride_w >= c.out_width) continue;
        const int64_t row = (ch * c.kernel_h + kh) * c.kernel_w + kw;
        sum += columns[row * cols + top / c.stride_h * c.out_width + left / c.stride_w];
      }
    }
    image[i] = sum;
  }
}

// Sums each output channel of a (batch, channels, OH, OW) gradient.
template <typename T>
__global__ void channel_sums(const T* grad, T* sums, Conv c) {
  const int64_t plane = c.column_cols();
  for (int64_t oc = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; oc < c.out_channels;
       oc += int64_t(gridDim.x) * blockDim.x) {
    T sum = 0;
    for (int64_t n = 0; n < c.batch; ++n) {
      for (int64_t p = 0; p < plane; ++p) sum += grad[(n * c.out_channels + oc) * plane + p];
    }
    sums[oc] = sum;
  }
}

// `rows` x `cols` elements at `data` on like's device, as matmul() takes them.
Tensor matrix(const Tensor& like, void* data, int64_t rows, int64_t cols) {
  return Tensor::from_blob(data, {rows, cols}, {}, like.dtype(), {}, like.device());
}

template <typename T>
T* at(const Tensor& t, int64_t elements) {
  return static_cast<T*>(t.data()) + elements;
}

// Offsets of image n, group g: its input channels, and its output channels.
int64_t input_offset(const Conv& c, int64_t n, int64_t g) {
  return (n * c.channels + g * c.group_channels()) * c.height * c.width;
}
int64_t output_offset(const Conv& c, int64_t n, int64_t g) {
  return (n * c.out_channels + g * c.group_out_channels()) * c.column_cols();
}

// The forward pass unfolds this many bytes of columns at most at a time.
constexpr int64_t kForwardColumnsBytes = int64_t(256) << 20;

// output = f(conv(input, weight) + bias). The images' columns are unfolded
// together and multiplied in one batched product per group, as many images
// at a time as kForwardColumnsBytes holds: per image, the launches and not
// the arithmetic took the time of ResNet's convolutions at batch 8.
template <typename T>
void forward(const Conv& c, const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& output,
             Activation activation, cudaStream_t stream) {
  const int64_t per_image = c.column_rows() * c.column_cols();
  const int64_t images = per_image == 0
                             ? c.batch
                             : std::clamp<int64_t>(kForwardColumnsBytes / (per_image * int64_t(sizeof(T))), 1, c.batch);
  const Tensor columns = Tensor::empty({images, c.column_rows(), c.column_cols()}, input.dtype(), input.device());
  const int64_t ocg = c.group_out_channels();
  for (int64_t n = 0; n < c.batch; n += images) {
    const int64_t count = std::min(images, c.batch - n);
    for (int64_t g = 0; g < c.groups; ++g) {
      unfold(at<const T>(input, input_offset(c, n, g)), columns.data_ptr<T>(), c, count, input_offset(c, 1, 0), stream);
      // out_g[b] (OC/g x OH*OW) = W_g (OC/g x C/g*KH*KW) @ columns[b], the same W_g for every b
      matmul(matrix(output, at<T>(output, output_offset(c, n, g)), ocg, c.column_cols()),
             {at<const T>(weight, g * ocg * c.column_rows()), false, 0}, {columns.data(), false, per_image}, ocg,
             c.column_cols(), c.column_rows(), nullptr, false, stream, false, {count, output_offset(c, 1, 0)});
    }
  }
  add_bias_and_activate(output, bias, activation, stream, c.column_cols());
}

// Gradients of conv(input, weight) + bias from the output's gradient `grad`.
template <typename T>
void backward(const Conv& c, const Tensor& grad, const Tensor& input, const Tensor& weight, const Tensor& grad_input,
              const Tensor& grad_weight, const Tensor& grad_bias, cudaStream_t stream) {
  const Tensor columns = Tensor::empty({c.column_rows(), c.column_cols()}, input.dtype(), input.device());
  const int64_t ocg = c.group_out_channels();
  OPGRAPH_CUDA_CHECK(cudaMemsetAsync(grad_weight.data(), 0, grad_weight.nbytes(), stream));
  for (int64_t n = 0; n < c.batch; ++n) {
    for (int64_t g = 0; g < c.groups; ++g) {
      const T* grad_g = at<const T>(grad, output_offset(c, n, g));
      const int64_t weight_g = g * ocg * c.column_rows();
      // dW_g += grad_g (OC/g x OH*OW) @ columns^T
      unfold(at<const T>(input, input_offset(c, n, g)), columns.data_ptr<T>(), c, 1, 0, stream);
      matmul(matrix(grad_weight, at<T>(grad_weight, weight_g), ocg, c.column_rows()), {grad_g, false},
             {columns.data(), true}, ocg, c.column_rows(), c.column_cols(), nullptr, false, stream,
             /*accumulate=*/true);
      // d columns = W_g^T @ grad_g, folded back into the group's input channels.
      matmul(columns, {at<const T>(weight, weight_g), true}, {grad_g, false}, c.column_rows(), c.column_cols(), ocg,
             nullptr, false, stream);
      col2im<T><<<blocks_for(c.group_channels() * c.height * c.width, kThreads), kThreads, 0, stream>>>(
          columns.data_ptr<const T>(), at<T>(grad_input, input_offset(c, n, g)), c);
      OPGRAPH_CUDA_CHECK(cudaGetLastError());
    }
  }
  if (grad_bias.numel() == c.out_channels) {
    channel_sums<T><<<blocks_for(c.out_channels, kThreads), kThreads, 0, stream>>>(grad.data_ptr<const T>(),
                                                                                   grad_bias.data_ptr<T>(), c);
    OPGRAPH_CUDA_CHECK(cudaGetLastError());
  }
}

void conv2d_kernel(const KernelContext& context, const Tensor& input, const Tensor& weight, const Tensor* bias,
                   std::span<const int64_t> stride, std::span<const int64_t> padding, std::span<const int64_t> dilation,
                   int64_t groups, std::string_view activation, const Tensor& output) {
  if (output.numel() == 0) return;
  const Conv c = conv_of(input, weight, output, {stride, padding, dilation, groups});
  kernels::dispatch_floating(input.dtype(), "input", [&](auto zero) {
    forward<decltype(zero)>(c, input, weight, bias ? *bias : Tensor(), output, kernels::parse_activation(activation),
                            stream_of(context));
  });
}

void conv2d_backward_kernel(const KernelContext& context, const Tensor& grad_output, const Tensor& input,
                            const Tensor& weight, std::span<const int64_t> stride, std::span<const int64_t> padding,
                            std::span<const int64_t> dilation, int64_t groups, const Tensor& grad_input,
                            const Tensor& grad_weight, const Tensor& grad_bias) {
  const Conv c = conv_of(input, weight, grad_output, {stride, padding, dilation, groups});
  kernels::dispatch_floating(input.dtype(), "input", [&](auto zero) {
    backward<decltype(zero)>(c, grad_output, input, weight, grad_input, grad_weight, grad_bias, stream_of(context));
  });
}

// The activation's gradient first (GELU recomputes its pre-activation), then
// the convolution's.
void conv2d_act_backward_kernel(const KernelContext& context, const Tensor& grad_output, const Tensor& input,
                                const Tensor& weight, const Tensor* bias, const Tensor& output,
                                std::span<const int64_t> stride, std::span<const int64_t> padding,
                                std::span<const int64_t> dilation, int64_t groups, std::string_view activation_name,
                                const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias) {
  const Conv c = conv_of(input, weight, grad_output, {stride, padding, dilation, groups});
  const cudaStream_t stream = stream_of(context);
  const Activation activation = kernels::parse_activation(activation_name);
  kernels::dispatch_floating(input.dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    Tensor dz = grad_output;
    if (activation != Activation::None) {
      dz = grad_output.clone();
      Tensor z;
      if (kernels::derivative_needs_pre_activation(activation)) {
        z = Tensor::empty(output.meta(), output.device());
        forward<T>(c, input, weight, bias ? *bias : Tensor(), z, Activation::None, stream);
      }
      multiply_by_activation_grad(dz, output, z, activation, stream);
    }
    backward<T>(c, dz, input, weight, grad_input, grad_weight, grad_bias, stream);
  });
}

}  // namespace

void register_conv_kernels(CudaKernels& kernels) {
  add_cuda_kernel(kernels, "opgraph::conv2d", conv2d_kernel);
  add_cuda_kernel(kernels, "opgraph::conv2d_backward", conv2d_backward_kernel);
  add_cuda_kernel(kernels, "opgraph::conv2d_act_backward", conv2d_act_backward_kernel);
}

}  // namespace opgraph::cuda
