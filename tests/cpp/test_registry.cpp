// Registering ops and calling them through the registry.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "opgraph/core/error.h"
#include "opgraph/registry/registry.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;

// Signature shared by every scale op below: out = x * factor (+ bias).
constexpr const char* kScaleSignature = "(Tensor x, Tensor? bias=None, *, float factor=2.0) -> Tensor";

std::vector<TensorMeta> scale_shape(std::span<const TensorMeta* const> inputs, const Attrs&) {
  const TensorMeta& x = *inputs[0];
  OPGRAPH_CHECK(x.dtype == DType::Float32, "expects a float32 x, got ", x.str());
  OPGRAPH_CHECK(inputs[1] == nullptr || *inputs[1] == x, "bias must be ", x.str());
  return {x};
}

void scale_kernel(const KernelContext&, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                  const Attrs& attrs) {
  const Tensor& x = inputs[0];
  OPGRAPH_CHECK(x.is_contiguous(), "kernel got strides ", shape_str(x.strides()));
  const float factor = static_cast<float>(attrs.get<double>("factor"));
  const float* bias = inputs[1].defined() ? inputs[1].data_ptr<float>() : nullptr;
  float* out = outputs[0].data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = x.data_ptr<float>()[i] * factor + (bias ? bias[i] : 0.0f);
}

OpDef scale_op(const std::string& name, const std::string& source = "test_registry.cpp:1") {
  OpDef op;
  op.schema = Schema::parse(name + kScaleSignature);
  op.shape_fn = scale_shape;
  op.kernels[static_cast<size_t>(DeviceType::CPU)] = scale_kernel;
  op.source = source;
  return op;
}

Tensor floats(const std::vector<float>& values, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  Tensor t = Tensor::empty(std::move(shape), DType::Float32);
  std::copy(values.begin(), values.end(), t.data_ptr<float>());
  return t;
}

std::vector<float> values(const Tensor& t) {
  const float* data = t.data_ptr<float>();
  return {data, data + t.numel()};
}

::testing::AssertionResult Contains(const char*, const char*, const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' is not in:\n" << text;
}
#define EXPECT_CONTAINS(text, part) EXPECT_PRED_FORMAT2(Contains, text, part)

class RegistryTest : public ::testing::Test {
 protected:
  const OpDef& add(OpDef op) {
    std::string name = op.schema.qualified_name();
    registry_.add(std::move(op));
    return registry_.get(name);
  }

  Registry registry_;
};

// ---------------------------------------------------------------------------
// Declaring ops

