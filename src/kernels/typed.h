// Typed kernels and shape functions: a built-in op's kernel written as
//   void relu(const KernelContext& context, const Tensor& self, double alpha, const Tensor& out)
// and its shape function as
//   std::vector<TensorMeta> relu_shape(const TensorMeta& self, double alpha)
// with one parameter per schema argument, in schema order. define() checks
// the parameter list against the schema once, when the op is defined, and
// turns the function into the KernelFn / ShapeFn that OpDef holds; each call
// then takes its arguments by position (Attrs holds them in schema order,
// bound and type-checked), never by name.
//
// Parameters, by schema argument:
//   Tensor          const Tensor&                 const TensorMeta&
//   Tensor?         const Tensor* (null: None)    const TensorMeta* (null: None)
//   Tensor[]        std::span<const Tensor>       std::span<const TensorMeta* const>
//   int             int64_t
//   float, Scalar   double (a Scalar given as an int converted)
//   bool            bool
//   ScalarType      DType
//   str (Device, Layout, MemoryFormat)   std::string_view or const std::string&
//   int[], bool[]   std::span<const int64_t> or const std::vector<int64_t>&
//   float[]         std::span<const double> or const std::vector<double>&
//   X? (attribute)  std::optional<X> of the above (a view for str and lists)
//   Scalar, Scalar? const AttrValue& where the kernel needs to know whether it
//                   was given as an int (or None)
// A kernel takes `const KernelContext&` first and its outputs last: one
// `const Tensor&` per returned Tensor, or one std::span<const Tensor> for all
// of them (the only form for an op returning Tensor[]).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

// How a typed function's parameter is read, as define() compares it with the
// schema argument at its position.
struct ParamInfo {
  enum class Role : uint8_t { Context, Tensor, OptionalTensor, TensorList, Attribute };
  Role role;
  const char* spelling;  // the C++ type, for messages: "std::optional<int64_t>"
  // For attributes: whether the parameter takes values of this schema type.
  bool (*takes)(const Type& type) = nullptr;
};

