// Samples of the ops that make or convert tensors (factory.cpp, convert.cpp,
// complex views, diff, prelu): fills and ranges of every dtype, 0-d and
// empty sizes, conversions between dtypes on transposed and strided inputs,
// and the finite differences and parametric ReLU of each shape. Negative
// sizes, devices and layouts other than the CPU's strided ones, ranges that
// never reach their end and shapes that do not fit are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

const std::string negative_size = "size: expected non-negative extents, got [2, -3]";
const std::string gpu = "device: expected None or cpu, got \"cuda\"";
const Attr on_gpu = {"device", std::string("cuda")};

// Fills in each dtype (None: the default), with `value` where the op takes
// one, and of a size where `sized`.
std::vector<Sample> fills(const std::vector<SampleTensor>& like, const std::vector<Attr>& value, bool sized) {
  const std::vector<std::pair<Shape, AttrValue>> cases = {
      {{2, 3}, std::monostate{}}, {{0, 3}, F64}, {{}, I64}, {{4}, B}, {{1, 1, 5}, I32}};
  std::vector<Sample> table;
  for (const auto& [size, dtype] : cases) {
    std::vector<Attr> attrs = value;
    attrs.emplace_back("dtype", dtype);
    if (sized) attrs.emplace_back("size", size);
    table.push_back(good(like, attrs));
  }
  return table;
}

void register_fills(BuiltinOps& builtins) {
  const std::vector<Attr> by_size = {{"size", Shape{2, -3}}};
  // empty and its forms fill with zeros, as zeros does.
  for (const char* op : {"aten::zeros", "aten::ones", "aten::empty.memory_format"}) {
    builtins.add_samples(
        op, with(fills({}, {}, true), {bad({}, negative_size, by_size), bad({}, gpu, {{"size", Shape{2}}, on_gpu}),
                                       bad({}, "layout: expected None or strided, got \"sparse_coo\"",
                                           {{"size", Shape{2}}, {"layout", std::string("sparse_coo")}})}));
  }
  // empty_strided: each size with its row-major strides, and with a transposed pair.
  std::vector<Sample> strided;
  for (Sample sample : fills({}, {}, true)) {
    const Shape size = std::get<std::vector<int64_t>>(sample.attrs.back().second);
    Shape stride(size.size(), 1);
    for (size_t d = size.size(); d-- > 1;) stride[d - 1] = stride[d] * std::max<int64_t>(size[d], 1);
    sample.attrs.emplace_back("stride", stride);
    strided.push_back(std::move(sample));
  }
  strided.push_back(good({}, {{"size", Shape{2, 3}}, {"stride", Shape{1, 2}}}));
  builtins.add_samples("aten::empty_strided",
                       with(strided, {bad({}, negative_size, {{"size", Shape{2, -3}}, {"stride", Shape{1, 1}}}),
                                      bad({}, gpu, {{"size", Shape{2}}, {"stride", Shape{1}}, on_gpu})}));

  builtins.add_samples("aten::full", with(fills({}, {{"fill_value", int64_t{3}}}, true),
                                          {bad({}, negative_size, {{"size", Shape{2, -3}}, {"fill_value", 1.5}}),
                                           bad({}, gpu, {{"size", Shape{2}}, {"fill_value", 1.5}, on_gpu})}));

  // The _like ops on each layout, and the new_ ops of a size.
  const std::vector<SampleTensor> likes = {tensor(F32, {2, 3}), tensor(F64, {4, 5}, Layout::Transposed),
                                           tensor(I64, {3, 4}, Layout::Strided), tensor(B, {0, 2})};
  for (const char* op : {"aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::empty_like"}) {
    const bool full = std::string(op) == "aten::full_like";
    const std::vector<Attr> value = full ? std::vector<Attr>{{"fill_value", int64_t{2}}} : std::vector<Attr>{};
    std::vector<Sample> table;
    for (const SampleTensor& like : likes) {
      const std::vector<Sample> some = fills({like}, value, false);
      table.insert(table.end(), some.begin(), some.end());
    }
    std::vector<Attr> attrs = value;
    attrs.push_back(on_gpu);
    table.push_back(bad({tensor(F32, {2})}, gpu, attrs));
    attrs.back() = {"layout", std::string("sparse_coo")};
    table.push_back(bad({tensor(F32, {2})}, "layout: expected None or strided, got \"sparse_coo\"", attrs));
    builtins.add_samples(op, table);
  }
  for (const char* op : {"aten::new_zeros", "aten::new_ones", "aten::new_full", "aten::new_empty"}) {
    const bool full = std::string(op) == "aten::new_full";
    std::vector<Attr> value = full ? std::vector<Attr>{{"fill_value", 1.5}} : std::vector<Attr>{};
    std::vector<Sample> table;
    for (const SampleTensor& like : likes) {
      const std::vector<Sample> some = fills({like}, value, false);
      for (size_t i = 0; i < some.size(); ++i) {
        Sample sample = some[i];
        sample.attrs.emplace_back("size", i % 2 ? Shape{4} : Shape{0, 2});
        table.push_back(std::move(sample));
      }
    }
    value.emplace_back("size", Shape{2, -3});
    table.push_back(bad({tensor(F32, {2})}, negative_size, value));
    value.back() = {"size", Shape{2}};
    value.push_back(on_gpu);
    table.push_back(bad({tensor(F32, {2})}, gpu, value));
    builtins.add_samples(op, table);
  }

  builtins.add_samples("aten::scalar_tensor", with(fills({}, {{"s", 2.5}}, false),
                                                   {bad({}, gpu, {{"s", 1.0}, on_gpu}),
                                                    bad({}, "layout: expected None or strided, got \"sparse_coo\"",
                                                        {{"s", 1.0}, {"layout", std::string("sparse_coo")}})}));

  std::vector<Sample> fill;
  for (const Sample& sample :
       retyped({F32, F64, I32, I64, B},
               {one({2, 3}, {{"value", int64_t{1}}}), one({}, {{"value", int64_t{0}}}),
                one({0, 4}, {{"value", int64_t{1}}}), one({4, 5}, {{"value", int64_t{1}}}, Layout::Transposed)})) {
    fill.push_back(sample);
  }
  fill.push_back(one({3, 4}, {{"value", 2.5}}, Layout::Strided));
  fill.push_back(bad({tensor(DType::Complex64, {3})}, "complex64", {{"value", 1.0}}));
  fill.push_back(bad({tensor(DType::Complex128, {3})}, "complex128", {{"value", 1.0}}));
  builtins.add_samples("aten::fill.Scalar", fill);
}