TEST_F(RegistryTest, AddFindGet) {
  const OpDef& op = add(scale_op("t::scale"));
  EXPECT_EQ(op.name(), "t::scale");
  EXPECT_EQ(op.tensor_arguments(), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(op.num_outputs(), 1u);
  EXPECT_EQ(registry_.find("t::scale"), &op);
  EXPECT_EQ(registry_.find("t::scale.out"), nullptr);
  EXPECT_EQ(registry_.find("scale"), nullptr);
  EXPECT_TRUE(registry_.contains("t::scale"));
  EXPECT_FALSE(registry_.contains("t::other"));
  EXPECT_FALSE(Registry().contains("t::scale"));
}

TEST_F(RegistryTest, ListIsSorted) {
  registry_.add({scale_op("b::z"), scale_op("a::y"), scale_op("a::x.over"), scale_op("a::x")});
  EXPECT_EQ(registry_.list(), (std::vector<std::string>{"a::x", "a::x.over", "a::y", "b::z"}));
}

TEST_F(RegistryTest, GetUnknownSuggestsSimilarNames) {
  registry_.add({scale_op("t::scale"), scale_op("t::scale.out"), scale_op("other::relu")});
  const std::string message = error_of([&] { registry_.get("x::scale"); });
  EXPECT_CONTAINS(message, "unknown op 'x::scale'");
  EXPECT_CONTAINS(message, "t::scale, t::scale.out");
  EXPECT_EQ(message.find("other::relu"), std::string::npos) << message;
  EXPECT_CONTAINS(error_of([&] { registry_.get("scale.Tensor"); }), "t::scale");
  EXPECT_CONTAINS(error_of([&] { registry_.get("t::softmax"); }), "load the package");
}

TEST_F(RegistryTest, DuplicateNamesBothSourcesAndKeepsFirst) {
  add(scale_op("t::scale", "first.cpp:10"));
  const std::string message = error_of([&] { registry_.add(scale_op("t::scale", "second.cpp:20")); });
  EXPECT_CONTAINS(message, "t::scale");
  EXPECT_CONTAINS(message, "first.cpp:10");
  EXPECT_CONTAINS(message, "second.cpp:20");
  EXPECT_EQ(registry_.list(), (std::vector<std::string>{"t::scale"}));
  EXPECT_EQ(registry_.get("t::scale").source, "first.cpp:10");
}

TEST_F(RegistryTest, BatchWithClashAddsNone) {
  add(scale_op("t::a"));
  EXPECT_THROW(registry_.add({scale_op("t::b"), scale_op("t::a")}), Error);
  EXPECT_THROW(registry_.add({scale_op("t::c"), scale_op("t::c")}), Error);
  EXPECT_EQ(registry_.list(), (std::vector<std::string>{"t::a"}));
}

TEST_F(RegistryTest, BackwardMustBeDeclared) {
  OpDef forward = scale_op("t::scale");
  forward.backward = "t::scale_backward";
  const std::string message = error_of([&] { registry_.add(forward); });
  EXPECT_CONTAINS(message, "t::scale_backward");
  EXPECT_FALSE(registry_.contains("t::scale"));

  registry_.add({forward, scale_op("t::scale_backward")});
  EXPECT_EQ(registry_.get("t::scale").backward, "t::scale_backward");
}

// A batch's backward references are looked up once the whole batch is in:
// the op that names a backward may come before it or after it.
TEST_F(RegistryTest, BackwardInBatchInAnyOrder) {
  OpDef forward = scale_op("t::scale");
  forward.backward = "t::scale_backward";
  registry_.add({forward, scale_op("t::scale_backward")});
  Registry reversed;
  reversed.add({scale_op("t::scale_backward"), forward});
  EXPECT_EQ(reversed.list(), registry_.list());
}

TEST_F(RegistryTest, DanglingBackwardNamesBothOpsAndAddsNone) {
  OpDef forward = scale_op("t::scale", "forward.cpp:7");
  forward.backward = "t::scale_backward";
  const std::string message =
      error_of([&] { registry_.add({scale_op("t::first"), forward, scale_op("t::scale_backwards")}); });
  EXPECT_CONTAINS(message, "t::scale: its backward op 't::scale_backward' is not declared");
  EXPECT_CONTAINS(message, "forward.cpp:7");
  EXPECT_TRUE(registry_.list().empty());
}

TEST_F(RegistryTest, KernelsForAnUndeclaredOpAreRefusedAllTogether) {
  const OpDef& op = add(scale_op("t::scale"));
  const std::string message = error_of([&] {
    registry_.add_kernels({{"t::scale", DeviceType::CUDA, scale_kernel, "k.cu:2"},
                           {"t::missing", DeviceType::CUDA, scale_kernel, "k.cu:3"}});
  });
  EXPECT_CONTAINS(message, "cannot add a cuda kernel for op 't::missing' (k.cu:3): no such op is declared");
  EXPECT_FALSE(static_cast<bool>(op.kernels[static_cast<size_t>(DeviceType::CUDA)]));
}

TEST_F(RegistryTest, SecondKernelForSameDeviceThrows) {
  const OpDef& op = add(scale_op("t::scale"));
  const std::string message =
      error_of([&] { registry_.add_kernels({{"t::scale", DeviceType::CPU, scale_kernel, "k.cpp:4"}}); });
  EXPECT_CONTAINS(message, "already has a cpu kernel");
  EXPECT_CONTAINS(message, "k.cpp:4");
  EXPECT_CONTAINS(error_of([&] {
                    registry_.add_kernels({{"t::scale", DeviceType::CUDA, scale_kernel, "k.cu:5"},
                                           {"t::scale", DeviceType::CUDA, scale_kernel, "k.cu:6"}});
                  }),
                  "already has a cuda kernel; cannot add another (k.cu:6)");
  EXPECT_FALSE(static_cast<bool>(op.kernels[static_cast<size_t>(DeviceType::CUDA)]));
  registry_.add_kernels({{"t::scale", DeviceType::CUDA, scale_kernel, "k.cu:5"}});
  EXPECT_TRUE(static_cast<bool>(op.kernels[static_cast<size_t>(DeviceType::CUDA)]));
}

TEST_F(RegistryTest, SchemaWithoutNamespaceRejected) {
  EXPECT_CONTAINS(error_of([&] { registry_.add(scale_op("scale")); }), "no namespace");
  EXPECT_TRUE(registry_.list().empty());
}

TEST_F(RegistryTest, TensorListArgumentsAreCounted) {
  OpDef op = scale_op("t::scale");
  op.schema = Schema::parse("t::join(Tensor x, Tensor[] xs, Tensor? bias, Tensor[] ys, int dim=0) -> Tensor");
  const OpDef& join = add(std::move(op));
  EXPECT_EQ(join.tensor_arguments(), (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(join.num_tensor_lists(), 2u);
  const std::vector<size_t> lengths{2, 1};
  const Attrs attrs = Attrs::bind(join.schema, {}, lengths);
  EXPECT_EQ(join.num_inputs(attrs), 5u);
  std::vector<std::string> names;
  for (size_t i = 0; i < 6; ++i) names.push_back(join.input_name(i, attrs));
  EXPECT_EQ(names, (std::vector<std::string>{"x", "xs[0]", "xs[1]", "bias", "ys[0]", "input 5"}));
}

TEST_F(RegistryTest, TensorListVariantsRejected) {
  for (const char* schema : {"t::f(Tensor[]? xs) -> Tensor", "t::f(Tensor[2] xs) -> Tensor"}) {
    OpDef op = scale_op("t::f");
    op.schema = Schema::parse(schema);
    const std::string message = error_of([&] { registry_.add(op); });
    EXPECT_CONTAINS(message, "argument 'xs' is a Tensor[");
    EXPECT_CONTAINS(message, "Tensor, Tensor?, Tensor[] and Tensor?[]");
  }
  // A Tensor[] return must be the only one: its length is the shape function's.
  OpDef op = scale_op("t::f");
  op.schema = Schema::parse("t::split(Tensor x) -> (Tensor[], Tensor)");
  EXPECT_CONTAINS(error_of([&] { registry_.add(op); }),
                  "returns Tensor[]; the registry runs ops that return "
                  "Tensors, one Tensor[]");
  EXPECT_TRUE(registry_.list().empty());
}

TEST_F(RegistryTest, ListReturnsAndOptionalListElements) {
  OpDef split = scale_op("t::split");
  split.schema = Schema::parse("t::split(Tensor x, Tensor?[] extra) -> Tensor[]");
  registry_.add(split);
  const OpDef& op = registry_.get("t::split");
  EXPECT_TRUE(op.returns_list());
  EXPECT_EQ(op.num_outputs(), 1u);  // the list, whatever its length
  EXPECT_EQ(op.num_tensor_lists(), 1u);
  registry_.add(scale_op("t::scale"));
  EXPECT_FALSE(registry_.get("t::scale").returns_list());
}

TEST_F(RegistryTest, NonTensorReturnRejected) {
  OpDef op = scale_op("t::scale");
  op.schema = Schema::parse("t::name(Tensor x) -> str");
  EXPECT_CONTAINS(error_of([&] { registry_.add(op); }), "returns str");
}

// A scalar return is a 0-d tensor output (aten::sym_size.int).
TEST_F(RegistryTest, ScalarReturnAccepted) {
  OpDef op = scale_op("t::scale");
  op.schema = Schema::parse("t::count(Tensor x) -> SymInt");
  registry_.add(op);
  EXPECT_EQ(registry_.get("t::count").num_outputs(), 1u);
}

TEST_F(RegistryTest, MissingShapeFunctionRejected) {
  OpDef op = scale_op("t::scale");
  op.shape_fn = nullptr;
  EXPECT_CONTAINS(error_of([&] { registry_.add(op); }), "no shape function");
}

// ---------------------------------------------------------------------------
// Calling ops

class CallTest : public RegistryTest {
 protected:
  void SetUp() override { op_ = &add(scale_op("t::scale")); }

  Attrs attrs(const NamedAttrs& given = {}) const { return Attrs::bind(op_->schema, given); }
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const NamedAttrs& given = {}) const {
    return call(*op_, inputs, attrs(given));
  }

  const OpDef* op_ = nullptr;
};

TEST_F(CallTest, AllocatesOutputs) {
  std::vector<Tensor> out = run({floats({1, 2, 3}), Tensor()});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].meta(), (TensorMeta{DType::Float32, {3}}));
  EXPECT_EQ(values(out[0]), (std::vector<float>{2, 4, 6}));
}

