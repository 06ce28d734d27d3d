// The op package SDK: header-only C++ over the C ABI in opgraph/package/abi.h.
// A package links nothing from opgraph, so one build keeps loading in every
// opgraph release with the same ABI major version.
//
//   #include <opgraph/sdk.h>
//   namespace sdk = opgraph::sdk;
//
//   sdk::Meta scale_shape(sdk::Meta x, double factor) { return x; }
//   void scale_cpu(sdk::OutputTensor out, sdk::InputTensor x, double factor) { ... }
//
//   OPGRAPH_LIBRARY(mylib, m) {
//     m.def("scale(Tensor x, *, float factor=2.0) -> Tensor", scale_shape);
//     m.impl("scale", sdk::Device::CPU, scale_cpu);
//   }
//
// Typed functions: parameters of type OutputTensor, InputTensor (or
// std::optional<InputTensor> for `Tensor?`, InputTensorList for `Tensor[]`),
// Meta (std::optional<Meta>, std::vector<Meta> in shape functions) and
// Context are filled from the call; every other parameter takes the next
// attribute (non-tensor argument) in schema order. Exceptions never cross the
// ABI: they come back to the caller as opgraph::Error with their message.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <source_location>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "opgraph/package/abi.h"

#define OPGRAPH_SDK_EXPORT __attribute__((visibility("default")))

namespace opgraph::sdk {

#define OPGRAPH_SDK_DTYPE(number, abi, cpp, name, scalar_type, bytes, floating) cpp = OG_##abi,
enum class DType : int32_t { OG_DTYPES(OPGRAPH_SDK_DTYPE) };
#undef OPGRAPH_SDK_DTYPE

enum class Device : int32_t { CPU = OG_CPU, CUDA = OG_CUDA };

inline const char* dtype_name(DType dtype) {
#define OPGRAPH_SDK_DTYPE_NAME(number, abi, cpp, name, scalar_type, bytes, floating) name,
  static constexpr const char* names[] = {OG_DTYPES(OPGRAPH_SDK_DTYPE_NAME)};
#undef OPGRAPH_SDK_DTYPE_NAME
  auto index = static_cast<size_t>(dtype);
  return index < std::size(names) ? names[index] : "unknown";
}

template <typename T>
struct DTypeOf;
OG_DTYPE_CXX_TYPES(OG_DTYPE_OF)

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

#define OPGRAPH_SDK_CHECK(cond, ...)                                               \
  do {                                                                             \
    if (!(cond)) throw ::opgraph::sdk::Error(::opgraph::sdk::concat(__VA_ARGS__)); \
  } while (0)

inline std::string shape_str(std::span<const int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// dtype and shape: what shape functions take and return.
class Meta {
 public:
  Meta(DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {}
  explicit Meta(const og_tensor& t) : dtype_(static_cast<DType>(t.dtype)), shape_(t.shape, t.shape + t.ndim) {}

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t d) const { return shape_.at(static_cast<size_t>(d < 0 ? d + dim() : d)); }
  std::string str() const { return std::string(dtype_name(dtype_)) + shape_str(shape_); }

 private:
  DType dtype_;
  std::vector<int64_t> shape_;
};

namespace detail {

// Shared by InputTensor and OutputTensor: a view of an og_tensor.
class TensorRef {
 public:
  explicit TensorRef(const og_tensor& t) : t_(&t) {}
  DType dtype() const { return static_cast<DType>(t_->dtype); }
  Device device() const { return static_cast<Device>(t_->device_type); }
  int64_t dim() const { return t_->ndim; }
  int64_t size(int64_t d) const { return t_->shape[d < 0 ? d + dim() : d]; }
  int64_t stride(int64_t d) const { return t_->strides[d < 0 ? d + dim() : d]; }
  std::span<const int64_t> shape() const { return {t_->shape, static_cast<size_t>(t_->ndim)}; }
  std::span<const int64_t> strides() const { return {t_->strides, static_cast<size_t>(t_->ndim)}; }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape()) n *= d;
    return n;
  }
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int64_t d = dim() - 1; d >= 0; --d) {
      if (size(d) != 1 && stride(d) != expected) return false;
      expected *= size(d);
    }
    return true;
  }
  Meta meta() const { return Meta(*t_); }

 protected:
  template <typename T>
  T* typed_data() const {
    OPGRAPH_SDK_CHECK(DTypeOf<std::remove_const_t<T>>::value == dtype(), "tensor holds ", dtype_name(dtype()),
                      ", accessed as ", dtype_name(DTypeOf<std::remove_const_t<T>>::value));
    return static_cast<T*>(t_->data);
  }

 private:
  const og_tensor* t_;
};

}  // namespace detail