void register_ranges(BuiltinOps& builtins) {
  auto range = [](AttrValue start, AttrValue end, AttrValue step, AttrValue dtype = std::monostate{}) {
    return good({}, {{"start", start}, {"end", end}, {"step", step}, {"dtype", dtype}});
  };
  std::vector<Sample> start_step = {
      range(int64_t{0}, int64_t{5}, int64_t{1}),   range(0.0, 1.0, 0.25),
      range(int64_t{5}, int64_t{-3}, int64_t{-2}), range(-1.5, 2.0, 0.5, F64),
      range(int64_t{2}, int64_t{2}, int64_t{1}),   range(int64_t{0}, int64_t{7}, int64_t{3}, I32)};
  const Sample zero_step = bad({}, "step: expected a non-zero step, got 0",
                               {{"start", int64_t{0}}, {"end", int64_t{1}}, {"step", int64_t{0}}});
  const Sample wrong_way = bad({}, "step: 1 does not lead from start 5 to end 1",
                               {{"start", int64_t{5}}, {"end", int64_t{1}}, {"step", int64_t{1}}});
  builtins.add_samples("aten::arange.start_step", with(start_step, {zero_step, wrong_way}));

  // arange.start and arange: the ranges of step 1, without the attributes they lack.
  std::vector<Sample> start, end;
  for (const Sample& sample : start_step) {
    if (sample.attrs[2].second != AttrValue(int64_t{1})) continue;
    Sample from = sample;
    from.attrs.erase(from.attrs.begin() + 2);
    start.push_back(from);
    Sample to = from;
    to.attrs.erase(to.attrs.begin());
    end.push_back(to);
  }
  start.push_back(range(1.5, 4.0, 1.0, F64));
  start.back().attrs.erase(start.back().attrs.begin() + 2);
  for (const AttrValue& last : {AttrValue(5.5), AttrValue(int64_t{0}), AttrValue(int64_t{3})})
    end.push_back(good({}, {{"end", last}}));
  Sample backwards = wrong_way;
  backwards.attrs.pop_back();
  builtins.add_samples("aten::arange.start",
                       with(start, {backwards, bad({}, gpu, {{"start", int64_t{0}}, {"end", int64_t{1}}, on_gpu})}));
  builtins.add_samples("aten::arange",
                       with(end, {bad({}, "step: 1 does not lead from start 0 to end -1", {{"end", int64_t{-1}}}),
                                  bad({}, gpu, {{"end", int64_t{1}}, on_gpu})}));
}