namespace typed_detail {

template <typename T>
struct Optional : std::false_type {};
template <typename T>
struct Optional<std::optional<T>> : std::true_type {
  using Value = T;
};

// The schema types an attribute parameter of C++ type T (not optional) takes.
template <typename T>
constexpr bool takes_kind(Type::Kind kind, bool is_list) {
  using K = Type::Kind;
  if constexpr (std::is_same_v<T, int64_t>) return kind == K::Int && !is_list;
  if constexpr (std::is_same_v<T, double>) return (kind == K::Float || kind == K::Scalar) && !is_list;
  if constexpr (std::is_same_v<T, bool>) return kind == K::Bool && !is_list;
  if constexpr (std::is_same_v<T, DType>) return kind == K::ScalarType && !is_list;
  if constexpr (std::is_same_v<T, std::string_view> || std::is_same_v<T, std::string>) {
    return (kind == K::Str || kind == K::Device || kind == K::Layout || kind == K::MemoryFormat) && !is_list;
  }
  if constexpr (std::is_same_v<T, std::span<const int64_t>> || std::is_same_v<T, std::vector<int64_t>>) {
    return (kind == K::Int || kind == K::Bool) && is_list;
  }
  if constexpr (std::is_same_v<T, std::span<const double>> || std::is_same_v<T, std::vector<double>>) {
    return kind == K::Float && is_list;
  }
  return false;
}

template <typename T>
constexpr const char* attribute_spelling() {
  if constexpr (std::is_same_v<T, int64_t>) return "int64_t";
  if constexpr (std::is_same_v<T, double>) return "double";
  if constexpr (std::is_same_v<T, AttrValue>) return "const AttrValue&";
  if constexpr (std::is_same_v<T, bool>) return "bool";
  if constexpr (std::is_same_v<T, DType>) return "DType";
  if constexpr (std::is_same_v<T, std::string_view>) return "std::string_view";
  if constexpr (std::is_same_v<T, std::string>) return "const std::string&";
  if constexpr (std::is_same_v<T, std::span<const int64_t>>) return "std::span<const int64_t>";
  if constexpr (std::is_same_v<T, std::vector<int64_t>>) return "const std::vector<int64_t>&";
  if constexpr (std::is_same_v<T, std::span<const double>>) return "std::span<const double>";
  if constexpr (std::is_same_v<T, std::vector<double>>) return "const std::vector<double>&";
  if constexpr (std::is_same_v<T, std::optional<int64_t>>) return "std::optional<int64_t>";
  if constexpr (std::is_same_v<T, std::optional<double>>) return "std::optional<double>";
  if constexpr (std::is_same_v<T, std::optional<bool>>) return "std::optional<bool>";
  if constexpr (std::is_same_v<T, std::optional<DType>>) return "std::optional<DType>";
  if constexpr (std::is_same_v<T, std::optional<std::string_view>>) return "std::optional<std::string_view>";
  if constexpr (std::is_same_v<T, std::optional<std::span<const int64_t>>>) {
    return "std::optional<std::span<const int64_t>>";
  }
  if constexpr (std::is_same_v<T, std::optional<std::span<const double>>>) {
    return "std::optional<std::span<const double>>";
  }
  return nullptr;
}

template <typename T>
bool takes(const Type& type) {
  if constexpr (std::is_same_v<T, AttrValue>) {
    return type.kind == Type::Kind::Scalar && !type.is_list;
  } else if constexpr (Optional<T>::value) {
    return type.optional && takes_kind<typename Optional<T>::Value>(type.kind, type.is_list);
  } else {
    return !type.optional && takes_kind<T>(type.kind, type.is_list);
  }
}

// Where a Kernel's or shape function's arguments come from in one call,
// consumed left to right.
template <typename Item>
struct Cursor {
  std::span<const Item> inputs;
  std::span<const Tensor> outputs;  // kernels only
  const Attrs& attrs;
  size_t num_arguments;  // parameters before this are schema arguments, the rest outputs
  size_t input = 0, list = 0, attribute = 0, output = 0;
};

inline const TensorMeta& deref(const TensorMeta* meta) { return *meta; }
inline const Tensor& deref(const Tensor& tensor) { return tensor; }
inline const TensorMeta* nullable(const TensorMeta* meta) { return meta; }
inline const Tensor* nullable(const Tensor& tensor) { return tensor.defined() ? &tensor : nullptr; }

template <typename T>
T attribute(const AttrValue& value) {
  if constexpr (Optional<T>::value) {
    if (std::holds_alternative<std::monostate>(value)) return std::nullopt;
    return attribute<typename Optional<T>::Value>(value);
  } else if constexpr (std::is_same_v<T, double>) {
    // A Scalar keeps the kind the call gave; a float is always a double.
    const auto* integer = std::get_if<int64_t>(&value);
    return integer ? static_cast<double>(*integer) : std::get<double>(value);
  } else if constexpr (std::is_same_v<T, std::string_view>) {
    return std::get<std::string>(value);
  } else if constexpr (std::is_same_v<T, std::span<const int64_t>>) {
    return std::get<std::vector<int64_t>>(value);
  } else if constexpr (std::is_same_v<T, std::span<const double>>) {
    return std::get<std::vector<double>>(value);
  } else {
    return std::get<T>(value);
  }
}

// Parameter P at position `index` (the context not counted).
template <typename P, typename Item>
decltype(auto) fetch(Cursor<Item>& c, size_t index) {
  using T = std::remove_cvref_t<P>;
  if constexpr (std::is_same_v<T, KernelContext>) {
    static_assert(sizeof(T) == 0, "const KernelContext& is a kernel's first parameter only");
  } else if constexpr (std::is_same_v<T, Tensor>) {
    if (index >= c.num_arguments) return static_cast<const Tensor&>(c.outputs[c.output++]);
    return deref(c.inputs[c.input++]);
  } else if constexpr (std::is_same_v<T, TensorMeta>) {
    return deref(c.inputs[c.input++]);
  } else if constexpr (std::is_same_v<T, const Tensor*> || std::is_same_v<T, const TensorMeta*>) {
    return nullable(c.inputs[c.input++]);
  } else if constexpr (std::is_same_v<T, std::span<const Tensor>> ||
                       std::is_same_v<T, std::span<const TensorMeta* const>>) {
    if constexpr (std::is_same_v<T, std::span<const Tensor>>) {
      if (index >= c.num_arguments) return c.outputs;
    }
    const size_t size = c.attrs.list_sizes()[c.list++];
    T list = c.inputs.subspan(c.input, size);
    c.input += size;
    return list;
  } else if constexpr (std::is_same_v<T, AttrValue>) {
    return static_cast<const AttrValue&>(c.attrs[c.attribute++]);
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::vector<int64_t>> ||
                       std::is_same_v<T, std::vector<double>>) {
    return static_cast<const T&>(std::get<T>(c.attrs[c.attribute++]));
  } else {
    return attribute<T>(c.attrs[c.attribute++]);
  }
}

template <typename P, bool kShape>
constexpr ParamInfo param_info() {
  using T = std::remove_cvref_t<P>;
  using Role = ParamInfo::Role;
  using Item = std::conditional_t<kShape, TensorMeta, Tensor>;
  if constexpr (std::is_same_v<T, KernelContext>) {
    return {Role::Context, "const KernelContext&"};
  } else if constexpr (std::is_same_v<T, Item>) {
    return {Role::Tensor, kShape ? "const TensorMeta&" : "const Tensor&"};
  } else if constexpr (std::is_same_v<T, const Item*>) {
    return {Role::OptionalTensor, kShape ? "const TensorMeta*" : "const Tensor*"};
  } else if constexpr (std::is_same_v<T, std::span<const Tensor>> && !kShape) {
    return {Role::TensorList, "std::span<const Tensor>"};
  } else if constexpr (std::is_same_v<T, std::span<const TensorMeta* const>> && kShape) {
    return {Role::TensorList, "std::span<const TensorMeta* const>"};
  } else {
    static_assert(attribute_spelling<T>() != nullptr,
                  "unsupported parameter type in a typed kernel or shape function (see kernels/typed.h)");
    return {Role::Attribute, attribute_spelling<T>(), &takes<T>};
  }
}

template <typename F>
struct Signature : Signature<decltype(&F::operator())> {};
template <typename R, typename... P>
struct Signature<R (*)(P...)> {
  using Result = R;
  using Params = std::tuple<P...>;
};
template <typename R, typename... P>
struct Signature<R(P...)> : Signature<R (*)(P...)> {};
template <typename C, typename R, typename... P>
struct Signature<R (C::*)(P...) const> : Signature<R (*)(P...)> {};

// Calls fn with its parameters fetched in order (a braced initializer
// evaluates left to right); `args` holds references into the call's spans.
template <typename F, typename Item, typename... P, size_t... I>
decltype(auto) invoke(const F& fn, Cursor<Item>& cursor, std::index_sequence<I...>) {
  std::tuple<P...> args{fetch<P>(cursor, I)...};
  return std::apply(fn, args);
}

}  // namespace typed_detail

