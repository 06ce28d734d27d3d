#include "convert.h"

#include <nanobind/stl/string.h>

#include <string>

#include <numpy/arrayobject.h>

namespace opgraph::python {

void init_numpy() {
  if (_import_array() < 0) throw nb::python_error();
}

static std::optional<DType> dtype_from_numpy(int type_num) {
  switch (type_num) {
    case NPY_FLOAT32: return DType::Float32;
    case NPY_FLOAT64: return DType::Float64;
    case NPY_FLOAT16: return DType::Float16;
    case NPY_INT8: return DType::Int8;
    case NPY_UINT8: return DType::UInt8;
    case NPY_INT32: return DType::Int32;
    case NPY_INT64: return DType::Int64;
    case NPY_BOOL: return DType::Bool;
    case NPY_COMPLEX64: return DType::Complex64;
    case NPY_COMPLEX128: return DType::Complex128;
    default: return std::nullopt;
  }
}

std::optional<Tensor> borrow_numpy(nb::handle object, bool writable) {
  if (!PyArray_CheckExact(object.ptr())) return std::nullopt;
  auto* array = reinterpret_cast<PyArrayObject*>(object.ptr());
  const int flags = PyArray_FLAGS(array);
  std::optional<DType> dtype = dtype_from_numpy(PyArray_TYPE(array));
  if (!dtype || !(flags & NPY_ARRAY_ALIGNED) || !PyArray_ISNOTSWAPPED(array) ||
      (writable && !(flags & NPY_ARRAY_WRITEABLE))) {
    return std::nullopt;
  }
  const int ndim = PyArray_NDIM(array);
  const npy_intp* dims = PyArray_DIMS(array);
  const npy_intp* byte_strides = PyArray_STRIDES(array);
  const auto item = static_cast<npy_intp>(itemsize(*dtype));
  Shape shape(dims, dims + ndim);
  Strides strides(ndim);
  for (int d = 0; d < ndim; ++d) {
    if (byte_strides[d] % item != 0) return std::nullopt;  // DLPack-style strides count elements
    strides[d] = byte_strides[d] / item;
  }
  return Tensor::from_blob(PyArray_DATA(array), std::move(shape), std::move(strides), *dtype);
}

DType dtype_from_dlpack(nb::dlpack::dtype dtype) {
  using Code = nb::dlpack::dtype_code;
  auto code = static_cast<Code>(dtype.code);
  if (dtype.lanes == 1) {
    if (code == Code::Float && dtype.bits == 32) return DType::Float32;
    if (code == Code::Float && dtype.bits == 64) return DType::Float64;
    if (code == Code::Float && dtype.bits == 16) return DType::Float16;
    if (code == Code::Bfloat && dtype.bits == 16) return DType::BFloat16;
    if (code == Code::Int && dtype.bits == 8) return DType::Int8;
    if (code == Code::UInt && dtype.bits == 8) return DType::UInt8;
    if (code == Code::Int && dtype.bits == 32) return DType::Int32;
    if (code == Code::Int && dtype.bits == 64) return DType::Int64;
    if (code == Code::Bool && dtype.bits == 8) return DType::Bool;
    if (code == Code::Complex && dtype.bits == 64) return DType::Complex64;
    if (code == Code::Complex && dtype.bits == 128) return DType::Complex128;
  }
  throw Error(detail::concat("unsupported array dtype (DLPack code ", int(dtype.code), ", ", int(dtype.bits), " bits, ",
                             dtype.lanes,
                             " lanes); opgraph holds float16/32/64, bfloat16, "
                             "int8/32/64, uint8, bool and complex64/128"));
}

nb::dlpack::dtype dtype_to_dlpack(DType dtype) {
  using Code = nb::dlpack::dtype_code;
  auto make = [](Code code, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  switch (dtype) {
    case DType::Float32: return make(Code::Float, 32);
    case DType::Float64: return make(Code::Float, 64);
    case DType::Float16: return make(Code::Float, 16);
    case DType::BFloat16: return make(Code::Bfloat, 16);
    case DType::Int8: return make(Code::Int, 8);
    case DType::UInt8: return make(Code::UInt, 8);
    case DType::Int32: return make(Code::Int, 32);
    case DType::Int64: return make(Code::Int, 64);
    case DType::Bool: return make(Code::Bool, 8);
    case DType::Complex64: return make(Code::Complex, 64);
    case DType::Complex128: return make(Code::Complex, 128);
  }
  throw Error("unknown dtype");
}

template <typename Array>
static Tensor borrow_array(const Array& array) {
  Device device;
  if (array.device_type() != nb::device::cpu::value) {
    // Keep the tensor's device so the registry reports the missing kernel.
    device = {array.device_type() == nb::device::cuda::value ? DeviceType::CUDA : DeviceType::CPU, array.device_id()};
    OPGRAPH_CHECK(array.device_type() == nb::device::cuda::value, "arrays on DLPack device type ", array.device_type(),
                  " are not supported; opgraph takes CPU (and CUDA) arrays");
  }
  Shape shape(array.shape_ptr(), array.shape_ptr() + array.ndim());
  Strides strides(array.stride_ptr(), array.stride_ptr() + array.ndim());
  return Tensor::from_blob(const_cast<void*>(static_cast<const void*>(array.data())), std::move(shape),
                           std::move(strides), dtype_from_dlpack(array.dtype()), {}, device);
}

Tensor borrow(const nb::ndarray<nb::ro>& array) { return borrow_array(array); }
Tensor borrow(const nb::ndarray<>& array) { return borrow_array(array); }

std::optional<Tensor> borrow_input(nb::handle value, std::vector<InputArray>& keep) {
  if (nb::isinstance<Tensor>(value)) return nb::cast<Tensor>(value);
  if (auto tensor = borrow_numpy(value, /*writable=*/false)) return tensor;
  InputArray array;
  if (!nb::try_cast(value, array, /*convert=*/false)) return std::nullopt;
  keep.push_back(array);
  return borrow(array);
}

nb::object to_dlpack_producer(const Tensor& tensor) {
  // The capsule owns a reference to the storage for as long as the array lives.
  auto* keep = new Tensor(tensor);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> shape(tensor.shape().begin(), tensor.shape().end());
  const int device = tensor.device().type == DeviceType::CPU ? nb::device::cpu::value : nb::device::cuda::value;
  nb::ndarray<nb::array_api> array(tensor.data(), shape.size(), shape.data(), owner, tensor.strides().data(),
                                   dtype_to_dlpack(tensor.dtype()), device, tensor.device().index);
  return array.cast();
}

void ResultPlace::note(nb::handle source, const Tensor& input) {
  if (!input.defined()) return;
  if (!device_input_.is_valid() && input.device().type != DeviceType::CPU) device_input_ = source;
  if (!framework_input_.is_valid() && !PyArray_Check(source.ptr()) && !nb::isinstance<Tensor>(source)) {
    framework_input_ = source;
  }
}

// `result` as an array of `like`'s framework (torch or CuPy, through DLPack),
// or as an opgraph.Tensor for another producer.
static nb::object as_kind_of(nb::handle like, const Tensor& result) {
  nb::object tensor = nb::cast(result);
  const std::string module = nb::cast<std::string>(nb::str(like.type().attr("__module__")));
  for (const char* framework : {"torch", "cupy"}) {
    if (module == framework || module.starts_with(std::string(framework) + ".")) {
      return nb::module_::import_(framework).attr("from_dlpack")(tensor);
    }
  }
  return tensor;
}

nb::object ResultPlace::operator()(const Tensor& result) const {
  if (result.device().type == DeviceType::CPU) {
    const bool numpy_holds_it = result.dtype() != DType::BFloat16;
    return numpy_holds_it || !framework_input_.is_valid() ? to_numpy(result) : as_kind_of(framework_input_, result);
  }
  if (!device_input_.is_valid()) return to_numpy(result.to(Device::cpu()));
  return as_kind_of(device_input_, result);
}

static int numpy_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return NPY_FLOAT32;
    case DType::Float64: return NPY_FLOAT64;
    case DType::Float16: return NPY_FLOAT16;
    case DType::Int8: return NPY_INT8;
    case DType::UInt8: return NPY_UINT8;
    case DType::Int32: return NPY_INT32;
    case DType::Int64: return NPY_INT64;
    case DType::Bool: return NPY_BOOL;
    case DType::Complex64: return NPY_COMPLEX64;
    case DType::Complex128: return NPY_COMPLEX128;
    case DType::BFloat16: break;
  }
  throw Error("NumPy has no bfloat16; use opgraph.Tensor with torch.from_dlpack instead");
}