TEST_F(CallTest, PassesOptionalInputAndAttributes) {
  std::vector<Tensor> out = run({floats({1, 2}), floats({10, 20})}, {{"factor", 3.0}});
  EXPECT_EQ(values(out[0]), (std::vector<float>{13, 26}));
}

TEST_F(CallTest, CallOutWritesCallerOutputs) {
  Tensor out = Tensor::zeros({2, 2}, DType::Float32);
  const std::vector<Tensor> outputs{out};
  call_out(*op_, std::vector<Tensor>{floats({1, 2, 3, 4}, {2, 2}), Tensor()}, outputs, attrs({{"factor", -1.0}}));
  EXPECT_EQ(values(out), (std::vector<float>{-1, -2, -3, -4}));
}

TEST_F(CallTest, InferOutputs) {
  std::vector<TensorMeta> metas = infer_outputs(*op_, std::vector<Tensor>{floats({1, 2}), Tensor()}, attrs());
  EXPECT_EQ(metas, (std::vector<TensorMeta>{{DType::Float32, {2}}}));
}

TEST_F(CallTest, InferOutputsFromMetasAlone) {
  const TensorMeta x{DType::Float32, {3, 5}};
  const std::vector<const TensorMeta*> given{&x, nullptr};
  EXPECT_EQ(infer_outputs(*op_, given, attrs()), (std::vector<TensorMeta>{{DType::Float32, {3, 5}}}));
  const std::vector<const TensorMeta*> without_x{nullptr, &x};
  EXPECT_CONTAINS(error_of([&] { infer_outputs(*op_, without_x, attrs()); }), "t::scale: input 'x' is required");
  const std::vector<const TensorMeta*> one{&x};
  EXPECT_CONTAINS(error_of([&] { infer_outputs(*op_, one, attrs()); }),
                  "t::scale: expected 2 tensor inputs (x, bias), got 1");
}