// Checks `params` (a kernel's: context, schema arguments, outputs; a shape
// function's: schema arguments) against `schema`, throwing an error that
// names the op, `role` ("cpu kernel", "shape function"), `source` (where the
// function was defined), the parameter and the schema argument. Returns how
// many parameters are schema arguments (after a kernel's context; the rest
// are its outputs).
size_t check_params(const Schema& schema, std::string_view role, std::string_view source,
                    std::span<const ParamInfo> params);

// For the few kernels of the raw form: the index in Attrs of the attribute
// `name` of `schema`, or none where the schema has no such attribute. Such a
// kernel finds its attributes' indexes once, when its op is defined, and
// reads them there at each call.
std::optional<size_t> attribute_index(const Schema& schema, std::string_view name);

// A kernel as OpSpec takes it: a typed function, checked against the schema
// and bound when define() makes the op; or a function of the raw KernelFn form,
// taken as it is (for the few kernels that serve ops of different schemas).
class KernelSpec {
 public:
  KernelSpec() = default;
  KernelSpec(std::nullptr_t) {}
  template <typename F>
    requires(!std::is_same_v<std::decay_t<F>, KernelSpec> && !std::is_same_v<std::decay_t<F>, std::nullptr_t>)
  KernelSpec(F fn) {  // NOLINT: implicit, so that `.cpu = kernel` reads as before
    if constexpr (std::is_convertible_v<F, KernelFn> &&
                  std::is_invocable_v<F, const KernelContext&, std::span<const Tensor>, std::span<const Tensor>,
                                      const Attrs&>) {
      bind_ = [fn = std::move(fn)](const Schema&, std::string_view, std::string_view) { return KernelFn(fn); };
    } else {
      bind_ = [fn = std::move(fn)](const Schema& schema, std::string_view role, std::string_view source) {
        return typed(fn, schema, role, source);
      };
    }
  }

