// Copies and dtype conversions: _to_copy, the to overloads, type_as, clone,
// contiguous, alias, detach, detach_, lift_fresh_copy, copy (src broadcast
// into self's shape and dtype), and resize_.
//
// Outputs are allocated by the caller, so an op that PyTorch may answer with
// a view of its input (to, contiguous, alias) writes a copy here; the values
// are the same. Conversions follow static_cast, as PyTorch's do: floats
// truncate toward zero into integers, any non-zero value is true; a real
// value becomes a complex one with imaginary part 0. A complex tensor
// converts only to a complex dtype: PyTorch would drop the imaginary part
// (with a warning), which is refused here.
#include <algorithm>
#include <complex>
#include <cstring>

#include "kernels/cpu/util/elementwise.h"
#include "kernels/cpu/util/placement.h"
#include "kernels/shape/checked.h"

namespace opgraph::kernels {
namespace {

// Calls fn(T{}) for T the C++ type of every dtype these ops copy: those of
// the elementwise ops and the complex ones.
template <typename Fn>
void dispatch_copyable(DType dtype, const char* argument, Fn&& fn) {
  switch (dtype) {
    case DType::Complex64: return fn(std::complex<float>{});
    case DType::Complex128: return fn(std::complex<double>{});
    // What quantized weights are stored as (torchao's int data, opgraph quantize's levels).
    case DType::Int8: return fn(int8_t{});
    case DType::UInt8: return fn(uint8_t{});
    case DType::Float32:
    case DType::Float64:
    case DType::Int32:
    case DType::Int64:
    case DType::Bool: return dispatch_elementwise(dtype, argument, fn);
    default:
      throw Error(detail::concat(argument, ": expected float32, float64, int64, int32, int8, uint8, bool, ",
                                 "complex64 or complex128, got ", dtype_name(dtype)));
  }
}

void check_convertible(DType from, DType to) {
  OPGRAPH_CHECK(!is_complex(from) || is_complex(to), "dtype: converting ", dtype_name(from), " to ", dtype_name(to),
                " would drop the imaginary part; take the real part first (torch.real)");
}

// One conversion serves the eleven schemas from _to_copy to lift_fresh_copy,
// which differ in which of dtype and the placement attributes they have, so
// they keep the raw kernel form: where each sits in a schema's Attrs is found
// when the op is defined (ConversionPositions), and a call reads it there.
struct ConversionPositions {
  std::optional<size_t> dtype;
  PlacementPositions placement;
  explicit ConversionPositions(const Schema& schema) : dtype(attribute_index(schema, "dtype")), placement(schema) {}