TEST_F(CallTest, WrongNumberOfInputs) {
  const std::string message = error_of([&] { run({floats({1})}); });
  EXPECT_CONTAINS(message, "t::scale: expected 2 tensor inputs (x, bias), got 1");
}

TEST_F(CallTest, MissingRequiredInput) {
  EXPECT_CONTAINS(error_of([&] { run({Tensor(), floats({1})}); }), "t::scale: input 'x' is required");
}

TEST_F(CallTest, OmittedOptionalInputReachesShapeFunctionAsNull) {
  OpDef op = scale_op("t::scale_probe");
  std::vector<bool> saw_null;
  op.shape_fn = [&saw_null](std::span<const TensorMeta* const> inputs, const Attrs& a) {
    saw_null.push_back(inputs[1] == nullptr);
    return scale_shape(inputs, a);
  };
  const OpDef& probe = add(std::move(op));
  std::vector<Tensor> out = call(probe, std::vector<Tensor>{floats({5}), Tensor()}, Attrs::bind(probe.schema, {}));
  EXPECT_EQ(values(out[0]), (std::vector<float>{10}));
  call(probe, std::vector<Tensor>{floats({5}), floats({1})}, Attrs::bind(probe.schema, {}));
  EXPECT_EQ(saw_null, (std::vector<bool>{true, false}));
}