nb::object to_numpy(const Tensor& tensor) {
  OPGRAPH_CHECK(tensor.device().type == DeviceType::CPU, "cannot view a ", device_str(tensor.device()),
                " tensor as a NumPy array");
  const int type = numpy_type(tensor.dtype());
  const int ndim = static_cast<int>(tensor.dim());
  std::vector<npy_intp> dims(tensor.shape().begin(), tensor.shape().end());
  std::vector<npy_intp> byte_strides(ndim);
  for (int d = 0; d < ndim; ++d) byte_strides[d] = tensor.strides()[d] * static_cast<npy_intp>(tensor.itemsize());
  PyObject* array = PyArray_New(&PyArray_Type, ndim, dims.data(), type, byte_strides.data(), tensor.data(), 0,
                                NPY_ARRAY_WRITEABLE | NPY_ARRAY_ALIGNED, nullptr);
  if (!array) throw nb::python_error();
  nb::object result = nb::steal(array);
  // The base object keeps a reference to the storage for as long as NumPy needs it.
  nb::capsule owner(new Tensor(tensor), [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array), owner.release().ptr()) < 0) {
    throw nb::python_error();
  }
  return result;
}

// Names a dtype object: "float32" for numpy.float32, numpy.dtype("float32"),
// torch.float32 or the string itself.
static std::optional<std::string> dtype_name_of(nb::handle value) {
  nb::handle type = value.type();
  std::string module = nb::hasattr(type, "__module__") ? nb::str(type.attr("__module__")).c_str() : "";
  std::string type_name = module + "." + nb::type_name(type).c_str();
  if (type_name == "torch.dtype") {
    std::string text = nb::str(value).c_str();
    return text.substr(text.rfind('.') + 1);
  }
  if (module.starts_with("numpy") && nb::hasattr(value, "kind") &&
      nb::hasattr(value, "name")) {  // numpy.dtype("float32")
    return std::string(nb::str(value.attr("name")).c_str());
  }
  if (nb::isinstance<nb::type_object>(value) && nb::hasattr(value, "dtype") &&
      std::string(nb::str(value.attr("__module__")).c_str()) == "numpy") {  // numpy.float32
    return std::string(nb::str(value.attr("__name__")).c_str());
  }
  return std::nullopt;
}