void register_conversions(BuiltinOps& builtins) {
  // Each dtype to each of a few others; values inside every dtype's range.
  const std::vector<SampleTensor> inputs = {tensor(F32, {2, 3}),
                                            tensor(F64, {4, 5}, Layout::Transposed),
                                            tensor(I64, {3, 4}, Layout::Strided),
                                            tensor(B, {0, 2}),
                                            tensor(I32, {}),
                                            tensor(DType::Int8, {3, 2}),
                                            tensor(DType::UInt8, {5}).in(0, 100)};
  // Each value stays in the range of each target (an int8 target included).
  const DType targets[] = {F32, F64, I32, I64, B, DType::Int8};
  std::vector<Sample> to_copy, to_dtype, to_layout, to_device, type_as;
  size_t next = 0;
  for (SampleTensor input : inputs) {
    if (input.dtype != DType::UInt8) input.in(-100, 100);
    for (size_t k = 0; k < 2; ++k) {
      const DType target = targets[next++ % std::size(targets)];
      to_copy.push_back(good({input}, {{"dtype", target}}));
      to_dtype.push_back(good({input}, {{"dtype", target}, {"copy", k == 1}}));
      to_layout.push_back(good({input}, {{"dtype", target}, {"device", std::string("cpu")}}));
      to_device.push_back(good({input}, {{"device", std::string("cpu")}, {"dtype", target}}));
      type_as.push_back(good({input, tensor(target, {1})}));
    }
  }
  to_copy.push_back(good({tensor(F32, {3})}, {{"memory_format", std::string("preserve_format")}}));
  const std::vector<Sample> refusals = {
      bad({tensor(F32, {3})}, gpu, {{"dtype", F64}, on_gpu}),
      bad({tensor(F32, {3})},
          "memory_format: expected None, contiguous_format or preserve_format, got \"channels_last\"",
          {{"dtype", F64}, {"memory_format", std::string("channels_last")}})};
  auto refused = [&](std::vector<Sample> table) {
    table.insert(table.end(), refusals.begin(), refusals.end());
    return table;
  };
  builtins.add_samples("aten::_to_copy", refused(to_copy));
  builtins.add_samples(
      "aten::to.dtype",
      with(to_dtype,
           {bad({tensor(F32, {3})}, "memory_format", {{"dtype", F64}, {"memory_format", std::string("channels_last")}}),
            bad({tensor(DType::Complex64, {3})}, "would drop the imaginary part", {{"dtype", F32}})}));
  builtins.add_samples("aten::to.dtype_layout", refused(to_layout));
  builtins.add_samples(
      "aten::to.device",
      with(to_device,
           {refusals[0],
            bad({tensor(F32, {3})}, "memory_format",
                {{"device", std::string("cpu")}, {"dtype", F64}, {"memory_format", std::string("channels_last")}})}));
  builtins.add_samples(
      "aten::type_as",
      with(type_as, {bad({tensor(DType::Complex64, {2, 3}), tensor(F32, {1})},
                         "dtype: converting complex64 to float32 would drop the imaginary part"),
                     bad({tensor(DType::Complex128, {2}), tensor(I64, {1})}, "would drop the imaginary part")}));

  builtins.add_samples(
      "aten::view_as_real",
      with(retyped({DType::Complex64, DType::Complex128},
                   {good({tensor(F32, {2, 3})}), good({tensor(F32, {})}), good({tensor(F32, {0, 4})})}),
           {bad({tensor(F32, {2, 3})}, "self: expected complex64 or complex128, got float32"),
            bad({tensor(I64, {2})}, "got int64")}));
  builtins.add_samples(
      "aten::view_as_complex",
      with(retyped({F32, F64}, {good({tensor(F32, {2, 3, 2})}), good({tensor(F32, {2})}), good({tensor(F32, {0, 2})})}),
           {bad({tensor(F32, {2, 3})}, "self: expected a last dim of size 2 (real, imaginary), got float32[2, 3]"),
            bad({tensor(F32, {})}, "self")}));
}