TEST_F(CallTest, ShapeFunctionErrorIsPrefixed) {
  Tensor ints = Tensor::zeros({2}, DType::Int32);
  EXPECT_CONTAINS(error_of([&] { run({ints, Tensor()}); }), "t::scale: expects a float32 x, got int32[2]");
  EXPECT_CONTAINS(error_of([&] { run({floats({1, 2}), floats({1, 2, 3})}); }), "t::scale: bias must be float32[2]");
}

TEST_F(CallTest, CallOutRejectsWrongOutputMeta) {
  const std::vector<Tensor> inputs{floats({1, 2, 3}), Tensor()};
  const std::vector<Tensor> wrong_shape{Tensor::zeros({4}, DType::Float32)};
  const std::vector<Tensor> wrong_dtype{Tensor::zeros({3}, DType::Float64)};
  const std::string shape_message = error_of([&] { call_out(*op_, inputs, wrong_shape, attrs()); });
  EXPECT_CONTAINS(shape_message, "t::scale: output 0");
  EXPECT_CONTAINS(shape_message, "float32[3]");
  EXPECT_CONTAINS(shape_message, "float32[4]");
  const std::string dtype_message = error_of([&] { call_out(*op_, inputs, wrong_dtype, attrs()); });
  EXPECT_CONTAINS(dtype_message, "output 0");
  EXPECT_CONTAINS(dtype_message, "float32[3]");
  EXPECT_CONTAINS(dtype_message, "float64[3]");
  EXPECT_CONTAINS(error_of([&] { call_out(*op_, inputs, {}, attrs()); }), "expected 1 output tensors, got 0");
}

TEST_F(CallTest, CallOutRejectsNonContiguousOutput) {
  Tensor base = Tensor::zeros({3, 2}, DType::Float32);
  const std::vector<Tensor> outputs{base.transpose(0, 1)};
  const std::string message = error_of(
      [&] { call_out(*op_, std::vector<Tensor>{floats({1, 2, 3, 4, 5, 6}, {2, 3}), Tensor()}, outputs, attrs()); });
  EXPECT_CONTAINS(message, "output 0 must be contiguous");
  EXPECT_EQ(values(base), std::vector<float>(6, 0.0f));
}

TEST_F(CallTest, ZeroSizedOutput) {
  const std::vector<Tensor> outputs{Tensor::empty({3, 0}, DType::Float32)};
  call_out(*op_, std::vector<Tensor>{floats({}, {3, 0}), Tensor()}, outputs, attrs());
  EXPECT_EQ(run({floats({}, {0, 3}), Tensor()})[0].shape(), (Shape{0, 3}));
}

TEST_F(CallTest, StridedInputIsMadeContiguous) {
  Tensor x = floats({0, 1, 2, 3, 4, 5}, {2, 3}).transpose(0, 1);  // [[0, 3], [1, 4], [2, 5]]
  ASSERT_FALSE(x.is_contiguous());
  std::vector<Tensor> out = run({x, Tensor()});
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values(out[0]), (std::vector<float>{0, 6, 2, 8, 4, 10}));
}