DType dtype_from_python(nb::handle value, const char* what) {
  std::optional<std::string> name =
      nb::isinstance<nb::str>(value) ? std::optional(nb::cast<std::string>(value)) : dtype_name_of(value);
  std::optional<DType> dtype = name ? dtype_from_name(*name) : std::nullopt;
  OPGRAPH_CHECK(dtype.has_value(), what, ": expected a dtype opgraph holds (a name such as 'float32', a NumPy or ",
                "PyTorch dtype), got ", nb::type_name(value.type()).c_str(), " ", nb::repr(value).c_str());
  return *dtype;
}

AttrValue attr_from_python(nb::handle value, const char* name) {
  PyObject* o = value.ptr();
  if (value.is_none()) return std::monostate{};
  if (PyBool_Check(o)) return o == Py_True;
  if (PyLong_Check(o)) return nb::cast<int64_t>(value);
  if (PyFloat_Check(o)) return PyFloat_AS_DOUBLE(o);
  if (PyUnicode_Check(o)) return std::string(nb::cast<std::string>(value));
  if (auto dtype = dtype_name_of(value)) return *dtype;
  if (PyList_Check(o) || PyTuple_Check(o)) {
    std::vector<int64_t> ints;
    std::vector<double> floats;
    bool any_float = false;
    for (nb::handle item : nb::borrow<nb::sequence>(value)) {
      PyObject* p = item.ptr();
      if (PyBool_Check(p) || PyLong_Check(p) || (!PyFloat_Check(p) && PyIndex_Check(p))) {
        int64_t i = nb::cast<int64_t>(nb::int_(item));
        ints.push_back(i);
        floats.push_back(static_cast<double>(i));
      } else if (PyFloat_Check(p) || nb::hasattr(item, "__float__")) {
        any_float = true;
        floats.push_back(nb::cast<double>(nb::float_(item)));
      } else {
        throw Error(detail::concat("attribute '", name, "': list items must be numbers, got ",
                                   nb::type_name(item.type()).c_str()));
      }
    }
    if (any_float) return floats;
    return ints;
  }
  // NumPy and PyTorch scalars (numpy.int64(3), torch.tensor(2.0).item() is a float already).
  if (PyIndex_Check(o)) return nb::cast<int64_t>(nb::int_(value));
  if (nb::hasattr(value, "__float__") && !nb::hasattr(value, "__len__")) return nb::cast<double>(nb::float_(value));
  throw Error(detail::concat("attribute '", name, "': cannot pass a ", nb::type_name(value.type()).c_str(),
                             " as an attribute (expected None, bool, int, float, str, a list of numbers or a "
                             "dtype)"));
}

