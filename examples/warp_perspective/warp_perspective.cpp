// The warp_perspective op package: OpenCV's cv::warpPerspective (bilinear,
// zero outside the image) on float32 images, as an opgraph op. The tensors
// are wrapped in cv::Mat headers, so OpenCV reads the input and writes the
// output in place: no copy on either side.
#include <opgraph/sdk.h>
#include <opencv2/imgproc.hpp>

#include <vector>

namespace sdk = opgraph::sdk;

namespace {

// Images are [height, width] or [height, width, channels] with 1 to 4
// channels, row-major: OpenCV's CV_32FC(channels) layout.
constexpr int64_t kMaxChannels = 4;

int64_t channels_of(const sdk::Meta& image) { return image.dim() == 3 ? image.size(2) : 1; }

sdk::Meta warp_perspective_shape(sdk::Meta image, sdk::Meta warp, int64_t height, int64_t width) {
  OPGRAPH_SDK_CHECK(image.dtype() == sdk::DType::Float32, "image: expected float32, got ", image.str());
  OPGRAPH_SDK_CHECK(image.dim() == 2 || image.dim() == 3,
                    "image: expected rank 2 [height, width] or 3 [height, "
                    "width, channels], got ",
                    image.str());
  OPGRAPH_SDK_CHECK(image.size(0) >= 1 && image.size(1) >= 1, "image: expected at least one pixel, got ", image.str());
  OPGRAPH_SDK_CHECK(channels_of(image) >= 1 && channels_of(image) <= kMaxChannels, "image: expected 1 to ",
                    kMaxChannels, " channels, got ", image.str());
  OPGRAPH_SDK_CHECK(warp.dtype() == sdk::DType::Float32 || warp.dtype() == sdk::DType::Float64,
                    "warp: expected float32 or float64, got ", warp.str());
  OPGRAPH_SDK_CHECK(warp.dim() == 2 && warp.size(0) == 3 && warp.size(1) == 3, "warp: expected a 3x3 homography, got ",
                    warp.str());
  OPGRAPH_SDK_CHECK(height >= 1, "height: expected at least 1, got ", height);
  OPGRAPH_SDK_CHECK(width >= 1, "width: expected at least 1, got ", width);
  std::vector<int64_t> shape{height, width};
  if (image.dim() == 3) shape.push_back(image.size(2));
  return sdk::Meta(sdk::DType::Float32, shape);
}

// A cv::Mat header over a tensor's memory (contiguous: the registry copies
// strided inputs first).
template <typename Tensor>
cv::Mat as_mat(const Tensor& t, int depth) {
  const int channels = static_cast<int>(t.dim() == 3 ? t.size(2) : 1);
  return cv::Mat(static_cast<int>(t.size(0)), static_cast<int>(t.size(1)), CV_MAKETYPE(depth, channels),
                 const_cast<void*>(static_cast<const void*>(t.template data<float>())));
}

void warp_perspective_cpu(sdk::OutputTensor out, sdk::InputTensor image, sdk::InputTensor warp, int64_t, int64_t) {
  const cv::Mat image_mat = as_mat(image, CV_32F);
  const bool single = warp.dtype() == sdk::DType::Float32;
  const cv::Mat warp_mat(
      3, 3, single ? CV_32F : CV_64F,
      single ? const_cast<float*>(warp.data<float>()) : static_cast<void*>(const_cast<double*>(warp.data<double>())));
  cv::Mat out_mat = as_mat(out, CV_32F);
  const uchar* destination = out_mat.data;
  cv::warpPerspective(image_mat, out_mat, warp_mat, out_mat.size(), cv::INTER_LINEAR, cv::BORDER_CONSTANT, 0);
  // OpenCV reallocates a destination whose size or type it does not like;
  // the header above matches both, so this holds unless OpenCV changes.
  OPGRAPH_SDK_CHECK(out_mat.data == destination, "OpenCV did not write into the output tensor");
}

}  // namespace

// The namespace and the 8x8 default output size are those of PyTorch's
// TorchScript custom op tutorial, so its torch.ops.my_ops.warp_perspective(x,
// warp) calls run as they are written.
OPGRAPH_LIBRARY(my_ops, m) {
  m.def("warp_perspective(Tensor image, Tensor warp, *, int height=8, int width=8) -> Tensor", warp_perspective_shape);
  m.impl("warp_perspective", sdk::Device::CPU, warp_perspective_cpu);
  // What `opgraph test-package` runs it on: gray and color images, a warp near
  // the identity (values in [0.9, 1.1]) in either dtype, other output sizes.
  using sdk::DType;
  const sdk::SampleTensor warp32{DType::Float32, {3, 3}, sdk::Layout::Contiguous, false, 0.9, 1.1};
  const sdk::SampleTensor warp64{DType::Float64, {3, 3}, sdk::Layout::Contiguous, false, 0.9, 1.1};
  m.sample("warp_perspective", {.inputs = {{DType::Float32, {16, 16}}, warp32}});
  m.sample("warp_perspective",
           {.inputs = {{DType::Float32, {9, 7, 3}}, warp64}, .attrs = {{"height", 5}, {"width", 11}}});
  m.sample("warp_perspective", {.inputs = {{DType::Float32, {1, 1}}, warp32}, .attrs = {{"height", 1}, {"width", 1}}});
  m.sample("warp_perspective",
           {.inputs = {{DType::Float64, {8, 8}}, warp32}, .error = "image: expected float32, got float64[8, 8]"});
  m.sample("warp_perspective", {.inputs = {{DType::Float32, {8, 8}}, warp32},
                                .attrs = {{"height", 0}},
                                .error = "height: expected at least 1, got 0"});
}