TEST_F(CallTest, StridedInputPassesThroughWhenAccepted) {
  OpDef op = scale_op("t::strided");
  op.accepts_strided_inputs = true;
  std::vector<bool> contiguous;
  op.kernels[static_cast<size_t>(DeviceType::CPU)] = [&contiguous](const KernelContext&, std::span<const Tensor> in,
                                                                   std::span<const Tensor>, const Attrs&) {
    contiguous.push_back(in[0].is_contiguous());
  };
  const OpDef& strided = add(std::move(op));
  Tensor x = floats({0, 1, 2, 3, 4, 5}, {2, 3}).transpose(0, 1);
  call(strided, std::vector<Tensor>{x, Tensor()}, Attrs::bind(strided.schema, {}));
  EXPECT_EQ(contiguous, std::vector<bool>{false});
}

TEST_F(CallTest, KernelExceptionIsPrefixed) {
  OpDef op = scale_op("t::fails");
  op.kernels[static_cast<size_t>(DeviceType::CPU)] = [](const KernelContext&, std::span<const Tensor>,
                                                        std::span<const Tensor>,
                                                        const Attrs&) { throw std::runtime_error("out of cheese"); };
  const OpDef& fails = add(std::move(op));
  const std::string message =
      error_of([&] { call(fails, std::vector<Tensor>{floats({1}), Tensor()}, Attrs::bind(fails.schema, {})); });
  EXPECT_EQ(message, "t::fails: out of cheese");
}

TEST_F(CallTest, NoKernelForDevice) {
  float buffer[2] = {1, 2};
  Tensor on_cuda = Tensor::from_blob(buffer, {2}, {}, DType::Float32, {}, Device{DeviceType::CUDA, 0});
  const std::string message = error_of([&] { run({on_cuda, Tensor()}); });
  EXPECT_CONTAINS(message, "t::scale: no kernel for device cuda:0");
  EXPECT_CONTAINS(message, "kernels for: cpu");
}

TEST_F(CallTest, InputsOnDifferentDevices) {
  float buffer[2] = {1, 2};
  Tensor on_cuda = Tensor::from_blob(buffer, {2}, {}, DType::Float32, {}, Device{DeviceType::CUDA, 0});
  EXPECT_CONTAINS(error_of([&] { run({floats({1, 2}), on_cuda}); }), "input 'bias' is on cuda:0");
}

// ---------------------------------------------------------------------------
// Calling ops with Tensor[] arguments

// out = scale * (xs[0] + xs[1] + ...) + (ys[0] + ys[1] + ...), all float32 of
// one shape: two lists around a plain tensor, so only the list lengths tell
// which input is which.
constexpr const char* kSumListsSignature = "(Tensor[] xs, Tensor scale, Tensor[] ys) -> Tensor";

std::vector<TensorMeta> sum_lists_shape(std::span<const TensorMeta* const> inputs, const Attrs& attrs) {
  const TensorMeta& scale = *inputs[attrs.list_sizes()[0]];
  for (size_t i = 0; i < inputs.size(); ++i) {
    OPGRAPH_CHECK(inputs[i]->dtype == DType::Float32 && *inputs[i] == scale, "input ", i, ": expected ", scale.str(),
                  ", got ", inputs[i]->str());
  }
  return {scale};
}

void sum_lists_kernel(const KernelContext&, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                      const Attrs& attrs) {
  const size_t num_xs = attrs.list_sizes()[0];
  const Tensor& scale = inputs[num_xs];
  float* out = outputs[0].data_ptr<float>();
  for (int64_t k = 0; k < scale.numel(); ++k) {
    float xs = 0, ys = 0;
    for (size_t i = 0; i < num_xs; ++i) xs += inputs[i].data_ptr<float>()[k];
    for (size_t i = num_xs + 1; i < inputs.size(); ++i) ys += inputs[i].data_ptr<float>()[k];
    out[k] = scale.data_ptr<float>()[k] * xs + ys;
  }
}

OpDef sum_lists_op(const std::string& name, const std::string& signature = kSumListsSignature) {
  OpDef op;
  op.schema = Schema::parse(name + signature);
  op.shape_fn = sum_lists_shape;
  op.kernels[static_cast<size_t>(DeviceType::CPU)] = sum_lists_kernel;
  op.reference = sum_lists_kernel;
  op.source = "test_registry.cpp:2";
  return op;
}

