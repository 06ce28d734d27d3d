// The op registry: an op is a schema, a shape function, a kernel per device
// and optionally the name of the op that computes its gradients.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "opgraph/core/tensor.h"
#include "opgraph/core/thread_pool.h"
#include "opgraph/registry/attrs.h"
#include "opgraph/registry/sample.h"
#include "opgraph/registry/schema.h"

namespace opgraph {

// A call's tensor inputs are one flat span, in schema order: a Tensor or
// Tensor? argument is one entry (undefined, or a null meta, for None) and a
// Tensor[] argument is its elements, consecutively (a Tensor?[] element given
// as None is undefined, or null). The length of each
// Tensor[] travels with the attributes (Attrs::list_sizes()), which every
// shape function and kernel receives; so an op whose only tensor argument is
// a Tensor[] (aten::cat) simply takes all its inputs, and one with several
// lists still knows where each begins. Kernels index one span whatever the
// schema, and a caller holds a call's tensors in one vector.

// Input metas (flat, as above; null for a `Tensor?` given as None) and
// attributes -> output metas. Throws opgraph::Error for inputs it rejects.
// What a Session's float32 products with a weight multiply in (SessionOptions::precision).
enum class Precision {
  Float32,
  // Operands rounded to bfloat16, products summed in float32, as OpenVINO's
  // bf16 inference precision runs them.
  BFloat16,
};

// How a Session keeps the float32 weights of its matrix products (linear
// layers, the LM head, matmul by a constant): as they are (bits 0), or as
// signed integers w = scale * q, with a float32 scale per output column and
// per group of group_size rows of the input dimension (0: one group of all
// of them, a scale per column). 8 bits: symmetric, q in [-127, 127]; 4 bits:
// as llama.cpp's Q4_0, the weight of largest magnitude at q = -8 and the
// others in [-8, 7]. Not `symmetric` (OpenVINO NNCF's INT8_ASYM and
// INT4_ASYM, torchao's ASYMMETRIC mapping), w = scale * (q - zero_point),
// q in [-128, 127] or [-8, 7], the scale and integer zero point of a group
// spanning its smallest weight to its largest (zero included, so that a
// zero weight stays exact). The products' other operand and their sums stay
// float32.
//
// With `int8_activations`, the products by such weights (or by the levels of
// a file's opgraph::quantized_linear layers) also quantize their other
// operand at run time and multiply on the CPU's integer instructions:
// - a few rows (decode steps), and int4 or grouped weights at any row
//   count: per row and block of 32 values to int8, symmetric (as
//   llama.cpp's Q8_0), on AVX512-VNNI or AVX2, where the input dimension
//   is a multiple of 32 (float32 elsewhere);
// - 16 rows or more (a prompt, an encoder's tokens) by int8 weights of a
//   scale per output channel: per row to uint8 with a zero point, on
//   oneDNN's int8 matmul (AMX-INT8 or AVX512-VNNI; without VNNI, whose
//   absence makes oneDNN's u8 x s8 sums saturate, per block of 32 as above).
// It also has a Session's dense 2-D convolutions on channels-last
// activations (engines/int8_conv.h) quantize their input per tensor and
// their weight per output channel, whatever `bits` says.
struct WeightQuantization {
  int bits = 0;
  int64_t group_size = 0;
  bool int8_activations = false;
  bool symmetric = true;
};

// The format named "int8", "int4", "int8_asym" or "int4_asym" (bits and
// symmetric set, group_size 0); nullopt for another name.
std::optional<WeightQuantization> weight_format_from_name(std::string_view name);

// The group size where none is given: all of the inputs for int8, blocks of
// 32 (Q4_0's) for int4.
constexpr int64_t default_group_size(int bits) { return bits == 4 ? 32 : 0; }

// The engine a Session's float32 products with a constant weight run on.
// Auto picks by shape and CPU: opgraph's panels for up to 64 rows (AVX2 or
// AVX-512) or one row, oneDNN's matmul for 65 to 127, and for 128 rows or
// more whichever of oneDNN, MKL's packed GEMM and the panels ran the
// product's shape fastest on this CPU model, measured on the shape's first
// call and kept in a file (kernels/cpu/engines/engine_pick.h). The others
// run every such product on that engine where it can take it (the panels
// need AVX2 or AVX-512 for more than one row; MKL, where it is built in,
// needs operands it reads in place), on oneDNN where it cannot. Quantized
// weights stay on the panels.
enum class ProductEngine { Auto, OneDnn, Mkl, Panels };

// The engine named "auto", "onednn", "mkl" or "panels"; nullopt for another name.
std::optional<ProductEngine> product_engine_from_name(std::string_view name);

using ShapeFn = std::function<std::vector<TensorMeta>(std::span<const TensorMeta* const> inputs, const Attrs& attrs)>;

// What a kernel keeps about its node from one run to the next (the forms of
// a constant weight it packs, say): made once per node at a Session's load
// by OpDef::prepare, as ONNX Runtime's kernels prepack at load, and given to
// each of that node's calls. The kernel keeps it safe for concurrent runs.
class KernelState {
 public:
  virtual ~KernelState() = default;
  // What the kernel chose for its node and why (the engines its products
  // ran on), for people to read; empty where it says nothing.
  virtual std::string describe() const { return {}; }
};

// What OpDef::prepare is given at a Session's load.
struct PrepareContext {
  // By flat input (see above): each input that is one of the graph's
  // constants, whose values stay as they are for as long as the state
  // lives; undefined for the others.
  std::span<const Tensor> constants;
  const Attrs& attrs;
  // What the Session's products with a constant weight multiply in.
  Precision precision = Precision::Float32;
  Device device = Device::cpu();
  // How the Session keeps its products' constant weights.
  WeightQuantization weights = {};
  // The engine its float32 products with a constant weight run on.
  ProductEngine products = ProductEngine::Auto;
};
using PrepareFn = std::function<std::unique_ptr<KernelState>(const PrepareContext& context)>;

struct KernelContext {
  ThreadPool* pool;