  // The result's dtype: the `dtype` attribute where the schema has one and
  // it is given, else self's.
  DType target_dtype(const TensorMeta& self, const Attrs& attrs) const {
    const auto* requested = dtype ? std::get_if<DType>(&attrs[*dtype]) : nullptr;
    return requested ? *requested : self.dtype;
  }
};

std::vector<TensorMeta> convert_shape(std::span<const TensorMeta* const> inputs, const Attrs& attrs,
                                      const ConversionPositions& at) {
  const TensorMeta& self = *inputs[0];
  at.placement.check(attrs);
  const DType dtype = inputs.size() > 1 ? inputs[1]->dtype : at.target_dtype(self, attrs);
  dispatch_copyable(self.dtype, "self", [](auto) {});
  dispatch_copyable(dtype, "dtype", [](auto) {});
  check_convertible(self.dtype, dtype);
  return {{dtype, self.shape}};
}

// copy(self, src): self's dtype and shape, which src must broadcast to.
TensorMeta copy_shape(const TensorMeta& self, const TensorMeta& src, bool) {
  dispatch_copyable(self.dtype, "self", [](auto) {});
  dispatch_copyable(src.dtype, "src", [](auto) {});
  check_convertible(src.dtype, self.dtype);
  OPGRAPH_CHECK(broadcast_shapes(self.shape, src.shape) == self.shape, "src: expected a shape that broadcasts to ",
                self.str(), ", got ", src.str());
  return {self};
}

// Converts `source` (broadcast) into `out`.
template <bool kReference>
void convert(const KernelContext& context, const Tensor& source, const Tensor& out) {
  if (source.meta() == out.meta() && !kReference) {
    std::memcpy(out.data(), source.data(), static_cast<size_t>(source.numel()) * source.itemsize());
    return;
  }
  check_convertible(source.dtype(), out.dtype());
  dispatch_copyable(source.dtype(), "source", [&]<typename From>(From) {
    dispatch_copyable(out.dtype(), "dtype", [&]<typename To>(To) {
      if constexpr (!is_complex_v<From> || is_complex_v<To>) {
        map_broadcast<To, kReference>(
            context, out, [](From x) { return static_cast<To>(x); },
            Input<From>{source.data_ptr<const From>(), source.shape()});
      }
    });
  });
}

// resize_ as a graph holds it: self's elements, in order, in the new shape.
// The elements past self's, which PyTorch leaves uninitialized, are zeros.
TensorMeta resize_shape(const TensorMeta& self, std::span<const int64_t> size_given,
                        std::optional<std::string_view> memory_format) {
  check_memory_format(memory_format);
  dispatch_copyable(self.dtype, "self", [](auto) {});
  const Shape size(size_given.begin(), size_given.end());
  int64_t numel = 1;  // checked to fit int64
  for (int64_t extent : size) {
    OPGRAPH_CHECK(extent >= 0, "size: expected extents of at least 0, got ", shape_str(size));
    numel = checked_mul(numel, extent, "size");
  }
  return {self.dtype, size};
}

void resize_cpu(const KernelContext&, const Tensor& self, std::span<const int64_t>, std::optional<std::string_view>,
                const Tensor& out) {
  const size_t kept = std::min(self.nbytes(), out.nbytes());
  std::memcpy(out.data(), self.data(), kept);
  std::memset(static_cast<char*>(out.data()) + kept, 0, out.nbytes() - kept);
}

void resize_reference(const KernelContext&, const Tensor& self, std::span<const int64_t>,
                      std::optional<std::string_view>, const Tensor& out) {
  dispatch_copyable(self.dtype(), "self", [&]<typename T>(T) {
    const T* x = self.data_ptr<const T>();
    T* y = out.data_ptr<T>();
    for (int64_t i = 0; i < out.numel(); ++i) y[i] = i < self.numel() ? x[i] : T{};
  });
}

// Whether a conversion's output is its input's elements as they are
// (OpDef::reshapes_input): a copy that keeps the dtype.
enum class SameElements : bool { No, Yes };

template <bool kReference>
void convert_self(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                  const Attrs&) {
  convert<kReference>(context, inputs[0], outputs[0]);
}

void define_conversion(BuiltinOps& builtins, const char* schema, SameElements same = SameElements::No,
                       std::source_location where = std::source_location::current()) {
  const ConversionPositions at(Schema::parse(schema));
  define(builtins,
         {.schema = schema,
          .shape = [at](std::span<const TensorMeta* const> inputs,
                        const Attrs& attrs) { return convert_shape(inputs, attrs, at); },
          OPGRAPH_CPU_AND_REFERENCE(convert_self),
          .reshapes_input = same == SameElements::Yes},
         where);
}

// copy(self, src): src converted into self's dtype and shape.
template <bool kReference>
void copy_kernel(const KernelContext& context, const Tensor&, const Tensor& src, bool, const Tensor& out) {
  convert<kReference>(context, src, out);
}

}  // namespace

void register_convert_ops(BuiltinOps& builtins) {
  define_conversion(builtins,
                    "aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
                    "Device? device=None, bool? pin_memory=None, bool non_blocking=False, "
                    "MemoryFormat? memory_format=None) -> Tensor");
  define_conversion(builtins,
                    "aten::to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, "
                    "Device? device=None, bool? pin_memory=None, bool non_blocking=False, "
                    "bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)");
  define_conversion(builtins,
                    "aten::to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, "
                    "bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)");
  define_conversion(builtins,
                    "aten::to.device(Tensor(a) self, Device device, ScalarType dtype, "
                    "bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) "
                    "-> Tensor(a)");
  define_conversion(builtins, "aten::type_as(Tensor self, Tensor other) -> Tensor");
  // opgraph's tensors are contiguous whatever the memory format asked for.
  define_conversion(builtins, "aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor",
                    SameElements::Yes);
  define_conversion(builtins,
                    "aten::contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) "
                    "-> Tensor(a)",
                    SameElements::Yes);
  define_conversion(builtins, "aten::alias(Tensor(a) self) -> Tensor(a)", SameElements::Yes);
  define_conversion(builtins, "aten::detach(Tensor(a) self) -> Tensor(a)", SameElements::Yes);
  // torch.export keeps GPT-2's in-place detach_ of its causal mask; the values
  // do not change, so the functional form's copy is the same.
  define_conversion(builtins, "aten::detach_(Tensor(a!) self) -> Tensor(a!)", SameElements::Yes);
  define_conversion(builtins, "aten::lift_fresh_copy(Tensor self) -> Tensor", SameElements::Yes);
  define(builtins, {.schema = "aten::copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor",
                    .shape = copy_shape,
                    OPGRAPH_CPU_AND_REFERENCE(copy_kernel),
                    .in_place_input = 0});
  define(builtins,
         {.schema = "aten::resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor(a!)",
          .shape = resize_shape,
          .cpu = resize_cpu,
          .reference = resize_reference});
}

}  // namespace opgraph::kernels