  explicit operator bool() const { return static_cast<bool>(bind_); }
  // The KernelFn for an op of `schema`, which the typed function is checked
  // against; `role` and `source` say which function this is in an error.
  KernelFn bind(const Schema& schema, std::string_view role, std::string_view source) const {
    return bind_ ? bind_(schema, role, source) : KernelFn();
  }

 private:
  template <typename F>
  static KernelFn typed(const F& fn, const Schema& schema, std::string_view role, std::string_view source) {
    return typed_with(fn, schema, role, source, static_cast<typename typed_detail::Signature<F>::Params*>(nullptr));
  }
  template <typename F, typename... P>
  static KernelFn typed_with(const F& fn, const Schema& schema, std::string_view role, std::string_view source,
                             std::tuple<P...>*) {
    static constexpr ParamInfo params[] = {typed_detail::param_info<P, false>()...};
    static_assert(sizeof...(P) > 0 && params[0].role == ParamInfo::Role::Context,
                  "a typed kernel takes const KernelContext& first");
    return bind_params<F, P...>(fn, check_params(schema, role, source, params),
                                std::make_index_sequence<sizeof...(P) - 1>());
  }
  template <typename F, typename Context, typename... P, size_t... I>
  static KernelFn bind_params(const F& fn, size_t num_arguments, std::index_sequence<I...>) {
    return [fn, num_arguments](const KernelContext& context, std::span<const Tensor> inputs,
                               std::span<const Tensor> outputs, const Attrs& attrs) {
      typed_detail::Cursor<Tensor> cursor{inputs, outputs, attrs, num_arguments};
      std::tuple<const KernelContext&, P...> args{context, typed_detail::fetch<P>(cursor, I)...};
      std::apply(fn, args);
    };
  }

  std::function<KernelFn(const Schema&, std::string_view, std::string_view)> bind_;
};

// A shape function as OpSpec takes it: typed (returning the outputs' metas as
// a std::vector<TensorMeta>, or one TensorMeta), or of the raw ShapeFn form.
class ShapeSpec {
 public:
  ShapeSpec() = default;
  template <typename F>
    requires(!std::is_same_v<std::decay_t<F>, ShapeSpec>)
  ShapeSpec(F fn) {  // NOLINT: implicit, so that `.shape = shape` reads as before
    if constexpr (std::is_convertible_v<F, ShapeFn> &&
                  std::is_invocable_v<F, std::span<const TensorMeta* const>, const Attrs&>) {
      bind_ = [fn = std::move(fn)](const Schema&, std::string_view) { return ShapeFn(fn); };
    } else {
      bind_ = [fn = std::move(fn)](const Schema& schema, std::string_view source) { return typed(fn, schema, source); };
    }
  }

  explicit operator bool() const { return static_cast<bool>(bind_); }
  ShapeFn bind(const Schema& schema, std::string_view source) const {
    return bind_ ? bind_(schema, source) : ShapeFn();
  }

 private:
  template <typename F>
  static ShapeFn typed(const F& fn, const Schema& schema, std::string_view source) {
    return typed_with(fn, schema, source, static_cast<typename typed_detail::Signature<F>::Params*>(nullptr));
  }
  template <typename F, typename... P>
  static ShapeFn typed_with(const F& fn, const Schema& schema, std::string_view source, std::tuple<P...>*) {
    static constexpr std::array<ParamInfo, sizeof...(P)> params = {typed_detail::param_info<P, true>()...};
    check_params(schema, "shape function", source, params);
    return [fn](std::span<const TensorMeta* const> inputs, const Attrs& attrs) -> std::vector<TensorMeta> {
      typed_detail::Cursor<const TensorMeta*> cursor{inputs, {}, attrs, sizeof...(P)};
      auto result = typed_detail::invoke<F, const TensorMeta*, P...>(fn, cursor, std::index_sequence_for<P...>());
      if constexpr (std::is_same_v<decltype(result), TensorMeta>) {
        return {std::move(result)};
      } else {
        return result;
      }
    };
  }

  std::function<ShapeFn(const Schema&, std::string_view)> bind_;
};

}  // namespace opgraph::kernels