  // Set by every caller of an op with data-dependent shapes (see
  // OpDef::data_dependent_shapes): one shape per output, which its kernel
  // fills with set_output_shape().
  std::span<Shape> output_shapes = {};

  // What OpDef::prepare made for this node, where a Session prepared it;
  // null for other callers (an op called on its own).
  KernelState* state = nullptr;

  // Where the call's inputs and outputs are. A kernel for another device
  // than the CPU launches its work on stream(), in order with the rest.
  Device device = Device::cpu();

  // Reports the shape output `k` holds: its elements are the leading ones of
  // the buffer, which the shape function sized for the most there can be.
  void set_output_shape(size_t k, Shape shape) const;
  // The device's current stream (a cudaStream_t for CUDA); null on the CPU.
  void* stream() const;
};
// Destination-passing: outputs arrive allocated, with the metas the shape
// function returned. Inputs are contiguous unless the op accepts strides.
using KernelFn = std::function<void(const KernelContext& context, std::span<const Tensor> inputs,
                                    std::span<const Tensor> outputs, const Attrs& attrs)>;

struct OpDef {
  Schema schema;
  ShapeFn shape_fn;
  std::array<KernelFn, kNumDeviceTypes> kernels;
  // A plain, obviously correct CPU implementation that tests hold the fast
  // kernels to (built-in ops have one; packages may leave it empty).
  KernelFn reference;
  std::string backward;  // qualified name of the gradient op; empty if none
  std::string source;    // where it was registered: "file.cpp:12" or a package path
  bool accepts_strided_inputs = false;
  // The outputs' sizes depend on the inputs' values (aten::nonzero), as
  // ExecuTorch's bounded dynamic shapes: the shape function gives the largest
  // shape each output can have, the caller allocates that (so a Session plans
  // it like any other), and the kernel reports the shape it filled with
  // KernelContext::set_output_shape(). Unlike ONNX Runtime's kernels, which
  // allocate their outputs through the context once they know the size, a
  // kernel here still never allocates. The caller then sees the leading
  // elements of each buffer as the output (see data_dependent_output()).
  bool data_dependent_shapes = false;
  // Output 0 holds input 0's elements in the same order, with its dtype
  // (view, reshape, unsqueeze, flatten, clone): a Session gives it input 0's
  // memory and skips the kernel where input 0 is an intermediate value or a
  // constant, as ONNX Runtime's kernels that declare an alias and
  // ExecuTorch's view ops do. The kernel still copies for other callers.
  bool reshapes_input = false;
  // Output 0 may be written over this input's memory: it has that input's
  // dtype and shape, and the kernel reads each element of the input before
  // it writes the output's (a convolution that adds a residual in its
  // epilogue). A Session gives the output that memory where the input is an
  // intermediate value that no later node reads, as ONNX Runtime's kernels
  // that declare MayInplace get it; other callers pass two buffers.
  std::optional<size_t> in_place_input;
  // Inputs the conformance suites run the op on (registry/sample.h).
  std::vector<Sample> samples;
  // Called once per node at a Session's load, where the op's kernel keeps
  // something about the node from run to run (see KernelState); none else.
  PrepareFn prepare;

  const std::string& name() const { return qualified_name_; }
  // Positions in schema.arguments of the tensor arguments (Tensor, Tensor?
  // and Tensor[]), and how many of them are Tensor[].
  const std::vector<size_t>& tensor_arguments() const { return tensor_arguments_; }
  size_t num_tensor_lists() const { return num_tensor_lists_; }
  size_t num_outputs() const { return schema.returns.size(); }
  // Whether the op returns one Tensor[], whose length its shape function
  // decides per call (split, unbind); its outputs are then that list's
  // elements, and num_outputs() counts the list as one.
  bool returns_list() const { return returns_list_; }