class ListCallTest : public RegistryTest {
 protected:
  void SetUp() override { op_ = &add(sum_lists_op("t::sum_lists")); }

  Attrs attrs(std::vector<size_t> lengths) const { return Attrs::bind(op_->schema, {}, lengths); }
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, std::vector<size_t> lengths,
                          CallOptions options = {}) const {
    return call(*op_, inputs, attrs(std::move(lengths)), options);
  }

  const OpDef* op_ = nullptr;
};

TEST_F(ListCallTest, EachListGetsItsOwnInputs) {
  const std::vector<Tensor> inputs{floats({1, 2}), floats({10, 20}), floats({2, 3}), floats({100, 100})};
  EXPECT_EQ(values(run(inputs, {2, 1})[0]), (std::vector<float>{122, 166}));
  EXPECT_EQ(values(run(inputs, {2, 1}, {.reference = true})[0]), (std::vector<float>{122, 166}));
  // The same flat inputs split differently: scale is now the second input.
  EXPECT_EQ(values(run(inputs, {1, 2})[0]), (std::vector<float>{112, 143}));
}

TEST_F(ListCallTest, EmptyLists) {
  EXPECT_EQ(values(run({floats({2, 3})}, {0, 0})[0]), (std::vector<float>{0, 0}));
  EXPECT_EQ(values(run({floats({2, 3}), floats({1, 1})}, {0, 1})[0]), (std::vector<float>{1, 1}));
}

TEST_F(ListCallTest, InferOutputsAndCallOut) {
  const std::vector<Tensor> inputs{floats({1, 2, 3}), floats({1, 1, 1}), floats({5, 5, 5})};
  EXPECT_EQ(infer_outputs(*op_, inputs, attrs({1, 1})), (std::vector<TensorMeta>{{DType::Float32, {3}}}));
  Tensor out = Tensor::zeros({3}, DType::Float32);
  call_out(*op_, inputs, std::vector<Tensor>{out}, attrs({1, 1}));
  EXPECT_EQ(values(out), (std::vector<float>{6, 7, 8}));
}

TEST_F(ListCallTest, WrongNumberOfInputsNamesTheLists) {
  const std::string message = error_of([&] { run({floats({1}), floats({1})}, {2, 1}); });
  EXPECT_CONTAINS(message, "t::sum_lists: expected 4 tensor inputs (xs (2 tensors), scale, ys (1 tensor)), got 2");
}

TEST_F(ListCallTest, AttributesWithoutListLengths) {
  const std::vector<Tensor> inputs{floats({1})};
  EXPECT_CONTAINS(error_of([&] { call(*op_, inputs, Attrs()); }),
                  "t::sum_lists: the attributes give the lengths of 0 Tensor[] arguments, the op has 2");
}

TEST_F(ListCallTest, ErrorsNameTheElement) {
  EXPECT_CONTAINS(error_of([&] { run({floats({1}), Tensor(), floats({1})}, {2, 0}); }),
                  "t::sum_lists: input 'xs[1]' is required but was not given");
  float buffer[1] = {1};
  Tensor on_cuda = Tensor::from_blob(buffer, {1}, {}, DType::Float32, {}, Device{DeviceType::CUDA, 0});
  EXPECT_CONTAINS(error_of([&] { run({floats({1}), floats({1}), on_cuda}, {1, 1}); }),
                  "t::sum_lists: input 'ys[0]' is on cuda:0 but earlier inputs are on cpu");
}

TEST_F(ListCallTest, StridedElementIsMadeContiguous) {
  Tensor x = floats({0, 1, 2, 3, 4, 5}, {2, 3}).transpose(0, 1);  // [[0, 3], [1, 4], [2, 5]]
  Tensor ones = Tensor::zeros({3, 2}, DType::Float32);
  std::fill(ones.data_ptr<float>(), ones.data_ptr<float>() + 6, 1.0f);
  EXPECT_EQ(values(run({ones, x, ones, x}, {2, 1})[0]), (std::vector<float>{1, 7, 3, 9, 5, 11}));
}

