// Samples of the resampling ops (upsample.cpp) over 1, 2 and 3 spatial
// dims: up, down and to the same size, an empty batch, single pixels,
// explicit scales that differ from the sizes' ratio, corners aligned or
// not, transposed and strided inputs, and the .vec forms by size and by
// scale factor. Inputs of the wrong rank, empty outputs, size lists of the
// wrong length and .vec calls with both or neither of size and scale are
// refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

struct Resize {
  Shape lead;  // batch, channels
  int64_t in, out;
  double scale;  // 0: none given
  Layout layout = Layout::Contiguous;
};

const std::vector<Resize>& resizes() {
  static const std::vector<Resize> cases = {
      {{1, 2}, 3, 6, 0},
      {{2, 3}, 5, 3, 0},
      {{0, 2}, 4, 4, 0},
      {{1, 1}, 1, 1, 0},
      {{1, 2}, 4, 7, 1.5, Layout::Transposed},
      {{1, 3}, 6, 4, 0.5, Layout::Strided},
      {{2, 2}, 3, 6, 2.5},
  };
  return cases;
}

// The names of an op's per-dim scale attributes.
std::vector<std::string> scale_names(size_t dims) {
  if (dims == 1) return {"scales"};
  if (dims == 2) return {"scales_h", "scales_w"};
  return {"scales_d", "scales_h", "scales_w"};
}

// `interpolating`: the op takes align_corners (alternating over the samples).
std::vector<Sample> resampled(size_t dims, bool interpolating, bool vec) {
  std::vector<Sample> table;
  bool align = false;
  for (DType dtype : {F32, F64}) {
    for (const Resize& r : resizes()) {
      std::vector<Attr> attrs;
      if (vec && r.scale > 0) {
        attrs = {{"output_size", std::monostate{}}, {"scale_factors", std::vector<double>(dims, r.scale)}};
      } else {
        attrs = {{"output_size", repeat(r.out, dims)}};
        if (vec) attrs.emplace_back("scale_factors", std::monostate{});
        if (r.scale > 0) {
          for (const std::string& name : scale_names(dims)) attrs.emplace_back(name, r.scale);
        }
      }
      if (interpolating) attrs.emplace_back("align_corners", align = !align);
      table.push_back(good({tensor(dtype, spatial(r.lead, r.in, dims), r.layout)}, attrs));
    }
  }
  std::vector<Attr> attrs = {{"output_size", repeat(4, dims)}};
  if (vec) attrs.emplace_back("scale_factors", std::monostate{});
  if (interpolating) attrs.emplace_back("align_corners", false);
  table.push_back(
      bad({tensor(F32, spatial({2}, 3, dims))},
          detail::concat("input: expected rank ", dims + 2, " (batch, channels and ", dims, " spatial dims)"), attrs));
  attrs[0].second = repeat(0, dims);
  table.push_back(bad({tensor(F32, spatial({1, 2}, 3, dims))}, "input and output sizes must be greater than 0", attrs));
  attrs[0].second = repeat(4, dims + 1);
  table.push_back(
      bad({tensor(F32, spatial({1, 2}, 3, dims))}, detail::concat("output_size: expected ", dims, " sizes"), attrs));
  if (vec) {
    attrs[0].second = repeat(4, dims);
    attrs[1].second = std::vector<double>(dims, 2.0);
    table.push_back(
        bad({tensor(F32, spatial({1, 2}, 3, dims))}, "expected exactly one of output_size and scale_factors", attrs));
  }
  if (interpolating) {
    attrs[0].second = repeat(4, dims);
    if (vec) attrs[1].second = std::monostate{};
    table.push_back(
        bad({tensor(I64, spatial({1, 2}, 3, dims))}, "input: expected float32 or float64, got int64", attrs));
  }
  return table;
}

}  // namespace

void register_upsample_samples(BuiltinOps& builtins) {
  const std::pair<const char*, size_t> nearest[] = {{"nearest1d", 1}, {"nearest2d", 2}, {"nearest3d", 3}};
  const std::pair<const char*, size_t> interpolating[] = {
      {"linear1d", 1}, {"bilinear2d", 2}, {"bicubic2d", 2}, {"trilinear3d", 3}};
  for (const auto& [name, dims] : nearest) {
    builtins.add_samples(std::string("aten::upsample_") + name, resampled(dims, false, false));
    builtins.add_samples(std::string("aten::upsample_") + name + ".vec", resampled(dims, false, true));
  }
  for (const auto& [name, dims] : interpolating) {
    builtins.add_samples(std::string("aten::upsample_") + name, resampled(dims, true, false));
    builtins.add_samples(std::string("aten::upsample_") + name + ".vec", resampled(dims, true, true));
  }
}

}  // namespace opgraph::kernels::samples