  // Calls visit(argument, first, count) for each tensor argument in schema
  // order: the call's flat inputs [first, first + count) are that argument's
  // (count is 1 unless it is a Tensor[]). `attrs` must be bound to this op.
  template <typename Visit>
  void for_each_tensor_argument(const Attrs& attrs, Visit&& visit) const {
    size_t first = 0, list = 0;
    for (size_t position : tensor_arguments_) {
      const Argument& argument = schema.arguments[position];
      const size_t count = argument.type.is_list ? attrs.list_sizes()[list++] : 1;
      visit(argument, first, count);
      first += count;
    }
  }
  // How many flat inputs a call with these attributes takes, and the name of
  // input i: "x", or "tensors[2]" for an element of a Tensor[].
  size_t num_inputs(const Attrs& attrs) const;
  std::string input_name(size_t i, const Attrs& attrs) const;

  // Computes the derived fields above and checks the schema is one the
  // registry can run (Tensor, Tensor? and Tensor[] inputs, Tensor returns).
  // A scalar return (SymInt, int, float, bool, Scalar: aten::sym_size.int,
  // aten::_local_scalar_dense) is a 0-d tensor output, so that graphs, the
  // memory plan and callers handle it as any other value.
  void finalize();

 private:
  std::string qualified_name_;
  std::vector<size_t> tensor_arguments_;
  size_t num_tensor_lists_ = 0;
  bool returns_list_ = false;
};

// A kernel for an op declared elsewhere: a device backend's kernel for a
// built-in op, handed to the registry with the rest of its batch.
struct KernelDef {
  std::string op;
  DeviceType device;
  KernelFn kernel;
  std::string source;  // where it was defined: "file.cu:12"
  // Where set, makes `kernel` from the declared op as the registry adds it,
  // so that a typed kernel is checked against the op's schema then.
  std::function<KernelFn(const OpDef& op)> bind = nullptr;
};

class Registry {
 public:
  // The process-wide registry: the built-in ops, received once as one batch, and those packages add.
  static Registry& global();

  // Adds ops all at once, or none if one clashes with a registered op or another in the batch (the error names
  // both sources) or names a backward op that neither declares: any op of the batch may be another's backward.
  void add(std::vector<OpDef> ops);
  void add(OpDef op);
  // Adds kernels for ops that are already declared, all at once, or none if
  // one names an op that is not declared or a device the op has a kernel for.
  void add_kernels(std::vector<KernelDef> kernels);
  // Adds samples to an op that is already declared.
  void add_samples(std::string_view op, std::vector<Sample> samples);

  // Null when unknown. Pointers stay valid: ops are never removed.
  const OpDef* find(std::string_view name) const;
  // Throws opgraph::Error ("unknown op ...", with close names) when unknown.
  const OpDef& get(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  std::vector<std::string> list() const;  // sorted qualified names

 private:
  // Lookups by string_view without building a std::string.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view name) const { return std::hash<std::string_view>{}(name); }
  };

  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<OpDef>, NameHash, std::equal_to<>> ops_;
};

// Output metas for a call; the error names the op.
std::vector<TensorMeta> infer_outputs(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs);
// The same from input metas alone (null for a `Tensor?` given as None), as a
// tracer that holds no data asks it (PyTorch's fake tensors).
std::vector<TensorMeta> infer_outputs(const OpDef& op, std::span<const TensorMeta* const> inputs, const Attrs& attrs);

struct CallOptions {
  bool reference = false;  // run OpDef::reference instead of the device kernel
};

// The output of an op with data-dependent shapes as its kernel reported it:
// the leading elements of `buffer` (allocated at the shape function's bound),
// viewed with `shape`, sharing buffer's memory. Throws opgraph::Error when
// the kernel reported no shape or one larger than the buffer.
Tensor data_dependent_output(const Tensor& buffer, const Shape& shape);
// What a caller fills KernelContext::output_shapes with before the kernel
// runs: no shape has a negative size.
inline Shape unreported_shape() { return {-1}; }

// Runs the op writing into caller-allocated `outputs`, after checking inputs
// against the schema and outputs against the shape function. Not for an op
// with data-dependent shapes, whose output shapes only call() gives back.
void call_out(const OpDef& op, std::span<const Tensor> inputs, std::span<const Tensor> outputs, const Attrs& attrs,
              CallOptions options = {});
// Allocates the outputs from the shape function, then call_out().
std::vector<Tensor> call(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs, CallOptions options = {});
// By name, binding the attributes. An op with one Tensor[] argument gives it
// every input that its other tensor arguments leave; one with several needs
// their lengths, given to Attrs::bind() and the call above.
std::vector<Tensor> call(std::string_view op, std::span<const Tensor> inputs, const NamedAttrs& attrs = {});

}  // namespace opgraph