class InputTensor : public detail::TensorRef {
 public:
  using TensorRef::TensorRef;
  template <typename T>
  const T* data() const {
    return typed_data<const T>();
  }
};

class OutputTensor : public detail::TensorRef {
 public:
  using TensorRef::TensorRef;
  template <typename T>
  T* data() const {
    return typed_data<T>();
  }
};

// The elements of a `Tensor[]` argument, in a kernel.
class InputTensorList {
 public:
  explicit InputTensorList(const og_tensor_list& list) : list_(&list) {}

  size_t size() const { return static_cast<size_t>(list_->length); }
  bool empty() const { return list_->length == 0; }
  InputTensor operator[](size_t i) const { return InputTensor(list_->items[i]); }

  class iterator {
   public:
    explicit iterator(const og_tensor* t) : t_(t) {}
    InputTensor operator*() const { return InputTensor(*t_); }
    iterator& operator++() {
      ++t_;
      return *this;
    }
    bool operator==(const iterator&) const = default;

   private:
    const og_tensor* t_;
  };
  iterator begin() const { return iterator(list_->items); }
  iterator end() const { return iterator(list_->items + list_->length); }

 private:
  const og_tensor_list* list_;
};

// Execution context of one kernel call: the host's thread pool and, for a
// device kernel, its stream, device index and scratch memory.
class Context {
 public:
  Context(const og_host_api* api, og_context* context) : api_(api), context_(context) {}

  int num_threads() const { return api_->num_threads(context_); }

  // The stream a device kernel launches its work on: a cudaStream_t for
  // CUDA, where work is ordered with the host's other kernels and copies.
  void* stream() const { return api_->stream(context_); }
  int device_index() const { return api_->device_index(context_); }
  // Memory on the call's device for `count` elements, valid until the
  // kernel returns (on a device, until the work launched on stream() is done).
  template <typename T = std::byte>
  T* scratch(size_t count) const {
    void* memory = api_->scratch(context_, static_cast<uint64_t>(count) * sizeof(T));
    OPGRAPH_SDK_CHECK(memory != nullptr || count == 0, "scratch: no memory for ", count, " elements");
    return static_cast<T*>(memory);
  }

  // Runs body(begin, end) over chunks of [begin, end) of at least `grain`
  // iterations on the host's threads. The first exception a chunk throws is
  // rethrown here once all chunks have finished.
  template <typename Body>
  void parallel_for(int64_t begin, int64_t end, int64_t grain, Body&& body) const {
    using Fn = std::remove_reference_t<Body>;
    struct Task {
      Fn* body;
      std::mutex mutex;
      std::exception_ptr error;
      static void run(void* user, int64_t b, int64_t e) {
        auto* task = static_cast<Task*>(user);
        try {
          (*task->body)(b, e);
        } catch (...) {
          std::lock_guard<std::mutex> lock(task->mutex);
          if (!task->error) task->error = std::current_exception();
        }
      }
    } task{&body, {}, {}};
    api_->parallel_for(context_, begin, end, grain, &Task::run, &task);
    if (task.error) std::rethrow_exception(task.error);
  }

 private:
  const og_host_api* api_;
  og_context* context_;
};