// ---------------------------------------------------------------------------
// The global registry and the by-name entry point

const OpDef& global_scale() {
  static const OpDef& op = []() -> const OpDef& {
    Registry::global().add(scale_op("test_registry::scale"));
    return Registry::global().get("test_registry::scale");
  }();
  return op;
}

TEST(GlobalRegistryTest, CallByName) {
  global_scale();
  std::vector<Tensor> out =
      call("test_registry::scale", std::vector<Tensor>{floats({1, 2}), Tensor()}, {{"factor", int64_t{5}}});
  EXPECT_EQ(values(out[0]), (std::vector<float>{5, 10}));
  EXPECT_CONTAINS(error_of([] { call("test_registry::nope", std::vector<Tensor>{}); }), "unknown op");
  const std::vector<Tensor> inputs{floats({1}), Tensor()};
  EXPECT_CONTAINS(error_of([&] { call("test_registry::scale", inputs, {{"f", 1.0}}); }), "unexpected attribute 'f'");
}

TEST(GlobalRegistryTest, CallOutThroughGlobalOp) {
  const OpDef& op = global_scale();
  Tensor out = Tensor::zeros({3}, DType::Float32);
  call_out(op, std::vector<Tensor>{floats({1, 2, 3}), floats({1, 1, 1})}, std::vector<Tensor>{out},
           Attrs::bind(op.schema, {}));
  EXPECT_EQ(values(out), (std::vector<float>{3, 5, 7}));
}

TEST(GlobalRegistryTest, CallByNameGivesTheOnlyListTheRemainingInputs) {
  static const bool added = [] {
    Registry::global().add({sum_lists_op("test_registry::scaled_sum", "(Tensor[] xs, Tensor scale) -> Tensor"),
                            sum_lists_op("test_registry::sum_lists")});
    return true;
  }();
  ASSERT_TRUE(added);
  const std::vector<Tensor> inputs{floats({1, 2}), floats({3, 4}), floats({2, 10})};
  EXPECT_EQ(values(call("test_registry::scaled_sum", inputs)[0]), (std::vector<float>{8, 60}));
  EXPECT_EQ(values(call("test_registry::scaled_sum", std::span(inputs).last(1))[0]), (std::vector<float>{0, 0}));
  EXPECT_CONTAINS(error_of([&] { call("test_registry::scaled_sum", std::vector<Tensor>{}); }),
                  "expected 1 tensor inputs (xs (0 tensors), scale), got 0");
  EXPECT_CONTAINS(error_of([&] { call("test_registry::sum_lists", inputs); }),
                  "test_registry::sum_lists: it has 2 Tensor[] arguments; give their lengths to Attrs::bind()");
}

TEST(GlobalRegistryTest, BuiltinCatByName) {
  const std::vector<Tensor> parts{floats({1, 2}, {1, 2}), floats({3, 4, 5, 6}, {2, 2})};
  std::vector<Tensor> out = call("aten::cat", parts);
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values(out[0]), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_CONTAINS(error_of([&] { call("aten::cat", parts, {{"dim", int64_t{1}}}); }),
                  "aten::cat: tensors[1]: expected size 1 in dimension 0 like tensors[0], got float32[2, 2]");
}

TEST(GlobalRegistryTest, ConcurrentCalls) {
  global_scale();
  std::atomic<int> wrong{0};
  auto worker = [&wrong](float factor) {
    Tensor x = floats({1, 2, 3, 4});
    for (int i = 0; i < 1000; ++i) {
      std::vector<Tensor> out =
          call("test_registry::scale", std::vector<Tensor>{x, Tensor()}, {{"factor", static_cast<double>(factor)}});
      if (values(out[0]) != std::vector<float>{factor, 2 * factor, 3 * factor, 4 * factor}) ++wrong;
    }
  };
  std::thread a(worker, 2.0f);
  std::thread b(worker, -3.0f);
  a.join();
  b.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace opgraph