void register_differences(BuiltinOps& builtins) {
  // diff's inputs are self, prepend and append, the last two None unless given.
  const SampleTensor none = SampleTensor::absent();
  auto alone = [&](Shape shape, std::vector<Attr> attrs) {
    return good({tensor(F32, std::move(shape)), none, none}, std::move(attrs));
  };
  builtins.add_samples(
      "aten::diff",
      with(retyped({F32, F64, I32, I64, B},
                   {alone({3, 5}, {}), alone({3, 5}, {{"n", int64_t{2}}, {"dim", int64_t{0}}}),
                    good({tensor(F32, {3, 5}), tensor(F32, {3, 1}), tensor(F32, {3, 2})}),
                    good({tensor(F32, {4, 6}, Layout::Transposed), none, tensor(F32, {4, 1}, Layout::Strided)}),
                    alone({3, 5}, {{"n", int64_t{7}}}), alone({0, 2}, {{"n", int64_t{0}}}), alone({1}, {})}),
           {bad({tensor(F32, {3, 5}), none, none}, "n: expected a non-negative order, got -1", {{"n", int64_t{-1}}}),
            bad({tensor(F32, {3, 5}), tensor(F32, {2, 1}), none},
                "prepend: expected 3 in dim 0 like self float32[3, 5], got float32[2, 1]")}));

  builtins.add_samples(
      "aten::prelu",
      with(retyped({F32, F64},
                   {good({tensor(F32, {2, 3, 4}), tensor(F32, {3})}), good({tensor(F32, {2, 3, 4}), tensor(F32, {1})}),
                    good({tensor(F32, {3}), tensor(F32, {1})}), good({tensor(F32, {0, 2}), tensor(F32, {2})}),
                    good({tensor(F32, {5, 4}, Layout::Transposed), tensor(F32, {4}, Layout::Strided)})}),
           {bad({tensor(F32, {2, 3, 4}), tensor(F32, {2})},
                "weight: expected 1 value or one per channel (3 for self float32[2, 3, 4]), got float32[2]"),
            bad({tensor(I64, {2, 3}), tensor(I64, {3})}, "self: expected float32 or float64, got int64[2, 3]")}));

  builtins.add_samples(
      "aten::as_strided",
      with(retyped({F32, F64, I64, B},
                   {one({12}, {{"size", Shape{3, 2}}, {"stride", Shape{2, 1}}}),
                    one({12}, {{"size", Shape{3, 2}}, {"stride", Shape{5, 1}}}),
                    one({3, 4}, {{"size", Shape{2, 2}}, {"stride", Shape{1, 3}}, {"storage_offset", int64_t{2}}}),
                    one({5}, {{"size", Shape{4}}, {"stride", Shape{0}}}),
                    one({5}, {{"size", Shape{0}}, {"stride", Shape{1}}})}),
           {bad({tensor(F32, {12})},
                "size and stride: [3, 2] with strides [6, 1] and offset 0 read element 13, beyond input float32[12]",
                {{"size", Shape{3, 2}}, {"stride", Shape{6, 1}}}),
            bad({tensor(F32, {12})}, "size and stride: expected non-negative values, got [3, 2] and [-1, 1]",
                {{"size", Shape{3, 2}}, {"stride", Shape{-1, 1}}})}));
}

}  // namespace

void register_factory_samples(BuiltinOps& builtins) {
  register_fills(builtins);
  register_ranges(builtins);
  register_conversions(builtins);
  register_differences(builtins);
}

}  // namespace opgraph::kernels::samples