namespace detail {

template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

enum class Slot { Input, Output, Context, Attr };

template <typename P>
constexpr Slot slot_of() {
  using T = std::remove_cvref_t<P>;
  if constexpr (std::is_same_v<T, InputTensor> || std::is_same_v<T, std::optional<InputTensor>> ||
                std::is_same_v<T, InputTensorList> || std::is_same_v<T, Meta> ||
                std::is_same_v<T, std::optional<Meta>> || std::is_same_v<T, std::vector<Meta>>) {
    return Slot::Input;
  } else if constexpr (std::is_same_v<T, OutputTensor>) {
    return Slot::Output;
  } else if constexpr (std::is_same_v<T, Context>) {
    return Slot::Context;
  } else {
    return Slot::Attr;
  }
}

template <typename... P>
constexpr int32_t count_slots(Slot slot) {
  return ((slot_of<P>() == slot ? 1 : 0) + ... + 0);
}

inline const char* attr_kind_name(int32_t kind) {
  static constexpr const char* names[] = {"None", "bool", "int", "float", "str", "int[]", "float[]", "ScalarType"};
  return kind >= 0 && kind < 8 ? names[kind] : "unknown";
}

template <typename T>
T convert_attr(const og_attr& a) {
  auto expect = [&](bool ok, const char* wanted) {
    OPGRAPH_SDK_CHECK(ok, "attribute '", a.name, "': the kernel takes ", wanted, ", the call gave ",
                      attr_kind_name(a.kind));
  };
  if constexpr (is_optional<T>::value) {
    if (a.kind == OG_ATTR_NONE) return std::nullopt;
    return convert_attr<typename T::value_type>(a);
  } else if constexpr (std::is_same_v<T, bool>) {
    expect(a.kind == OG_ATTR_BOOL, "bool");
    return a.i != 0;
  } else if constexpr (std::is_integral_v<T>) {
    expect(a.kind == OG_ATTR_INT, "int");
    return static_cast<T>(a.i);
  } else if constexpr (std::is_floating_point_v<T>) {
    expect(a.kind == OG_ATTR_FLOAT || a.kind == OG_ATTR_INT, "float");
    return a.kind == OG_ATTR_FLOAT ? static_cast<T>(a.f) : static_cast<T>(a.i);
  } else if constexpr (std::is_same_v<T, DType>) {
    expect(a.kind == OG_ATTR_DTYPE, "ScalarType");
    return static_cast<DType>(a.i);
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>) {
    expect(a.kind == OG_ATTR_STRING, "str");
    return T(a.s, static_cast<size_t>(a.length));
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    expect(a.kind == OG_ATTR_INTS, "int[]");
    return T(a.ints, a.ints + a.length);
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    expect(a.kind == OG_ATTR_FLOATS, "float[]");
    return T(a.floats, a.floats + a.length);
  } else {
    static_assert(sizeof(T) == 0, "unsupported parameter type in an opgraph typed function");
  }
}

// The arrays one boxed call reads its parameters from, consumed left to right.
struct CallFrame {
  const og_tensor* inputs;
  const og_tensor* outputs;
  const og_attr* attrs;
  Context* context;
  int32_t next_input = 0;
  int32_t next_output = 0;
  int32_t next_attr = 0;
};

// The next tensor argument, which the typed function takes as a list or not.
inline const og_tensor& next_input(CallFrame& f, bool as_list) {
  const int32_t index = f.next_input++;
  const og_tensor& t = f.inputs[index];
  OPGRAPH_SDK_CHECK((t.ndim == OG_NDIM_LIST) == as_list, "tensor argument ", index, " is ",
                    t.ndim == OG_NDIM_LIST ? "a Tensor[]; take it as InputTensorList (std::vector<Meta> in shape "
                                             "functions)"
                                           : "not a Tensor[]; take it as InputTensor (Meta in shape functions)");
  return t;
}

template <typename P>
std::remove_cvref_t<P> fetch(CallFrame& f) {
  using T = std::remove_cvref_t<P>;
  if constexpr (std::is_same_v<T, InputTensor> || std::is_same_v<T, Meta>) {
    return T(next_input(f, false));
  } else if constexpr (std::is_same_v<T, std::optional<InputTensor>> || std::is_same_v<T, std::optional<Meta>>) {
    const og_tensor& t = next_input(f, false);
    if (t.ndim == OG_NDIM_NONE) return std::nullopt;
    return typename T::value_type(t);
  } else if constexpr (std::is_same_v<T, InputTensorList>) {
    return T(*static_cast<const og_tensor_list*>(next_input(f, true).data));
  } else if constexpr (std::is_same_v<T, std::vector<Meta>>) {
    const auto& list = *static_cast<const og_tensor_list*>(next_input(f, true).data);
    return T(list.items, list.items + list.length);
  } else if constexpr (std::is_same_v<T, OutputTensor>) {
    return T(f.outputs[f.next_output++]);
  } else if constexpr (std::is_same_v<T, Context>) {
    return *f.context;
  } else {
    return convert_attr<T>(f.attrs[f.next_attr++]);
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
template <typename C, typename R, typename... P>
struct Signature<R (C::*)(P...)> : Signature<R (*)(P...)> {};

// Calls `fn` with its parameters taken from `frame`, in declaration order
// (a braced initializer guarantees left-to-right evaluation).
template <typename F, typename... P>
decltype(auto) invoke_typed(F& fn, CallFrame& frame, std::tuple<P...>*) {
  std::tuple<std::remove_cvref_t<P>...> args{fetch<P>(frame)...};
  return std::apply(fn, args);
}

inline int32_t report(const og_host_api* api, og_error* error) {
  try {
    throw;
  } catch (const std::exception& e) {
    api->set_error(error, e.what());
  } catch (...) {
    api->set_error(error, "unknown C++ exception");
  }
  return OG_ERROR;
}

// Keeps the typed functions' state alive as long as the package is loaded.
inline std::vector<std::shared_ptr<void>>& retained() {
  static std::vector<std::shared_ptr<void>> objects;
  return objects;
}

template <typename F>
struct BoxedShape {
  const og_host_api* api;
  F fn;

  static int32_t call(void* user, const og_tensor* inputs, int32_t, const og_attr* attrs, int32_t, og_outputs* outputs,
                      og_error* error) {
    auto* self = static_cast<BoxedShape*>(user);
    try {
      CallFrame frame{inputs, nullptr, attrs, nullptr};
      auto result = invoke_typed(self->fn, frame, static_cast<typename Signature<F>::Params*>(nullptr));
      if constexpr (std::is_same_v<decltype(result), Meta>) {
        return self->emit(outputs, 0, result, error);
      } else {
        for (size_t i = 0; i < result.size(); ++i) {
          if (self->emit(outputs, static_cast<int32_t>(i), result[i], error) != OG_OK) return OG_ERROR;
        }
        return OG_OK;
      }
    } catch (...) {
      return report(self->api, error);
    }
  }

  int32_t emit(og_outputs* outputs, int32_t index, const Meta& meta, og_error* error) const {
    return api->set_output(outputs, index, static_cast<int32_t>(meta.dtype()), static_cast<int32_t>(meta.dim()),
                           meta.shape().data(), error);
  }
};

template <typename F>
struct BoxedKernel {
  const og_host_api* api;
  F fn;

  static int32_t call(void* user, og_context* context, const og_tensor* inputs, int32_t, const og_tensor* outputs,
                      int32_t, const og_attr* attrs, int32_t, og_error* error) {
    auto* self = static_cast<BoxedKernel*>(user);
    try {
      Context ctx(self->api, context);
      CallFrame frame{inputs, outputs, attrs, &ctx};
      invoke_typed(self->fn, frame, static_cast<typename Signature<F>::Params*>(nullptr));
      return OG_OK;
    } catch (...) {
      return report(self->api, error);
    }
  }
};

template <typename Tuple>
struct Arity;
template <typename... P>
struct Arity<std::tuple<P...>> {
  static constexpr int32_t inputs = count_slots<P...>(Slot::Input);
  static constexpr int32_t outputs = count_slots<P...>(Slot::Output);
  static constexpr int32_t attrs = count_slots<P...>(Slot::Attr);
};

}  // namespace detail

struct OpOptions {
  // Name of the op (in this package) that computes this op's gradients. It
  // returns one gradient per tensor input and takes this op's attributes and,
  // as tensor arguments, this op's inputs and outputs under their names and,
  // under any other name, the gradient of each output in order: so
  // (grad of each output, then this op's inputs) is one such signature.
  const char* backward = nullptr;
};

// A sample input of an op (Library::sample), which `opgraph test-package`
// and the conformance suites run the op on: see opgraph/registry/sample.h.
enum class Layout : int32_t {
  Contiguous = OG_LAYOUT_CONTIGUOUS,
  Transposed = OG_LAYOUT_TRANSPOSED,  // the transpose of a contiguous buffer (rank >= 2)
  Strided = OG_LAYOUT_STRIDED,        // every other element of the last dim
};

struct SampleTensor {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  Layout layout = Layout::Contiguous;
  bool none = false;          // a `Tensor?` given as None
  double low = -2, high = 2;  // the values' range

  static SampleTensor absent() { return {DType::Float32, {}, Layout::Contiguous, true}; }
};

// One attribute value of a sample: an int, float, bool, string, list or dtype.
class SampleAttr {
 public:
  SampleAttr(bool value) { a_.kind = OG_ATTR_BOOL, a_.i = value; }
  template <typename T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
  SampleAttr(T value) {
    a_.kind = OG_ATTR_INT, a_.i = static_cast<int64_t>(value);
  }
  SampleAttr(double value) { a_.kind = OG_ATTR_FLOAT, a_.f = value; }
  SampleAttr(const char* value) : SampleAttr(std::string(value)) {}
  SampleAttr(std::string value) : text_(std::move(value)) { a_.kind = OG_ATTR_STRING; }
  SampleAttr(std::vector<int64_t> values) : ints_(std::move(values)) { a_.kind = OG_ATTR_INTS; }
  SampleAttr(std::vector<double> values) : floats_(std::move(values)) { a_.kind = OG_ATTR_FLOATS; }
  SampleAttr(DType dtype) { a_.kind = OG_ATTR_DTYPE, a_.i = static_cast<int64_t>(dtype); }

  // The C view, valid while this object lives.
  og_attr view(const std::string& name) const {
    og_attr a = a_;
    a.name = name.c_str();
    a.s = text_.c_str(), a.ints = ints_.data(), a.floats = floats_.data();
    a.length = static_cast<int64_t>(a.kind == OG_ATTR_STRING ? text_.size()
                                    : a.kind == OG_ATTR_INTS ? ints_.size()
                                                             : floats_.size());
    return a;
  }

 private:
  og_attr a_{};
  std::string text_;
  std::vector<int64_t> ints_;
  std::vector<double> floats_;
};

struct Sample {
  std::vector<SampleTensor> inputs;  // one per tensor argument; a Tensor[]'s elements in a row
  std::vector<std::pair<std::string, SampleAttr>> attrs = {};
  double tolerance = 0;                  // 0: the dtype's default
  std::string error = {};                // a bad sample: the text its error must contain
  std::vector<int64_t> list_sizes = {};  // for ops with more than one Tensor[]
};

// What OPGRAPH_LIBRARY hands its body: declares ops and their kernels.
class Library {
 public:
  // Registration failures are written to `error` by the host and unwind the
  // library body with RegistrationFailed.
  struct RegistrationFailed {};

  Library(const og_host_api* api, og_registrar* registrar, og_error* error)
      : api_(api), registrar_(registrar), error_(error) {}

  template <typename ShapeFn>
  Library& def(const char* schema, ShapeFn shape_fn, OpOptions options = {},
               std::source_location where = std::source_location::current()) {
    using Box = detail::BoxedShape<std::decay_t<ShapeFn>>;
    using Arity = detail::Arity<typename detail::Signature<std::decay_t<ShapeFn>>::Params>;
    auto box = std::make_shared<Box>(Box{api_, std::move(shape_fn)});
    og_op_def def{schema,     options.backward, where.file_name(), static_cast<int32_t>(where.line()),
                  &Box::call, box.get(),        Arity::inputs,     Arity::attrs};
    check(api_->def_op(registrar_, &def, error_));
    detail::retained().push_back(std::move(box));
    return *this;
  }

  template <typename KernelFn>
  Library& impl(const char* op, Device device, KernelFn kernel,
                std::source_location where = std::source_location::current()) {
    using Box = detail::BoxedKernel<std::decay_t<KernelFn>>;
    using Arity = detail::Arity<typename detail::Signature<std::decay_t<KernelFn>>::Params>;
    auto box = std::make_shared<Box>(Box{api_, std::move(kernel)});
    og_kernel_def def{op,
                      static_cast<int32_t>(device),
                      &Box::call,
                      box.get(),
                      Arity::inputs,
                      Arity::outputs,
                      Arity::attrs,
                      where.file_name(),
                      static_cast<int32_t>(where.line())};
    check(api_->def_kernel(registrar_, &def, error_));
    detail::retained().push_back(std::move(box));
    return *this;
  }

  // Declares a sample input of `op`, which this package declares.
  Library& sample(const char* op, const Sample& sample) {
    std::vector<og_sample_tensor> inputs;
    for (const SampleTensor& t : sample.inputs) {
      inputs.push_back({static_cast<int32_t>(t.dtype), static_cast<int32_t>(t.shape.size()), t.shape.data(),
                        static_cast<int32_t>(t.layout), t.none ? 1 : 0, t.low, t.high});
    }
    std::vector<og_attr> attrs;
    for (const auto& [name, value] : sample.attrs) attrs.push_back(value.view(name));
    og_sample_def def{op,
                      inputs.data(),
                      static_cast<int32_t>(inputs.size()),
                      sample.list_sizes.data(),
                      static_cast<int32_t>(sample.list_sizes.size()),
                      attrs.data(),
                      static_cast<int32_t>(attrs.size()),
                      sample.tolerance,
                      sample.error.empty() ? nullptr : sample.error.c_str()};
    check(api_->def_sample(registrar_, &def, error_));
    return *this;
  }

 private:
  static void check(int32_t status) {
    if (status != OG_OK) throw RegistrationFailed{};
  }

  const og_host_api* api_;
  og_registrar* registrar_;
  og_error* error_;
};

namespace detail {

inline int32_t run_init(const og_api_base* base, og_registrar* registrar, og_error* error, const char** ns_out,
                        const char* ns, void (*body)(Library&)) {
  const og_host_api* api = base->get_api(OPGRAPH_ABI_VERSION_MAJOR, OPGRAPH_ABI_VERSION_MINOR);
  if (api == nullptr) return OG_ABI_MISMATCH;
  *ns_out = ns;
  Library library(api, registrar, error);
  try {
    body(library);
    return OG_OK;
  } catch (const Library::RegistrationFailed&) {
    return OG_ERROR;
  } catch (...) {
    return report(api, error);
  }
}

}  // namespace detail
}  // namespace opgraph::sdk

// Defines the package's entry point; the body declares its ops. One per package.
#define OPGRAPH_LIBRARY(ns, m)                                                                                 \
  static void opgraph_library_body_(::opgraph::sdk::Library& m);                                               \
  extern "C" OPGRAPH_SDK_EXPORT int32_t opgraph_package_init(const og_api_base* base, og_registrar* registrar, \
                                                             og_error* error, const char** ns_out) {           \
    return ::opgraph::sdk::detail::run_init(base, registrar, error, ns_out, #ns, &opgraph_library_body_);      \
  }                                                                                                            \
  static void opgraph_library_body_(::opgraph::sdk::Library& m)