nb::tuple shape_to_python(const SymbolicShape& shape) {
  nb::list dims;
  for (const Dim& dim : shape) {
    if (dim.is_symbolic()) {
      dims.append(nb::str(dim.symbol.c_str()));
    } else {
      dims.append(dim.size);
    }
  }
  return nb::tuple(dims);
}

std::string path_string(nb::handle path) {
  return nb::cast<std::string>(nb::module_::import_("os").attr("fspath")(path));
}

Weights weights_from_python(nb::handle weights, bool copy, std::vector<InputArray>& keep) {
  Weights tensors;
  if (weights.is_none()) return tensors;
  OPGRAPH_CHECK(PyDict_Check(weights.ptr()), "weights must be a dict of name -> array, got ",
                nb::type_name(weights.type()).c_str());
  for (auto [name, value] : nb::borrow<nb::dict>(weights)) {
    const std::string key = nb::cast<std::string>(nb::str(name));
    std::optional<Tensor> tensor = borrow_input(value, keep);
    OPGRAPH_CHECK(tensor.has_value(), "weight '", key, "' must be an array, got ", nb::type_name(value.type()).c_str());
    tensors.emplace(key, copy ? tensor->clone() : *tensor);
  }
  return tensors;
}

nb::object attr_to_python(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> nb::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return nb::none();
        } else if constexpr (std::is_same_v<T, DType>) {
          return nb::str(std::string(dtype_name(v)).c_str());
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>> || std::is_same_v<T, std::vector<double>>) {
          nb::list list;
          for (auto item : v) list.append(nb::cast(item));
          return list;
        } else {
          return nb::cast(v);
        }
      },
      value);
}

NamedAttrs attrs_from_kwargs(const OpDef& op, const nb::kwargs& kwargs, nb::object* out) {
  NamedAttrs given;
  for (auto [key, value] : kwargs) {
    Py_ssize_t length = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(key.ptr(), &length);
    if (!utf8) throw nb::python_error();
    std::string_view name(utf8, static_cast<size_t>(length));
    if (out && name == "out") {
      *out = nb::borrow(value);
      continue;
    }
    try {
      given.emplace_back(name, attr_from_python(value, utf8));
    } catch (const Error& e) {
      throw Error(detail::concat(op.name(), ": ", e.what()));
    }
  }
  return given;
}

WeightQuantization weight_quantization_from_string(const char* argument, const std::optional<std::string>& name,
                                                   std::optional<int64_t> group_size,
                                                   const std::optional<std::string>& activations) {
  OPGRAPH_CHECK(!activations || *activations == "int8", "activations: expected None or 'int8', got '", *activations,
                "'");
  if (!name) {
    OPGRAPH_CHECK(!group_size, "group_size: ", *group_size, " given without ", argument, "='int8' or 'int4'");
    return {.int8_activations = activations.has_value()};
  }
  std::optional<WeightQuantization> format = weight_format_from_name(*name);
  OPGRAPH_CHECK(format, argument, ": expected None, 'int8', 'int4', 'int8_asym' or 'int4_asym', got '", *name, "'");
  format->group_size = group_size.value_or(default_group_size(format->bits));
  format->int8_activations = activations.has_value();
  return *format;
}

}  // namespace opgraph::python
